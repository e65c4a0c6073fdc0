"""Typed-FFI attributes of ``stablehlo.custom_call``, decoded once for every backend.

XLA's typed FFI (``api_version = 4``, ``#stablehlo<custom_call_api_version
API_VERSION_TYPED_FFI>``) passes a custom call's parameters as a ``DictionaryAttr`` in
``backend_config`` instead of an opaque string. JAX also emits the legacy form: an
``api_version`` 1-3 call with a string (often empty) ``backend_config`` and the typed
parameters in an ``mhlo.backend_config`` dictionary, e.g. jaxlib's LAPACK kernels::

    stablehlo.custom_call @lapack_strsm_ffi(%a, %b) {backend_config = "",
        mhlo.backend_config = {diag = 78 : ui8, side = 76 : ui8, uplo = 85 : ui8}, ...}

:func:`ffi_attributes` turns either into plain Python data, keeping the width and
signedness of typed numbers (XLA's FFI decodes ``ui8`` as ``uint8_t``, ``f32`` as
``float``, ...) so a kernel gets exactly what XLA would hand it.

Spec: StableHLO ``custom_call`` (``backend_config``, ``api_version``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from oxla.errors import NotSupportedError
from oxla.ir import attributes as A
from oxla.ir import types as T

TYPED_FFI = 4
_API_NAMES = {"API_VERSION_UNSPECIFIED": 0, "API_VERSION_ORIGINAL": 1,
              "API_VERSION_STATUS_RETURNING": 2, "API_VERSION_STATUS_RETURNING_UNIFIED": 3,
              "API_VERSION_TYPED_FFI": 4}


def api_version(op: Any) -> int | None:
    """The ``api_version`` of a custom_call as an int (0 when absent); None for an
    enum name this module does not know."""
    a = op.attributes.get("api_version")
    if a is None:
        return 0
    if isinstance(a, A.IntegerAttr):
        return int(a.value)
    if isinstance(a, A.EnumAttr):
        return _API_NAMES.get(a.value)
    v = A.to_python(a)
    return int(v) if isinstance(v, int | np.integer) else None


def _scalar(value: Any, type: T.Type | None) -> Any:
    """A typed number as a numpy scalar of its dtype (bool for ``i1``); untyped ones
    stay Python numbers."""
    if type is None:
        return value
    if isinstance(type, T.IntegerType) and type.is_bool:
        return bool(value)
    dtype = getattr(type, "dtype", None)
    if dtype is None:  # index: a 64-bit signed integer in XLA's FFI
        return np.int64(value)
    return np.dtype(dtype).type(value)


def decode_attribute(attr: A.Attribute, where: str = "attribute") -> Any:
    """One attribute as Python data (see :func:`ffi_attributes` for the mapping).

    Raises:
        NotSupportedError: an attribute kind the typed FFI has no value for (symbol
            references, dialect structs, opaque dialect attributes...), naming ``where``.
    """
    if isinstance(attr, A.BoolAttr):
        return bool(attr.value)
    if isinstance(attr, A.IntegerAttr | A.FloatAttr):
        return _scalar(attr.value, attr.type)
    if isinstance(attr, A.StringAttr):
        return attr.value
    if isinstance(attr, A.UnitAttr):
        return True
    if isinstance(attr, A.EnumAttr):
        return attr.value
    if isinstance(attr, A.TypeAttr):
        return attr.type
    if isinstance(attr, A.DenseArrayAttr):
        return tuple(_scalar(v, attr.element_type) for v in attr.values)
    if isinstance(attr, A.ArrayAttr):
        return tuple(decode_attribute(a, f"{where}[{i}]") for i, a in enumerate(attr.value))
    if isinstance(attr, A.DenseElementsAttr):
        return attr.array
    if isinstance(attr, A.DictionaryAttr):
        return {k: decode_attribute(v, f"{where}.{k}") for k, v in attr.entries}
    raise NotSupportedError(f"typed FFI {where}: attribute {attr} has no FFI value "
                            "(supported: numbers, bools, strings, arrays, dense elements, "
                            "dictionaries)")


def _dictionary(attr: A.Attribute | None, name: str, target: str) -> A.DictionaryAttr | None:
    """``attr`` as a dictionary: a DictionaryAttr, or a string holding one's text
    (XLA's HLO form of a typed-FFI backend_config); None for absent or empty."""
    if attr is None:
        return None
    if isinstance(attr, A.DictionaryAttr):
        return attr
    if isinstance(attr, A.StringAttr):
        text = attr.value.strip()
        if not text:
            return None
        from oxla.ir.parser import parse_attribute

        try:
            parsed = parse_attribute(text)
        except Exception as exc:  # noqa: BLE001 - reported as one clear error
            raise NotSupportedError(f"custom_call @{target}: {name} {text!r} is not a "
                                    "typed FFI dictionary") from exc
        if isinstance(parsed, A.DictionaryAttr):
            return parsed
    raise NotSupportedError(f"custom_call @{target}: {name} {attr} is not a typed FFI "
                            "dictionary")


def ffi_attributes(op: Any) -> dict[str, Any]:
    """The typed attributes of a ``stablehlo.custom_call``.

    For ``api_version = 4`` (typed FFI) the ``backend_config`` DictionaryAttr (or a
    string holding a dictionary's text); for ``api_version`` 0-3 the
    ``mhlo.backend_config`` dictionary if any (a string ``backend_config`` stays the
    opaque bytes of the legacy convention and is not decoded). ``{}`` when there is none.

    Values: ``true``/``false`` and ``i1`` numbers -> ``bool``; typed numbers -> numpy
    scalars of their dtype (``76 : ui8`` -> ``np.uint8(76)``, ``2.5 : f32`` ->
    ``np.float32(2.5)``, ``index`` -> ``np.int64``); untyped numbers -> Python
    ``int``/``float``; strings -> ``str``; ``unit`` -> ``True``; enums -> their value
    name; ``array<T: ...>`` -> a tuple of numpy scalars of ``T``; ``[...]`` -> a tuple of
    decoded values; ``dense<...>`` -> the numpy array (shape and dtype of its type);
    nested dictionaries -> ``dict``.

    Args:
        op: a ``stablehlo.custom_call`` operation.

    Returns:
        A new dict, keys in MLIR's (sorted) order.

    Raises:
        NotSupportedError: the dictionary holds an attribute the FFI has no value for,
            or an api_version 4 ``backend_config`` that is not a dictionary.
    """
    target = A.to_python(op.attributes.get("call_target_name"))
    if api_version(op) == TYPED_FFI:
        name = "backend_config"
    else:
        name = "mhlo.backend_config"
    d = _dictionary(op.attributes.get(name), name, str(target))
    return {} if d is None else decode_attribute(d, f"@{target} {name}")


def frontend_attributes(op: Any) -> dict[str, Any]:
    """The ``mhlo.frontend_attributes`` dictionary of an op as Python data (``{}`` when
    absent); JAX puts e.g. ``num_batch_dims = "1"`` there for its LAPACK calls."""
    d = op.attributes.get("mhlo.frontend_attributes")
    if not isinstance(d, A.DictionaryAttr):
        return {}
    return decode_attribute(d, "mhlo.frontend_attributes")


__all__ = ["TYPED_FFI", "api_version", "decode_attribute", "ffi_attributes",
           "frontend_attributes"]
