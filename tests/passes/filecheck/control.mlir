// PIPELINE: canonicalize
// CHECK-LABEL: func.func @reduce_unit
// CHECK-NOT: stablehlo.reduce
// CHECK: stablehlo.reshape %arg0 : (tensor<1x4xi32>) -> tensor<4xi32>
func.func @reduce_unit(%x: tensor<1x4xi32>) -> tensor<4xi32> {
  %z = stablehlo.constant dense<0> : tensor<i32>
  %r = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0] : (tensor<1x4xi32>, tensor<i32>) -> tensor<4xi32>
  return %r : tensor<4xi32>
}
// CHECK-LABEL: func.func @reduce_unit_pos_zero_float_stays
// CHECK: stablehlo.reduce
func.func @reduce_unit_pos_zero_float_stays(%x: tensor<1x4xf32>) -> tensor<4xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %r = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0] : (tensor<1x4xf32>, tensor<f32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
// CHECK-LABEL: func.func @if_const
// CHECK-NOT: stablehlo.if
// CHECK: stablehlo.negate %arg0
func.func @if_const(%x: tensor<f32>) -> tensor<f32> {
  %p = stablehlo.constant dense<true> : tensor<i1>
  %r = "stablehlo.if"(%p) ({
    %n = stablehlo.negate %x : tensor<f32>
    stablehlo.return %n : tensor<f32>
  }, {
    stablehlo.return %x : tensor<f32>
  }) : (tensor<i1>) -> tensor<f32>
  return %r : tensor<f32>
}
// CHECK-LABEL: func.func @case_const
// CHECK-NOT: stablehlo.case
// CHECK: stablehlo.abs %arg0
func.func @case_const(%x: tensor<f32>) -> tensor<f32> {
  %i = stablehlo.constant dense<7> : tensor<i32>
  %r = "stablehlo.case"(%i) ({
    %n = stablehlo.negate %x : tensor<f32>
    stablehlo.return %n : tensor<f32>
  }, {
    %a = stablehlo.abs %x : tensor<f32>
    stablehlo.return %a : tensor<f32>
  }) : (tensor<i32>) -> tensor<f32>
  return %r : tensor<f32>
}
// CHECK-LABEL: func.func @while_zero_trip
// CHECK-NOT: stablehlo.while
// CHECK: return %arg0
func.func @while_zero_trip(%x: tensor<f32>) -> tensor<f32> {
  %r = "stablehlo.while"(%x) ({
  ^bb0(%a: tensor<f32>):
    %f = stablehlo.constant dense<false> : tensor<i1>
    stablehlo.return %f : tensor<i1>
  }, {
  ^bb0(%a: tensor<f32>):
    %n = stablehlo.negate %a : tensor<f32>
    stablehlo.return %n : tensor<f32>
  }) : (tensor<f32>) -> tensor<f32>
  return %r : tensor<f32>
}
