module {
  "func.func"() <{function_type = (tensor<3x2xui8>, tensor<3x2xui8>, tensor<3x2xui8>) -> tensor<3x2xui8>, sym_name = "main"}> ({
      ^bb0(%arg0: tensor<3x2xui8>, %arg1: tensor<3x2xui8>, %arg2: tensor<3x2xui8>):
    %0 = "stablehlo.clamp"(%arg1, %arg0, %arg2) : (tensor<3x2xui8>, tensor<3x2xui8>, tensor<3x2xui8>) -> tensor<3x2xui8>
    "func.return"(%0) : (tensor<3x2xui8>) -> ()
  }) : () -> ()
}
