"""oxla-frontend-torch: PyTorch programs (``torch.export``) on oxla backends.

::

    import oxla_frontend_torch as ot

    f = ot.compile(model, (input_ids,), backend="interpreter")   # nn.Module or ExportedProgram
    logits = f(input_ids).logits                                  # torch tensors in and out
    module = ot.import_program(torch.export.export(model, (x,)))  # an oxla.ir Module

torch is imported on first use of these names, not with this package.
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "compile": "oxla_frontend_torch.api",
    "TorchFunction": "oxla_frontend_torch.api",
    "load_program": "oxla_frontend_torch.loading",
    "default_backend": "oxla_frontend_torch.api",
    "import_program": "oxla_frontend_torch.importer",
    "export_module": "oxla_frontend_torch.importer",
    "decomposition_table": "oxla_frontend_torch.importer",
    "lowering": "oxla_frontend_torch.registry",
    "LOWERINGS": "oxla_frontend_torch.registry",
    "TorchFrontend": "oxla_frontend_torch.frontend",
    "shard": "oxla_frontend_torch.sharding",
}


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'oxla_frontend_torch' has no attribute '{name}'")
    import importlib

    return getattr(importlib.import_module(mod), name)


__all__ = sorted(_EXPORTS)
