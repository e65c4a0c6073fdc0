"""``oxla compile --mesh/--shard/--explain-sharding/--link-gbps``; user errors are one
``error:`` line with exit status 2."""

from __future__ import annotations

import json

from click.testing import CliRunner

from oxla.cli.main import cli

PLAIN = """\
func.func @main(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>) -> tensor<8x4xf32> {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %1 = stablehlo.tanh %0 : tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}
"""


def test_compile_with_mesh_and_shards_explains_and_writes_the_sidecar(tmp_path):
    src = tmp_path / "m.mlir"
    src.write_text(PLAIN)
    out = tmp_path / "m.oxla"
    r = CliRunner().invoke(cli, ["compile", str(src), "-o", str(out), "--mesh",
                                 "data=2,model=2", "--shard", "arg0=data,model", "--shard",
                                 "arg1=model,_", "--explain-sharding", "--link-gbps", "8"])
    assert r.exit_code == 0, r.output
    assert 'mesh <["data"=2, "model"=2]> (4 devices)' in r.output
    # the contraction over "model" is completed by one all-reduce of the 4x4 f32 result
    assert 'all_reduce over {"model"} (group 2): 64 bytes/device, reduction for ' \
           "stablehlo.dot_general" in r.output
    # ring all-reduce over 2 devices sends 64 bytes: 64 * 8 bits at 8 Gb/s = 0.064 us
    assert "estimated 0.06 us at 8 Gb/s per link" in r.output
    assert "per-device program for 4 devices (collectives: all_reduce 1)" in r.output
    side = json.loads((tmp_path / "m.oxla.sharding.json").read_text())
    assert side["mesh"]["axes"] == [["data", 2], ["model", 2]]
    assert side["inputs"][0]["sharding"] == '#sdy.sharding<@mesh, [{"data"}, {"model"}]>'


def test_emit_stablehlo_prints_the_per_device_program(tmp_path):
    src = tmp_path / "m.mlir"
    src.write_text(PLAIN)
    r = CliRunner().invoke(cli, ["compile", str(src), "--emit", "stablehlo", "--mesh",
                                 "data=2", "--shard", "arg0=data,_"])
    assert r.exit_code == 0, r.output
    assert "@main(%arg0: tensor<4x16xf32>, %arg1: tensor<16x4xf32>) -> tensor<4x4xf32>" \
        in r.output
    assert "all_reduce" not in r.output and "sdy." not in r.output


WEIGHT = """\
func.func @main(%x: tensor<8x16xf32>) -> tensor<8x4xf32> {
  %w = stablehlo.constant dense<0.5> : tensor<16x4xf32> loc("fc.weight")
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
"""


def test_sharded_weights_are_sliced_at_compile_time(tmp_path):
    """Each rank's file holds only its 16x2 shard; the program takes it as an argument
    and holds no 16x4 constant."""
    import numpy as np

    src = tmp_path / "w.mlir"
    src.write_text(WEIGHT)
    args = ["--mesh", "model=2", "--shard", "param:fc.weight=_,model"]
    r = CliRunner().invoke(cli, ["compile", str(src), "--emit", "stablehlo"] + args)
    assert r.exit_code == 0, r.output
    assert "@main(%arg0: tensor<8x16xf32>, %arg1: tensor<16x2xf32>)" in r.output
    assert "16x4xf32" not in r.output
    out = tmp_path / "w.oxla"
    r = CliRunner().invoke(cli, ["compile", str(src), "-o", str(out)] + args)
    assert r.exit_code == 0, r.output
    side = json.loads((tmp_path / "w.oxla.sharding.json").read_text())
    assert [(w["name"], w["shape"], w["bytes_per_device"]) for w in side["weights"]] == [
        ("fc.weight", [16, 4], 16 * 2 * 4)]
    for rank in range(2):
        with np.load(tmp_path / f"w.oxla.rank{rank}.npz") as z:
            assert z["w0"].shape == (16, 2) and (z["w0"] == 0.5).all()


def test_user_errors_are_one_line(tmp_path):
    src = tmp_path / "m.mlir"
    src.write_text(PLAIN)
    cases = [
        (["--shard", "arg0=data,_"], "error: --shard needs --mesh (e.g. --mesh data=2,model=2)"),
        (["--mesh", "data=two"], "error: invalid --mesh 'data=two': expected NAME=SIZE items "
                                 "such as 'data=2,model=2'"),
        (["--mesh", "data=2", "--shard", "arg0=dta,_"],
         "error: --shard for arg0: unknown mesh axis 'dta'; the mesh has data"),
        (["--mesh", "data=2", "--shard", "arg0=data"],
         "error: --shard for arg0: 1 dimensions given, the tensor has 2"),
        (["--mesh", "data=2", "--shard", "param:nothing.*=data"],
         "error: --shard 'param:nothing.*=data': no parameter matches 'nothing.*'"),
        (["--mesh", "data=2", "--shard", "arg0=data,_", "--mpi", "bogus"],
         "error: unknown MPI 'bogus': expected one of mpich, openmpi"),
    ]
    for extra, message in cases:
        r = CliRunner().invoke(cli, ["compile", str(src), "-o", str(tmp_path / "x.oxla")]
                               + extra)
        assert r.exit_code == 2, (extra, r.output)
        assert r.output.strip().splitlines()[-1] == message, r.output
