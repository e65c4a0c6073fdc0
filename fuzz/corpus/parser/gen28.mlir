module {
  func.func @main(%arg0: tensor<4x3xbf16>, %arg1: tensor<3x4xi1>) -> tensor<3x4xbf16> {
    %0 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<4x3xbf16>) -> tensor<3x4xbf16>
    %1 = stablehlo.select %arg1, %0, %0 : tensor<3x4xi1>, tensor<3x4xbf16>
    %2 = stablehlo.reverse %1, dims = [0, 1] : tensor<3x4xbf16>
    func.return %2 : tensor<3x4xbf16>
  }
}
