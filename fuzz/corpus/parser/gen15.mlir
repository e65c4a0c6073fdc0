module {
  "func.func"() <{function_type = (tensor<5xui64>) -> tensor<ui64>, sym_name = "main"}> ({
      ^bb0(%arg0: tensor<5xui64>):
    %0 = "stablehlo.constant"() <{value = dense<1> : tensor<ui64>}> : () -> tensor<ui64>
    %1 = "stablehlo.reduce"(%arg0, %0) <{dimensions = array<i64: 0>}> ({
        ^bb0(%arg1: tensor<ui64>, %arg2: tensor<ui64>):
      %2 = "stablehlo.multiply"(%arg1, %arg2) : (tensor<ui64>, tensor<ui64>) -> tensor<ui64>
      "stablehlo.return"(%2) : (tensor<ui64>) -> ()
    }) : (tensor<5xui64>, tensor<ui64>) -> tensor<ui64>
    "func.return"(%1) : (tensor<ui64>) -> ()
  }) : () -> ()
}
