module {
  func.func @main(%arg0: tensor<2x3xui32>, %arg1: tensor<2x3xui32>, %arg2: tensor<2x3xi1>, %arg3: tensor<2x3xui32>) -> tensor<2x0x3xui32> {
    %0 = stablehlo.add %arg0, %arg1 : tensor<2x3xui32>
    %1 = stablehlo.select %arg2, %0, %0 : tensor<2x3xi1>, tensor<2x3xui32>
    %2 = stablehlo.clamp %1, %1, %arg3 : tensor<2x3xui32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [0, 2] : (tensor<2x3xui32>) -> tensor<2x0x3xui32>
    func.return %3 : tensor<2x0x3xui32>
  }
}
