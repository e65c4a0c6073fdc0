"""The one place that imports tensorflow, with the message to show when it is missing."""

from __future__ import annotations

import os
import re
from types import ModuleType

from oxla.errors import PluginError
from oxla.stderr_filter import dropping_stderr_lines

INSTALL_HINT = (
    "install oxla-frontend-tf with: pip install -e extensions/frontend_tf "
    "(from the oxla checkout), which brings tensorflow-cpu"
)

TF_LOG_LINE = re.compile(
    r"WARNING: All log messages before absl::InitializeLog\(\)|[IW]\d{4} [\d:.]+ +\d+ "
    r"[\w.]+:\d+\]|To enable the following instructions: ")
"""TensorFlow's C++ INFO/WARNING log lines at import (absl's preamble, oneDNN, CPU
feature notices); errors are kept."""


def require_tf() -> ModuleType:
    """Returns the ``tensorflow`` module (imported on first use: it takes seconds),
    with its C++ logs below errors silenced unless ``OXLA_DEBUG`` is set.

    Raises:
        PluginError: tensorflow is not installed, with how to install it.
    """
    if os.environ.get("OXLA_DEBUG", "") in ("", "0"):
        # TensorFlow's C++ INFO/WARNING logs (oneDNN, CPU features) go to stderr at
        # import; keep the user's own setting, and show them with --debug
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        with dropping_stderr_lines(TF_LOG_LINE):  # oneDNN notice: printed at any level
            import tensorflow as tf
    except ImportError as exc:
        raise PluginError(
            f"the tf frontend needs tensorflow, which is not importable: {exc}",
            notes=[INSTALL_HINT]) from exc
    return tf
