"""Running the TF sweep: each case eagerly in TensorFlow (the oracle) and through
``oxla_frontend_tf.compile(fn, inputs, backend=...)`` (TensorFlow's StableHLO bridge,
then oxla), compared with the family's tolerance. A result that differs from eager
TensorFlow but matches TensorFlow's own XLA compilation (``jit_compile=True``, the
program oxla compiles) passes with a note: the difference is between TensorFlow's
eager kernels and its XLA lowering (stateless random picks another algorithm under
XLA; XLA's SVD iterates to f32-level tolerance in f64).

The custom calls TensorFlow's bridge writes into a module are recorded per case
(:func:`custom_call_targets`), so the sweep can say which ``tf.*`` functions lower to
them."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import Any

from sweep_common import Case, Result, run_case

_TARGET = re.compile(r"stablehlo\.custom_call\s+@([\w.$-]+)|call_target_name\s*=\s*\"([^\"]+)\"")


def all_cases() -> list[Case]:
    """Every case of the TF sweep, in table order (names are unique)."""
    import tf_sweep_cases

    cases = list(tf_sweep_cases.CASES)
    names = [c.name for c in cases]
    dup = {n for n in names if names.count(n) > 1}
    assert not dup, f"duplicate case names: {sorted(dup)}"
    return cases


def custom_call_targets(text: str) -> list[str]:
    """The ``stablehlo.custom_call`` targets in StableHLO text, sorted, once each."""
    return sorted({a or b for a, b in _TARGET.findall(text)})


def _is_keras(fn: Any) -> bool:
    import keras

    return isinstance(fn, keras.Layer)


def run_cases(cases: Sequence[Case], backend: str = "cpu", progress: bool = False,
              targets: dict[str, list[str]] | None = None,
              max_variants: int | None = None) -> list[Result]:
    """Runs ``cases``; ``targets`` (when given) collects each case's custom calls;
    ``max_variants`` shape variants per dtype at most (all by default)."""
    import numpy as np
    import oxla_frontend_tf as otf
    import tensorflow as tf
    from oxla_frontend_tf.bridge import lower
    from oxla_frontend_tf.specs import to_tensor_specs

    def oracle(case: Case, args: tuple) -> Any:
        xs = [tf.constant(a) for a in args]
        if _is_keras(case.fn):
            if not case.fn.built:
                import keras

                keras.utils.set_random_seed(0)  # the same weights every run
            return case.fn(*xs, training=False)
        return case.fn(*xs)

    def ours(case: Case, args: tuple) -> Any:
        if targets is not None:
            try:
                text = lower(case.fn, to_tensor_specs(list(args))).text
                targets.setdefault(case.name, custom_call_targets(text))
            except Exception:  # noqa: BLE001 - the compile below reports it
                pass
        return otf.compile(case.fn, list(args), backend=backend)(*args)

    def xla(case: Case, args: tuple) -> Any:
        xs = [tf.constant(a) for a in args]
        if _is_keras(case.fn):
            return tf.function(lambda *v: case.fn(*v, training=False), jit_compile=True)(*xs)
        return tf.function(case.fn, jit_compile=True)(*xs)

    def flatten(out: Any) -> list:
        return [np.asarray(x) for x in tf.nest.flatten(out)]

    results = []
    for c in cases:
        r = run_case(c, oracle, ours, flatten, ("f32", "f64", "c64", "c128", "i32", "bf16"),
                     alt_oracle=xla, max_variants=max_variants)
        if progress:
            print(f"{r.status:>12} {r.seconds:6.2f}s {c.name} {r.reason}", file=sys.stderr,
                  flush=True)
        results.append(r)
    return results


def sample(cases: Sequence[Case], every: int = 4) -> list[Case]:
    """Every ``every``-th case of each family, its first one included."""
    seen: dict[str, int] = {}
    out = []
    for c in cases:
        i = seen.get(c.family, 0)
        seen[c.family] = i + 1
        if i % every == 0 or c.sample:
            out.append(c)
    return out
