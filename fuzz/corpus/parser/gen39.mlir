module {
  "func.func"() <{function_type = (tensor<ui16>) -> tensor<2xui16>, sym_name = "main"}> ({
      ^bb0(%arg0: tensor<ui16>):
    %0 = "stablehlo.broadcast_in_dim"(%arg0) <{broadcast_dimensions = array<i64>}> : (tensor<ui16>) -> tensor<2xui16>
    "func.return"(%0) : (tensor<2xui16>) -> ()
  }) : () -> ()
}
