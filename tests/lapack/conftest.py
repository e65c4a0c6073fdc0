"""The LAPACK custom-call tests need jax (the oracle: jaxlib's own kernels) and
oxla-lapack; they skip without them, except under CI=true."""

from __future__ import annotations

import os

import pytest

if os.environ.get("CI") != "true":
    pytest.importorskip("jax")
    pytest.importorskip("oxla_lapack")
    pytest.importorskip("oxla_frontend_jax")
