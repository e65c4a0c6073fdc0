module {
  "func.func"() <{function_type = (tensor<5x4xi32>, tensor<5x4xi32>) -> tensor<5x4xi1>, sym_name = "main"}> ({
      ^bb0(%arg0: tensor<5x4xi32>, %arg1: tensor<5x4xi32>):
    %0 = "stablehlo.transpose"(%arg0) <{permutation = array<i64: 0, 1>}> : (tensor<5x4xi32>) -> tensor<5x4xi32>
    %1 = "stablehlo.compare"(%0, %arg1) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LE>}> : (tensor<5x4xi32>, tensor<5x4xi32>) -> tensor<5x4xi1>
    %2 = "stablehlo.transpose"(%1) <{permutation = array<i64: 0, 1>}> : (tensor<5x4xi1>) -> tensor<5x4xi1>
    "func.return"(%2) : (tensor<5x4xi1>) -> ()
  }) : () -> ()
}
