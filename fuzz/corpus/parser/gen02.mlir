module {
  func.func @main(%arg0: tensor<5x4xi64>, %arg1: tensor<5x4xi1>, %arg2: tensor<5x4xi64>) -> tensor<5x4xi64> {
    %0 = stablehlo.shift_right_logical %arg0, %arg0 : tensor<5x4xi64>
    %1 = stablehlo.select %arg1, %0, %arg2 : tensor<5x4xi1>, tensor<5x4xi64>
    func.return %1 : tensor<5x4xi64>
  }
}
