"""oxla-frontend-tf: TensorFlow functions, Keras models and SavedModels on oxla backends.

::

    import oxla_frontend_tf as otf

    module = otf.import_function(model, ["1x96x96x3:f32"])   # an oxla.ir Module
    fn = otf.compile(model, ["1x96x96x3:f32"], backend="cpu")
    probs = fn(images)                                          # numpy in, numpy out
    fn = otf.compile("saved_model_dir", ["1x224x224x3"])       # a SavedModel

Lowering goes through TensorFlow's own XLA bridge
(``experimental_get_compiler_ir(...)(stage="stablehlo")``). tensorflow is imported on
first use, not with this package.
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "import_function": "oxla_frontend_tf.importer",
    "import_saved_model": "oxla_frontend_tf.importer",
    "compile": "oxla_frontend_tf.importer",
    "TFCompiled": "oxla_frontend_tf.importer",
    "TFFrontend": "oxla_frontend_tf.frontend",
    "lower": "oxla_frontend_tf.bridge",
    "parse_input_spec": "oxla_frontend_tf.specs",
    "looks_like_saved_model": "oxla_frontend_tf.detect",
    "tidy": "oxla_frontend_tf.tidy",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    # lazy, so that importing the package (plugin discovery) never imports tensorflow
    if name not in _EXPORTS:
        raise AttributeError(f"module 'oxla_frontend_tf' has no attribute '{name}'")
    import importlib

    return getattr(importlib.import_module(_EXPORTS[name]), name)
