"""Hook implementations of oxla-lapack: every jaxlib LAPACK target for the cpu backend
(a compiled XLA FFI handler where :mod:`oxla_lapack.native` has one and can build it,
else a Python host kernel, see :mod:`oxla_lapack.kernels`) and the interpreter."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from oxla.hookspecs import hookimpl
from oxla.protocols import CustomCallInfo, PatternInfo
from oxla_lapack.targets import TARGETS


def interpreter_kernel(ctx: Any, op: Any, args: list) -> list[np.ndarray]:
    """The interpreter's convention: results for ``op`` from its operand values."""
    from oxla.ir import attributes as A
    from oxla.ir.ffi import ffi_attributes
    from oxla_lapack.kernels import run

    target = str(A.to_python(op.attributes["call_target_name"]))
    outs = [np.zeros(r.type.shape, r.type.element_type.dtype) for r in op.results]
    run(target, ffi_attributes(op), [np.asarray(a) for a in args], outs)
    return outs


def cpu_kernel(target: str, *inputs: np.ndarray, backend_config: str = "",
               attributes: dict | None = None, outputs: list | None = None) -> None:
    """The cpu backend's Python convention for typed-FFI calls: fills ``outputs``."""
    from oxla_lapack.kernels import run

    if outputs is None:  # only typed-FFI call sites carry the outputs
        from oxla.errors import NotSupportedError

        raise NotSupportedError(f"custom call '{target}' without its typed-FFI "
                                "attributes (mhlo.backend_config)")
    run(target, attributes or {}, list(inputs), outputs)


@hookimpl
def oxla_custom_calls() -> list[CustomCallInfo]:
    from oxla_lapack.native import handler

    infos = []
    for target in TARGETS:
        infos.append(CustomCallInfo(target, "interpreter", interpreter_kernel))
        native = handler(target)  # a c_void_p: falsy until resolved, so test for None
        cpu = functools.partial(cpu_kernel, target) if native is None else native
        infos.append(CustomCallInfo(target, "cpu", cpu))
    return infos


@hookimpl
def oxla_patterns() -> list[PatternInfo]:
    from oxla_lapack.fold import fold_potrf

    return [PatternInfo(root_op="stablehlo.custom_call", fn=fold_potrf, benefit=1,
                        name="lapack-fold-potrf", backends=("cpu",))]
