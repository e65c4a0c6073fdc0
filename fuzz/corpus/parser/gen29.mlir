module {
  func.func @main(%arg0: tensor<2x2xui64>, %arg1: tensor<ui64>) -> tensor<i1> {
    %0 = stablehlo.constant dense<0> : tensor<ui64>
    %1 = stablehlo.reduce(%arg0 init: %0) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x2xui64>, tensor<ui64>) -> tensor<ui64>
    %2 = stablehlo.compare  LT, %1, %arg1,  UNSIGNED : (tensor<ui64>, tensor<ui64>) -> tensor<i1>
    func.return %2 : tensor<i1>
  }
}
