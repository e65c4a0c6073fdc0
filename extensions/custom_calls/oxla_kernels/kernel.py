"""Declaring a kernel once: :class:`Kernel`.

A kernel is a ``stablehlo.custom_call`` target with a declared signature and one
implementation per backend::

    rmsnorm = Kernel(
        "demo.rmsnorm",
        operands=["f32[n, d]", "f32[d]"], results=["f32[n, d]"],
        attributes={"eps": 1e-6},
        sharding_rule="([i, j], [j]) -> ([i, j])",
        impls=[CImpl(C_SOURCE, "rmsnorm"), NumpyImpl(rmsnorm_numpy)])

Operand and result specs are ``dtype[dims]`` strings: a dim is a size (``4``), ``?``
(any size) or a name (``n``) bound by the first operand dim that carries it, so that
``f32[n, d]`` in a result is computed from the operands; a ``shape_fn`` replaces the
result specs when that is not enough. Attributes (a dict of name to default value:
``float``, ``int``, ``bool``, ``str`` or a tuple of ints) are written, with every
operand's and result's shape, into the op's ``backend_config`` as ``key=value;`` text
that the C header ``oxla_kernel.h`` reads (see :func:`encode_config`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from oxla.errors import LoweringError, NotSupportedError
from oxla.ir import Value, parse_attribute, parse_type
from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla.protocols import CustomCallInfo

_SPEC_RE = re.compile(r"^\s*([a-z0-9]+)\s*\[(.*)\]\s*$")
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DTYPES: dict[str, T.ElementType] = {}


def element_type(name: str) -> T.ElementType:
    """The ``oxla.ir`` element type of ``name`` (``f32``, ``bf16``, ``i32``...)."""
    if name not in _DTYPES:
        _DTYPES[name] = parse_type(f"tensor<{name}>").element_type
    return _DTYPES[name]


@dataclass(frozen=True)
class TensorSpec:
    """One operand or result: an element type name and dims (int, ``None`` for any
    size, or a str naming a size shared with other specs)."""

    dtype: str
    dims: tuple[int | str | None, ...]

    @staticmethod
    def parse(text: str | TensorSpec) -> TensorSpec:
        """``"f32[n, 4, ?]"`` -> ``TensorSpec("f32", ("n", 4, None))``.

        Raises:
            ValueError: not of the form ``dtype[dim, ...]``.
        """
        if isinstance(text, TensorSpec):
            return text
        m = _SPEC_RE.match(text)
        if m is None:
            raise ValueError(f"tensor spec {text!r} is not of the form 'f32[n, 4, ?]'")
        dims: list[int | str | None] = []
        for d in (x.strip() for x in m.group(2).split(",") if x.strip()):
            dims.append(None if d == "?" else int(d) if d.isdigit() else d)
        element_type(m.group(1))
        return TensorSpec(m.group(1), tuple(dims))

    def __str__(self) -> str:
        return f"{self.dtype}[{', '.join('?' if d is None else str(d) for d in self.dims)}]"


def encode_config(attrs: Mapping[str, Any], ins: Sequence[T.TensorType],
                  outs: Sequence[T.TensorType]) -> str:
    """The ``backend_config`` text of one call: ``in0=4x64;out0=4x64;eps=1e-06;``.

    Raises:
        ValueError: an attribute value with ``;`` or ``=`` in its text, or of a type
            other than bool, int, float, str or a sequence of ints.
    """
    parts = [f"in{i}={'x'.join(str(d) for d in t.shape)}" for i, t in enumerate(ins)]
    parts += [f"out{i}={'x'.join(str(d) for d in t.shape)}" for i, t in enumerate(outs)]
    for k in sorted(attrs):
        v = attrs[k]
        if isinstance(v, bool):
            s = str(int(v))
        elif isinstance(v, int | float | np.integer | np.floating):
            s = repr(float(v)) if isinstance(v, float | np.floating) else str(int(v))
        elif isinstance(v, str):
            s = v
        elif isinstance(v, Sequence):
            s = ",".join(str(int(x)) for x in v)
        else:
            raise ValueError(f"attribute {k}={v!r}: not a bool, int, float, str or ints")
        if ";" in s or "=" in s:
            raise ValueError(f"attribute {k}={v!r}: ';' and '=' are not allowed in values")
        parts.append(f"{k}={s}")
    return "".join(p + ";" for p in parts)


def decode_config(text: str, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """The attributes of a ``backend_config`` written by :func:`encode_config`, typed
    like their defaults (shape keys left out)."""
    out = dict(defaults)
    for part in filter(None, text.split(";")):
        k, _, v = part.partition("=")
        if re.fullmatch(r"(in|out)\d+", k) or k not in defaults:
            continue
        d = defaults[k]
        if isinstance(d, bool):
            out[k] = bool(int(v))
        elif isinstance(d, int):
            out[k] = int(v)
        elif isinstance(d, float):
            out[k] = float(v)
        elif isinstance(d, tuple):
            out[k] = tuple(int(x) for x in v.split(",") if x)
        else:
            out[k] = v
    return out


def scalar_values(scalars: Sequence[Any], ins: Sequence[T.TensorType],
                  attrs: Mapping[str, Any]) -> tuple[float | int, ...]:
    """The scalar kernel arguments of a GPU/SYCL implementation: each entry of
    ``scalars`` is an attribute name or ``fn(operand types, attrs) -> number``."""
    return tuple(s(ins, attrs) if callable(s) else attrs[s] for s in scalars)


@dataclass
class Kernel:
    """A custom-call kernel, declared once, with one implementation per backend.

    Attributes:
        target: the ``call_target_name`` (``"mypkg.rmsnorm"``).
        operands: one spec per operand (``"f32[n, d]"``; see the module doc).
        results: one spec per result, dims named by the operands' specs.
        attributes: attribute names and their defaults.
        impls: implementations (``CImpl``, ``NumpyImpl``, ``SyclImpl``, ``CudaImpl``,
            ``TritonImpl``, ``HipImpl``...); each names its backend.
        shape_fn: ``shape_fn(operand_types, attrs) -> result types``, replacing the
            result specs' shapes.
        layouts: operand and result layouts, minor-to-major (row-major when None; the
            cpu backend accepts only row-major).
        aliases: ``{result index: operand index}`` for a result that reuses an
            operand's buffer (declared on the op as ``output_operand_aliases``).
        has_side_effect: the call is kept when its results are unused, in order.
        sharding_rule: Shardy's notation (``"([i, j], [j]) -> ([i, j])"``), attached as
            ``sdy.sharding_rule`` with the factor sizes of each call.
        tolerance: largest max|error| / max|reference| an implementation may show
            against the numpy reference (``--verify-overrides``); 0 for exact.
    """

    target: str
    operands: Sequence[str | TensorSpec]
    results: Sequence[str | TensorSpec]
    attributes: Mapping[str, Any] = field(default_factory=dict)
    impls: Sequence[Any] = ()
    shape_fn: Callable[[list[T.TensorType], dict], list[T.TensorType]] | None = None
    layouts: tuple[Sequence[Sequence[int]], Sequence[Sequence[int]]] | None = None
    aliases: Mapping[int, int] = field(default_factory=dict)
    has_side_effect: bool = False
    sharding_rule: str | None = None
    tolerance: float = 1e-5

    def __post_init__(self) -> None:
        self.operands = [TensorSpec.parse(s) for s in self.operands]
        self.results = [TensorSpec.parse(s) for s in self.results]
        self.attributes = dict(self.attributes)
        if self.sharding_rule is not None:
            self._rule_factors()  # validates
        for impl in self.impls:
            impl.bind(self)

    # -- types -----------------------------------------------------------------
    def bind_dims(self, operand_types: Sequence[T.TensorType]) -> dict[str, int]:
        """Checks operand types against the specs; returns the named dims' sizes.

        Raises:
            NotSupportedError: a count, rank, element type or size that does not fit.
        """
        if len(operand_types) != len(self.operands):
            raise NotSupportedError(f"kernel '{self.target}' takes {len(self.operands)} "
                                    f"operands, got {len(operand_types)}")
        sizes: dict[str, int] = {}
        for i, (t, s) in enumerate(zip(operand_types, self.operands)):
            where = f"kernel '{self.target}' operand {i} ({s})"
            if not isinstance(t, T.TensorType) or not t.is_static:
                raise NotSupportedError(f"{where}: {t} is not a static tensor")
            if t.element_type != element_type(s.dtype) or t.rank != len(s.dims):
                raise NotSupportedError(f"{where}: got {t}")
            for d, want in zip(t.shape, s.dims):
                if isinstance(want, int) and d != want:
                    raise NotSupportedError(f"{where}: got {t}")
                if isinstance(want, str) and sizes.setdefault(want, d) != d:
                    raise NotSupportedError(f"{where}: got {t}, but {want}={sizes[want]}")
        return sizes

    def result_types(self, operand_types: Sequence[T.TensorType],
                     attrs: Mapping[str, Any] | None = None) -> list[T.TensorType]:
        """The result types of a call with these operands.

        Raises:
            NotSupportedError: operands that do not fit, or a result dim the specs
                cannot compute (use ``shape_fn``).
        """
        sizes = self.bind_dims(operand_types)
        if self.shape_fn is not None:
            return list(self.shape_fn(list(operand_types), dict(self.attrs(attrs))))
        out = []
        for s in self.results:
            dims = []
            for d in s.dims:
                if isinstance(d, int):
                    dims.append(d)
                elif isinstance(d, str) and d in sizes:
                    dims.append(sizes[d])
                else:
                    raise NotSupportedError(f"kernel '{self.target}': result spec {s} has "
                                            f"a dim the operands do not name; give a "
                                            "shape_fn")
            out.append(T.TensorType(tuple(dims), element_type(s.dtype)))
        return out

    def attrs(self, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The defaults updated with ``given``.

        Raises:
            NotSupportedError: an attribute the kernel does not declare.
        """
        out = dict(self.attributes)
        for k, v in (given or {}).items():
            if k not in out:
                raise NotSupportedError(f"kernel '{self.target}' has no attribute '{k}' "
                                        f"(declared: {', '.join(sorted(out)) or 'none'})")
            out[k] = v
        return out

    # -- IR ----------------------------------------------------------------------
    def _rule_factors(self) -> tuple[list[list[str]], list[list[str]]]:
        text = self.sharding_rule or ""
        lhs, arrow, rhs = text.partition("->")
        groups = [re.findall(r"\[([^\]]*)\]", side) for side in (lhs, rhs)]
        if not arrow or len(groups[0]) != len(self.operands) or \
                len(groups[1]) != len(self.results):
            raise ValueError(f"kernel '{self.target}': sharding rule {text!r} must map "
                             f"{len(self.operands)} operand(s) to {len(self.results)} "
                             "result(s), like '([i, j], [j]) -> ([i, j])'")
        fac = [[[f.strip() for f in g.split(",") if f.strip()] for g in side]
               for side in groups]
        for specs, side in ((self.operands, fac[0]), (self.results, fac[1])):
            for s, g in zip(specs, side):
                if len(g) != len(s.dims) or not all(_NAME_RE.match(f) for f in g):
                    raise ValueError(f"kernel '{self.target}': sharding rule {text!r}: "
                                     f"{g} does not fit {s}")
        return fac[0], fac[1]

    def sharding_rule_attr(self, ins: Sequence[T.TensorType],
                           outs: Sequence[T.TensorType]) -> A.Attribute:
        """``#sdy.op_sharding_rule<...>`` with this call's factor sizes."""
        fi, fo = self._rule_factors()
        sizes: dict[str, int] = {}
        for side, types in ((fi, ins), (fo, outs)):
            for g, t in zip(side, types):
                for f, d in zip(g, t.shape):
                    sizes.setdefault(f, d)

        def m(side):
            return ", ".join("[" + ", ".join(g) + "]" for g in side)

        text = (f"#sdy.op_sharding_rule<({m(fi)})->({m(fo)}) "
                f"{{{', '.join(f'{k}={v}' for k, v in sizes.items())}}}>")
        return parse_attribute(text)

    def op_attributes(self, ins: Sequence[T.TensorType], outs: Sequence[T.TensorType],
                      attrs: Mapping[str, Any] | None = None) -> dict[str, A.Attribute]:
        """The attributes of a ``stablehlo.custom_call`` calling this kernel."""
        at: dict[str, A.Attribute] = {
            "call_target_name": A.StringAttr(self.target),
            "backend_config": A.StringAttr(encode_config(self.attrs(attrs), ins, outs)),
            "api_version": A.i32_attr(1),
        }
        if self.has_side_effect:
            at["has_side_effect"] = A.BoolAttr(True)
        if self.layouts is not None:
            for key, lays in zip(("operand_layouts", "result_layouts"), self.layouts):
                at[key] = parse_attribute(
                    "[" + ", ".join(f"dense<[{', '.join(map(str, x))}]> : tensor<{len(x)}x"
                                    "index>" for x in lays) + "]")
        if self.aliases:
            at["output_operand_aliases"] = parse_attribute("[" + ", ".join(
                f"#stablehlo.output_operand_alias<output_tuple_indices = [], "
                f"operand_index = {o}, operand_tuple_indices = []>"
                for _, o in sorted(self.aliases.items())) + "]")
        if self.sharding_rule is not None:
            at["sdy.sharding_rule"] = self.sharding_rule_attr(ins, outs)
        return at

    def call(self, rewriter: Any, anchor: Any, operands: Sequence[Value],
             attrs: Mapping[str, Any] | None = None) -> list[Value]:
        """Creates the ``custom_call`` before ``anchor`` through ``rewriter`` (an
        ``oxla.passes.rewrite.Rewriter``); returns its results."""
        ins = [v.type for v in operands]
        outs = self.result_types(ins, attrs)
        op = rewriter.create_before(anchor, "stablehlo.custom_call", list(operands), outs,
                                    self.op_attributes(ins, outs, attrs))
        return list(op.results)

    # -- implementations -----------------------------------------------------------
    def impl(self, which: str) -> Any:
        """The implementation for a backend name or a language (``"cpu"``, ``"c"``,
        ``"sycl"``...).

        Raises:
            LoweringError: none declared.
        """
        for impl in self.impls:
            if which in (impl.backend, impl.language):
                return impl
        have = ", ".join(f"{i.language} ({i.backend})" for i in self.impls) or "none"
        raise LoweringError(f"kernel '{self.target}' has no '{which}' implementation "
                            f"(it has: {have})")

    def custom_calls(self) -> list[CustomCallInfo]:
        """The ``oxla_custom_calls`` descriptors, one per backend (the first
        implementation declared for a backend wins)."""
        out: dict[str, CustomCallInfo] = {}
        for impl in self.impls:
            if impl.backend and impl.backend not in out:
                out[impl.backend] = CustomCallInfo(self.target, impl.backend,
                                                   impl.custom_call_fn())
        return list(out.values())

    def run(self, which: str, *arrays: np.ndarray, **attrs: Any) -> list[np.ndarray]:
        """Runs one implementation directly on numpy arrays (tests, benchmarks).

        Raises:
            NotSupportedError: arrays that do not fit the operand specs.
            LoweringError: no such implementation, or it cannot run here.
        """
        arrays = tuple(np.ascontiguousarray(a) for a in arrays)
        ins = [T.TensorType(a.shape, element_type(s.dtype))
               for a, s in zip(arrays, self.operands)]
        outs = self.result_types(ins, attrs)
        return self.impl(which).run(arrays, ins, outs, self.attrs(attrs))
