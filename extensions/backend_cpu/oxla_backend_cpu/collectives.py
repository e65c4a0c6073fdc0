"""Collective, point-to-point and streaming ops on the cpu backend: codegen side.

XLA:CPU runs the processes of a replica x partition grid as threads of one process and
implements its collectives in a runtime library the generated code calls. oxla does the
same (spec sections "Parallel execution", "Collective ops", "Point-to-point
communication", "Streaming communication"):

* every op of :data:`RUNTIME_OPS` becomes an op kernel that packs the addresses of its
  tensor operands and results into two pointer arrays and calls

      void oxla_collective_callback(i64 op_index, ptr inputs, ptr outputs)

  through the module global of that name (:data:`CALLBACK`); ``op_index`` numbers the
  runtime ops of ``main`` in walk order (:func:`runtime_ops`), and the op's attributes
  and types travel in the code as a JSON constant (:data:`DESCRIPTOR`, :func:`describe`),
  so a cached or loaded executable needs no IR;
* a reducing op (``all_reduce``, ``reduce_scatter``, ``collective_reduce``) also gets an
  exported native combiner ``void oxla_combine_<op_index>(ptr acc, ptr x, i64 n)``
  computing ``acc[i] = computation(acc[i], x[i])``: the reduction body runs as machine
  code, never through the interpreter;
* tokens (``!stablehlo.token``) are buffers of zero bytes; ``after_all`` and
  ``create_token`` emit nothing;
* communicating and side-effecting ops (op-table traits ``COLLECTIVE``/``SIDE_EFFECT``,
  :mod:`oxla.lowering.effects`) are always live and keep their program order: processes
  must meet at rendezvous in the same order, and sends on one channel arrive in
  program order.

The runtime (process grid, rendezvous, the ops' semantics on numpy views of the
buffers) is :mod:`oxla_backend_cpu.collectives_runtime`.
"""

from __future__ import annotations

import llvmlite.ir as ir
from oxla_codegen_llvm import Scalar
from oxla_codegen_llvm.fused import emit_region
from oxla_codegen_llvm.fused import load as load_elem
from oxla_codegen_llvm.fused import store as store_elem
from oxla_codegen_llvm.loops import for_range

from oxla.ir import Operation
from oxla.ir import types as T
from oxla.lowering import OpKernel
from oxla_backend_cpu.opkernels import op_emitter

PTR = ir.PointerType()
VOID = ir.VoidType()
I8, I64 = ir.IntType(8), ir.IntType(64)

CALLBACK = "oxla_collective_callback"
"""Name of the module global holding the runtime's callback address (set on load)."""
CALLBACK_TYPE = ir.FunctionType(VOID, [I64, PTR, PTR])

RUNTIME_OPS = frozenset({
    "stablehlo.all_gather", "stablehlo.all_reduce", "stablehlo.all_to_all",
    "stablehlo.reduce_scatter", "stablehlo.collective_permute",
    "stablehlo.collective_broadcast", "stablehlo.collective_reduce",
    "stablehlo.cross-replica-sum", "stablehlo.replica_id", "stablehlo.partition_id",
    "stablehlo.send", "stablehlo.recv", "stablehlo.infeed", "stablehlo.outfeed",
})
"""Ops computed by a call into the runtime."""

TOKEN_OPS = frozenset({"stablehlo.after_all", "stablehlo.create_token"})
"""Ops that only produce a token (no code)."""

REDUCING_OPS = frozenset({"stablehlo.all_reduce", "stablehlo.reduce_scatter",
                          "stablehlo.collective_reduce"})
"""Ops whose ``computation`` region becomes a native combiner."""


DESCRIPTOR = "oxla_collective_op_"
"""Prefix of the constant global holding runtime op ``i``'s descriptor (JSON, from
:func:`describe`) in the code, so that a cached or loaded executable needs no IR."""


def describe(op: Operation) -> dict:
    """What the runtime needs of ``op``, as JSON-able data: kind, location, tensor types
    of its operands and results (tokens left out), channel id, ``use_global_device_ids``,
    ``replica_groups`` (``-1`` padding dropped), ``source_target_pairs``, flags, the
    dimension attributes, and the ``computation`` region's argument type."""
    import numpy as np

    from oxla.ir import attributes as A

    def ids(name: str) -> np.ndarray:
        a = op.attributes.get(name)
        if a is None:
            return np.zeros((0, 0), np.int64)
        arr = a.array if isinstance(a, A.DenseElementsAttr) else A.to_python(a)
        arr = np.asarray(arr, np.int64)
        if not arr.size:
            return np.zeros((0, 0), np.int64)
        return arr if arr.ndim == 2 else arr.reshape(1, -1)

    def flag(name: str) -> bool:
        a = op.attributes.get(name)
        return a is not None and bool(A.to_python(a))

    h = op.attributes.get("channel_handle")
    groups, pairs = ids("replica_groups"), ids("source_target_pairs")
    return {
        "kind": op.name.split(".", 1)[1],
        "loc": str(op.loc),
        "ins": [str(v.type) for v in op.operands if not is_token(v.type)],
        "outs": [str(r.type) for r in op.results if not is_token(r.type)],
        "channel": int(h.get("handle", 0)) if isinstance(h, A.StructAttr) else 0,
        "global_ids": "use_global_device_ids" in op.attributes,
        "groups": [[int(i) for i in row if i >= 0] for row in groups] if groups.size else [],
        "pairs": [[int(s), int(t)] for s, t in pairs.reshape(-1, 2)] if pairs.size else [],
        "host_transfer": flag("is_host_transfer"),
        "dynamic_root": flag("has_dynamic_root"),
        "attrs": {k: int(A.to_python(v)) for k, v in op.attributes.items()
                  if k in ("all_gather_dim", "split_dimension", "concat_dimension",
                           "split_count", "scatter_dimension")},
        "region": str(op.regions[0].blocks[0].args[0].type) if op.name in REDUCING_OPS
        else None,
    }


def _emit_descriptor(module: ir.Module, op: Operation, index: int) -> None:
    import json

    data = bytearray(json.dumps(describe(op)).encode()) + b"\0"
    g = ir.GlobalVariable(module, ir.ArrayType(I8, len(data)), f"{DESCRIPTOR}{index}")
    g.initializer = ir.Constant(ir.ArrayType(I8, len(data)), data)
    g.global_constant = True  # default (external) linkage: read by name on load


def combiner_name(index: int) -> str:
    """The exported combiner of runtime op ``index`` (see the module doc)."""
    return f"oxla_combine_{index}"


def runtime_ops(func: Operation) -> list[Operation]:
    """The ops of :data:`RUNTIME_OPS` in ``func`` (regions included), in walk order: the
    ``op_index`` the generated code passes to the runtime."""
    return [op for op in func.walk() if op.name in RUNTIME_OPS]


def is_token(t: T.Type) -> bool:
    return isinstance(t, T.TokenType)


def _op_index(module: ir.Module, op: Operation) -> int:
    """``op``'s index among the runtime ops of its function (cached per LLVM module)."""
    top = op
    while top.parent_op is not None and top.name != "func.func":
        top = top.parent_op
    table = module.__dict__.setdefault("_oxla_runtime_ops", {})
    if id(top) not in table:
        table[id(top)] = {id(o): i for i, o in enumerate(runtime_ops(top))}
    return table[id(top)][id(op)]


def _callback(module: ir.Module) -> ir.GlobalVariable:
    g = module.globals.get(CALLBACK)
    if g is None:
        g = ir.GlobalVariable(module, PTR, CALLBACK)
        g.initializer = ir.Constant(PTR, None)
        # default (external) linkage: the executable finds it by name and writes it
    return g


def _pointer_array(b: ir.IRBuilder, ptrs: list[ir.Value], name: str) -> ir.Value:
    with b.goto_entry_block():
        arr = b.alloca(PTR, size=ir.Constant(I64, max(len(ptrs), 1)), name=name)
    for i, p in enumerate(ptrs):
        b.store(p, b.gep(arr, [ir.Constant(I64, i)], source_etype=PTR))
    return arr


def _emit_combiner(s: Scalar, op: Operation, index: int) -> None:
    """``oxla_combine_<index>(acc, x, n)``: ``acc[i] = computation(acc[i], x[i])`` over
    the region's element type (the runtime converts operands to it first, the spec's
    ``to_destination_type``)."""
    region = op.regions[0]
    et = region.blocks[0].args[0].type.element_type
    fn = ir.Function(s.module, ir.FunctionType(VOID, [PTR, PTR, I64]), combiner_name(index))
    acc, x, n = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    s2 = Scalar(b, s.module, s.target, s.fast_math)
    with for_range(b, n, "c") as i:
        v = emit_region(s2, region, [load_elem(s2, acc, et, i), load_elem(s2, x, et, i)])[0]
        store_elem(s2, acc, et, i, v)
    b.ret_void()


def emit_runtime_call(s: Scalar, k: OpKernel, buffers: dict, outs: list) -> None:
    """A runtime op: its tensors' addresses to :data:`CALLBACK` (tokens carry none)."""
    b, op = s.b, k.op
    index = _op_index(s.module, op)
    _emit_descriptor(s.module, op, index)
    if op.name in REDUCING_OPS:
        _emit_combiner(s, op, index)
    ins = [buffers[v] for v in op.operands if not is_token(v.type)]
    res = [p for r, p in zip(op.results, outs) if not is_token(r.type)]
    ins_arr = _pointer_array(b, ins, "ins")
    outs_arr = _pointer_array(b, res, "outs")
    fn = b.load(_callback(s.module), typ=CALLBACK_TYPE.as_pointer())
    b.call(fn, [ir.Constant(I64, index), ins_arr, outs_arr])


def emit_nothing(s: Scalar, k: OpKernel, buffers: dict, outs: list) -> None:
    """``after_all``/``create_token``: a token has no bytes to write."""


for _name in RUNTIME_OPS:
    op_emitter(_name)(emit_runtime_call)
for _name in TOKEN_OPS:
    op_emitter(_name)(emit_nothing)
