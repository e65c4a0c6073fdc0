"""Hook implementations of oxla-backend-cpu (cheap: llvmlite is imported on use)."""

from __future__ import annotations

from oxla.hookspecs import hookimpl
from oxla.protocols import Backend, BackendInfo


def _rules() -> set[str]:
    from oxla_backend_cpu.policy import CPUPolicy

    return CPUPolicy().rules()


def _make() -> Backend:
    from oxla_backend_cpu.backend import CPUBackend

    return CPUBackend()


@hookimpl
def oxla_backends() -> list[BackendInfo]:
    return [BackendInfo(name="cpu",
                        description="native code for this CPU through LLVM; BLAS for dots",
                        factory=_make, platforms=("x86_64", "aarch64"), rules=_rules)]
