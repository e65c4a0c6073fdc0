module {
  func.func @main(%arg0: tensor<1x5xf16>) -> tensor<1x5xf16> {
    %0 = stablehlo.transpose %arg0, dims = [0, 1] : (tensor<1x5xf16>) -> tensor<1x5xf16>
    %1 = stablehlo.negate %0 : tensor<1x5xf16>
    func.return %1 : tensor<1x5xf16>
  }
}
