module {
  func.func @main(%arg0: tensor<5xbf16>) -> tensor<0x3xi1> {
    %0 = stablehlo.slice %arg0 [1:1:2] : (tensor<5xbf16>) -> tensor<0xbf16>
    %1 = stablehlo.compare  GT, %0, %0,  FLOAT : (tensor<0xbf16>, tensor<0xbf16>) -> tensor<0xi1>
    %2 = stablehlo.not %1 : tensor<0xi1>
    %3 = stablehlo.broadcast_in_dim %2, dims = [0] : (tensor<0xi1>) -> tensor<0x3xi1>
    func.return %3 : tensor<0x3xi1>
  }
}
