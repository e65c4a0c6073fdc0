module {
  func.func @main(%arg0: tensor<5x1xi64>) -> tensor<5x1xi16> {
    %0 = stablehlo.convert %arg0 : (tensor<5x1xi64>) -> tensor<5x1xi16>
    func.return %0 : tensor<5x1xi16>
  }
}
