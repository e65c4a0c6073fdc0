"""Round-trip test files without checks (part of :mod:`oxla.conformance`).

StableHLO's ``testdata/dynamic/`` files are JAX shape-polymorphic exports with no
``check`` ops; upstream uses them as serialization round-trip tests. Their ``main``
takes the symbolic dimension sizes first, as ``tensor<i64>`` scalars without argument
attributes (JAX's convention; the array arguments carry ``mhlo.sharding``), then the
arrays, whose ``?`` dimensions are those sizes.

Such a file passes on the interpreter when it parses, verifies, round-trips (print,
parse, print gives the same text, pretty and generic) and runs on synthetic inputs:
every symbolic dimension bound to 3 (2 when 3 does not run), arrays filled with
deterministic random values. On a compiling backend the dimension arguments become
constants, ``stablehlo-refine-shapes`` makes every shape static, the backend compiles
and runs the refined function, and its results must match the interpreter's on the
same inputs (bitwise for integers, within 3 ULP or 1e-5 relative for floats).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

SIZES = (3, 2)
"""Sizes tried for the symbolic dimensions, in order."""

MAX_ULP = 3
RTOL = 1e-5


def is_roundtrip_module(module) -> bool:
    """True for a module without checks whose public ``main`` takes arguments."""
    from oxla.conformance_compiled import check_kind
    from oxla.ir import func_type, func_visibility

    fn = module.lookup("main")
    if fn is None or func_visibility(fn) != "public" or not func_type(fn).inputs:
        return False
    return not any(op.name.startswith("check.") or check_kind(op) is not None
                   for op in module.walk())


def dimension_arg_count(fn) -> int:
    """How many leading arguments of ``fn`` are symbolic dimension sizes: integer
    scalars without argument attributes."""
    from oxla.ir import attributes as A
    from oxla.ir import types as T

    attrs = fn.attributes.get("arg_attrs")
    attrs = attrs.value if isinstance(attrs, A.ArrayAttr) else None
    n = 0
    for i, t in enumerate(fn.regions[0].blocks[0].args):
        t = t.type
        if not (isinstance(t, T.TensorType) and t.rank == 0
                and isinstance(t.element_type, T.IntegerType)):
            break
        if attrs is not None and i < len(attrs) and getattr(attrs[i], "entries", ()):
            break
        n += 1
    return n


def _random(shape: tuple[int, ...], dtype: np.dtype, rng: np.random.Generator) -> np.ndarray:
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    if dtype.kind in "iu":
        lo = 0 if dtype.kind == "u" else -5
        return rng.integers(lo, 6, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def synthetic_inputs(fn, size: int, seed: int = 0) -> list[np.ndarray]:
    """Arguments for ``fn``: each dimension argument is ``size``, each ``?`` dimension
    of an array is ``size``, array elements are random (seeded) of the argument's
    dtype (integers in [-5, 5], floats standard normal).

    Raises:
        NotSupportedError: an argument that is not a tensor.
    """
    from oxla.errors import NotSupportedError
    from oxla.ir import types as T

    rng = np.random.default_rng(seed)
    ndim = dimension_arg_count(fn)
    out = []
    for i, a in enumerate(fn.regions[0].blocks[0].args):
        t = a.type
        if not isinstance(t, T.TensorType):
            raise NotSupportedError(f"argument #{i} has type {t}; expected a tensor")
        et = t.element_type
        dtype = np.dtype(et.dtype)  # a quantized type's dtype is its storage type's
        if i < ndim:
            out.append(np.array(size, dtype))
            continue
        shape = tuple(size if d is None else d for d in t.shape)
        out.append(_random(shape, dtype, rng))
    return out


def roundtrip_failures(module) -> list[str]:
    """Round-trip laws: print→parse→print is stable in both forms, and the generic
    form parses back to the pretty text. Returns what broke (empty when none)."""
    from oxla.ir import parse_module, print_module

    bad = []
    pretty = print_module(module)
    for generic in (False, True):
        text = print_module(module, generic=generic)
        again = print_module(parse_module(text, "<roundtrip>"), generic=generic)
        if text != again:
            form = "generic" if generic else "pretty"
            bad.append(f"{form} print→parse→print is not stable")
        elif generic and print_module(parse_module(text, "<roundtrip>")) != pretty:
            bad.append("the generic form does not parse back to the pretty form")
    return bad


def _interpret(module, size: int) -> tuple[list[np.ndarray], list]:
    from oxla.interpreter import Context, run_function

    inputs = synthetic_inputs(module.lookup("main"), size)
    outs = run_function(module, "main", inputs, Context(module=module))
    return inputs, list(outs)


def interpret_with_sizes(module) -> tuple[int, list[np.ndarray], list]:
    """Runs ``main`` on synthetic inputs, trying each of :data:`SIZES`.

    Returns:
        The size that ran, the inputs and the interpreter's outputs.

    Raises:
        Exception: the first size's error when no size runs.
    """
    first: BaseException | None = None
    for size in SIZES:
        try:
            inputs, outs = _interpret(module, size)
            return size, inputs, outs
        except Exception as e:  # noqa: BLE001 - try the next size, report the first
            first = first or e
    assert first is not None
    raise first


def refine_for_inputs(module, inputs: list[np.ndarray]):
    """A copy of ``module`` whose ``main`` has its dimension arguments replaced by
    constants and every shape made static for ``inputs`` (``inline``, then
    ``stablehlo-refine-shapes``, which does not look through calls).

    Returns:
        The refined module and the arrays still to pass (the non-dimension inputs).
    """
    from oxla.ir import attributes as A
    from oxla.ir import types as T
    from oxla.passes import run_pipeline
    from oxla.passes.util import make_constant

    m = module.clone()
    fn = m.lookup("main")
    body = fn.regions[0].blocks[0]
    ndim = dimension_arg_count(fn)
    anchor = body.ops[0]
    for a, v in zip(body.args[:ndim], inputs[:ndim]):
        c = make_constant(v, a.type, fn.loc)
        body.insert_before(anchor, c)
        a.replace_all_uses_with(c.results[0])
    body.args = body.args[ndim:]
    for i, a in enumerate(body.args):
        a.index = i
    if "arg_attrs" in fn.attributes:
        attrs = fn.attributes["arg_attrs"]
        fn.attributes["arg_attrs"] = A.ArrayAttr(tuple(attrs.value)[ndim:])
    rest = inputs[ndim:]
    for a, v in zip(body.args, rest):
        a.type = T.TensorType(tuple(v.shape), a.type.element_type)
    fn.attributes["function_type"] = A.TypeAttr(T.FunctionType(
        tuple(a.type for a in body.args), tuple(v.type for v in body.terminator.operands)))
    run_pipeline(m, "inline,stablehlo-refine-shapes")
    return m, rest


def compare(actual: list, expected: list) -> list[str]:
    """Differences between a backend's results and the interpreter's: bitwise for
    integers and booleans, within :data:`MAX_ULP` ULP or :data:`RTOL` relative for
    floats (NaN matches NaN). Returns one message per differing result."""
    from oxla.interpreter.rules.checks import _is_float, ulp_distance

    bad = []
    if len(actual) != len(expected):
        return [f"expected {len(expected)} results, got {len(actual)}"]
    for i, (a, e) in enumerate(zip(actual, expected)):
        a, e = np.asarray(a), np.asarray(e)
        if a.shape != e.shape or a.dtype != e.dtype:
            bad.append(f"result #{i}: expected {e.dtype}{list(e.shape)}, "
                       f"got {a.dtype}{list(a.shape)}")
            continue
        if not _is_float(e):
            if not np.array_equal(a, e):
                n = int(np.count_nonzero(a != e))
                bad.append(f"result #{i}: {n} of {e.size} elements differ")
            continue
        parts = [(a.real, e.real), (a.imag, e.imag)] if e.dtype.kind == "c" else [(a, e)]
        n = 0
        for x, y in parts:
            xf, yf = x.astype(np.float64), y.astype(np.float64)
            ok = ulp_distance(np.ascontiguousarray(x), np.ascontiguousarray(y)) <= MAX_ULP
            with np.errstate(invalid="ignore"):
                ok = ok | (np.abs(xf - yf) <= RTOL * np.abs(yf))
            n += int(np.count_nonzero(~np.asarray(ok, bool)))
        if n:
            bad.append(f"result #{i}: {n} of {e.size} elements differ by more than "
                       f"{MAX_ULP} ULP and {RTOL:g} relative")
    return bad


def roundtrip_runner(backend: str | None) -> Callable[[Any], list[str]]:
    """``run(module) -> failures`` for a round-trip file: on the interpreter
    (``backend`` None) round trip and run; on a compiling backend also refine,
    compile, run and compare with the interpreter.

    Errors (parse, verify, missing rules, unsupported ops) propagate as exceptions.
    """
    be = None
    if backend is not None:
        from oxla.plugins import get_backend

        be = get_backend(backend)

    def run(module) -> list[str]:
        from oxla.ir import verify

        verify(module)
        bad = roundtrip_failures(module)
        if bad:
            return bad
        _, inputs, want = interpret_with_sizes(module)
        if be is None:
            return []
        refined, args = refine_for_inputs(module, inputs)
        exe = be.compile(refined)
        return compare(exe(*args), want)

    return run


__all__ = ["SIZES", "is_roundtrip_module", "dimension_arg_count", "synthetic_inputs",
           "roundtrip_failures", "interpret_with_sizes", "refine_for_inputs", "compare",
           "roundtrip_runner"]
