"""Reading and writing the bodies of ``dense<...>`` attributes at numpy speed.

Forms: a splat literal (``dense<1.0>``), nested lists (``dense<[[1, 2], [3, 4]]>``),
complex pairs (``(1.0, 2.0)``), booleans, hex bit patterns of floats (``0x7FC00000``)
and hex blobs (``dense<"0x0000803F...">``, little-endian, row-major).
"""

from __future__ import annotations

import re

import numpy as np

from oxla.ir.types import (
    ComplexType,
    ElementType,
    FloatType,
    IntegerType,
    QuantizedType,
    TensorType,
)

_ITEM_RE = re.compile(r"\[|\]|\(|\)|,|[^\[\](),\s]+")


class DenseLiteralError(ValueError):
    """A dense literal that does not fit its type; the parser adds the location."""


def storage_dtype(et: ElementType) -> np.dtype:
    if isinstance(et, QuantizedType):
        return et.storage_type.dtype
    return et.dtype


def _uint_view(dtype: np.dtype) -> np.dtype:
    return np.dtype(f"u{dtype.itemsize}") if dtype.itemsize in (1, 2, 4, 8) else np.dtype("u1")


def decode_hex(hexstr: str, type: TensorType) -> np.ndarray:
    """Decodes ``"0x..."`` blob text (without quotes) for ``type``; splats broadcast.

    Raises:
        DenseLiteralError: when the byte count fits neither a splat nor the full shape.
    """
    et = type.element_type
    dtype = storage_dtype(et)
    try:
        raw = bytes.fromhex(hexstr[2:])
    except ValueError as e:
        raise DenseLiteralError(f"invalid hex blob: {e}") from None
    n = type.num_elements
    item = dtype.itemsize
    if len(raw) == item * n:
        arr = np.frombuffer(raw, dtype=dtype).copy()
        return arr.reshape(type.shape)
    if len(raw) == item:
        arr = np.frombuffer(raw, dtype=dtype).copy()
        return np.broadcast_to(arr.reshape(()), type.shape).copy()
    raise DenseLiteralError(
        f"hex blob has {len(raw)} bytes, expected {item * n} for {type} (or {item} for a splat)"
    )


def encode_hex(array: np.ndarray) -> str:
    """The ``0x...`` text (uppercase, little-endian) of an array's bytes."""
    a = np.ascontiguousarray(array)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return "0x" + a.tobytes().hex().upper()


def _tokenize(body: str) -> tuple[list, tuple[int, ...]]:
    """Parses nested list text into a flat list of leaf strings (complex pairs as tuples)
    and the nesting shape."""
    toks = _ITEM_RE.findall(body)
    if not toks:
        raise DenseLiteralError("empty dense literal")
    pos = 0

    def parse_elem():
        nonlocal pos
        t = toks[pos]
        if t == "[":
            pos += 1
            items = []
            if toks[pos] == "]":
                pos += 1
                return items
            while True:
                items.append(parse_elem())
                t = toks[pos]
                pos += 1
                if t == "]":
                    return items
                if t != ",":
                    raise DenseLiteralError(f"expected ',' or ']' in dense literal, got '{t}'")
        if t == "(":
            if toks[pos + 2] != "," or toks[pos + 4] != ")":
                raise DenseLiteralError("malformed complex literal, expected '(re, im)'")
            val = (toks[pos + 1], toks[pos + 3])
            pos += 5
            return val
        pos += 1
        return t

    # Fast path: a flat or nested list of scalars is flattened without recursion depth
    # issues for typical sizes.
    try:
        tree = parse_elem()
    except IndexError:  # an unclosed '[' or '(' at the end of the literal
        raise DenseLiteralError("dense literal ends early (unclosed '[' or '(')") from None
    if pos != len(toks):
        raise DenseLiteralError(f"unexpected '{toks[pos]}' after dense literal")
    shape: list[int] = []
    node = tree
    while isinstance(node, list):
        shape.append(len(node))
        if not node:
            break
        node = node[0]
    flat: list = []

    def flatten(n, depth):
        if isinstance(n, list):
            if depth >= len(shape) or len(n) != shape[depth]:
                raise DenseLiteralError("dense literal has ragged nesting")
            if depth == len(shape) - 1:
                for x in n:
                    if isinstance(x, list):
                        raise DenseLiteralError("dense literal has ragged nesting")
                flat.extend(n)
            else:
                for x in n:
                    flatten(x, depth + 1)
        else:
            flat.append(n)

    flatten(tree, 0)
    return flat, tuple(shape)


def _int_value(s: str) -> int:
    s = s.strip()
    if s in ("true", "false"):
        return 1 if s == "true" else 0
    neg = s.startswith("-")
    body = s[1:] if neg or s.startswith("+") else s
    v = int(body, 16) if body.lower().startswith("0x") else int(body)
    return -v if neg else v


def _ints_to_array(vals: list[int], dtype: np.dtype, width: int, unsigned: bool) -> np.ndarray:
    if dtype == np.bool_:
        return np.array([v != 0 for v in vals], dtype=np.bool_)
    mask = (1 << width) - 1
    wrapped = [v & mask for v in vals]
    if not unsigned:
        half = 1 << (width - 1)
        wrapped = [v - (1 << width) if v >= half else v for v in wrapped]
    if dtype.itemsize >= 1 and dtype.kind in "iu":
        return np.array(wrapped, dtype=dtype)
    # ml_dtypes sub-byte ints
    return np.array(wrapped, dtype=np.int64).astype(dtype)


def _float_leaves(leaves: list[str], ft: FloatType) -> np.ndarray:
    dtype = ft.dtype
    hexes = [i for i, s in enumerate(leaves) if s.lower().startswith("0x")]
    if not hexes:
        try:
            return np.array([float(s) for s in leaves], dtype=np.float64).astype(dtype)
        except ValueError as e:
            raise DenseLiteralError(f"invalid float literal: {e}") from None
    out = np.empty(len(leaves), dtype=dtype)
    uview = out.view(_uint_view(dtype))
    for i, s in enumerate(leaves):
        if s.lower().startswith("0x"):
            uview[i] = int(s, 16)
        else:
            out[i] = np.float64(float(s)).astype(dtype)
    return out


def decode_literal(body: str, type: TensorType) -> np.ndarray:
    """Decodes the text inside ``dense<...>`` (not a hex blob) for ``type``.

    Raises:
        DenseLiteralError: on malformed text or a shape that does not match the type.
    """
    et = type.element_type
    leaves, shape = _tokenize(body)
    if isinstance(et, ComplexType):
        ft = et.element_type
        parts = []
        for leaf in leaves:
            if not isinstance(leaf, tuple):
                raise DenseLiteralError("expected a complex literal '(re, im)'")
            parts.extend(leaf)
        comp = _float_leaves(parts, ft).astype(np.float64 if ft.name == "f64" else np.float32)
        # Fill components separately: a + 1j*b can change -0.0 and NaN payloads.
        arr = np.empty(len(leaves), dtype=et.dtype)
        arr.real = comp[0::2]
        arr.imag = comp[1::2]
    elif isinstance(et, FloatType):
        arr = _float_leaves(leaves, et)  # type: ignore[arg-type]
    elif isinstance(et, IntegerType | QuantizedType):
        it = et.storage_type if isinstance(et, QuantizedType) else et
        try:
            vals = [_int_value(s) for s in leaves]  # type: ignore[arg-type]
        except (ValueError, AttributeError):
            raise DenseLiteralError(f"invalid integer literal in dense<{body[:40]}>") from None
        arr = _ints_to_array(vals, it.dtype, it.width, it.unsigned)
    else:
        arr = np.array([_int_value(s) for s in leaves], dtype=et.dtype)
    if not type.is_static:
        raise DenseLiteralError(f"dense literal needs a static shape, got {type}")
    if shape == () or (arr.size == 1 and shape != type.shape and not shape):
        return np.broadcast_to(arr.reshape(()), type.shape).copy()
    if shape != type.shape:
        if arr.size == 1 and shape in ((1,),) and type.shape == ():
            return arr.reshape(())
        raise DenseLiteralError(
            f"dense literal has shape {list(shape)}, expected {list(type.shape)} for {type}"
        )
    return arr.reshape(shape)
