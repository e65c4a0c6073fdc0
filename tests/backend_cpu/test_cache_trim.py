"""The compile cache stays under its size limit: least recently used entries go first,
and a hit counts as a use."""

from __future__ import annotations

import os

import numpy as np
import pytest

from oxla.ir import parse_module
from oxla.protocols import CompileOptions

pytest.importorskip("oxla_backend_cpu")


def _text(c: float) -> str:
    return f"""
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {{
  %c = stablehlo.constant dense<{c}> : tensor<4xf32>
  %0 = stablehlo.add %x, %c : tensor<4xf32>
  return %0 : tensor<4xf32>
}}
"""


def _compile(c: float):
    from oxla_backend_cpu.backend import CPUBackend

    return CPUBackend().compile(parse_module(_text(c), "t.mlir"), CompileOptions())


def _age(cache_dir, seconds_ago: dict) -> None:
    """Sets each entry's mtime ``seconds_ago[name]`` seconds in the past."""
    now = os.path.getmtime(next(cache_dir.glob("*.oxla")))
    for p in cache_dir.glob("*.oxla"):
        t = now - seconds_ago[p.name]
        os.utime(p, (t, t))


def test_least_recently_used_entries_are_trimmed(tmp_path, monkeypatch):
    from oxla_backend_cpu import cache

    d = tmp_path / "cache"
    monkeypatch.setenv("OXLA_CACHE_DIR", str(d))
    monkeypatch.delenv(cache.MAX_BYTES_ENV, raising=False)
    names = {}
    for c in (1.0, 2.0, 3.0):
        before = {p.name for p in d.glob("*.oxla")} if d.exists() else set()
        assert _compile(c).stats["cache"] == "miss"
        (names[c],) = {p.name for p in d.glob("*.oxla")} - before
    size = max(p.stat().st_size for p in d.glob("*.oxla"))
    _age(d, {names[1.0]: 300, names[2.0]: 200, names[3.0]: 100})

    assert _compile(1.0).stats["cache"] == "hit"  # entry 1 is now the most recent
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(_compile(1.0)(x)[0], x + 1)

    # room for three entries: the fourth write trims to 3/4 of the limit (two entries),
    # evicting the least recently used ones
    monkeypatch.setenv(cache.MAX_BYTES_ENV, str(int(size * 3.5)))
    assert _compile(4.0).stats["cache"] == "miss"
    left = {p.name for p in d.glob("*.oxla")}
    assert names[2.0] not in left and names[3.0] not in left
    assert names[1.0] in left
    assert sum(p.stat().st_size for p in d.glob("*.oxla")) <= int(size * 3.5)
    assert _compile(2.0).stats["cache"] == "miss"


def test_trim_under_the_limit_deletes_nothing(tmp_path, monkeypatch):
    from oxla_backend_cpu import cache

    monkeypatch.setenv("OXLA_CACHE_DIR", str(tmp_path / "c"))
    assert cache.trim() == 0  # absent directory
    _compile(5.0)
    assert cache.trim(limit=1 << 30) == 0
    assert len(list((tmp_path / "c").glob("*.oxla"))) == 1
    assert cache.trim(limit=0) > 0
    assert not list((tmp_path / "c").glob("*.oxla"))


def test_max_bytes_reads_the_environment(monkeypatch):
    from oxla_backend_cpu import cache

    monkeypatch.setenv(cache.MAX_BYTES_ENV, "12345")
    assert cache.max_bytes() == 12345
    monkeypatch.setenv(cache.MAX_BYTES_ENV, "lots")
    assert cache.max_bytes() == cache.DEFAULT_MAX_BYTES


def test_writes_under_the_limit_do_not_rescan_the_directory(tmp_path, monkeypatch):
    """A process looks at the directory on its first write there, then counts its own
    writes: a scan per write made large caches slow (a ``stat`` per entry)."""
    from oxla_backend_cpu import cache

    monkeypatch.setenv("OXLA_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.delenv(cache.MAX_BYTES_ENV, raising=False)
    scans = []
    real = cache._trim
    monkeypatch.setattr(cache, "_trim", lambda limit: scans.append(limit) or real(limit))
    for c in (11.0, 12.0, 13.0):
        assert _compile(c).stats["cache"] == "miss"
    assert len(scans) == 1
    monkeypatch.setenv(cache.MAX_BYTES_ENV, "1")  # the next write passes the limit
    assert _compile(14.0).stats["cache"] == "miss"
    assert len(scans) == 2 and len(list((tmp_path / "c").glob("*.oxla"))) <= 1
