module {
  func.func @main(%arg0: tensor<bf16>) -> tensor<1xf64> {
    %0 = stablehlo.negate %arg0 : tensor<bf16>
    %1 = stablehlo.convert %0 : (tensor<bf16>) -> tensor<f64>
    %2 = stablehlo.negate %1 : tensor<f64>
    %3 = stablehlo.reshape %2 : (tensor<f64>) -> tensor<1xf64>
    %4 = stablehlo.tanh %3 : tensor<1xf64>
    func.return %4 : tensor<1xf64>
  }
}
