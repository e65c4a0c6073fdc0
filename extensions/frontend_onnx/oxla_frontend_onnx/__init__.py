"""oxla-frontend-onnx: ONNX models on oxla backends, straight to StableHLO.

::

    import oxla_frontend_onnx as oonnx

    module = oonnx.import_model("model.onnx", input_specs=["1x3x224x224"])
    fn = oonnx.compile("model.onnx", backend="cpu")
    (probs,) = fn(images)                # numpy in (by position or name), numpy out

onnx is imported on first use, not with this package.
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "import_model": "oxla_frontend_onnx.importer",
    "load_model": "oxla_frontend_onnx.importer",
    "compile": "oxla_frontend_onnx.api",
    "OnnxFunction": "oxla_frontend_onnx.api",
    "OnnxFrontend": "oxla_frontend_onnx.frontend",
    "looks_like_onnx": "oxla_frontend_onnx.detect",
    "supported_ops": "oxla_frontend_onnx.registry",
    "rule": "oxla_frontend_onnx.registry",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    # lazy, so that importing the package (plugin discovery) never imports onnx
    if name not in _EXPORTS:
        raise AttributeError(f"module 'oxla_frontend_onnx' has no attribute '{name}'")
    import importlib

    return getattr(importlib.import_module(_EXPORTS[name]), name)
