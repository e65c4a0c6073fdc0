module {
  func.func @main(%arg0: tensor<1xi32>, %arg1: tensor<1x3xi32>, %arg2: tensor<3xi32>) -> tensor<3xf64> {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [0] x [0] : (tensor<1xi32>, tensor<1x3xi32>) -> tensor<3xi32>
    %1 = stablehlo.clamp %arg2, %0, %0 : tensor<3xi32>
    %2 = stablehlo.convert %1 : (tensor<3xi32>) -> tensor<3xf64>
    func.return %2 : tensor<3xf64>
  }
}
