module {
  func.func @main(%arg0: tensor<3xf32>) -> tensor<0x0xi1> {
    %0 = stablehlo.reshape %arg0 : (tensor<3xf32>) -> tensor<3x1xf32>
    %1 = stablehlo.compare  LT, %0, %0,  FLOAT : (tensor<3x1xf32>, tensor<3x1xf32>) -> tensor<3x1xi1>
    %2 = stablehlo.transpose %1, dims = [0, 1] : (tensor<3x1xi1>) -> tensor<3x1xi1>
    %3 = stablehlo.slice %2 [2:2, 1:1:2] : (tensor<3x1xi1>) -> tensor<0x0xi1>
    func.return %3 : tensor<0x0xi1>
  }
}
