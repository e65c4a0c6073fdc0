"""Raw jaxlib LAPACK custom calls as test programs: each case calls one target with
``jax.ffi.ffi_call`` the way jax's CPU lowerings do (column-major layouts on the
matrices, typed attributes, aliases), so ``jax.jit`` runs jaxlib's own kernel (the
oracle) and ``oxla_frontend_jax.jit`` runs oxla-lapack's on the same program."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


def ch(c: str) -> np.uint8:
    """A LAPACK character argument as jax passes it (``ord(c)`` as ``ui8``)."""
    return np.uint8(ord(c))


@dataclass
class Case:
    """One call: ``target`` on ``args`` with ``attrs``, results ``outs`` (shape, dtype)."""

    name: str
    target: str
    args: list[np.ndarray]
    outs: list[tuple[tuple[int, ...], Any]]
    attrs: dict[str, Any]
    aliases: dict[int, int]
    unspecified: frozenset[int] = frozenset()
    """results LAPACK documents as destroyed or leaves unwritten (jaxlib's are whatever
    the buffer held; jax never reads them): not compared."""

    def fn(self) -> Callable[..., Any]:
        import jax
        from jaxlib import lapack

        lapack.prepare_lapack_call("getrf_ffi", np.float32)  # binds scipy's LAPACK

        nd = max(a.ndim for a in self.args)

        def layout(rank: int) -> tuple[int, ...] | None:
            if rank != nd or rank < 2:
                return None
            return (*range(rank - 2), rank - 1, rank - 2)  # major-to-minor, Fortran matrix

        call = jax.ffi.ffi_call(
            self.target, [jax.ShapeDtypeStruct(s, d) for s, d in self.outs],
            input_layouts=[layout(a.ndim) for a in self.args],
            output_layouts=[layout(len(s)) for s, _ in self.outs],
            input_output_aliases=self.aliases)
        attrs = self.attrs

        def f(*args):
            return call(*args, **attrs)

        return f


def _prefix(dt: np.dtype, real: str, cplx: str) -> str:
    p = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}[dt.name]
    return f"lapack_{p}{real if dt.kind == 'f' else cplx}_ffi"


def _real(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float32 if dt in (np.float32, np.complex64) else np.float64)


def _rand(rng: np.random.Generator, shape: tuple[int, ...], dt: np.dtype) -> np.ndarray:
    x = rng.standard_normal(shape)
    if dt.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dt)


def cases(dt: Any, batch: tuple[int, ...]) -> list[Case]:
    """Every target kind for dtype ``dt`` on ``batch`` matrices, including singular and
    non-positive-definite inputs."""
    dt = np.dtype(dt)
    rng = np.random.default_rng(7)
    r = _real(dt)
    i32 = np.dtype(np.int32)
    b = batch
    m, n, k = 5, 3, 3
    a = _rand(rng, (*b, m, n), dt)
    sq = _rand(rng, (*b, 4, 4), dt)
    spd = sq @ np.conj(np.swapaxes(sq, -1, -2)) + 4 * np.eye(4, dtype=dt)
    herm = sq + np.conj(np.swapaxes(sq, -1, -2))
    sing = sq.copy()
    sing[..., 3, :] = sing[..., 0, :]  # rank 3
    nonpd = spd.copy()
    nonpd[..., 2, 2] = -50
    rhs = _rand(rng, (*b, 4, 2), dt)
    tau = _rand(rng, (*b, k), dt)
    out = []

    def add(name, kind, args, outs, attrs=None, aliases=None, cplx=None, unspecified=()):
        target = _prefix(dt, kind, cplx or kind)
        out.append(Case(f"{name}-{dt.name}-b{len(b)}", target, args, outs, attrs or {},
                        aliases or {}, frozenset(unspecified)))

    sh = lambda x: x.shape  # noqa: E731
    for nm, x in (("getrf", a), ("getrf-square", sq), ("getrf-singular", sing)):
        mn = min(x.shape[-2:])
        add(nm, "getrf", [x], [(sh(x), dt), ((*b, mn), i32), (b, i32)], aliases={0: 0})
    for side, bb in (("L", rhs), ("R", np.swapaxes(rhs, -1, -2).copy())):
        for uplo, trans, diag in (("L", "N", "N"), ("U", "T", "U"), ("L", "C", "N")):
            add(f"trsm-{side}{uplo}{trans}{diag}", "trsm", [sq, bb], [(sh(bb), dt)],
                dict(side=ch(side), uplo=ch(uplo), trans_x=ch(trans), diag=ch(diag)),
                {1: 0})
    for nm, x, uplo in (("potrf", spd, "L"), ("potrf-upper", spd, "U"),
                        ("potrf-nonpd", nonpd, "L")):
        add(nm, "potrf", [x], [(sh(x), dt), (b, i32)], dict(uplo=ch(uplo)), {0: 0})
    add("geqrf", "geqrf", [a], [(sh(a), dt), ((*b, n), dt)], aliases={0: 0})
    add("orgqr", "orgqr", [a, tau], [(sh(a), dt)], aliases={0: 0}, cplx="ungqr")
    for left in (True, False):
        for tr in (True, False):
            c = _rand(rng, (*b, m, 2) if left else (*b, 2, m), dt)
            add(f"ormqr-{int(left)}{int(tr)}", "ormqr", [a, tau, c], [(sh(c), dt)],
                dict(left=left, transpose=tr), {2: 0}, cplx="unmqr")
    add("geqp3", "geqp3", [a, np.zeros((*b, n), i32)],
        [(sh(a), dt), ((*b, n), i32), ((*b, n), dt)], aliases={0: 0, 1: 1})
    for kind in ("gesdd", "gesvd"):
        for mode in ("A", "S", "N"):
            for x in (a, np.swapaxes(a, -1, -2).copy()):
                mm, nn = x.shape[-2:]
                kk = min(mm, nn)
                u = (*b, mm, mm if mode == "A" else kk)
                vt = (*b, nn if mode == "A" else kk, nn)
                add(f"{kind}-{mode}{mm}x{nn}", kind, [x],
                    [(sh(x), dt), ((*b, kk), r), (u, dt), (vt, dt), (b, i32)],
                    dict(mode=ch(mode)), {0: 0},
                    unspecified={0, 2, 3} if mode == "N" else {0})
    for mode, uplo in (("V", "L"), ("V", "U"), ("N", "L")):
        add(f"syevd-{mode}{uplo}", "syevd", [herm],
            [(sh(herm), dt), ((*b, 4), r), (b, i32)], dict(mode=ch(mode), uplo=ch(uplo)),
            {0: 0}, cplx="heevd")
    cdt = np.dtype(np.complex64 if r == np.float32 else np.complex128)
    for left, right in (("N", "V"), ("V", "V"), ("N", "N")):
        w = [((*b, 4), dt), ((*b, 4), dt)] if dt.kind == "f" else [((*b, 4), dt)]
        add(f"geev-{left}{right}", "geev", [sq],
            [*w, ((*b, 4, 4), cdt), ((*b, 4, 4), cdt), (b, i32)],
            dict(compute_left=ch(left), compute_right=ch(right)),
            unspecified={j for j, c in ((len(w), left), (len(w) + 1, right)) if c == "N"})
    for mode in ("V", "N"):
        w = [((*b, 4), dt), ((*b, 4), dt)] if dt.kind == "f" else [((*b, 4), dt)]
        add(f"gees-{mode}", "gees", [sq], [(sh(sq), dt), (sh(sq), dt), *w, (b, i32),
                                            (b, i32)], dict(mode=ch(mode), sort=ch("N")),
            {0: 0}, unspecified={1} if mode == "N" else ())
    add("gehrd", "gehrd", [sq], [(sh(sq), dt), ((*b, 3), dt), (b, i32)],
        dict(low=np.int32(1), high=np.int32(4)), {0: 0})
    for uplo in ("L", "U"):
        add(f"sytrd-{uplo}", "sytrd", [herm],
            [(sh(herm), dt), ((*b, 4), r), ((*b, 3), r), ((*b, 3), dt), (b, i32)],
            dict(uplo=ch(uplo)), {0: 0}, cplx="hetrd")
    dl, d, du = (_rand(rng, (*b, 4), dt) for _ in range(3))
    dl[..., 0] = 0
    du[..., -1] = 0
    zd = d.copy()
    zd[..., :] = 0  # singular: a zero diagonal with zero off-diagonals in one row
    zdl, zdu = dl.copy(), du.copy()
    zdl[..., 1] = 0
    zdu[..., 1] = 0
    for nm, args in (("gtsv", [dl, d, du, rhs]), ("gtsv-singular", [zdl, zd, zdu, rhs])):
        add(nm, "gtsv", args, [*((x.shape, dt) for x in args), (b, i32)],
            aliases={0: 0, 1: 1, 2: 2, 3: 3})
    for nm, args in (("perturbed", [dl, d, du, rhs]),
                     ("perturbed-singular", [zdl, zd, zdu, rhs])):
        out.append(Case(f"{nm}-{dt.name}-b{len(b)}", "tridiagonal_solve_perturbed_ffi",
                        args, [(rhs.shape, dt)], {}, {}))
    return out
