"""``interpreter.probe`` on the cpu backend: the identity that also records its operand.

The StableHLO interpreter's ``probe`` writes each value it sees (every iteration of a
loop) for ``check.expect_serialized_eq`` to compare later. Compiled here, a probe
becomes a side-effecting ``stablehlo.custom_call @interpreter.probe`` (its
``probe_id`` as the backend config; the pass :mod:`oxla.passes.probes`) bound to a
per-executable :class:`ProbeRecorder`
(a Python kernel, so such an executable is neither cached nor saved): after a call,
``exe.probes`` maps each probe id to the copies recorded during that call on this
thread, in execution order (the interpreter's ``Context.probes``).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from oxla.passes import PROBE_TARGET


class ProbeRecorder:
    """The Python kernel of :data:`PROBE_TARGET` for one executable: returns its operand
    and appends a copy to the current call's records (per thread)."""

    def __init__(self):
        self._local = threading.local()

    def begin_call(self) -> None:
        """Forgets the previous call's records (on this thread)."""
        self._local.records = {}

    @property
    def records(self) -> dict[str, list[np.ndarray]]:
        """``probe_id -> [value, ...]`` of the last call on this thread."""
        recs = getattr(self._local, "records", None)
        if recs is None:
            recs = self._local.records = {}
        return recs

    def __call__(self, x: np.ndarray, backend_config: str = "") -> np.ndarray:
        self.records.setdefault(backend_config, []).append(np.array(x, copy=True))
        return x


class _BuiltinInfo:
    """What :func:`oxla_backend_cpu.custom_call.lookup` returns for the probe target
    (its ``fn`` is replaced by each executable's own :class:`ProbeRecorder`)."""

    target = PROBE_TARGET
    backend = "cpu"

    @staticmethod
    def fn(x: Any, backend_config: str = "") -> Any:
        return x


PROBE_INFO = _BuiltinInfo()
