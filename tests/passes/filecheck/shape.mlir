// PIPELINE: canonicalize
// CHECK-LABEL: func.func @reshape_chain
// CHECK: stablehlo.reshape %arg0 : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NOT: stablehlo.reshape
func.func @reshape_chain(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %a = stablehlo.reshape %x : (tensor<2x3xf32>) -> tensor<6xf32>
  %b = stablehlo.reshape %a : (tensor<6xf32>) -> tensor<3x2xf32>
  return %b : tensor<3x2xf32>
}
// CHECK-LABEL: func.func @reshape_same
// CHECK-NOT: stablehlo.reshape
func.func @reshape_same(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = stablehlo.reshape %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %a : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @transpose_chain
// CHECK: stablehlo.transpose %arg0, dims = [2, 1, 0]
// CHECK-NOT: stablehlo.transpose
func.func @transpose_chain(%x: tensor<2x3x4xf32>) -> tensor<4x3x2xf32> {
  %a = stablehlo.transpose %x, dims = [1, 0, 2] : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %b = stablehlo.transpose %a, dims = [2, 0, 1] : (tensor<3x2x4xf32>) -> tensor<4x3x2xf32>
  return %b : tensor<4x3x2xf32>
}
// CHECK-LABEL: func.func @transpose_inverse
// CHECK-NOT: stablehlo.transpose
func.func @transpose_inverse(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = stablehlo.transpose %x, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %b = stablehlo.transpose %a, dims = [1, 0] : (tensor<3x2xf32>) -> tensor<2x3xf32>
  return %b : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @broadcast_chain
// CHECK: stablehlo.broadcast_in_dim %arg0, dims = [2] : (tensor<3xf32>) -> tensor<4x2x3xf32>
// CHECK-NOT: stablehlo.broadcast_in_dim
func.func @broadcast_chain(%x: tensor<3xf32>) -> tensor<4x2x3xf32> {
  %a = stablehlo.broadcast_in_dim %x, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
  %b = stablehlo.broadcast_in_dim %a, dims = [1, 2] : (tensor<2x3xf32>) -> tensor<4x2x3xf32>
  return %b : tensor<4x2x3xf32>
}
// CHECK-LABEL: func.func @broadcast_identity
// CHECK-NOT: stablehlo.broadcast_in_dim
func.func @broadcast_identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = stablehlo.broadcast_in_dim %x, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %a : tensor<2x3xf32>
}
// CHECK-LABEL: func.func @convert_exact
// CHECK: stablehlo.convert %arg0 : (tensor<4xf16>) -> tensor<4xf64>
// CHECK-NOT: stablehlo.convert
func.func @convert_exact(%x: tensor<4xf16>) -> tensor<4xf64> {
  %a = stablehlo.convert %x : (tensor<4xf16>) -> tensor<4xf32>
  %b = stablehlo.convert %a : (tensor<4xf32>) -> tensor<4xf64>
  return %b : tensor<4xf64>
}
// CHECK-LABEL: func.func @convert_rounding_stays
// CHECK: stablehlo.convert %arg0 : (tensor<4xf32>) -> tensor<4xf16>
// CHECK: stablehlo.convert {{.*}} : (tensor<4xf16>) -> tensor<4xf32>
func.func @convert_rounding_stays(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = stablehlo.convert %x : (tensor<4xf32>) -> tensor<4xf16>
  %b = stablehlo.convert %a : (tensor<4xf16>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}
// CHECK-LABEL: func.func @convert_truncation_stays
// CHECK: (tensor<4xf32>) -> tensor<4xi32>
// CHECK: (tensor<4xi32>) -> tensor<4xf32>
func.func @convert_truncation_stays(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = stablehlo.convert %x : (tensor<4xf32>) -> tensor<4xi32>
  %b = stablehlo.convert %a : (tensor<4xi32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}
// CHECK-LABEL: func.func @convert_same
// CHECK-NOT: stablehlo.convert
func.func @convert_same(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = stablehlo.convert %x : tensor<4xf32>
  return %a : tensor<4xf32>
}
// CHECK-LABEL: func.func @slice_chain
// CHECK: stablehlo.slice %arg0 [3:10:4]
// CHECK-NOT: stablehlo.slice
func.func @slice_chain(%x: tensor<10xf32>) -> tensor<2xf32> {
  %a = stablehlo.slice %x [1:10:2] : (tensor<10xf32>) -> tensor<5xf32>
  %b = stablehlo.slice %a [1:5:2] : (tensor<5xf32>) -> tensor<2xf32>
  return %b : tensor<2xf32>
}
// CHECK-LABEL: func.func @slice_full
// CHECK-NOT: stablehlo.slice
func.func @slice_full(%x: tensor<10xf32>) -> tensor<10xf32> {
  %a = stablehlo.slice %x [0:10:1] : (tensor<10xf32>) -> tensor<10xf32>
  return %a : tensor<10xf32>
}
// CHECK-LABEL: func.func @concat_single
// CHECK-NOT: stablehlo.concatenate
func.func @concat_single(%x: tensor<10xf32>) -> tensor<10xf32> {
  %a = stablehlo.concatenate %x, dim = 0 : (tensor<10xf32>) -> tensor<10xf32>
  return %a : tensor<10xf32>
}
// CHECK-LABEL: func.func @select_const
// CHECK-NOT: stablehlo.select
// CHECK: return %arg1
func.func @select_const(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %p = stablehlo.constant dense<false> : tensor<4xi1>
  %a = stablehlo.select %p, %x, %y : tensor<4xi1>, tensor<4xf32>
  return %a : tensor<4xf32>
}
// CHECK-LABEL: func.func @pad_zero
// CHECK-NOT: stablehlo.pad
func.func @pad_zero(%x: tensor<4xf32>, %v: tensor<f32>) -> tensor<4xf32> {
  %a = stablehlo.pad %x, %v, low = [0], high = [0], interior = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}
// CHECK-LABEL: func.func @dynamic_slice_const
// CHECK: stablehlo.slice %arg0 [6:10]
// CHECK-NOT: stablehlo.dynamic_slice
func.func @dynamic_slice_const(%x: tensor<10xf32>) -> tensor<4xf32> {
  %i = stablehlo.constant dense<8> : tensor<i32>
  %a = stablehlo.dynamic_slice %x, %i, sizes = [4] : (tensor<10xf32>, tensor<i32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}
// CHECK-LABEL: func.func @dynamic_static
// CHECK: stablehlo.reshape
// CHECK: stablehlo.broadcast_in_dim
// CHECK: stablehlo.iota
// CHECK-NOT: stablehlo.dynamic
func.func @dynamic_static(%x: tensor<6xf32>, %y: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xi32>) {
  %s = stablehlo.constant dense<[2, 3]> : tensor<2xi64>
  %s4 = stablehlo.constant dense<[4]> : tensor<1xi64>
  %a = stablehlo.dynamic_reshape %x, %s : (tensor<6xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  %b = stablehlo.dynamic_broadcast_in_dim %y, %s, dims = [1] : (tensor<3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  %c = stablehlo.dynamic_iota %s4, dim = 0 : (tensor<1xi64>) -> tensor<4xi32>
  return %a, %b, %c : tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xi32>
}
