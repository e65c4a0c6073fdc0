// PIPELINE: chlo-legalize-to-stablehlo{strict=true}
// Every CHLO op without a one-to-one StableHLO twin decomposes; none is left.
// CHECK-LABEL: func.func @special
// CHECK-NOT: chlo.
// CHECK: stablehlo.log_plus_one
// CHECK: stablehlo.sine
// CHECK: return
func.func @special(%x: tensor<4xf64>, %h: tensor<4xbf16>) -> (tensor<4xf64>, tensor<4xf64>, tensor<4xf64>, tensor<4xf64>, tensor<4xf64>, tensor<4xf64>, tensor<4xf64>, tensor<4xf64>, tensor<4xbf16>) {
  %0 = chlo.erf %x : tensor<4xf64> -> tensor<4xf64>
  %1 = chlo.erfc %x : tensor<4xf64> -> tensor<4xf64>
  %2 = chlo.erf_inv %x : tensor<4xf64> -> tensor<4xf64>
  %3 = chlo.lgamma %x : tensor<4xf64> -> tensor<4xf64>
  %4 = chlo.digamma %x : tensor<4xf64> -> tensor<4xf64>
  %5 = chlo.bessel_i1e %x : tensor<4xf64> -> tensor<4xf64>
  %6 = chlo.zeta %x, %x : tensor<4xf64>, tensor<4xf64> -> tensor<4xf64>
  %7 = chlo.polygamma %x, %x : tensor<4xf64>, tensor<4xf64> -> tensor<4xf64>
  %8 = chlo.lgamma %h : tensor<4xbf16> -> tensor<4xbf16>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<4xf64>, tensor<4xf64>, tensor<4xf64>, tensor<4xf64>, tensor<4xf64>, tensor<4xf64>, tensor<4xf64>, tensor<4xf64>, tensor<4xbf16>
}

// next_after on the bit patterns; 64-bit mulhi from 32-bit halves.
// CHECK-LABEL: func.func @bits
// CHECK-NOT: chlo.
// CHECK: stablehlo.bitcast_convert %{{.*}} : (tensor<4xf32>) -> tensor<4xui32>
// CHECK: stablehlo.bitcast_convert %{{.*}} : (tensor<4xui32>) -> tensor<4xf32>
// CHECK: stablehlo.shift_right_logical
func.func @bits(%x: tensor<4xf32>, %a: tensor<4xi64>) -> (tensor<4xf32>, tensor<4xi64>) {
  %0 = chlo.next_after %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %1 = "chlo.mulhi"(%a, %a) : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return %0, %1 : tensor<4xf32>, tensor<4xi64>
}

// CHECK-LABEL: func.func @complex
// CHECK-NOT: chlo.
// CHECK: stablehlo.real
// CHECK: stablehlo.atan2
// CHECK: stablehlo.complex
func.func @complex(%z: tensor<3xcomplex<f32>>) -> (tensor<3xcomplex<f32>>, tensor<3xcomplex<f32>>, tensor<3xcomplex<f32>>, tensor<3xcomplex<f32>>, tensor<3xcomplex<f32>>, tensor<3xcomplex<f32>>, tensor<3xcomplex<f32>>, tensor<3xcomplex<f32>>) {
  %0 = chlo.asin %z : tensor<3xcomplex<f32>> -> tensor<3xcomplex<f32>>
  %1 = chlo.acos %z : tensor<3xcomplex<f32>> -> tensor<3xcomplex<f32>>
  %2 = chlo.asinh %z : tensor<3xcomplex<f32>> -> tensor<3xcomplex<f32>>
  %3 = chlo.acosh %z : tensor<3xcomplex<f32>> -> tensor<3xcomplex<f32>>
  %4 = chlo.atan %z : tensor<3xcomplex<f32>> -> tensor<3xcomplex<f32>>
  %5 = chlo.atanh %z : tensor<3xcomplex<f32>> -> tensor<3xcomplex<f32>>
  %6 = chlo.sinh %z : tensor<3xcomplex<f32>> -> tensor<3xcomplex<f32>>
  %7 = chlo.cosh %z : tensor<3xcomplex<f32>> -> tensor<3xcomplex<f32>>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<3xcomplex<f32>>, tensor<3xcomplex<f32>>, tensor<3xcomplex<f32>>, tensor<3xcomplex<f32>>, tensor<3xcomplex<f32>>, tensor<3xcomplex<f32>>, tensor<3xcomplex<f32>>, tensor<3xcomplex<f32>>
}

// top_k: stable descending sort with an iota, then a slice of k.
// CHECK-LABEL: func.func @top_k
// CHECK-NOT: chlo.
// CHECK: stablehlo.iota dim = 1
// CHECK: "stablehlo.sort"
// CHECK: stablehlo.compare GT, {{.*}}TOTALORDER
// CHECK: stablehlo.slice
func.func @top_k(%x: tensor<2x5xf32>) -> (tensor<2x3xf32>, tensor<2x3xi32>) {
  %v, %i = chlo.top_k(%x, k = 3) : tensor<2x5xf32> -> (tensor<2x3xf32>, tensor<2x3xi32>)
  return %v, %i : tensor<2x3xf32>, tensor<2x3xi32>
}

// scan: a while loop with dynamic_slice / dynamic_update_slice.
// CHECK-LABEL: func.func @scan
// CHECK-NOT: chlo.
// CHECK: stablehlo.while
// CHECK: stablehlo.dynamic_slice
// CHECK: stablehlo.dynamic_update_slice
func.func @scan(%x: tensor<4xi32>, %c: tensor<i32>) -> (tensor<4xi32>, tensor<i32>) {
  %0:2 = chlo.scan(%x) inits(%c) dimension=0 {
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    %1 = stablehlo.add %a, %b : tensor<i32>
    stablehlo.return %1, %1 : tensor<i32>, tensor<i32>
  } : (tensor<4xi32>, tensor<i32>) -> (tensor<4xi32>, tensor<i32>)
  return %0#0, %0#1 : tensor<4xi32>, tensor<i32>
}

// ragged_dot (ragged lhs rows): one dot_general per group, rows masked by select.
// CHECK-LABEL: func.func @ragged
// CHECK-NOT: chlo.
// CHECK: stablehlo.dot_general
// CHECK: stablehlo.select
// CHECK: stablehlo.dot_general
// CHECK: stablehlo.select
func.func @ragged(%l: tensor<5x3xf32>, %r: tensor<2x3x4xf32>, %g: tensor<2xi64>) -> tensor<5x4xf32> {
  %0 = "chlo.ragged_dot"(%l, %r, %g) {
    ragged_dot_dimension_numbers = #chlo.ragged_dot<
      lhs_batching_dimensions = [], rhs_batching_dimensions = [],
      lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1],
      lhs_ragged_dimensions = [0], rhs_group_dimensions = [0]>
  } : (tensor<5x3xf32>, tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<5x4xf32>
  return %0 : tensor<5x4xf32>
}
