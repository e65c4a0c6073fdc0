module {
  "func.func"() <{function_type = (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>, sym_name = "main"}> ({
      ^bb0(%arg0: tensor<2xi64>, %arg1: tensor<2xi64>):
    %0 = "stablehlo.slice"(%arg0) <{limit_indices = array<i64: 2>, start_indices = array<i64: 1>, strides = array<i64: 2>}> : (tensor<2xi64>) -> tensor<1xi64>
    %1 = "stablehlo.slice"(%0) <{limit_indices = array<i64: 1>, start_indices = array<i64: 1>, strides = array<i64: 1>}> : (tensor<1xi64>) -> tensor<0xi64>
    %2 = "stablehlo.constant"() <{value = dense<1> : tensor<i64>}> : () -> tensor<i64>
    %3 = "stablehlo.pad"(%1, %2) <{edge_padding_high = array<i64: 1>, edge_padding_low = array<i64: 1>, interior_padding = array<i64: 1>}> : (tensor<0xi64>, tensor<i64>) -> tensor<2xi64>
    %4 = "stablehlo.clamp"(%3, %3, %arg1) : (tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
    "func.return"(%4) : (tensor<2xi64>) -> ()
  }) : () -> ()
}
