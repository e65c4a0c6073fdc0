module {
  "func.func"() <{function_type = (tensor<2x2xi1>) -> tensor<2x2xi1>, sym_name = "main"}> ({
      ^bb0(%arg0: tensor<2x2xi1>):
    %0 = "stablehlo.not"(%arg0) : (tensor<2x2xi1>) -> tensor<2x2xi1>
    "func.return"(%0) : (tensor<2x2xi1>) -> ()
  }) : () -> ()
}
