module {
  "func.func"() <{function_type = (tensor<bf16>, tensor<bf16>) -> tensor<bf16>, sym_name = "main"}> ({
      ^bb0(%arg0: tensor<bf16>, %arg1: tensor<bf16>):
    %0 = "stablehlo.add"(%arg0, %arg1) : (tensor<bf16>, tensor<bf16>) -> tensor<bf16>
    %1 = "stablehlo.negate"(%0) : (tensor<bf16>) -> tensor<bf16>
    "func.return"(%1) : (tensor<bf16>) -> ()
  }) : () -> ()
}
