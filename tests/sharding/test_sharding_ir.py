"""The sdy dialect and GSPMD strings: parse, print back unchanged, convert."""

from __future__ import annotations

import pytest

from oxla.errors import NotSupportedError, ParseError
from oxla.ir import parse_module, print_module, verify
from oxla.ir.sdy import AxisRef, DimSharding, MeshAttr, TensorShardingAttr
from oxla.sharding import mesh_for, parse_gspmd
from oxla.sharding.importer import ImportShardings

PROGRAM = """\
sdy.mesh @mesh = <["a"=2, "b"=4]>
sdy.mesh @one = <[], device_ids=[0]>
sdy.mesh @perm = <["x"=2], device_ids=[1, 0]>
func.func @f(%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a", ?}p1, {"b":(1)2}]>},
             %arg1: tensor<16x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {?}], replicated={"a"}>})
    -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>}) {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a", ?}, {?}]>]>} : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %1 = sdy.sharding_constraint %0 <@mesh, [{"a"}, {}]> : tensor<8x4xf32>
  %2 = sdy.reshard %1 <@mesh, [{}, {"b"}]> : tensor<8x4xf32>
  %3 = sdy.manual_computation(%2) in_shardings=[<@mesh, [{"a"}, {}]>] out_shardings=[<@mesh, [{"a"}, {}]>] manual_axes={"a"} (%arg2: tensor<4x4xf32>) {
    %5 = stablehlo.negate %arg2 : tensor<4x4xf32>
    sdy.return %5 : tensor<4x4xf32>
  } : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %4 = stablehlo.custom_call @foo(%3) {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=8, j=4} need_replication={j}>} : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %6 = sdy.all_gather [{"a"}, {}] %4 out_sharding=<@mesh, [{}, {}]> : tensor<8x4xf32>
  %7 = sdy.all_reduce {"b"} %6 out_sharding=<@mesh, [{}, {}]> : tensor<8x4xf32>
  %8 = sdy.all_to_all [{"b"}: 1->0] %7 out_sharding=<@mesh, [{"b"}, {}]> : tensor<8x4xf32>
  sdy.sharding_group %8 group_id=3 : tensor<8x4xf32>
  %9 = sdy.constant dense<1.000000e+00> : tensor<8x4xf32>
  %10 = stablehlo.add %8, %9 : tensor<8x4xf32>
  return %10 : tensor<8x4xf32>
}
"""


def test_sdy_program_round_trips_in_both_forms():
    m = parse_module(PROGRAM)
    verify(m)
    text = print_module(m)
    assert print_module(parse_module(text)) == text
    generic = print_module(m, generic=True)
    assert print_module(parse_module(generic), generic=True) == generic
    assert print_module(parse_module(generic)) == text
    for piece in ('[{"a", ?}p1, {"b":(1)2}]', 'replicated={"a"}', "device_ids=[1, 0]",
                  'manual_axes={"a"}', "need_replication={j}", '[{"b"}: 1->0]',
                  "group_id=3", '<@mesh, [{"a"}, {}]>'):
        assert piece in text


def test_sharding_attributes_are_values():
    m = parse_module(PROGRAM)
    f = m.functions[0]
    s = f.attributes["arg_attrs"][0].get("sdy.sharding")
    assert s == TensorShardingAttr("mesh", (
        DimSharding((AxisRef("a"),), closed=False, priority=1),
        DimSharding((AxisRef("b", (1, 2)),))))
    mesh = m.body.ops[0].attributes["mesh"]
    assert mesh == MeshAttr((("a", 2), ("b", 4)))
    assert mesh.num_devices == 8 and AxisRef("b", (1, 2)).size(mesh) == 2


def test_malformed_sharding_names_the_place():
    bad = PROGRAM.replace('{"a", ?}p1', '{"a" ?}')
    with pytest.raises(ParseError) as e:
        parse_module(bad)
    assert ":4:" in str(e.value) and "expected '}'" in str(e.value)


@pytest.mark.parametrize("text", [
    "{replicated}", "{manual}", "{maximal device=1}",
    "{devices=[2,1,2]<=[4] last_tile_dim_replicate}",
    "{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}",
    "{devices=[2,2]0,2,1,3}", "{devices=[2,1,2]<=[4] last_tile_dims={manual}}",
    "{{replicated}, {devices=[2,1]<=[2]}}",
])
def test_gspmd_strings_print_back_unchanged(text):
    assert str(parse_gspmd(text)) == text


def test_gspmd_to_sdy_follows_the_device_order():
    mesh = mesh_for(4)
    assert mesh.axes == (("_axis_0", 2), ("_axis_1", 2))
    a0, a1 = AxisRef("_axis_0"), AxisRef("_axis_1")
    s = parse_gspmd("{devices=[2,1,2]<=[4] last_tile_dim_replicate}").to_sdy(2, mesh)
    assert [d.axes for d in s.dims] == [(a0,), ()] and s.replicated == (a1,)
    s = parse_gspmd("{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}").to_sdy(2, mesh)
    assert [d.axes for d in s.dims] == [(), (a1,)] and s.replicated == (a0,)
    s = parse_gspmd("{devices=[2,2]0,2,1,3}").to_sdy(2, mesh)
    assert [d.axes for d in s.dims] == [(a1,), (a0,)]
    s = parse_gspmd("{devices=[4,1]<=[4]}").to_sdy(2, mesh)
    assert [d.axes for d in s.dims] == [(a0, a1), ()]
    with pytest.raises(NotSupportedError):
        parse_gspmd("{devices=[2,2]0,3,1,2}").to_sdy(2, mesh)
    with pytest.raises(ParseError):
        parse_gspmd("{devices=[2,2]0,1}")


def test_import_turns_gspmd_annotations_into_sdy():
    text = """\
module @m attributes {mhlo.num_partitions = 4 : i32} {
  func.func public @main(%arg0: tensor<8x16xf32> {mhlo.sharding = "{devices=[2,1,2]<=[4] last_tile_dim_replicate}"}) -> (tensor<8x16xf32>) {
    %0 = stablehlo.custom_call @Sharding(%arg0) {backend_config = "", mhlo.sharding = "{devices=[2,2]<=[4]}"} : (tensor<8x16xf32>) -> tensor<8x16xf32>
    return %0 : tensor<8x16xf32>
  }
}
"""
    m = parse_module(text)
    ImportShardings().run(m)
    out = print_module(m)
    assert "mhlo.sharding" not in out and "@Sharding" not in out
    assert 'sdy.mesh @mesh = <["_axis_0"=2, "_axis_1"=2]>' in out
    assert '#sdy.sharding<@mesh, [{"_axis_0"}, {}], replicated={"_axis_1"}>' in out
    assert 'sdy.sharding_constraint %arg0 <@mesh, [{"_axis_0"}, {"_axis_1"}]>' in out


def test_jax_output_round_trips(jax_programs):
    # (the .plain.mlir references of shard_map cases carry no sharding)
    files = sorted(p for p in jax_programs.glob("*.mlir") if ".plain." not in p.name)
    assert len(files) >= 8
    for path in files:
        text = path.read_text()
        m = parse_module(text, str(path))
        verify(m)
        printed = print_module(m)
        assert print_module(parse_module(printed)) == printed
        if ".sdy." in path.name:
            assert "sdy.mesh @mesh" in printed and "#sdy.sharding<@mesh" in printed
        else:
            assert "mhlo.sharding" in printed
            for line in text.splitlines():  # every GSPMD string prints back unchanged
                for piece in line.split('mhlo.sharding = "')[1:]:
                    s = piece.split('"', 1)[0]
                    assert str(parse_gspmd(s)) == s


def test_mlir_names_for_while_arguments_and_func_ops():
    """Text compared with Shardy's CHECK lines uses MLIR's names: ``%iterArg``,
    ``%iterArg_0`` (nested loops get fresh suffixes), ``call``/``return`` in funcs."""
    text = """\
func.func private @g(%a: tensor<i32>) -> tensor<i32> {
  return %a : tensor<i32>
}
func.func @f(%a: tensor<i32>, %b: tensor<i32>) -> tensor<i32> {
  %r:2 = stablehlo.while(%x = %a, %y = %b) : tensor<i32>, tensor<i32>
  cond {
    %c = stablehlo.compare LT, %x, %y : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %s:1 = stablehlo.while(%z = %x) : tensor<i32>
    cond {
      %c = stablehlo.compare LT, %z, %y : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      stablehlo.return %z : tensor<i32>
    }
    stablehlo.return %s#0, %y : tensor<i32>, tensor<i32>
  }
  %k = call @g(%r#0) : (tensor<i32>) -> tensor<i32>
  return %k : tensor<i32>
}
"""
    m = parse_module(text)
    out = print_module(m)
    assert "stablehlo.while(%iterArg = %arg0, %iterArg_0 = %arg1)" in out
    assert "stablehlo.while(%iterArg_1 = %iterArg)" in out
    assert "func.call @g(" in out and "func.return" in out
    mlir = print_module(m, func_default_dialect=True)
    assert " = call @g(" in mlir and "  return %" in mlir and "func.call" not in mlir
    assert print_module(parse_module(mlir)) == out
