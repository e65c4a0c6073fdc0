"""oxla entry point of oxla-kernels-demo: the kernel's implementations and the override."""

from __future__ import annotations

from oxla import hookimpl


@hookimpl
def oxla_custom_calls():
    from oxla_kernels_demo.kernels import RMSNORM

    return RMSNORM.custom_calls()


@hookimpl
def oxla_patterns():
    from oxla_kernels_demo.kernels import RMSNORM_OVERRIDE

    return [RMSNORM_OVERRIDE.pattern_info()]
