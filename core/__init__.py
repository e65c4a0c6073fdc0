"""oxla: an open ML compiler in Python (StableHLO in, optimized code out).

The public API is small::

    import oxla

    exe = oxla.compile(mlir_text, backend="interpreter")
    outputs = exe(x, w)
    exe.save("model.oxla")
    exe2 = oxla.load("model.oxla")

Plugins (frontends, backends, passes, patterns, custom calls) are found through entry
points in group ``oxla``; see :mod:`oxla.plugins` and :mod:`oxla.hookspecs`.
"""

from __future__ import annotations

import importlib.metadata as _md

try:
    __version__ = _md.version("oxla")
except _md.PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

from oxla.api import compile, load  # noqa: E402  (needs __version__ set first)
from oxla.errors import (  # noqa: E402
    InterpreterError,
    LoweringError,
    NotSupportedError,
    OxlaError,
    ParseError,
    PassError,
    PluginError,
    RuntimeInputError,
    VerifyError,
)
from oxla.hookspecs import hookimpl  # noqa: E402
from oxla.protocols import (  # noqa: E402
    Backend,
    BackendInfo,
    CliCommandInfo,
    CompileOptions,
    CustomCallInfo,
    Executable,
    Frontend,
    FrontendInfo,
    PassInfo,
    PatternInfo,
    Signature,
)

__all__ = [
    "__version__",
    "compile",
    "load",
    "hookimpl",
    "Backend",
    "BackendInfo",
    "CliCommandInfo",
    "CompileOptions",
    "CustomCallInfo",
    "Executable",
    "Frontend",
    "FrontendInfo",
    "PassInfo",
    "PatternInfo",
    "Signature",
    "OxlaError",
    "ParseError",
    "VerifyError",
    "PassError",
    "LoweringError",
    "PluginError",
    "RuntimeInputError",
    "InterpreterError",
    "NotSupportedError",
]
