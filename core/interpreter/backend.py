"""The built-in ``interpreter`` backend: compiles nothing, runs the reference
interpreter, validates inputs like every oxla executable."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from oxla.errors import RuntimeInputError
from oxla.interpreter.engine import Context, run_function
from oxla.ir import Module, func_name, func_type, parse_module, print_module, verify
from oxla.ir import types as T
from oxla.protocols import CompileOptions, Signature


def check_inputs(types: Sequence[T.Type], args: Sequence[Any], what: str = "argument") -> list:
    """Validates call arguments against a signature and converts them to numpy.

    Accepts numpy arrays, Python scalars and objects with ``__array__``/DLPack.

    Raises:
        RuntimeInputError: wrong count, shape or dtype (expected vs. given).
    """
    if len(args) != len(types):
        raise RuntimeInputError(f"expected {len(types)} {what}s, got {len(args)}")
    out = []
    for i, (t, a) in enumerate(zip(types, args)):
        if not isinstance(t, T.TensorType):
            out.append(a)
            continue
        given = "" if isinstance(a, np.ndarray) else type(a).__name__
        if given:
            if hasattr(a, "__dlpack__") and not hasattr(a, "__array__"):
                a = np.from_dlpack(a)
            else:
                a = np.asarray(a)
        et = t.element_type
        want = et.dtype
        if a.dtype != want:
            how = (f" (a {given} converts to {a.dtype}; pass np.asarray(x, "
                   f"dtype={np.dtype(want).name}))") if given else ""
            if not given and a.dtype.newbyteorder("=") == np.dtype(want).newbyteorder("="):
                how = f" (the other byte order: pass x.astype('{np.dtype(want).str}'))"
            raise RuntimeInputError(
                f"{what} #{i} has dtype {a.dtype}, expected {want} (for {t}){how}")
        if len(a.shape) != len(t.shape) or any(
            d is not None and d != s for d, s in zip(t.shape, a.shape)
        ):
            shape = "x".join("?" if d is None else str(d) for d in t.shape) or "scalar"
            raise RuntimeInputError(
                f"{what} #{i} has shape {tuple(a.shape)}, expected {shape} (for {t})")
        out.append(a)
    return out


class InterpreterExecutable:
    """Runs a module's entry function with the reference interpreter.

    Call it with one numpy array per argument; it returns a list of numpy arrays.
    """

    backend = "interpreter"

    def __init__(self, module: Module, compile_seconds: float = 0.0,
                 custom_calls: dict | None = None):
        self.module = module
        self.entry = func_name(module.main)
        ft = func_type(module.main)
        self.signature = Signature(tuple(ft.inputs), tuple(ft.results))
        self.stats = {"compile_seconds": compile_seconds, "kernel_count": 0, "temp_bytes": 0}
        self._custom_calls = dict(custom_calls or {})

    def __call__(self, *args: Any) -> list:
        vals = check_inputs(self.signature.inputs, args)
        ctx = Context(module=self.module, custom_calls=self._custom_calls)
        return list(run_function(self.module, self.entry, vals, ctx))

    def save(self, path) -> None:
        """Writes a ``.oxla`` artifact holding the module's text."""
        from oxla.artifact import write_artifact

        write_artifact(path, "interpreter",
                       {"module.mlir": print_module(self.module).encode()},
                       {"entry": self.entry})


def check_custom_call_targets(module: Module, impls: dict[str, Any]) -> None:
    """Refuses, at compile time, a ``stablehlo.custom_call`` whose target the interpreter
    cannot run: neither a check target (``check.expect_close``...) nor registered for the
    interpreter through ``oxla_custom_calls`` (it used to fail only when run, at a
    location inside the saved artifact).

    Raises:
        LoweringError: naming the target and the op's source location, with how to
            supply an implementation.
    """
    from oxla.errors import LoweringError
    from oxla.interpreter.rules.checks import CHECK_CUSTOM_CALLS
    from oxla.ir import attributes as A

    for op in module.walk():
        if op.name != "stablehlo.custom_call":
            continue
        target = str(A.to_python(op.attributes.get("call_target_name")))
        if target in CHECK_CUSTOM_CALLS or target in impls:
            continue
        from oxla.plugins import get_registry

        others = sorted(b for t, b in get_registry().custom_calls() if t == target)
        notes = [f"supply one with a plugin: an `oxla_custom_calls` hookimpl returning "
                 f"CustomCallInfo(target={target!r}, backend='interpreter', fn=...), where "
                 "fn(ctx, op, args) takes and returns lists of numpy arrays"]
        if others:
            notes.insert(0, f"'{target}' is implemented for backend(s) {', '.join(others)} "
                            "only")
        raise LoweringError("stablehlo.custom_call: no implementation of custom call "
                            f"target '{target}' for the interpreter backend", op.loc,
                            notes=notes)


class InterpreterBackend:
    """The reference interpreter as a backend (always available)."""

    name = "interpreter"

    def available(self) -> tuple[bool, str]:
        return True, ""

    def compile(self, module: Module, options: CompileOptions | None = None):
        t0 = time.perf_counter()
        verify(module)
        from oxla.plugins import custom_calls

        impls = {t: c.fn for t, c in custom_calls("interpreter").items()}
        check_custom_call_targets(module, impls)
        return InterpreterExecutable(module, time.perf_counter() - t0, impls)

    def load(self, path):
        from oxla.artifact import read_member
        from oxla.errors import OxlaError

        try:
            text = read_member(path, "module.mlir").decode("utf-8")
        except UnicodeDecodeError as exc:
            raise OxlaError(f"'{path}' is corrupt: its module.mlir is not UTF-8 text "
                            f"({exc.reason} at byte {exc.start})") from None
        return self.compile(parse_module(text, f"{path}:module.mlir"))
