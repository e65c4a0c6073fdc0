"""oxla-frontend-jax: JAX functions and ``jax.export`` artifacts on oxla backends.

::

    import oxla_frontend_jax as oj

    f = oj.jit(apply_fn, backend="interpreter")   # a drop-in for jax.jit
    y = f(params, x)

    g = oj.compile_exported("model.jaxexport", backend="cpu", arg_shapes=[(4, 8)])
    module = oj.import_exported(exported.serialize())   # an oxla.ir Module

jax is imported on first use, not with this package.
"""

from __future__ import annotations

from oxla_frontend_jax.exported import (
    ExportedFunction,
    compile_exported,
    import_exported,
    load_exported,
)
from oxla_frontend_jax.frontend import JaxFrontend
from oxla_frontend_jax.jit import JitFunction, jit
from oxla_frontend_jax.refine import parse_input_spec, refine_shapes

__all__ = [
    "jit",
    "JitFunction",
    "import_exported",
    "load_exported",
    "compile_exported",
    "ExportedFunction",
    "JaxFrontend",
    "parse_input_spec",
    "refine_shapes",
]
