module {
  "func.func"() <{function_type = (tensor<i16>, tensor<i16>, tensor<i16>) -> tensor<i16>, sym_name = "main"}> ({
      ^bb0(%arg0: tensor<i16>, %arg1: tensor<i16>, %arg2: tensor<i16>):
    %0 = "stablehlo.clamp"(%arg1, %arg0, %arg0) : (tensor<i16>, tensor<i16>, tensor<i16>) -> tensor<i16>
    %1 = "stablehlo.xor"(%0, %arg2) : (tensor<i16>, tensor<i16>) -> tensor<i16>
    %2 = "stablehlo.negate"(%1) : (tensor<i16>) -> tensor<i16>
    %3 = "stablehlo.negate"(%2) : (tensor<i16>) -> tensor<i16>
    "func.return"(%3) : (tensor<i16>) -> ()
  }) : () -> ()
}
