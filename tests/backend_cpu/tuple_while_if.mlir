func.func @main(%a: tensor<4xf32>, %n: tensor<i32>) -> (tensor<4xf32>, tensor<i32>, tensor<4xf32>) {
  %z = stablehlo.constant dense<0> : tensor<i32>
  %in = stablehlo.tuple %a, %a : tuple<tensor<4xf32>, tensor<4xf32>>
  %t = stablehlo.tuple %z, %in : tuple<tensor<i32>, tuple<tensor<4xf32>, tensor<4xf32>>>
  %w = stablehlo.while(%s = %t) : tuple<tensor<i32>, tuple<tensor<4xf32>, tensor<4xf32>>>
    cond {
      %i = stablehlo.get_tuple_element %s[0] : (tuple<tensor<i32>, tuple<tensor<4xf32>, tensor<4xf32>>>) -> tensor<i32>
      %c = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %i = stablehlo.get_tuple_element %s[0] : (tuple<tensor<i32>, tuple<tensor<4xf32>, tensor<4xf32>>>) -> tensor<i32>
      %p = stablehlo.get_tuple_element %s[1] : (tuple<tensor<i32>, tuple<tensor<4xf32>, tensor<4xf32>>>) -> tuple<tensor<4xf32>, tensor<4xf32>>
      %x = stablehlo.get_tuple_element %p[0] : (tuple<tensor<4xf32>, tensor<4xf32>>) -> tensor<4xf32>
      %y = stablehlo.get_tuple_element %p[1] : (tuple<tensor<4xf32>, tensor<4xf32>>) -> tensor<4xf32>
      %one = stablehlo.constant dense<1> : tensor<i32>
      %i1 = stablehlo.add %i, %one : tensor<i32>
      %x1 = stablehlo.add %x, %y : tensor<4xf32>
      %y1 = stablehlo.multiply %y, %x1 : tensor<4xf32>
      %p1 = stablehlo.tuple %x1, %y1 : tuple<tensor<4xf32>, tensor<4xf32>>
      %r = stablehlo.tuple %i1, %p1 : tuple<tensor<i32>, tuple<tensor<4xf32>, tensor<4xf32>>>
      stablehlo.return %r : tuple<tensor<i32>, tuple<tensor<4xf32>, tensor<4xf32>>>
    }
  %c0 = stablehlo.compare GT, %n, %z : (tensor<i32>, tensor<i32>) -> tensor<i1>
  %b = "stablehlo.if"(%c0) ({
      stablehlo.return %w : tuple<tensor<i32>, tuple<tensor<4xf32>, tensor<4xf32>>>
    }, {
      stablehlo.return %t : tuple<tensor<i32>, tuple<tensor<4xf32>, tensor<4xf32>>>
    }) : (tensor<i1>) -> tuple<tensor<i32>, tuple<tensor<4xf32>, tensor<4xf32>>>
  %k = stablehlo.get_tuple_element %b[0] : (tuple<tensor<i32>, tuple<tensor<4xf32>, tensor<4xf32>>>) -> tensor<i32>
  %q = stablehlo.get_tuple_element %b[1] : (tuple<tensor<i32>, tuple<tensor<4xf32>, tensor<4xf32>>>) -> tuple<tensor<4xf32>, tensor<4xf32>>
  %u = stablehlo.get_tuple_element %q[0] : (tuple<tensor<4xf32>, tensor<4xf32>>) -> tensor<4xf32>
  %v = stablehlo.get_tuple_element %q[1] : (tuple<tensor<4xf32>, tensor<4xf32>>) -> tensor<4xf32>
  return %u, %k, %v : tensor<4xf32>, tensor<i32>, tensor<4xf32>
}
