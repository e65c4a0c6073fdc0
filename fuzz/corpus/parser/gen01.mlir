module {
  func.func @main(%arg0: tensor<1x1x3xui64>, %arg1: tensor<3x1x1xui64>) -> tensor<3x1x1xui64> {
    %0 = stablehlo.transpose %arg0, dims = [2, 1, 0] : (tensor<1x1x3xui64>) -> tensor<3x1x1xui64>
    %1 = stablehlo.shift_left %0, %arg1 : tensor<3x1x1xui64>
    func.return %1 : tensor<3x1x1xui64>
  }
}
