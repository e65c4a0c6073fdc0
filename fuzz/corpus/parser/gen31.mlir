module {
  "func.func"() <{function_type = (tensor<5x4xui8>, tensor<4x5xui8>, tensor<4x5xui8>) -> tensor<5x2x2xui8>, sym_name = "main"}> ({
      ^bb0(%arg0: tensor<5x4xui8>, %arg1: tensor<4x5xui8>, %arg2: tensor<4x5xui8>):
    %0 = "stablehlo.transpose"(%arg0) <{permutation = array<i64: 1, 0>}> : (tensor<5x4xui8>) -> tensor<4x5xui8>
    %1 = "stablehlo.clamp"(%arg1, %0, %arg2) : (tensor<4x5xui8>, tensor<4x5xui8>, tensor<4x5xui8>) -> tensor<4x5xui8>
    %2 = "stablehlo.reshape"(%1) : (tensor<4x5xui8>) -> tensor<5x2x2xui8>
    "func.return"(%2) : (tensor<5x2x2xui8>) -> ()
  }) : () -> ()
}
