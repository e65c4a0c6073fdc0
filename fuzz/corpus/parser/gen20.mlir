module {
  func.func @main(%arg0: tensor<1xui8>) -> tensor<1xui8> {
    %0 = stablehlo.reverse %arg0, dims = [0] : tensor<1xui8>
    func.return %0 : tensor<1xui8>
  }
}
