module {
  func.func @main(%arg0: tensor<3x1xf16>) -> tensor<4x5xf16> {
    %0 = stablehlo.constant dense<1.000000e+00> : tensor<f16>
    %1 = stablehlo.pad %arg0, %0, low = [1, 2], high = [0, 2], interior = [0, 0] : (tensor<3x1xf16>, tensor<f16>) -> tensor<4x5xf16>
    func.return %1 : tensor<4x5xf16>
  }
}
