module {
  func.func @main(%arg0: tensor<f32>) -> tensor<f32> {
    %0 = stablehlo.negate %arg0 : tensor<f32>
    %1 = stablehlo.cbrt %0 : tensor<f32>
    func.return %1 : tensor<f32>
  }
}
