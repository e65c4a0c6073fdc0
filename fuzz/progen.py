"""Random valid StableHLO programs, and a differential run of cpu against the interpreter.

A *program* is a short chain of ops over one or two random arguments: exact ops
(integer and bitwise arithmetic, float add/subtract/multiply/divide/sqrt/min/max,
compare, select, clamp, conversions, every shape op) and at most one inexact op
(a transcendental function, a float reduction or a float dot) as its last step. Exact
programs must agree bit for bit (every NaN equal to every NaN); an inexact one within
the op's bound (:data:`ULP` ulps of the result for an elementwise function; for a sum
over ``n`` terms, ``n`` ulps of the sum of their magnitudes, spec "reduce" fixes no
order). Many programs are batched into one ``@main`` (independent subgraphs, one
compile for all) to amortize the compiles.

Run it: ``python fuzz/progen.py --programs 2000 --batch 50 --seed 1``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np

FLOATS = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64}
INTS = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
        "ui8": np.uint8, "ui16": np.uint16, "ui32": np.uint32, "ui64": np.uint64}
BOOL = {"i1": np.bool_}
DTYPES = {**FLOATS, **INTS, **BOOL}
MANT = {"f16": 10, "bf16": 7, "f32": 23, "f64": 52}
EMIN = {"f16": -14, "bf16": -126, "f32": -126, "f64": -1022}
ULP = {"exponential": 4, "log": 4, "log_plus_one": 4, "exponential_minus_one": 4,
       "tanh": 4, "logistic": 4, "sine": 4, "cosine": 4, "tan": 8, "cbrt": 4, "rsqrt": 2,
       "atan2": 4, "power": 8}
"""Bound (in ulps of the result) for each inexact elementwise op."""

EXACT_BIN_ANY = ["add", "subtract", "multiply", "maximum", "minimum"]
EXACT_BIN_FLOAT = ["divide", "remainder"]
BITWISE = ["and", "or", "xor"]
SHIFTS = ["shift_left", "shift_right_logical", "shift_right_arithmetic"]
EXACT_UN_FLOAT = ["negate", "abs", "sign", "floor", "ceil", "round_nearest_even",
                  "round_nearest_afz", "sqrt"]
EXACT_UN_INT = ["negate", "abs", "sign", "not", "popcnt", "count_leading_zeros"]
INEXACT_UN = ["exponential", "log", "log_plus_one", "exponential_minus_one", "tanh",
              "logistic", "sine", "cosine", "tan", "cbrt", "rsqrt"]
INEXACT_BIN = ["atan2", "power"]


def arr(xs: Any) -> str:
    """A dense i64 array attribute (``array<i64>`` when empty)."""
    xs = [str(int(x)) for x in xs]
    return f"array<i64: {', '.join(xs)}>" if xs else "array<i64>"


@dataclass
class Value:
    name: str
    shape: tuple[int, ...]
    et: str

    @property
    def type(self) -> str:
        return "tensor<" + "".join(f"{d}x" for d in self.shape) + self.et + ">"


@dataclass
class Program:
    """One generated program: its args, its result, its text lines, how to compare."""

    args: list[Value] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    result: Value | None = None
    kind: str = "exact"  # "exact", "ulp:<n>" or "sum:<terms>"
    ops: list[str] = field(default_factory=list)


class Generator:
    """Writes random programs in the generic form (every op's types spelled out)."""

    def __init__(self, rng: np.random.Generator, prefix: str = "p"):
        self.rng = rng
        self.prefix = prefix
        self.n = 0

    def fresh(self, shape: tuple[int, ...], et: str) -> Value:
        self.n += 1
        return Value(f"%{self.prefix}{self.n}", tuple(shape), et)

    def shape(self) -> tuple[int, ...]:
        rank = int(self.rng.choice([0, 1, 1, 2, 2, 3]))
        return tuple(int(0 if self.rng.random() < 0.04 else self.rng.integers(1, 6))
                     for _ in range(rank))

    def op(self, p: Program, name: str, operands: list[Value], result: Value,
           attrs: str = "", region: str = "") -> Value:
        ins = ", ".join(v.name for v in operands)
        tys = ", ".join(v.type for v in operands)
        a = f" {{{attrs}}}" if attrs else ""
        r = f" ({{\n{region}\n  }})" if region else ""
        p.lines.append(f'  {result.name} = "stablehlo.{name}"({ins}){r}{a} : ({tys}) -> '
                       f"{result.type}")
        p.ops.append(name)
        return result

    def constant(self, p: Program, shape: tuple[int, ...], et: str, value: str) -> Value:
        v = self.fresh(shape, et)
        p.lines.append(f'  {v.name} = "stablehlo.constant"() {{value = dense<{value}> : '
                       f"{v.type}}} : () -> {v.type}")
        return v

    def program(self) -> Program:
        rng = self.rng
        p = Program()
        et = str(rng.choice(list(DTYPES)))
        x = self.fresh(self.shape(), et)
        p.args.append(x)
        cur = x
        for _ in range(int(rng.integers(1, 5))):
            cur = self.exact_step(p, cur)
        if cur.et in FLOATS and rng.random() < 0.5:
            cur = self.inexact_step(p, cur)
        p.result = cur
        return p

    def other(self, p: Program, like: Value) -> Value:
        """A second operand of ``like``'s type: a new argument, or ``like`` itself."""
        if self.rng.random() < 0.3:
            return like
        v = self.fresh(like.shape, like.et)
        p.args.append(v)
        return v

    def exact_step(self, p: Program, x: Value) -> Value:
        rng = self.rng
        fl, i1 = x.et in FLOATS, x.et == "i1"
        choices = ["binary", "unary", "compare", "select", "reshape", "transpose",
                   "broadcast", "slice", "reverse", "concatenate", "pad", "convert", "clamp",
                   "reduce_minmax"]
        if not fl:
            choices += ["bitwise", "reduce_int", "dot_int"]
            if not i1:
                choices += ["shift"]
        kind = str(rng.choice(choices))
        if kind == "binary" and not i1:
            names = EXACT_BIN_ANY + (EXACT_BIN_FLOAT if fl else [])
            return self.op(p, str(rng.choice(names)), [x, self.other(p, x)],
                           self.fresh(x.shape, x.et))
        if kind == "bitwise" or (kind == "binary" and i1):
            return self.op(p, str(rng.choice(BITWISE)), [x, self.other(p, x)],
                           self.fresh(x.shape, x.et))
        if kind == "shift":
            # the spec leaves an arithmetic shift of an unsigned value by >= its width
            # undefined (the interpreter sign-fills as APInt::ashr does, cpu gives 0)
            names = SHIFTS[:2] if x.et.startswith("u") else SHIFTS
            return self.op(p, str(rng.choice(names)), [x, self.other(p, x)],
                           self.fresh(x.shape, x.et))
        if kind == "unary":
            if i1:
                return self.op(p, "not", [x], self.fresh(x.shape, x.et))
            names = EXACT_UN_FLOAT if fl else EXACT_UN_INT
            if x.et.startswith("u"):  # spec: abs and sign take signed integers only
                names = [n for n in names if n not in ("abs", "sign")]
            return self.op(p, str(rng.choice(names)), [x], self.fresh(x.shape, x.et))
        if kind == "compare":
            d = str(rng.choice(["EQ", "NE", "LT", "LE", "GT", "GE"]))
            ct = ("FLOAT" if rng.random() < 0.7 else "TOTALORDER") if fl else (
                "UNSIGNED" if x.et.startswith("u") or i1 else "SIGNED")
            attrs = (f"comparison_direction = #stablehlo<comparison_direction {d}>, "
                     f"compare_type = #stablehlo<comparison_type {ct}>")
            return self.op(p, "compare", [x, self.other(p, x)], self.fresh(x.shape, "i1"),
                           attrs)
        if kind == "select":
            pred = self.fresh(x.shape, "i1")
            p.args.append(pred)
            return self.op(p, "select", [pred, x, self.other(p, x)], self.fresh(x.shape, x.et))
        if kind == "clamp" and not i1:
            lo, hi = self.other(p, x), self.other(p, x)
            return self.op(p, "clamp", [lo, x, hi], self.fresh(x.shape, x.et))
        if kind == "reshape":
            n = int(np.prod(x.shape, dtype=np.int64))
            return self.op(p, "reshape", [x], self.fresh(self.factor(n), x.et))
        if kind == "transpose" and x.shape:
            perm = [int(i) for i in rng.permutation(len(x.shape))]
            return self.op(p, "transpose", [x], self.fresh(tuple(x.shape[i] for i in perm),
                                                           x.et),
                           f"permutation = {arr(perm)}")
        if kind == "broadcast" and len(x.shape) < 4:
            out = list(x.shape)
            pos = int(rng.integers(0, len(out) + 1))
            out.insert(pos, int(rng.integers(0, 4)))
            dims = [i for i in range(len(out)) if i != pos]
            return self.op(p, "broadcast_in_dim", [x], self.fresh(tuple(out), x.et),
                           f"broadcast_dimensions = {arr(dims)}")
        if kind == "slice" and x.shape:
            st, lim, sd, out = [], [], [], []
            for d in x.shape:
                a = int(rng.integers(0, d + 1))
                b = int(rng.integers(a, d + 1))
                s = int(rng.integers(1, 3))
                st.append(a)
                lim.append(b)
                sd.append(s)
                out.append(-(-(b - a) // s))
            return self.op(p, "slice", [x], self.fresh(tuple(out), x.et),
                           f"start_indices = {arr(st)}, limit_indices = {arr(lim)}, "
                           f"strides = {arr(sd)}")
        if kind == "reverse" and x.shape:
            dims = sorted({int(d) for d in rng.integers(0, len(x.shape), 2)})
            return self.op(p, "reverse", [x], self.fresh(x.shape, x.et),
                           f"dimensions = {arr(dims)}")
        if kind == "concatenate" and x.shape:
            d = int(rng.integers(0, len(x.shape)))
            y = self.other(p, x)
            out = list(x.shape)
            out[d] *= 2
            return self.op(p, "concatenate", [x, y], self.fresh(tuple(out), x.et),
                           f"dimension = {d} : i64")
        if kind == "pad" and x.shape:
            lo = [int(v) for v in rng.integers(0, 3, len(x.shape))]
            hi = [int(v) for v in rng.integers(0, 3, len(x.shape))]
            it = [int(v) for v in rng.integers(0, 2, len(x.shape))]
            out = tuple(lo[i] + hi[i] + d + max(d - 1, 0) * it[i] for i, d in enumerate(x.shape))
            pv = self.constant(p, (), x.et, "true" if x.et == "i1" else "1")
            return self.op(p, "pad", [x, pv], self.fresh(out, x.et),
                           f"edge_padding_low = {arr(lo)}, edge_padding_high = {arr(hi)}, "
                           f"interior_padding = {arr(it)}")
        if kind == "convert":
            # float -> int is left out: out-of-range values have no defined result
            pool = list(DTYPES) if not fl else list(FLOATS)
            return self.op(p, "convert", [x], self.fresh(x.shape, str(rng.choice(pool))))
        if kind in ("reduce_minmax", "reduce_int") and x.shape and not i1:
            name = "maximum" if kind == "reduce_minmax" else str(rng.choice(["add",
                                                                             "multiply"]))
            return self.reduce(p, x, name)
        if kind == "dot_int" and not i1 and len(x.shape) in (1, 2):
            return self.dot(p, x)
        return self.op(p, "negate" if not i1 else "not", [x], self.fresh(x.shape, x.et))

    def factor(self, n: int) -> tuple[int, ...]:
        if n == 0:
            return tuple(int(v) for v in self.rng.permutation([0, int(self.rng.integers(1, 4))]))
        dims = []
        for f in (2, 3, 5):
            while n % f == 0 and self.rng.random() < 0.6:
                dims.append(f)
                n //= f
        dims.append(n)
        self.rng.shuffle(dims)
        return tuple(dims)

    def reduce(self, p: Program, x: Value, name: str) -> Value:
        dims = sorted({int(d) for d in self.rng.integers(0, len(x.shape), 2)})
        out = tuple(d for i, d in enumerate(x.shape) if i not in dims)
        init = {"add": "0", "multiply": "1"}.get(name, "0" if x.et.startswith("u") else None)
        if init is None:
            init = "0xFF800000" if x.et == "f32" else ("-1.0e+300" if x.et == "f64" else "-100")
            if x.et in ("f16", "bf16"):
                init = "-1.0e+04" if x.et == "f16" else "-1.0e+30"
            elif x.et in INTS:
                init = str(int(np.iinfo(INTS[x.et]).min))
        iv = self.constant(p, (), x.et, init)
        s = f"tensor<{x.et}>"
        a, b, r = self.fresh((), x.et), self.fresh((), x.et), self.fresh((), x.et)
        region = (f"  ^bb0({a.name}: {s}, {b.name}: {s}):\n"
                  f'    {r.name} = "stablehlo.{name}"({a.name}, {b.name}) : ({s}, {s}) -> {s}\n'
                  f'    "stablehlo.return"({r.name}) : ({s}) -> ()')
        res = self.op(p, "reduce", [x, iv], self.fresh(out, x.et),
                      f"dimensions = {arr(dims)}", region)
        terms = int(np.prod([x.shape[d] for d in dims], dtype=np.int64))
        if x.et in FLOATS and name == "add":
            p.kind = f"sum:{terms}"
        return res

    def dot(self, p: Program, x: Value) -> Value:
        k = x.shape[-1]
        n = int(self.rng.integers(0, 4))
        w = self.fresh((k, n), x.et)
        p.args.append(w)
        out = (*x.shape[:-1], n)
        res = self.op(p, "dot_general", [x, w], self.fresh(out, x.et),
                      "dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = "
                      f"[{len(x.shape) - 1}], rhs_contracting_dimensions = [0]>")
        if x.et in FLOATS:
            p.kind = f"sum:{k}"
        return res

    def inexact_step(self, p: Program, x: Value) -> Value:
        rng = self.rng
        r = rng.random()
        if r < 0.6:
            name = str(rng.choice(INEXACT_UN))
            p.kind = f"ulp:{ULP[name]}"
            return self.op(p, name, [x], self.fresh(x.shape, x.et))
        if r < 0.75:
            name = str(rng.choice(INEXACT_BIN))
            p.kind = f"ulp:{ULP[name]}"
            return self.op(p, name, [x, self.other(p, x)], self.fresh(x.shape, x.et))
        if x.shape and r < 0.9:
            return self.reduce(p, x, "add")
        if len(x.shape) in (1, 2):
            return self.dot(p, x)
        p.kind = f"ulp:{ULP['tanh']}"
        return self.op(p, "tanh", [x], self.fresh(x.shape, x.et))


def batch_module(programs: list[Program]) -> str:
    """One ``@main`` holding every program; its arguments and results in order."""
    args = [a for p in programs for a in p.args]
    res = [p.result for p in programs]
    head = ", ".join(f"{a.name}: {a.type}" for a in args)
    body = "\n".join(line for p in programs for line in p.lines)
    ret = ", ".join(r.name for r in res)  # type: ignore[union-attr]
    tys = ", ".join(r.type for r in res)  # type: ignore[union-attr]
    return (f"func.func @main({head}) -> ({tys}) {{\n{body}\n"
            f'  "func.return"({ret}) : ({tys}) -> ()\n}}\n')


def random_input(rng: np.random.Generator, v: Value) -> np.ndarray:
    """Random values of ``v``'s type, with NaN, infinities, signed zeros, subnormals
    and the integer extremes mixed in."""
    dt = DTYPES[v.et]
    n = int(np.prod(v.shape, dtype=np.int64))
    if v.et == "i1":
        return rng.random(n).reshape(v.shape) < 0.5
    if v.et in INTS:
        info = np.iinfo(dt)
        small = rng.integers(-8 if info.min < 0 else 0, 9, n)
        full = rng.integers(int(info.min), int(info.max), n, endpoint=True, dtype=dt)
        out = np.where(rng.random(n) < 0.7, small.astype(dt), full)
        return out.reshape(v.shape).astype(dt)
    vals = rng.standard_normal(n) * np.exp2(rng.integers(-4, 5, n))
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, 65504.0, 0.5, -2.5])
    pick = rng.random(n) < 0.15
    vals = np.where(pick, special[rng.integers(0, len(special), n)], vals)
    return vals.reshape(v.shape).astype(dt)


def _ulp(x: np.ndarray, et: str) -> np.ndarray:
    ax = np.abs(x.astype(np.float64))
    e = np.frexp(np.where(np.isfinite(ax) & (ax > 0), ax, 1.0))[1]
    return np.exp2(np.maximum(e - 1, EMIN[et]) - MANT[et])


def compare(kind: str, et: str, got: np.ndarray, want: np.ndarray,
            terms: np.ndarray | None = None) -> str | None:
    """None when ``got`` (cpu) agrees with ``want`` (interpreter) for a program of
    ``kind``, else a one-line description of the first difference."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"shape/dtype {got.shape} {got.dtype}, expected {want.shape} {want.dtype}"
    if et not in FLOATS:
        bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
    else:
        g, w = got.astype(np.float64).reshape(-1), want.astype(np.float64).reshape(-1)
        both_nan = np.isnan(g) & np.isnan(w)
        if kind == "exact":
            isz = got.dtype.itemsize
            same = (got.reshape(-1).view(np.uint8).reshape(g.size, isz)
                    == want.reshape(-1).view(np.uint8).reshape(w.size, isz)).all(axis=1)
            ok = same | both_nan
        else:
            if kind.startswith("ulp:"):
                bound = int(kind[4:]) * _ulp(w, et)
            else:  # a sum: terms ulps of the sum of magnitudes (no fixed order)
                mag = np.abs(terms.astype(np.float64)).reshape(-1) if terms is not None \
                    else np.abs(w)
                bound = (int(kind[4:]) + 1) * _ulp(np.maximum(mag, np.abs(w)), et)
            with np.errstate(invalid="ignore"):
                ok = both_nan | (g == w) | (np.abs(g - w) <= bound)
        bad = np.flatnonzero(~ok)
    if not bad.size:
        return None
    i = int(bad[0])
    return (f"{bad.size} of {got.size} elements differ; first at flat index {i}: cpu "
            f"{got.reshape(-1)[i]!r}, interpreter {want.reshape(-1)[i]!r}")


def known_issue(p: Program, exc: BaseException) -> str | None:
    """The open bug a cpu compile failure is (each with a regression test in
    tests/fuzz/test_fuzz_regressions.py), or None for a new finding. None is open: the
    one this fuzzer found (a concatenate with an empty result) is fixed."""
    return None


def run_batch(programs: list[Program], rng: np.random.Generator, stats: dict[str, Any],
              findings: list[dict]) -> None:
    """Compiles one module of ``programs`` for both backends, runs both, compares."""
    import oxla
    from oxla.errors import NotSupportedError, OxlaError

    text = batch_module(programs)
    args = [random_input(rng, a) for p in programs for a in p.args]
    try:
        want = oxla.compile(text, backend="interpreter")(*args)
    except OxlaError as exc:
        findings.append({"what": "interpreter refused a generated program",
                         "error": exc.one_line(), "module": text})
        return
    try:
        exe = oxla.compile(text, backend="cpu", cache=False)
    except NotSupportedError as exc:
        if len(programs) == 1:
            stats["unsupported"] += 1
            stats.setdefault("unsupported_why", {}).setdefault(exc.one_line()[:120], 0)
            stats["unsupported_why"][exc.one_line()[:120]] += 1
            return
        for p in programs:  # find the one the cpu backend cannot compile
            run_batch([p], rng, stats, findings)
        return
    except Exception as exc:  # noqa: BLE001 - a crash of the compiler is a finding
        if len(programs) > 1:
            for p in programs:  # find the program that breaks it
                run_batch([p], rng, stats, findings)
            return
        why = known_issue(programs[0], exc)
        if why is not None:
            stats["known"] = stats.get("known", 0) + 1
            stats.setdefault("known_why", {}).setdefault(why, 0)
            stats["known_why"][why] += 1
            return
        findings.append({"what": "cpu compile failed", "error": f"{type(exc).__name__}: "
                         f"{str(exc).splitlines()[0] if str(exc) else ''}", "module": text,
                         "ops": programs[0].ops})
        return
    got = exe(*args)
    stats["compiles"] += 1
    for i, p in enumerate(programs):
        stats["programs"] += 1
        stats["exact" if p.kind == "exact" else "bounded"] += 1
        assert p.result is not None
        why = compare(p.kind, p.result.et, np.asarray(got[i]), np.asarray(want[i]))
        if why is not None:
            single = batch_module([p])
            findings.append({"what": f"cpu differs from the interpreter ({p.kind})",
                             "error": why, "ops": p.ops, "module": single,
                             "inputs": [a.tolist() for a, v in
                                        zip(args[sum(len(q.args) for q in programs[:i]):],
                                            p.args)]})


def fuzz(n_programs: int, batch: int, seed: int, log: Any = None) -> tuple[dict, list]:
    """Generates and checks ``n_programs`` programs in batches; returns (stats, findings)."""
    rng = np.random.default_rng(seed)
    gen = Generator(rng)
    stats: dict[str, Any] = {"programs": 0, "compiles": 0, "exact": 0, "bounded": 0,
                             "unsupported": 0, "seed": seed}
    findings: list[dict] = []
    t0 = time.time()
    done = 0
    while done < n_programs:
        k = min(batch, n_programs - done)
        run_batch([gen.program() for _ in range(k)], rng, stats, findings)
        done += k
        if log is not None:
            print(json.dumps({"done": done, "seconds": round(time.time() - t0, 1),
                              "findings": len(findings),
                              **{k2: v for k2, v in stats.items()
                                 if k2 not in ("unsupported_why", "known_why")}}),
                  file=log, flush=True)
    stats["seconds"] = round(time.time() - t0, 1)
    return stats, findings


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="write stats and findings here (JSON)")
    a = ap.parse_args(argv)
    stats, findings = fuzz(a.programs, a.batch, a.seed, log=sys.stderr)
    if a.out:
        with open(a.out, "w") as fh:
            json.dump({"stats": stats, "findings": findings}, fh, indent=1)
    print(json.dumps(stats))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
