"""XLA's linear-algebra custom calls in TensorFlow's StableHLO, mapped to jaxlib's
LAPACK targets (``lapack_*_ffi``, implemented by oxla-lapack on cpu and the interpreter).

TensorFlow's bridge writes three calls that XLA's own passes expand (QrExpander,
EighExpander) rather than run as kernels; their tuple results are read with
``stablehlo.get_tuple_element``:

- ``@Qr(a)`` -> ``(a', taus)``, ``a: [*, m, n]``: Householder QR in LAPACK's compact form
  (R on and above the diagonal, the reflectors' vectors below it with an implicit unit
  head, ``taus: [*, min(m, n)]``): LAPACK ``geqrf``, ``@lapack_<p>geqrf_ffi``.
- ``@ProductOfElementaryHouseholderReflectors(a, taus)`` -> ``q: [*, m, n]``: the first
  ``n`` columns of ``H_1 ... H_k`` (``k`` the length of ``taus``): LAPACK ``orgqr`` /
  ``ungqr``, ``@lapack_<p>orgqr_ffi`` / ``ungqr``.
- ``@Eigh(a)`` -> ``(v, w)``, ``backend_config = "lower,sort_eigenvalues,max_iter,tol"``:
  eigenvectors (columns of ``v``) and real eigenvalues of a Hermitian matrix whose
  ``lower`` (1) or upper (0) triangle is read: LAPACK ``syevd`` / ``heevd`` with
  ``mode = 'V'``, ``@lapack_<p>syevd_ffi``. LAPACK's eigenvalues are ascending
  (``sort_eigenvalues = 1``'s order; with 0 XLA leaves its Jacobi order, which no caller
  may rely on); ``max_iter``/``tol`` tune XLA's Jacobi iteration and have no LAPACK
  meaning; the added ``info`` result is not read (a non-converged ``syevd`` leaves
  LAPACK's values, where XLA's Jacobi would stop at ``max_iter``).

Element types f32, f64, complex64, complex128 (LAPACK's s/d/c/z); others are refused.
"""

from __future__ import annotations

from oxla.errors import NotSupportedError
from oxla.ir import Builder, Module, Operation, parse_attribute
from oxla.ir import attributes as A
from oxla.ir import types as T

QR, ORGQR, EIGH = "Qr", "ProductOfElementaryHouseholderReflectors", "Eigh"
_PREFIX = {"f32": "s", "f64": "d", "complex<f32>": "c", "complex<f64>": "z"}


def _target(op: Operation) -> str | None:
    a = op.attributes.get("call_target_name")
    return a.value if isinstance(a, A.StringAttr) else None


def _prefix(op: Operation, t: T.Type) -> str:
    p = _PREFIX.get(str(getattr(t, "element_type", "")))
    if p is None:
        raise NotSupportedError(f"{op.loc}: '@{_target(op)}' on {t} is not supported "
                                "(LAPACK takes f32, f64, complex64 and complex128)")
    return p


def _lapack_call(b: Builder, op: Operation, target: str, result_types: list[T.Type],
                 attrs: str = "{}") -> Operation:
    return b.create("stablehlo.custom_call", list(op.operands), {
        "call_target_name": A.StringAttr(target), "backend_config": A.StringAttr(""),
        "mhlo.backend_config": parse_attribute(attrs)}, result_types, loc=op.loc)


def _split_tuple(op: Operation, new: Operation, n: int) -> None:
    """Points every ``get_tuple_element %op[i]`` at ``new``'s result ``i`` (``i < n``)."""
    res = op.results[0]
    for user in list(res.users):
        index = user.attributes.get("index")
        if user.name != "stablehlo.get_tuple_element" or index is None or \
                int(A.to_python(index)) >= n:
            raise NotSupportedError(f"{op.loc}: '@{_target(op)}''s tuple is used by "
                                    f"'{user.name}', not get_tuple_element")
        user.results[0].replace_all_uses_with(new.results[int(A.to_python(index))])
        user.erase()


def _tuple_types(op: Operation, n: int) -> list[T.Type]:
    t = op.results[0].type if len(op.results) == 1 else None
    if not isinstance(t, T.TupleType) or len(t.types) != n:
        raise NotSupportedError(f"{op.loc}: '@{_target(op)}' with results "
                                f"{[str(r.type) for r in op.results]} (expected a tuple of {n})")
    return list(t.types)


def _batch(t: T.Type, core: int) -> list[int]:
    return list(t.shape[:len(t.shape) - core])


def _qr(op: Operation) -> None:
    a_t, tau_t = _tuple_types(op, 2)
    new = _lapack_call(Builder.before(op), op, f"lapack_{_prefix(op, a_t)}geqrf_ffi",
                       [a_t, tau_t])
    _split_tuple(op, new, 2)
    op.erase()


def _orgqr(op: Operation) -> None:
    q_t = op.results[0].type
    p = _prefix(op, q_t)
    new = _lapack_call(Builder.before(op), op,
                       f"lapack_{p}{'ungqr' if p in 'cz' else 'orgqr'}_ffi", [q_t])
    op.results[0].replace_all_uses_with(new.results[0])
    op.erase()


def _eigh(op: Operation) -> None:
    v_t, w_t = _tuple_types(op, 2)
    cfg = op.attributes.get("backend_config")
    fields = (cfg.value if isinstance(cfg, A.StringAttr) else "").split(",")
    lower = fields[0].strip() != "0" if fields and fields[0].strip() else True
    p = _prefix(op, v_t)
    info_t = T.TensorType(tuple(_batch(v_t, 2)), T.IntegerType(32))
    attrs = f"{{mode = {ord('V')} : ui8, uplo = {ord('L' if lower else 'U')} : ui8}}"
    new = _lapack_call(Builder.before(op), op,
                       f"lapack_{p}{'heevd' if p in 'cz' else 'syevd'}_ffi",
                       [v_t, w_t, info_t], attrs)
    _split_tuple(op, new, 2)
    op.erase()


_REWRITES = {QR: _qr, ORGQR: _orgqr, EIGH: _eigh}


def map_xla_linalg_calls(module: Module) -> int:
    """Rewrites ``@Qr``, ``@ProductOfElementaryHouseholderReflectors`` and ``@Eigh``
    calls in place (module doc).

    Returns:
        How many calls were rewritten.

    Raises:
        NotSupportedError: an element type LAPACK lacks, or a tuple result used other
            than through ``get_tuple_element``.
    """
    ops = [op for op in module.walk()
           if op.name == "stablehlo.custom_call" and _target(op) in _REWRITES]
    for op in ops:
        _REWRITES[_target(op)](op)
    return len(ops)
