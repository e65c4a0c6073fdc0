module {
  func.func @main(%arg0: tensor<3x3x3xi16>, %arg1: tensor<3x0xi16>) -> tensor<0xi16> {
    %0 = stablehlo.constant dense<0> : tensor<i16>
    %1 = stablehlo.reduce(%arg0 init: %0) applies stablehlo.add across dimensions = [1, 2] : (tensor<3x3x3xi16>, tensor<i16>) -> tensor<3xi16>
    %2 = stablehlo.dot_general %1, %arg1, contracting_dims = [0] x [0] : (tensor<3xi16>, tensor<3x0xi16>) -> tensor<0xi16>
    %3 = stablehlo.abs %2 : tensor<0xi16>
    %4 = stablehlo.slice %3 [0:0] : (tensor<0xi16>) -> tensor<0xi16>
    func.return %4 : tensor<0xi16>
  }
}
