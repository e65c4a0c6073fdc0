module {
  func.func @main(%arg0: tensor<5xi8>) -> tensor<0xi8> {
    %0 = stablehlo.slice %arg0 [5:5:2] : (tensor<5xi8>) -> tensor<0xi8>
    func.return %0 : tensor<0xi8>
  }
}
