"""Rewrites of the StableHLO text TensorFlow's bridge writes, before oxla parses it.

TensorFlow's ``stage="stablehlo"`` export leaves two non-StableHLO constructs that
have an exact StableHLO meaning:

- ``mhlo.erf`` (``tf.math.erf``, ``tf.random.stateless_truncated_normal``): CHLO's
  ``chlo.erf``, which oxla legalizes for every backend;
- ``stablehlo.set_dimension_size %x, %c, dim = d`` with ``%c`` a constant equal to the
  static size of ``d`` and a result type equal to ``%x``'s (``tf.sort``, ``tf.math.top_k``,
  ``tf.searchsorted``): XLA's bounded-dynamism marker saying the dimension is full,
  the identity; it becomes a same-type ``stablehlo.reshape``, which ``tidy`` drops.

Anything else (a real dynamic size) is left for the importer to refuse.
"""

from __future__ import annotations

import re

_ERF_PRETTY = re.compile(r"\bmhlo\.erf (%[\w.#]+) : (tensor<[^>]*>)")
_ERF_GENERIC = re.compile(r"\"mhlo\.erf\"")
_SET_DIM = re.compile(
    r"(?P<res>%[\w.#:]+) = stablehlo\.set_dimension_size (?P<x>%[\w.#]+), (?P<c>%[\w.#]+), "
    r"dim = (?P<dim>\d+) : \((?P<tin>tensor<[^>]*>), tensor<i32>\) -> (?P<tout>tensor<[^>]*>)")
_CONST = r"^\s*{name} = stablehlo\.constant dense<(-?\d+)> : tensor<i32>"


def _static_dims(t: str) -> list[int] | None:
    body = t[len("tensor<"):-1]
    parts = body.split("x")[:-1]  # the element type is last
    if not all(p.isdigit() for p in parts):
        return None
    return [int(p) for p in parts]


def _constant_before(text: str, pos: int, name: str) -> int | None:
    """The value of the last ``name = stablehlo.constant dense<N> : tensor<i32>`` before
    ``pos`` (SSA names are unique within a function, and definitions come first)."""
    found = None
    for m in re.finditer(_CONST.format(name=re.escape(name)), text[:pos], re.M):
        found = int(m.group(1))
    return found


def _set_dimension_size(text: str) -> str:
    out, last = [], 0
    for m in _SET_DIM.finditer(text):
        tin, tout = m.group("tin"), m.group("tout")
        dims = _static_dims(tin)
        dim = int(m.group("dim"))
        size = _constant_before(text, m.start(), m.group("c"))
        if tin != tout or dims is None or dim >= len(dims) or size != dims[dim]:
            continue
        out.append(text[last:m.start()])
        out.append(f"{m.group('res')} = stablehlo.reshape {m.group('x')} : ({tin}) -> {tout}")
        last = m.end()
    out.append(text[last:])
    return "".join(out)


def legalize_bridge_text(text: str) -> str:
    """The text with the rewrites of the module docstring applied."""
    if "mhlo.erf" in text:
        text = _ERF_PRETTY.sub(r"chlo.erf \1 : \2 -> \2", text)
        text = _ERF_GENERIC.sub('"chlo.erf"', text)
    if "set_dimension_size" in text:
        text = _set_dimension_size(text)
    return text
