"""The one place that imports jax, with the message to show when it is missing."""

from __future__ import annotations

from types import ModuleType

from oxla.errors import PluginError

INSTALL_HINT = (
    "install oxla-frontend-jax with: pip install -e extensions/frontend_jax "
    "(from the oxla checkout), which brings jax and jaxlib"
)


def require_jax() -> ModuleType:
    """Returns the ``jax`` module.

    Raises:
        PluginError: jax (or jaxlib) is not installed, with how to install it.
    """
    try:
        import jax
        import jax.export  # noqa: F401  (a submodule, not always imported by `import jax`)
    except ImportError as exc:
        raise PluginError(f"the jax frontend needs jax, which is not importable: {exc}",
                          notes=[INSTALL_HINT]) from exc
    return jax
