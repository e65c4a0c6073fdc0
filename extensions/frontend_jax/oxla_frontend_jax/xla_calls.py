"""XLA's own custom calls in JAX's StableHLO, rewritten to StableHLO ops on import.

JAX writes a few operations as ``stablehlo.custom_call`` targets that XLA expands
itself rather than runs as kernels. Each one oxla knows is rewritten here into the
StableHLO that XLA:CPU computes for it, so every backend runs it:

- ``@ApproxTopK`` (``lax.approx_max_k``, ``lax.approx_min_k``): with
  ``is_fallback = true`` (every platform but TPU) and ``aggregate_to_topk = true``
  XLA computes the exact top-k: a stable sort of the operands by the comparator
  function along ``reduction_dim``, then the first ``top_k`` elements.

Targets of jaxlib's kernels (``lapack_*_ffi``, ...) are not XLA expansions and are
left for backends' custom-call kernels.
"""

from __future__ import annotations

from oxla.errors import NotSupportedError
from oxla.ir import Builder, Module, Operation, Region
from oxla.ir import attributes as A

APPROX_TOPK = "ApproxTopK"


def _target(op: Operation) -> str | None:
    a = op.attributes.get("call_target_name")
    return a.value if isinstance(a, A.StringAttr) else None


def _config(op: Operation) -> dict:
    cfg = op.attributes.get("mhlo.backend_config")
    if not isinstance(cfg, A.DictionaryAttr):
        return {}
    return {k: A.to_python(v) for k, v in cfg.entries}


def _comparator(module: Module, op: Operation) -> Region:
    """The body of the op's comparator function as a sort region (``func.return``
    becomes ``stablehlo.return``)."""
    called = op.attributes.get("called_computations")
    names = [a.root for a in called] if isinstance(called, A.ArrayAttr) else []
    fn = module.lookup(names[0]) if len(names) == 1 else None
    if fn is None:
        raise NotSupportedError(f"{op.loc}: '@{APPROX_TOPK}' needs one comparator function "
                                f"in called_computations, got {names}")
    region = fn.regions[0].clone()
    term = region.block.terminator
    if term is not None and term.name == "func.return":
        Builder.before(term).create("stablehlo.return", list(term.operands), result_types=[])
        term.erase()
    return region


def _approx_topk(module: Module, op: Operation) -> None:
    cfg = _config(op)
    if not cfg.get("is_fallback", False) or not cfg.get("aggregate_to_topk", True):
        raise NotSupportedError(
            f"{op.loc}: '@{APPROX_TOPK}' with is_fallback={cfg.get('is_fallback')} and "
            f"aggregate_to_topk={cfg.get('aggregate_to_topk')} is not supported (only the "
            "exact fallback XLA:CPU computes: lower for cpu, aggregate_to_topk=True)")
    n = len(op.results)
    inputs = list(op.operands[:n])
    dim = int(cfg["reduction_dim"])
    k = int(cfg["top_k"])
    b = Builder.before(op)
    srt = b.create("stablehlo.sort", inputs,
                   {"dimension": A.i64_attr(dim), "is_stable": A.BoolAttr(True)},
                   [v.type for v in inputs], [_comparator(module, op)])
    outs = []
    for v in srt.results:
        limit = list(v.type.shape)
        limit[dim] = min(k, limit[dim])
        outs.append(b.slice(v, [0] * len(limit), limit))
    for r, new in zip(op.results, outs):
        if r.type != new.type:
            raise NotSupportedError(f"{op.loc}: '@{APPROX_TOPK}' result type {r.type} is not "
                                    f"the top {k} of its operand ({new.type})")
        r.replace_all_uses_with(new)
    op.erase()


def legalize_xla_custom_calls(module: Module) -> int:
    """Rewrites the XLA custom calls of the module docstring in place.

    Returns:
        How many ops were rewritten.

    Raises:
        NotSupportedError: a variant of such a call XLA:CPU does not expand the way
            this module does (named with its location).
    """
    ops = [op for op in module.walk()
           if op.name == "stablehlo.custom_call" and _target(op) == APPROX_TOPK]
    for op in ops:
        _approx_topk(module, op)
    return len(ops)
