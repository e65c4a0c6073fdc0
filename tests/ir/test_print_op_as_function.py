"""print_op_as_function: one op (with its regions) as a function of its own that parses
back alone (what a GPU artifact keeps of each host-staged op)."""

from __future__ import annotations

from oxla.ir import parse_module, print_module
from oxla.ir.printer import print_op, print_op_as_function

SRC = """
func.func @main(%x: tensor<4xf32>, %t: !stablehlo.token) -> (tensor<4xf32>, tensor<4xf32>, !stablehlo.token) {
  %n = stablehlo.negate %x : tensor<4xf32>
  %r:2 = "stablehlo.all_reduce"(%n, %n) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    "stablehlo.return"(%s) : (tensor<f32>) -> ()
  }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>,
      use_global_device_ids} : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  %o = "stablehlo.outfeed"(%x, %t) {outfeed_config = "cfg"} : (tensor<4xf32>, !stablehlo.token) -> !stablehlo.token
  func.return %r#0, %r#1, %o : tensor<4xf32>, tensor<4xf32>, !stablehlo.token
}
"""


def _tail(op) -> str:
    """The op's text after its operand list (attributes, regions, types)."""
    return print_op(op, generic=True).split(")", 1)[1]


def test_each_op_reads_back_alone_with_its_region_and_types():
    m = parse_module(SRC, "t.mlir")
    ops = [o for o in m.walk() if o.name in ("stablehlo.all_reduce", "stablehlo.outfeed")]
    for i, op in enumerate(ops):
        text = print_op_as_function(op, f"host{i}")
        back = parse_module(text, "h.mlir")
        f = next(o for o in back.walk() if o.name == "func.func")
        body = list(f.regions[0].blocks[0].ops)
        assert [o.name for o in body] == [op.name, "func.return"]
        assert _tail(body[0]) == _tail(op)
        # an operand used twice is one argument used twice
        args = f.regions[0].blocks[0].args
        want = [args[0]] * 2 if op.name == "stablehlo.all_reduce" else list(args)
        assert [id(v) for v in body[0].operands] == [id(a) for a in want]
        assert print_module(back).count("func.func @host") == 1
