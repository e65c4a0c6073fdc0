module {
  func.func @main(%arg0: tensor<2x5xf16>, %arg1: tensor<2x5xf16>) -> tensor<3x8xi1> {
    %0 = stablehlo.compare  NE, %arg0, %arg1,  FLOAT : (tensor<2x5xf16>, tensor<2x5xf16>) -> tensor<2x5xi1>
    %1 = stablehlo.constant dense<true> : tensor<i1>
    %2 = stablehlo.pad %0, %1, low = [0, 1], high = [1, 2], interior = [0, 0] : (tensor<2x5xi1>, tensor<i1>) -> tensor<3x8xi1>
    func.return %2 : tensor<3x8xi1>
  }
}
