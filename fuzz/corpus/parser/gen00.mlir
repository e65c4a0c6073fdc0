module {
  func.func @main(%arg0: tensor<3x4xi1>) -> tensor<4x3xi1> {
    %0 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<3x4xi1>) -> tensor<4x3xi1>
    func.return %0 : tensor<4x3xi1>
  }
}
