module {
  func.func @main(%arg0: tensor<3x4xi1>, %arg1: tensor<3x4xi1>, %arg2: tensor<3x4xi1>) -> tensor<3x4xi1> {
    %0 = stablehlo.or %arg0, %arg1 : tensor<3x4xi1>
    %1 = stablehlo.or %0, %arg2 : tensor<3x4xi1>
    func.return %1 : tensor<3x4xi1>
  }
}
