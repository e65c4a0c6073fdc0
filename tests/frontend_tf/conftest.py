"""Shared fixtures of the TensorFlow frontend tests; everything skips without tensorflow."""

from __future__ import annotations

import pytest

pytest.importorskip("oxla_frontend_tf")
pytest.importorskip("tensorflow")


def _backends() -> list[str]:
    from oxla import plugins

    names = ["interpreter"]
    if "cpu" in plugins.backends():
        names.append("cpu")
    return names


@pytest.fixture(params=_backends())
def backend(request) -> str:
    """Each installed backend: interpreter, and cpu when present."""
    return request.param
