module {
  func.func @main(%arg0: tensor<3xui16>) -> tensor<ui16> {
    %0 = stablehlo.negate %arg0 : tensor<3xui16>
    %1 = stablehlo.constant dense<0> : tensor<ui16>
    %2 = stablehlo.reduce(%0 init: %1) applies stablehlo.maximum across dimensions = [0] : (tensor<3xui16>, tensor<ui16>) -> tensor<ui16>
    %3 = stablehlo.popcnt %2 : tensor<ui16>
    func.return %3 : tensor<ui16>
  }
}
