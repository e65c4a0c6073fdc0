"""The one place that imports tensorflow, with the message to show when it is missing."""

from __future__ import annotations

from types import ModuleType

from oxla.errors import PluginError

INSTALL_HINT = (
    "install oxla-frontend-tf with: pip install -e extensions/frontend_tf "
    "(or: pip install oxla-frontend-tf), which brings tensorflow-cpu"
)


def require_tf() -> ModuleType:
    """Returns the ``tensorflow`` module (imported on first use: it takes seconds).

    Raises:
        PluginError: tensorflow is not installed, with how to install it.
    """
    try:
        import tensorflow as tf
    except ImportError as exc:
        raise PluginError(
            f"the tf frontend needs tensorflow, which is not importable: {exc}",
            notes=[INSTALL_HINT]) from exc
    return tf
