#map = dense<1.0> : tensor<2xf32>
!t = tensor<2xf32>
module @m attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%a: !t {jax.arg_info = "a"}, %t: tuple<tensor<f32>, tensor<i1>>) -> (!t {jax.result_info = ""}) {
    %c = stablehlo.constant #map
    %0 = stablehlo.add %a, %c : !t loc("add"("x.py":3:4))
    %e = stablehlo.get_tuple_element %t[0] : (tuple<tensor<f32>, tensor<i1>>) -> tensor<f32>
    %1:2 = stablehlo.while(%i = %a, %j = %0) : !t, !t
     cond {
      %k = stablehlo.constant dense<false> : tensor<i1>
      stablehlo.return %k : tensor<i1>
    } do {
      stablehlo.return %i, %j : !t, !t
    }
    %2 = "stablehlo.reduce"(%1#0, %e) ({
    ^bb0(%x: tensor<f32>, %y: tensor<f32>):
      %s = stablehlo.maximum %x, %y : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) {dimensions = array<i64: 0>} : (!t, tensor<f32>) -> tensor<f32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<f32>) -> !t
    %4 = chlo.sinh %3 : !t -> !t
    return %4 : !t
  }
}
// end }
