// PIPELINE: canonicalize
// CHECK-LABEL: func.func @mul_one
// CHECK-NOT: stablehlo.multiply
// CHECK: return %arg0, %arg1
func.func @mul_one(%x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xi32>) {
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %ione = stablehlo.constant dense<1> : tensor<4xi32>
  %a = stablehlo.multiply %x, %one : tensor<4xf32>
  %b = stablehlo.multiply %ione, %i : tensor<4xi32>
  return %a, %b : tensor<4xf32>, tensor<4xi32>
}
// CHECK-LABEL: func.func @mul_one_complex_stays
// CHECK: stablehlo.multiply
func.func @mul_one_complex_stays(%x: tensor<2xcomplex<f32>>) -> tensor<2xcomplex<f32>> {
  %one = stablehlo.constant dense<(1.0, 0.0)> : tensor<2xcomplex<f32>>
  %a = stablehlo.multiply %x, %one : tensor<2xcomplex<f32>>
  return %a : tensor<2xcomplex<f32>>
}
// CHECK-LABEL: func.func @mul_zero_int
// CHECK-NOT: stablehlo.multiply
// CHECK: stablehlo.constant dense<0>
func.func @mul_zero_int(%i: tensor<4xi32>) -> tensor<4xi32> {
  %z = stablehlo.constant dense<0> : tensor<4xi32>
  %b = stablehlo.multiply %i, %z : tensor<4xi32>
  return %b : tensor<4xi32>
}
// CHECK-LABEL: func.func @mul_zero_float_stays
// CHECK: stablehlo.multiply
func.func @mul_zero_float_stays(%x: tensor<4xf32>) -> tensor<4xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<4xf32>
  %b = stablehlo.multiply %x, %z : tensor<4xf32>
  return %b : tensor<4xf32>
}
// CHECK-LABEL: func.func @add_zero
// CHECK-NOT: stablehlo.add
// CHECK: return %arg0, %arg1
func.func @add_zero(%x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xi32>) {
  %nz = stablehlo.constant dense<-0.0> : tensor<4xf32>
  %z = stablehlo.constant dense<0> : tensor<4xi32>
  %a = stablehlo.add %x, %nz : tensor<4xf32>
  %b = stablehlo.add %z, %i : tensor<4xi32>
  return %a, %b : tensor<4xf32>, tensor<4xi32>
}
// CHECK-LABEL: func.func @add_pos_zero_float_stays
// CHECK: stablehlo.add
func.func @add_pos_zero_float_stays(%x: tensor<4xf32>) -> tensor<4xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<4xf32>
  %a = stablehlo.add %x, %z : tensor<4xf32>
  return %a : tensor<4xf32>
}
// CHECK-LABEL: func.func @sub_zero
// CHECK-NOT: stablehlo.subtract
// CHECK: return %arg0, %arg1
func.func @sub_zero(%x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xi32>) {
  %z = stablehlo.constant dense<0.0> : tensor<4xf32>
  %iz = stablehlo.constant dense<0> : tensor<4xi32>
  %a = stablehlo.subtract %x, %z : tensor<4xf32>
  %b = stablehlo.subtract %i, %iz : tensor<4xi32>
  return %a, %b : tensor<4xf32>, tensor<4xi32>
}
// CHECK-LABEL: func.func @sub_neg_zero_float_stays
// CHECK: stablehlo.subtract
func.func @sub_neg_zero_float_stays(%x: tensor<4xf32>) -> tensor<4xf32> {
  %z = stablehlo.constant dense<-0.0> : tensor<4xf32>
  %a = stablehlo.subtract %x, %z : tensor<4xf32>
  return %a : tensor<4xf32>
}
// CHECK-LABEL: func.func @sub_self_int
// CHECK-NOT: stablehlo.subtract
// CHECK: stablehlo.constant dense<0>
func.func @sub_self_int(%i: tensor<4xi32>) -> tensor<4xi32> {
  %a = stablehlo.subtract %i, %i : tensor<4xi32>
  return %a : tensor<4xi32>
}
// CHECK-LABEL: func.func @sub_self_float_stays
// CHECK: stablehlo.subtract %arg0, %arg0
func.func @sub_self_float_stays(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = stablehlo.subtract %x, %x : tensor<4xf32>
  return %a : tensor<4xf32>
}
// CHECK-LABEL: func.func @div_one
// CHECK-NOT: stablehlo.divide
func.func @div_one(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %a = stablehlo.divide %x, %one : tensor<4xf32>
  return %a : tensor<4xf32>
}
// CHECK-LABEL: func.func @involutions
// CHECK-NOT: stablehlo.negate
// CHECK-NOT: stablehlo.not
// CHECK: return %arg0, %arg1
func.func @involutions(%x: tensor<4xf32>, %p: tensor<4xi1>) -> (tensor<4xf32>, tensor<4xi1>) {
  %a = stablehlo.negate %x : tensor<4xf32>
  %b = stablehlo.negate %a : tensor<4xf32>
  %c = stablehlo.not %p : tensor<4xi1>
  %d = stablehlo.not %c : tensor<4xi1>
  return %b, %d : tensor<4xf32>, tensor<4xi1>
}
// CHECK-LABEL: func.func @and_or_self
// CHECK-NOT: stablehlo.and
// CHECK-NOT: stablehlo.or
func.func @and_or_self(%p: tensor<4xi1>) -> (tensor<4xi1>, tensor<4xi1>) {
  %a = stablehlo.and %p, %p : tensor<4xi1>
  %b = stablehlo.or %p, %p : tensor<4xi1>
  return %a, %b : tensor<4xi1>, tensor<4xi1>
}
