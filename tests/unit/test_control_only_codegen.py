"""Modules with nothing to optimize (``optnone`` control code and one-block wrappers)
are generated at code generation level 0 (``oxla_codegen_llvm.jit.control_only``)."""

from __future__ import annotations

import ctypes

import pytest

llvm = pytest.importorskip("llvmlite.binding")

LOOP = """
define {linkage} i64 @"sum"(i64 %n) {attrs} {{
entry:
  br label %head
head:
  %i = phi i64 [0, %entry], [%i1, %body]
  %s = phi i64 [0, %entry], [%s1, %body]
  %c = icmp slt i64 %i, %n
  br i1 %c, label %body, label %end
body:
  %s1 = add i64 %s, %i
  %i1 = add i64 %i, 1
  br label %head
end:
  ret i64 %s
}}
"""
WRAPPER = """
define i64 @"entry"(i64 %n) {
  %r = call i64 @"sum"(i64 %n)
  ret i64 %r
}
"""


def _mod(text: str):
    from oxla_codegen_llvm import CPUTarget
    from oxla_codegen_llvm.jit import optimize

    return optimize(text, CPUTarget.host())


@pytest.mark.parametrize("attrs, wrapper, want", [
    ("noinline optnone", True, True),  # control code + a one-block entry
    ("noinline optnone", False, True),
    ("", True, False),  # an optimized loop: keep -O3 code generation
    ("", False, False),
])
def test_control_only(attrs, wrapper, want):
    from oxla_codegen_llvm.jit import control_only

    linkage = "internal" if wrapper else ""
    text = LOOP.format(linkage=linkage, attrs=attrs) + (WRAPPER if wrapper else "")
    assert control_only(_mod(text)) is want


def test_wrappers_alone_are_not_control_only():
    """One-block functions without any ``optnone`` keep the usual code generation."""
    from oxla_codegen_llvm.jit import control_only

    assert not control_only(_mod('define i64 @"f"(i64 %x) {\n  %y = add i64 %x, 1\n'
                                 '  ret i64 %y\n}\n'))


def test_control_only_module_runs():
    """The level-0 object code loads and computes the same result."""
    from oxla_codegen_llvm import CPUTarget
    from oxla_codegen_llvm.jit import compile_ir

    jit = compile_ir(LOOP.format(linkage="internal", attrs="noinline optnone") + WRAPPER,
                     CPUTarget.host())
    f = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(jit.address("entry"))
    assert f(10) == 45 and f(0) == 0


BRANCHY = """
define i64 @"pick"(i64 %n) {
entry:
  %c = icmp slt i64 %n, 5
  br i1 %c, label %small, label %big
small:
  %a = call i64 @"sum"(i64 %n)
  br label %done
big:
  %b = add i64 %n, 1
  br label %done
done:
  %r = phi i64 [%a, %small], [%b, %big]
  ret i64 %r
}
"""


def test_loop_free_branches_are_control_only():
    """A wrapper with branches but no loop (an entry choosing kernels, copy kernels
    calling the runtime) keeps the module control-only: no -O3 pipeline, level-0 code
    generation, same results."""
    from oxla_codegen_llvm import CPUTarget
    from oxla_codegen_llvm.jit import compile_ir, control_only

    text = LOOP.format(linkage="internal", attrs="noinline optnone") + BRANCHY
    assert control_only(_mod(text))
    jit = compile_ir(text, CPUTarget.host())
    f = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(jit.address("pick"))
    assert f(4) == 6 and f(9) == 10


def test_large_loop_free_function_is_optimized():
    """Straight-line code above the size limit is worth -O3 (an unrolled kernel)."""
    from oxla_codegen_llvm.jit import CONTROL_WRAPPER_INSTRUCTIONS, control_only

    adds = "\n".join(f"  %x{i + 1} = add i64 %x{i}, {i}"
                     for i in range(CONTROL_WRAPPER_INSTRUCTIONS + 1))
    big = (f'define i64 @"big"(i64 %x0) {{\nentry:\n{adds}\n'
           f'  br label %end\nend:\n  ret i64 %x{CONTROL_WRAPPER_INSTRUCTIONS + 1}\n}}\n')
    text = LOOP.format(linkage="", attrs="noinline optnone") + big
    assert not control_only(llvm.parse_assembly(text))  # as optimize() sees it
