// PIPELINE: inline,cse,dce
// CHECK-LABEL: func.func @main
// CHECK-NOT: call
// CHECK: %[[A:.*]] = stablehlo.add %arg0, %arg0
// CHECK-NOT: stablehlo.add
// CHECK-NOT: stablehlo.multiply
// CHECK: stablehlo.custom_call @check.expect_eq
// CHECK: stablehlo.custom_call @side
// CHECK: return %[[A]], %[[A]]
// CHECK-NOT: func.func private @helper
func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %b = stablehlo.add %x, %x : tensor<4xf32>
  %dead = stablehlo.multiply %a, %b : tensor<4xf32>
  stablehlo.custom_call @check.expect_eq(%a, %b) {has_side_effect = true} : (tensor<4xf32>, tensor<4xf32>) -> ()
  %s = stablehlo.custom_call @side(%a) {has_side_effect = true} : (tensor<4xf32>) -> tensor<4xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}
func.func private @helper(%y: tensor<4xf32>) -> tensor<4xf32> {
  %r = stablehlo.add %y, %y : tensor<4xf32>
  return %r : tensor<4xf32>
}
