"""Large constants (weights) are passed at run time, not compiled into machine code,
and travel in artifacts as .npy members."""

from __future__ import annotations

import zipfile

import numpy as np
import pytest

import oxla

pytest.importorskip("oxla_backend_cpu")

W = np.arange(64 * 64, dtype=np.float32).reshape(64, 64) / 1000.0


def _text() -> str:
    body = ", ".join("[" + ", ".join(f"{v:.9e}" for v in row) + "]" for row in W)
    return f"""
func.func @main(%x: tensor<64xf32>) -> tensor<64xf32> {{
  %w = stablehlo.constant dense<[{body}]> : tensor<64x64xf32>
  %0 = stablehlo.broadcast_in_dim %x, dims = [1] : (tensor<64xf32>) -> tensor<64x64xf32>
  %1 = stablehlo.multiply %0, %w : tensor<64x64xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %2 = stablehlo.reduce(%1 init: %z) applies stablehlo.add across dimensions = [1]
      : (tensor<64x64xf32>, tensor<f32>) -> tensor<64xf32>
  return %2 : tensor<64xf32>
}}
"""


def test_large_constant_is_a_runtime_buffer_and_round_trips(tmp_path, monkeypatch):
    import oxla_backend_cpu.codegen as codegen

    exe = oxla.compile(_text(), backend="cpu", cache=False)
    assert len(exe.constants) == 1 and exe.constants[0].nbytes == W.nbytes
    assert len(exe.llvm_ir) < W.nbytes  # the weights' bytes are not in the module
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    got = exe(x)[0]
    # Same code with the constant compiled in: bit-identical results.
    monkeypatch.setattr(codegen, "INLINE_CONSTANT_BYTES", 1 << 30)
    inline = oxla.compile(_text(), backend="cpu", cache=False)
    assert not inline.constants
    np.testing.assert_array_equal(inline(x)[0], got)
    want = oxla.compile(_text(), backend="interpreter")(x)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4)  # reduction order differs
    path = tmp_path / "w.oxla"
    exe.save(path)
    with zipfile.ZipFile(path) as zf:
        assert "constants/0.npy" in zf.namelist()
        text = zf.read("module.mlir").decode()
        assert "dense_resource<__elided__> : tensor<64x64xf32>" in text  # stored once, as .npy
        assert len(text) < W.nbytes
    np.testing.assert_array_equal(oxla.load(path)(x)[0], got)


def test_corrupt_constant_member_is_a_clear_error(tmp_path):
    exe = oxla.compile(_text(), backend="cpu", cache=False)
    path, bad = tmp_path / "w.oxla", tmp_path / "bad.oxla"
    exe.save(path)
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(bad, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "constants/0.npy":
                data = data[:-8] + b"\0" * 8
            dst.writestr(item, data)
    with pytest.raises(oxla.OxlaError, match="corrupt"):
        oxla.load(bad)
