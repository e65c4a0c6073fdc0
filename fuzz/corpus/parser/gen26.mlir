module {
  func.func @main(%arg0: tensor<3x2x4xi1>, %arg1: tensor<3x2x4xi1>, %arg2: tensor<3x4x4xi1>, %arg3: tensor<3x4x4xi1>) -> tensor<3x4x4xi1> {
    %0 = stablehlo.concatenate %arg0, %arg1, dim = 1 : (tensor<3x2x4xi1>, tensor<3x2x4xi1>) -> tensor<3x4x4xi1>
    %1 = stablehlo.or %0, %arg2 : tensor<3x4x4xi1>
    %2 = stablehlo.not %1 : tensor<3x4x4xi1>
    %3 = stablehlo.and %2, %arg3 : tensor<3x4x4xi1>
    func.return %3 : tensor<3x4x4xi1>
  }
}
