module {
  func.func @main(%arg0: tensor<1x0x1xf64>) -> tensor<1x0x1xf64> {
    %0 = stablehlo.round_nearest_even %arg0 : tensor<1x0x1xf64>
    %1 = stablehlo.sine %0 : tensor<1x0x1xf64>
    func.return %1 : tensor<1x0x1xf64>
  }
}
