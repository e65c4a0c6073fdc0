module {
  func.func @main(%arg0: tensor<1x4xi32>, %arg1: tensor<1x4xi1>, %arg2: tensor<1x4xi32>) -> tensor<1x4xi32> {
    %0 = stablehlo.select %arg1, %arg0, %arg2 : tensor<1x4xi1>, tensor<1x4xi32>
    func.return %0 : tensor<1x4xi32>
  }
}
