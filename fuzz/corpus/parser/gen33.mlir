module {
  func.func @main(%arg0: tensor<1x5xbf16>, %arg1: tensor<3x4x8xbf16>) -> tensor<3x4x8xbf16> {
    %0 = stablehlo.constant dense<1.000000e+00> : tensor<bf16>
    %1 = stablehlo.pad %arg0, %0, low = [2, 1], high = [1, 2], interior = [0, 0] : (tensor<1x5xbf16>, tensor<bf16>) -> tensor<4x8xbf16>
    %2 = stablehlo.broadcast_in_dim %1, dims = [1, 2] : (tensor<4x8xbf16>) -> tensor<3x4x8xbf16>
    %3 = stablehlo.atan2 %2, %arg1 : tensor<3x4x8xbf16>
    func.return %3 : tensor<3x4x8xbf16>
  }
}
