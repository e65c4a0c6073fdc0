"""Helpers of the SIMT kernel tests: a program's plan through the GPU kernels on the
host twin (and ptxas / gpuocelot), compared with the reference interpreter."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

pytest.importorskip("llvmlite")

from oxla_codegen_llvm.simt import HostTwin, check_ptx, to_ptx  # noqa: E402
from oxla_codegen_llvm.simt.harness import (  # noqa: E402
    as_like,
    gpu_kernels,
    interpret,
    plan_for,
    run_plan,
)

IN_CI = os.environ.get("CI") == "true"


def need_ptxas() -> None:
    """Skips (fails under CI) when ptxas is missing."""
    from oxla_codegen_llvm.simt.nvptx import ptxas_path

    if ptxas_path() is None:
        if IN_CI:
            pytest.fail("ptxas is required under CI")
        pytest.skip("ptxas not installed")


def on_twin(text: str, inputs: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray], list]:
    """(results on the host twin, the interpreter's, the kernels) for ``text``."""
    plan = plan_for(text)
    gpu = gpu_kernels(plan)
    kernels = [g for gs in gpu.values() for g in gs]
    twin = HostTwin(kernels)
    raw = run_plan(plan, inputs,
                   lambda k, a: twin.launch(k.name, k.grid, k.block, k.shared_bytes, a), gpu)
    want = interpret(text, inputs)
    return [as_like(r, w) for r, w in zip(raw, want)], want, kernels


def check_twin(text: str, inputs: list[np.ndarray], rtol: float = 0.0,
               atol: float = 0.0) -> list:
    """Asserts the host twin matches the interpreter; returns the kernels."""
    got, want, kernels = on_twin(text, inputs)
    for g, w in zip(got, want):
        if rtol or atol:
            wide = np.complex128 if np.iscomplexobj(w) else np.float64
            np.testing.assert_allclose(g.astype(wide), w.astype(wide), rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(g, w)
    return kernels


def check_ptxas(kernels: list, archs=("sm_80", "sm_90")) -> dict[str, str]:
    """PTX of ``kernels`` for each arch, each accepted by ptxas."""
    need_ptxas()
    out = {}
    for arch in archs:
        ptx = to_ptx(kernels, arch)
        check_ptx(ptx, arch)
        out[arch] = ptx
    return out


__all__ = ["check_ptxas", "check_twin", "need_ptxas", "on_twin", "shutil"]


def need_ocelot():
    """The gpuocelot library; skips when ``../shared`` or its runtime packages are
    absent (under CI only for a missing ``../shared``: the packages are installed)."""
    from oxla_codegen_llvm.simt.ocelot import library

    lib, why = library()
    if lib is None:
        if IN_CI and "not found" not in why:
            pytest.fail(f"gpuocelot must run under CI: {why}")
        pytest.skip(why)
    return lib


def on_ocelot(text: str, inputs: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray],
                                                           list]:
    """(results of the sm_35 PTX in gpuocelot, the interpreter's, the kernels)."""
    from oxla_codegen_llvm.simt.ocelot import ARCH, OcelotDevice

    lib = need_ocelot()
    plan = plan_for(text)
    gpu = gpu_kernels(plan)
    kernels = [g for gs in gpu.values() for g in gs]
    ptx = {k.name: to_ptx([k], ARCH) for k in kernels}
    with OcelotDevice(lib) as dev:
        raw = run_plan(plan, inputs,
                       lambda k, a: dev.launch(ptx[k.name], k.name,
                                               [p.kind for p in k.params], a, k.grid,
                                               k.block, k.shared_bytes),
                       gpu, dev.alloc)
    want = interpret(text, inputs)
    return [as_like(r, w) for r, w in zip(raw, want)], want, kernels
