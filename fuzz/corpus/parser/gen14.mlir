module {
  func.func @main(%arg0: tensor<5x1xi32>, %arg1: tensor<5x1xi32>) -> tensor<i32> {
    %0 = stablehlo.multiply %arg0, %arg1 : tensor<5x1xi32>
    %1 = stablehlo.constant dense<-2147483648> : tensor<i32>
    %2 = stablehlo.reduce(%0 init: %1) applies stablehlo.maximum across dimensions = [0, 1] : (tensor<5x1xi32>, tensor<i32>) -> tensor<i32>
    func.return %2 : tensor<i32>
  }
}
