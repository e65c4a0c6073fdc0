module {
  func.func @main(%arg0: tensor<5x1x1xui8>) -> tensor<0x0xui8> {
    %0 = stablehlo.slice %arg0 [5:5:2, 1:1:2, 1:1] : (tensor<5x1x1xui8>) -> tensor<0x0x0xui8>
    %1 = stablehlo.constant dense<0> : tensor<ui8>
    %2 = stablehlo.reduce(%0 init: %1) applies stablehlo.maximum across dimensions = [1] : (tensor<0x0x0xui8>, tensor<ui8>) -> tensor<0x0xui8>
    %3 = stablehlo.transpose %2, dims = [0, 1] : (tensor<0x0xui8>) -> tensor<0x0xui8>
    func.return %3 : tensor<0x0xui8>
  }
}
