"""The parallel runtime's object code persists in the compile cache directory: a new
process loads it instead of building it; a damaged file is rebuilt; a compile with the
cache off neither reads nor writes it."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("oxla_backend_cpu")
from oxla_backend_cpu import cache  # noqa: E402
from oxla_backend_cpu.parallel import HOST_RUNTIME, PARALLEL_FOR  # noqa: E402
from oxla_codegen_llvm import jit  # noqa: E402
from oxla_codegen_llvm.target import CPUTarget  # noqa: E402

from oxla.ir import parse_module  # noqa: E402
from oxla.protocols import CompileOptions  # noqa: E402

# a parallel loop: the program declares the runtime's parallel-for
PROGRAM = """
func.func @main(%a: tensor<512x1024xf32>) -> tensor<512x1024xf32> {
  %0 = stablehlo.exponential %a : tensor<512x1024xf32>
  return %0 : tensor<512x1024xf32>
}"""

# what PROGRAM is loaded with: the parallel-for alone, no runtime extension
LOOP_RUNTIME = HOST_RUNTIME.subset(frozenset({PARALLEL_FOR}))


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """An empty cache directory and no runtime object built yet in this process."""
    monkeypatch.setenv("OXLA_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("OXLA_RUNTIME_DIR", "off")  # not the installed library
    monkeypatch.setattr(jit, "_RUNTIME", {})
    return tmp_path


def _compile(**options):
    from oxla_backend_cpu.backend import CPUBackend

    return CPUBackend().compile(parse_module(PROGRAM, "t.mlir"), CompileOptions(**options))


def test_compile_stores_then_next_process_loads(fresh, monkeypatch):
    exe = _compile()
    files = list(fresh.glob("runtime-*.o"))
    assert len(files) == 1 and exe._jit.runtime_code
    monkeypatch.setattr(jit, "_RUNTIME", {})  # as in a new process

    def no_build(*a, **k):
        raise AssertionError("the runtime was built again")

    monkeypatch.setattr(jit, "optimize", no_build)
    obj = jit.runtime_object(CPUTarget.host(), cache.RUNTIME_OBJECTS, LOOP_RUNTIME)
    assert obj == exe._jit.runtime_code


def test_damaged_file_is_rebuilt_and_rewritten(fresh, monkeypatch):
    _compile()
    (path,) = fresh.glob("runtime-*.o")
    good = path.read_bytes()
    path.write_bytes(good[:64] + b"\0" + good[65:])  # one byte of code changed
    monkeypatch.setattr(jit, "_RUNTIME", {})
    obj = jit.runtime_object(CPUTarget.host(), cache.RUNTIME_OBJECTS, LOOP_RUNTIME)
    assert obj == good[64:] and path.read_bytes() == good
    path.write_bytes(good[:100])  # truncated
    assert cache.RUNTIME_OBJECTS.load(path.name[len("runtime-"):-2]) is None
    assert not path.exists()


def test_cache_off_writes_no_runtime_file(fresh):
    exe = _compile(cache=False)
    assert exe._jit.runtime_code and not list(fresh.glob("runtime-*"))


# --- each program is loaded with the runtime extensions it declares, no others ---------

def test_subset_keeps_the_extensions_whose_symbols_are_declared():
    from oxla_backend_cpu import parallel

    names = parallel.runtime_extensions()
    assert names, "the cpu backend registers its GEMM and row runtimes at import"
    assert LOOP_RUNTIME.key() == ()
    assert LOOP_RUNTIME.symbols() == {parallel.NUM_THREADS, PARALLEL_FOR}
    assert HOST_RUNTIME.subset(frozenset({"no_such_symbol"})).key() == ()
    defined = lambda text: set(re.findall(r'^define [^@]*@"?(\w+)"?\(', text, re.M))  # noqa: E731
    for name in names:
        syms = parallel._EXTENSIONS[name][1]
        one = HOST_RUNTIME.subset(frozenset({PARALLEL_FOR, sorted(syms)[0]}))
        assert one.key() == (name,)
        got = defined(one.module_text(CPUTarget.host().triple)) & HOST_RUNTIME.symbols()
        assert got and got <= syms | LOOP_RUNTIME.symbols()  # its own, no other extension's
    both = HOST_RUNTIME.subset(frozenset(sorted(parallel._EXTENSIONS[n][1])[0]
                                         for n in names))
    assert both.key() == names and both.symbols() == HOST_RUNTIME.symbols()


def _f32_dot(m, k, n):
    t = lambda *s: f"tensor<{'x'.join(map(str, s))}xf32>"  # noqa: E731
    return f"""func.func @main(%a: {t(m, k)}, %b: {t(k, n)}) -> {t(m, n)} {{
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : ({t(m, k)}, {t(k, n)}) -> {t(m, n)}
  %1 = stablehlo.exponential %0 : {t(m, n)}
  return %1 : {t(m, n)}
}}"""


def _i8_dot(m, k, n):
    return f"""func.func @main(%a: tensor<{m}x{k}xi8>, %b: tensor<{k}x{n}xi8>) -> tensor<{m}x{n}xi32> {{
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<{m}x{k}xi8>, tensor<{k}x{n}xi8>) -> tensor<{m}x{n}xi32>
  return %0 : tensor<{m}x{n}xi32>
}}"""


@pytest.mark.parametrize("program, dtype", [
    (PROGRAM, None),
    (_f32_dot(96, 256, 256), np.float32),
    (_f32_dot(1, 64, 48), np.float32),
    (_i8_dot(64, 256, 192), np.int8),
])
def test_program_loads_only_the_runtime_it_declares(fresh, program, dtype):
    """The runtime object built for a compile holds exactly the extensions whose
    symbols the program's LLVM IR declares; f32 programs never build the int8 GEMM
    driver; results match float64 numpy (exact for the integer dot)."""
    from oxla_backend_cpu import parallel
    from oxla_backend_cpu.backend import CPUBackend

    exe = CPUBackend().compile(parse_module(program, "t.mlir"), CompileOptions(cache=False))
    declared = {line.split("@")[1].split("(")[0].strip('"')
                for line in exe._jit.ir_text.splitlines() if line.startswith("declare")}
    declared |= {line.split("=")[0].strip().lstrip("@").strip('"')
                 for line in exe._jit.ir_text.splitlines() if "external global" in line}
    want = tuple(n for n in parallel.runtime_extensions()
                 if parallel._EXTENSIONS[n][1] & declared)
    keys = [k[-1] for k in jit._RUNTIME]
    assert keys == ([want] if declared & HOST_RUNTIME.symbols() else [])
    if dtype is np.float32:
        assert "cpu-int8-gemm" not in want
    rng = np.random.default_rng(3)
    shapes = [tuple(int(d) for d in a.split("<")[1].split("x")[:-1])
              for a in program.split("(")[1].split(")")[0].split(", ")]
    if dtype is np.int8:
        args = [rng.integers(-128, 128, s).astype(np.int8) for s in shapes]
        np.testing.assert_array_equal(exe(*args)[0], args[0].astype(np.int32) @ args[1])
    else:
        args = [rng.standard_normal(s).astype(np.float32) * 0.1 for s in shapes]
        ref = np.exp(args[0].astype(np.float64) if len(args) == 1
                     else args[0].astype(np.float64) @ args[1])
        np.testing.assert_allclose(exe(*args)[0], ref, rtol=2e-5, atol=1e-6)
