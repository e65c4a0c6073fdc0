func.func @main(%x: tensor<2x?xi32>, %y: tensor<i64>) -> tensor<2x?xi32> {
  %c = stablehlo.constant dense_resource<blob1> : tensor<2xi32>
  %r = stablehlo.compare LT, %y, %y, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
  %s = "stablehlo.case"(%r) ({
    stablehlo.return %x : tensor<2x?xi32>
  }, {
    stablehlo.return %x : tensor<2x?xi32>
  }) : (tensor<i1>) -> tensor<2x?xi32>
  %q = stablehlo.uniform_quantize %c : (tensor<2xi32>) -> tensor<2x!quant.uniform<i8:f32, 0.5:-3>>
  %p = interpreter.print %s : tensor<2x?xi32>
  return %p : tensor<2x?xi32>
}
{-#
  dialect_resources: {
    builtin: {
      blob1: "0x040000000100000002000000"
    }
  }
#-}
