"""Interpreter rules, one module per op family; importing this package registers all."""

from importlib import import_module

_FAMILIES = (
    "core",
    "checks",
    "elementwise",
    "convert",
    "quant",
    "shape",
    "gather_scatter",
    "reduce",
    "linalg",
    "control",
    "rng",
    "dynamic",
    "collectives",
    "io",
    "chlo",
    "sdy",
)

for _name in _FAMILIES:
    try:
        import_module(f"{__name__}.{_name}")
    except ModuleNotFoundError as _e:  # families land one by one
        if _e.name != f"{__name__}.{_name}":
            raise
