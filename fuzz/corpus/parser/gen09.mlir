module {
  func.func @main(%arg0: tensor<f32>, %arg1: tensor<f32>) -> tensor<f32> {
    %0 = stablehlo.multiply %arg0, %arg1 : tensor<f32>
    %1 = stablehlo.round_nearest_even %0 : tensor<f32>
    %2 = stablehlo.negate %1 : tensor<f32>
    func.return %2 : tensor<f32>
  }
}
