module {
  func.func @main(%arg0: tensor<3x1x0xui64>) -> tensor<0x1xui64> {
    %0 = stablehlo.reshape %arg0 : (tensor<3x1x0xui64>) -> tensor<0x1xui64>
    func.return %0 : tensor<0x1xui64>
  }
}
