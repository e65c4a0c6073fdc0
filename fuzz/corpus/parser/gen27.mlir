module {
  "func.func"() <{function_type = (tensor<2xui32>, tensor<2xui32>) -> tensor<0xui64>, sym_name = "main"}> ({
      ^bb0(%arg0: tensor<2xui32>, %arg1: tensor<2xui32>):
    %0 = "stablehlo.compare"(%arg0, %arg1) <{compare_type = #stablehlo<comparison_type UNSIGNED>, comparison_direction = #stablehlo<comparison_direction GT>}> : (tensor<2xui32>, tensor<2xui32>) -> tensor<2xi1>
    %1 = "stablehlo.convert"(%0) : (tensor<2xi1>) -> tensor<2xui64>
    %2 = "stablehlo.slice"(%1) <{limit_indices = array<i64: 2>, start_indices = array<i64: 2>, strides = array<i64: 1>}> : (tensor<2xui64>) -> tensor<0xui64>
    "func.return"(%2) : (tensor<0xui64>) -> ()
  }) : () -> ()
}
