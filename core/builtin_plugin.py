"""The built-in plugin: the reference interpreter backend, the ``stablehlo`` text
frontend and the core passes.

It registers through the same hooks as third-party plugins (distribution ``oxla``).
Imports of the interpreter and the passes happen when they are used, not here.
"""

from __future__ import annotations

import importlib
import importlib.util

from oxla.hookspecs import hookimpl
from oxla.protocols import Backend, BackendInfo, Frontend, FrontendInfo, PassInfo, PatternInfo


def _make_interpreter() -> Backend:
    from oxla.interpreter import InterpreterBackend

    return InterpreterBackend()


def _interpreter_rules() -> list[str]:
    from oxla.interpreter.registry import all_rules

    return list(all_rules())


@hookimpl
def oxla_backends() -> list[BackendInfo]:
    return [
        BackendInfo(
            name="interpreter",
            description="reference interpreter: numpy semantics for every StableHLO op",
            factory=_make_interpreter,
            rules=_interpreter_rules,
        )
    ]


def _make_stablehlo_frontend() -> Frontend:
    from oxla.stablehlo_frontend import StableHLOFrontend

    return StableHLOFrontend()


def _detect_stablehlo(path) -> bool:
    from oxla.stablehlo_frontend import detect_stablehlo

    return detect_stablehlo(path)


@hookimpl
def oxla_frontends() -> list[FrontendInfo]:
    return [
        FrontendInfo(
            name="stablehlo",
            description="StableHLO / MLIR text files (.mlir), parsed as written",
            distribution_hint="oxla",
            detect=_detect_stablehlo,
            factory=_make_stablehlo_frontend,
        )
    ]


@hookimpl
def oxla_passes() -> list[PassInfo]:
    # The core passes declare themselves in ``oxla.passes.builtin_passes()``; until that
    # package provides it there are none. An import error inside it is a real failure and
    # propagates (it is reported like any broken plugin).
    if importlib.util.find_spec("oxla.passes") is None:
        return []
    passes = importlib.import_module("oxla.passes")
    provider = getattr(passes, "builtin_passes", None)
    from oxla.sharding import builtin_passes as sharding_passes

    return (list(provider()) if provider is not None else []) + sharding_passes()


@hookimpl
def oxla_patterns() -> list[PatternInfo]:
    # The core canonicalization patterns, from ``oxla.passes.builtin_patterns()``.
    if importlib.util.find_spec("oxla.passes") is None:
        return []
    passes = importlib.import_module("oxla.passes")
    provider = getattr(passes, "builtin_patterns", None)
    return list(provider()) if provider is not None else []
