// PIPELINE: chlo-legalize-to-stablehlo
// CHECK-LABEL: func.func @chlo
// CHECK-NOT: chlo.
// CHECK: stablehlo.broadcast_in_dim %arg1, dims = [1]
// CHECK: stablehlo.add
// CHECK: stablehlo.multiply %arg0, %arg0
// CHECK: stablehlo.tan
// CHECK: stablehlo.compare EQ
func.func @chlo(%x: tensor<2x3xf32>, %y: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %a = chlo.broadcast_add %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %b = chlo.square %x : tensor<2x3xf32> -> tensor<2x3xf32>
  %c = chlo.tan %x : tensor<2x3xf32> -> tensor<2x3xf32>
  %d = chlo.is_inf %x : tensor<2x3xf32> -> tensor<2x3xi1>
  %e = chlo.asinh %x : tensor<2x3xf32> -> tensor<2x3xf32>
  %f = chlo.erf %x : tensor<2x3xf32> -> tensor<2x3xf32>
  return %a, %b, %c, %d, %e, %f : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>
}
