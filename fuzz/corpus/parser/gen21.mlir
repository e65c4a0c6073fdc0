module {
  func.func @main(%arg0: tensor<5xf32>, %arg1: tensor<5xf32>, %arg2: tensor<5xf32>, %arg3: tensor<5x1xf32>) -> tensor<1xf32> {
    %0 = stablehlo.round_nearest_even %arg0 : tensor<5xf32>
    %1 = stablehlo.reverse %0, dims = [0] : tensor<5xf32>
    %2 = stablehlo.clamp %arg1, %1, %arg2 : tensor<5xf32>
    %3 = stablehlo.dot_general %2, %arg3, contracting_dims = [0] x [0] : (tensor<5xf32>, tensor<5x1xf32>) -> tensor<1xf32>
    func.return %3 : tensor<1xf32>
  }
}
