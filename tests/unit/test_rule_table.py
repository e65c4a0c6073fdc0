"""The emitter's one rule table (oxla_codegen_llvm.rules): platform rules override the
generic one, a duplicate registration is an error, the three kinds share the table."""

from __future__ import annotations

import pytest

pytest.importorskip("llvmlite")

from oxla_codegen_llvm.rules import RULES, RuleTable  # noqa: E402


def generic(*a):
    return "generic"


def on_cuda(*a):
    return "cuda"


def test_platform_rule_overrides_the_generic_one():
    t = RuleTable()
    t.register("stablehlo.exponential", generic)
    t.register("stablehlo.exponential", on_cuda, platform="cuda")
    assert t.lookup("stablehlo.exponential") is generic
    assert t.lookup("stablehlo.exponential", platform="cpu") is generic
    assert t.lookup("stablehlo.exponential", platform="cuda") is on_cuda
    assert t.lookup("stablehlo.log") is None
    assert t.ops(platform="cuda") == {"stablehlo.exponential"}
    assert "stablehlo.exponential" in t.view("scalar", "cuda")
    assert t.view("scalar", "cuda")["stablehlo.exponential"] is on_cuda


def test_duplicate_registration_is_an_error():
    t = RuleTable()
    t.register("stablehlo.add", generic)
    with pytest.raises(ValueError, match="'stablehlo.add' is registered already"):
        t.register("stablehlo.add", on_cuda)
    t.register("stablehlo.add", generic, kind="index")  # another kind: another entry
    with pytest.raises(ValueError, match="unknown rule kind"):
        t.register("stablehlo.add", generic, kind="vector")


def test_a_platform_only_rule_is_not_generic():
    t = RuleTable()
    t.register("stablehlo.sort", generic, platform="cpu", kind="kernel")
    assert t.lookup("stablehlo.sort", "kernel") is None
    assert "stablehlo.sort" not in t.view("kernel")
    assert t.view("kernel", "cpu")["stablehlo.sort"] is generic


def test_the_real_table_holds_all_three_kinds():
    import oxla_codegen_llvm  # noqa: F401 - registers the scalar and index rules

    assert "stablehlo.add" in RULES.ops("scalar")
    assert "stablehlo.broadcast_in_dim" in RULES.ops("index")
    with pytest.raises(ValueError, match="registered already"):
        RULES.register("stablehlo.add", generic)
    pytest.importorskip("oxla_backend_cpu")
    import oxla_backend_cpu.policy  # noqa: F401 - registers the cpu kernel rules

    assert "stablehlo.sort" in RULES.ops("kernel", "cpu")
    assert "stablehlo.sort" not in RULES.ops("kernel")  # the cpu backend's, not generic
