"""The parallel runtime's object code persists in the compile cache directory: a new
process loads it instead of building it; a damaged file is rebuilt; a compile with the
cache off neither reads nor writes it."""

from __future__ import annotations

import pytest

pytest.importorskip("oxla_backend_cpu")
from oxla_backend_cpu import cache  # noqa: E402
from oxla_backend_cpu.parallel import HOST_RUNTIME  # noqa: E402
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


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """An empty cache directory and no runtime object built yet in this process."""
    monkeypatch.setenv("OXLA_CACHE_DIR", str(tmp_path))
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
    obj = jit.runtime_object(CPUTarget.host(), cache.RUNTIME_OBJECTS, HOST_RUNTIME)
    assert obj == exe._jit.runtime_code


def test_damaged_file_is_rebuilt_and_rewritten(fresh, monkeypatch):
    _compile()
    (path,) = fresh.glob("runtime-*.o")
    good = path.read_bytes()
    path.write_bytes(good[:64] + b"\0" + good[65:])  # one byte of code changed
    monkeypatch.setattr(jit, "_RUNTIME", {})
    obj = jit.runtime_object(CPUTarget.host(), cache.RUNTIME_OBJECTS, HOST_RUNTIME)
    assert obj == good[64:] and path.read_bytes() == good
    path.write_bytes(good[:100])  # truncated
    assert cache.RUNTIME_OBJECTS.load(path.name[len("runtime-"):-2]) is None
    assert not path.exists()


def test_cache_off_writes_no_runtime_file(fresh):
    exe = _compile(cache=False)
    assert exe._jit.runtime_code and not list(fresh.glob("runtime-*"))
