"""oxla.passes: the pass manager and the target-independent passes.

Run a pipeline string or a registered pipeline name on a module::

    from oxla.passes import run_pipeline
    run_pipeline(module, "inline,canonicalize{max-iterations=5},cse,dce")
    run_pipeline(module, "default", verify_each=True)

Passes and rewrite patterns are registered through the ``oxla_passes`` and
``oxla_patterns`` hooks; the core ones come from :func:`builtin_passes` and
:func:`builtin_patterns` (called by :mod:`oxla.builtin_plugin`).
"""

from __future__ import annotations

from oxla.passes.composites import inline_composites
from oxla.passes.dot_layout import absorb_transposes
from oxla.passes.manager import (
    PIPELINES,
    PassManager,
    PassTiming,
    format_timing,
    make_pass,
    parse_pipeline,
    run_pipeline,
)
from oxla.passes.probes import PROBE_TARGET, probes_to_custom_calls
from oxla.passes.rewrite import (
    CORE_PATTERNS,
    GreedyDriver,
    Pattern,
    PatternSet,
    Rewriter,
    pattern,
)
from oxla.protocols import LazyPass, PassInfo, PatternInfo

DEFAULT_PIPELINE = "inline,chlo-legalize-to-stablehlo,canonicalize,cse,dce"
"""The target-independent pipeline backends run first (registered as ``default``)."""

PIPELINES["default"] = DEFAULT_PIPELINE


def _pass_classes() -> list[type]:
    from oxla.passes.canonicalize import Canonicalize
    from oxla.passes.chlo_pass import ChloLegalizeToStablehlo
    from oxla.passes.composites import InlineComposites
    from oxla.passes.cse_dce import CSE, DCE
    from oxla.passes.dot_layout import AbsorbDotTransposes
    from oxla.passes.fold import ConstantFold
    from oxla.passes.inline import Inline
    from oxla.passes.plugin_patterns import PluginPatterns
    from oxla.passes.probes import ProbesToCustomCalls

    return [Inline, Canonicalize, ConstantFold, CSE, DCE, ChloLegalizeToStablehlo,
            InlineComposites, AbsorbDotTransposes, ProbesToCustomCalls, PluginPatterns]


LAZY_PASSES = (
    ("stablehlo-refine-shapes", "oxla.passes.refine_shapes", "RefineShapes",
     "Makes shapes static, starting from the entry function's argument types."),
)
"""Core passes no backend pipeline runs by default: (pipeline name, module, class, its
docstring's first line), imported when a pipeline names them."""


def builtin_passes() -> list[PassInfo]:
    """The core passes, as :class:`~oxla.protocols.PassInfo` for the ``oxla_passes`` hook
    (those of :data:`LAZY_PASSES` as :class:`~oxla.protocols.LazyPass`)."""
    out = []
    for cls in _pass_classes():
        doc = (cls.__doc__ or "").strip().splitlines()[0]
        out.append(PassInfo(name=cls.name, factory=cls, description=doc))
    out += [PassInfo(name, LazyPass(module, attr), doc) for name, module, attr, doc in LAZY_PASSES]
    return out


def legalized_ops() -> frozenset[str]:
    """The ops ``chlo-legalize-to-stablehlo`` rewrites away (every CHLO op with a
    decomposition): a backend running the ``default`` pipeline needs no rule for them."""
    from oxla.passes.chlo_common import LEGALIZATIONS
    from oxla.passes.chlo_legalize import ChloLegalizeToStablehlo  # noqa: F401 (fills it)

    return frozenset(p.root_op for p in LEGALIZATIONS)


def builtin_patterns() -> list[PatternInfo]:
    """The core canonicalization patterns, for the ``oxla_patterns`` hook."""
    import oxla.passes.canonicalize  # noqa: F401  (fills CORE_PATTERNS)

    return [PatternInfo(p.root_op, p.fn, p.benefit, p.name) for p in CORE_PATTERNS]


__all__ = [
    "DEFAULT_PIPELINE",
    "PIPELINES",
    "PassManager",
    "PassTiming",
    "Pattern",
    "PatternSet",
    "GreedyDriver",
    "Rewriter",
    "CORE_PATTERNS",
    "PROBE_TARGET",
    "absorb_transposes",
    "builtin_passes",
    "builtin_patterns",
    "format_timing",
    "inline_composites",
    "legalized_ops",
    "make_pass",
    "parse_pipeline",
    "pattern",
    "probes_to_custom_calls",
    "run_pipeline",
]
