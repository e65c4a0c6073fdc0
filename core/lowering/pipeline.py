"""The lowering pipeline: an explicit list of named stages, read top to bottom.

::

    verify             the module is valid StableHLO
    prepare            the policy's IR passes (core pipeline, per-backend patterns, ...)
    fusion             ops -> kernels, driven by the policy (oxla.lowering.fusion)
    scheduling         a kernel order lowering peak memory (oxla.lowering.scheduling)
    buffer-assignment  arena offsets, in-place reuse (oxla.lowering.buffers)
    <backend stages>   the policy's own: codegen, JIT, executable (``policy.stages()``)

:func:`run` runs them on one :class:`Compilation`; the last stage sets
``Compilation.result`` (the executable). With ``options.dump_dir`` each stage's output
is written there (``1-prepare.mlir``, ``2-4-plan.txt``, and what backend stages dump).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from oxla.ir import Module, print_module, verify
from oxla.ir.gcpause import gc_paused
from oxla.lowering.buffers import assign_best
from oxla.lowering.fusion import fuse
from oxla.lowering.plan import Plan
from oxla.lowering.scheduling import schedule
from oxla.protocols import CompileOptions


@dataclass
class Compilation:
    """What the stages share.

    Attributes:
        module: the module being compiled (``prepare`` may replace it).
        policy: the backend's policy (:mod:`oxla.lowering.policy`, plus ``prepare`` and
            ``stages``).
        target: the backend's target (opaque here; codegen reads it).
        options: the compile options.
        plan: set by ``fusion``.
        program_order: the kernels in program order (before scheduling).
        notes: lines the ``prepare`` stage leads the plan's notes with.
        result: set by the last stage.
        artifacts: what a backend's stages hand each other (LLVM text, constants...).
        started: ``time.perf_counter()`` when the pipeline began (or the caller's).
    """

    module: Module
    policy: Any
    target: Any
    options: CompileOptions
    plan: Plan | None = None
    program_order: list = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    result: Any = None
    artifacts: dict[str, Any] = field(default_factory=dict)
    started: float = 0.0

    def dump(self, name: str, text: Any) -> None:
        """Writes ``text`` (or what it returns, when callable: made only when dumping)
        to ``options.dump_dir/name``."""
        where = self.options.dump_dir
        if where:
            os.makedirs(where, exist_ok=True)
            with open(os.path.join(where, name), "w") as f:
                f.write(str(text() if callable(text) else text))


@dataclass(frozen=True)
class Stage:
    """One named step of the pipeline."""

    name: str
    run: Callable[[Compilation], None]


def _verify(c: Compilation) -> None:
    verify(c.module)


def _prepare(c: Compilation) -> None:
    c.module, c.notes = c.policy.prepare(c.module, c.options)
    c.dump("1-core-pipeline.mlir", lambda: print_module(c.module))


def _fusion(c: Compilation) -> None:
    c.plan = fuse(c.module, c.policy)
    c.plan.notes[:0] = c.notes
    c.program_order = list(c.plan.kernels)


def _scheduling(c: Compilation) -> None:
    assert c.plan is not None
    c.plan = schedule(c.plan)


def _buffer_assignment(c: Compilation) -> None:
    assert c.plan is not None
    c.plan = assign_best(c.plan, c.program_order)
    c.dump("2-4-plan.txt", c.plan.describe)


TARGET_FREE = (Stage("verify", _verify), Stage("prepare", _prepare), Stage("fusion", _fusion),
               Stage("scheduling", _scheduling), Stage("buffer-assignment", _buffer_assignment))
"""The stages every backend shares, in order."""


def stages(policy: Any) -> list[Stage]:
    """The whole pipeline for ``policy``: :data:`TARGET_FREE`, then ``policy.stages()``."""
    return list(TARGET_FREE) + list(policy.stages())


def run(module: Module, policy: Any, target: Any, options: CompileOptions | None = None,
        started: float | None = None) -> Any:
    """Runs every stage of :func:`stages` on ``module``; returns the last stage's result
    (the backend's executable).

    Raises:
        NotSupportedError: an op, type or form the backend cannot compile (the message
            names the op, its location and the backend).
        VerifyError: the module is invalid.
    """
    c = Compilation(module, policy, target, options or CompileOptions(),
                    started=time.perf_counter() if started is None else started)
    # The stages build many short-lived objects (kernels, llvmlite IR); a full
    # collection on the way traverses the whole process heap (a framework's, when JAX or
    # torch is loaded: 35-75 ms each, at random points of a compile). Cycles made
    # meanwhile are collected after.
    with gc_paused():
        for stage in stages(policy):
            stage.run(c)
    return c.result
