"""Helpers of the TensorFlow frontend tests (a unique module name: every test folder
has its own conftest)."""

from __future__ import annotations

import re

import numpy as np
import pytest

RTOL = 1e-4
"""Agreement with TensorFlow the frontend promises (relative to the output's scale)."""


def compile_or_xfail(lowered, backend: str, variables_as_inputs: bool = False):
    """Compiles a lowered TF function; a backend that lacks an op must say which one
    (``NotSupportedError`` naming an op of the module), and the test is then xfailed."""
    from oxla_frontend_tf.importer import TFCompiled, module_from_lowered

    import oxla
    from oxla.errors import NotSupportedError

    module = module_from_lowered(lowered, variables_as_inputs)
    ops = {op.name for op in module.walk()}
    try:
        exe = oxla.compile(module, backend=backend)
    except NotSupportedError as exc:
        if backend in ("interpreter", "cpu"):  # both compile every op of these models
            raise
        named = re.findall(r"'((?:stablehlo|chlo|mhlo)\.\w+)'", str(exc))
        assert named and named[0] in ops, f"the error names no op of the module: {exc}"
        pytest.xfail(f"{backend}: {str(exc).splitlines()[0]}")
    return TFCompiled(exe, lowered, variables_as_inputs)


def assert_matches_tf(actual, expected, rtol: float = RTOL) -> None:
    """Within ``rtol`` of TensorFlow, relative to each output's largest magnitude."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    scale = float(np.max(np.abs(expected))) or 1.0
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale)


def randomize_batch_norm(model, seed: int = 0) -> None:
    """Gives batch norms non-trivial statistics: ``weights=None`` Keras applications
    otherwise shrink activations to ~1e-10 and any result would look right."""
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        if type(layer).__name__ != "BatchNormalization":
            continue
        for var in layer.weights:
            n = var.name.split("/")[-1]
            shape = tuple(var.shape)
            if "gamma" in n or "variance" in n:
                var.assign(rng.uniform(0.5, 1.5, shape).astype(np.float32))
            else:
                var.assign(rng.normal(0.0, 0.1, shape).astype(np.float32))
