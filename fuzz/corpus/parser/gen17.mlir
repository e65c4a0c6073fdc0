module {
  func.func @main(%arg0: tensor<2xbf16>, %arg1: tensor<2xbf16>, %arg2: tensor<2xi1>, %arg3: tensor<2xbf16>) -> tensor<2xbf16> {
    %0 = stablehlo.clamp %arg1, %arg0, %arg0 : tensor<2xbf16>
    %1 = stablehlo.reverse %0, dims = [0] : tensor<2xbf16>
    %2 = stablehlo.sqrt %1 : tensor<2xbf16>
    %3 = stablehlo.select %arg2, %2, %arg3 : tensor<2xi1>, tensor<2xbf16>
    func.return %3 : tensor<2xbf16>
  }
}
