"""oxla.lowering on its own: a toy policy (no llvmlite, no backend) drives fusion,
scheduling and buffer assignment; effects come from op-table traits."""

from __future__ import annotations

import pytest

from oxla.errors import NotSupportedError
from oxla.ir import parse_module
from oxla.ir.opdef import ELEMENTWISE, lookup_opdef
from oxla.lowering import (
    LoopKernel,
    OpKernel,
    PolicyBase,
    assign_best,
    fuse,
    has_effect,
    op_has_effect,
    pipeline,
    schedule,
)


class ToyPolicy(PolicyBase):
    """Fuses ops with the ELEMENTWISE trait; ``stablehlo.sort`` is its own kernel."""

    name = "toy"

    def is_fusible(self, op):
        d = lookup_opdef(op.name)
        if op.name == "stablehlo.constant":
            return False
        return d is not None and ELEMENTWISE in d.traits

    def classify(self, op):
        return "op" if op.name == "stablehlo.sort" else None


CHAIN = """
func.func @main(%a: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<64xf32> {
  %0 = stablehlo.add %a, %b : tensor<64xf32>
  %1 = stablehlo.exponential %0 : tensor<64xf32>
  %2 = stablehlo.multiply %1, %0 : tensor<64xf32>
  %3 = stablehlo.negate %2 : tensor<64xf32>
  %4 = stablehlo.abs %3 : tensor<64xf32>
  %5 = stablehlo.add %4, %3 : tensor<64xf32>
  return %5 : tensor<64xf32>
}
"""


SORTED = """
func.func @main(%a: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<64xf32> {
  %0 = stablehlo.add %a, %b : tensor<64xf32>
  %1 = "stablehlo.sort"(%0) ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %c = stablehlo.compare LT, %x, %y : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }) {dimension = 0 : i64} : (tensor<64xf32>) -> tensor<64xf32>
  %2 = stablehlo.exponential %1 : tensor<64xf32>
  %3 = "stablehlo.sort"(%2) ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %c = stablehlo.compare GT, %x, %y : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }) {dimension = 0 : i64} : (tensor<64xf32>) -> tensor<64xf32>
  return %3 : tensor<64xf32>
}
"""


def test_toy_policy_fuses_everything_elementwise_into_one_loop():
    plan = fuse(parse_module(CHAIN, "t.mlir"), ToyPolicy())
    (k,) = plan.kernels
    assert isinstance(k, LoopKernel) and k.out.kind == "result" and len(k.fused_ops) == 6


def test_toy_plan_is_scheduled_and_placed():
    plan = fuse(parse_module(SORTED, "t.mlir"), ToyPolicy())
    kinds = [type(k).__name__ for k in plan.kernels]
    assert kinds == ["LoopKernel", "OpKernel", "LoopKernel", "OpKernel"]
    order = list(plan.kernels)
    plan = assign_best(schedule(plan), order)
    temps = [b for k in plan.kernels for b in k.writes() if b.kind == "temp"]
    assert len(temps) == 3 and all(b.offset >= 0 for b in temps)
    # exp(%1) may overwrite %1 (read at its own index, last reader): in place
    assert plan.kernels[2].out.offset == plan.kernels[1].out.offset
    assert plan.kernels[2].out.base is plan.kernels[1].out.base
    assert "1 in place" in plan.describe()


def test_op_the_policy_does_not_take_names_op_location_and_backend():
    text = """
func.func @main(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = stablehlo.dot %a, %b : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}
"""
    with pytest.raises(NotSupportedError) as e:
        fuse(parse_module(text, "m.mlir"), ToyPolicy())
    msg = str(e.value)
    assert "'stablehlo.dot'" in msg and "toy backend" in msg and "m.mlir:3" in msg


def test_op_kernel_from_policy():
    text = """
func.func @main(%a: tensor<8xf32>) -> tensor<8xf32> {
  %0 = "stablehlo.sort"(%a) ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %c = stablehlo.compare LT, %x, %y : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }) {dimension = 0 : i64} : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
"""
    plan = fuse(parse_module(text, "t.mlir"), ToyPolicy())
    (k,) = plan.kernels
    assert isinstance(k, OpKernel) and not k.has_effect


EFFECTS = """
func.func @main(%a: tensor<4xf32>, %t: !stablehlo.token) -> tensor<4xf32> {
  %0 = "stablehlo.all_reduce"(%a) ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %s = stablehlo.add %x, %y : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) {replica_groups = dense<[[0]]> : tensor<1x1xi64>} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = stablehlo.custom_call @f(%0) {has_side_effect = true} : (tensor<4xf32>) -> tensor<4xf32>
  %2 = stablehlo.custom_call @g(%1) : (tensor<4xf32>) -> tensor<4xf32>
  %3 = stablehlo.replica_id : tensor<ui32>
  %4 = "stablehlo.send"(%2, %t) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 2>} : (tensor<4xf32>, !stablehlo.token) -> !stablehlo.token
  return %2 : tensor<4xf32>
}
"""


def test_effects_come_from_op_table_traits():
    ops = {op.name + str(i): op for i, op in enumerate(parse_module(EFFECTS, "e").main.walk())}
    by_name = {}
    for op in ops.values():
        by_name.setdefault(op.name, []).append(op)
    assert op_has_effect(by_name["stablehlo.all_reduce"][0])  # COLLECTIVE
    assert op_has_effect(by_name["stablehlo.send"][0])  # SIDE_EFFECT
    cc = by_name["stablehlo.custom_call"]
    assert op_has_effect(cc[0]) and not op_has_effect(cc[1])  # the attribute decides
    assert not op_has_effect(by_name["stablehlo.replica_id"][0])
    assert not op_has_effect(by_name["stablehlo.add"][0])
    assert has_effect(by_name["func.func"][0])  # nested


def test_pipeline_is_an_explicit_list_of_stages():
    class P(ToyPolicy):
        def stages(self):
            return [pipeline.Stage("done", lambda c: setattr(c, "result", c.plan))]

        def prepare(self, module, options):
            return module, ["prepared"]

    names = [s.name for s in pipeline.stages(P())]
    assert names == ["verify", "prepare", "fusion", "scheduling", "buffer-assignment", "done"]
    plan = pipeline.run(parse_module(CHAIN, "t.mlir"), P(), target=None)
    assert plan.notes[0] == "prepared" and plan.notes[-1].startswith("buffer assignment")
