"""Every op of the spec's "Ops" section has an OpDef (STYLE.md: one declarative table)."""

from __future__ import annotations

import re

from conftest import shared_dir

from oxla.ir import all_opdefs

# The spec's op names, used when the spec itself is not available.
SPEC_OPS = """abs add after_all all_gather all_reduce all_to_all and atan2 batch_norm_grad
batch_norm_inference batch_norm_training bitcast_convert broadcast_in_dim case cbrt ceil
cholesky clamp collective_broadcast collective_permute compare complex composite concatenate
constant convert convolution cosine count_leading_zeros custom_call divide dot_general
dynamic_broadcast_in_dim dynamic_conv dynamic_gather dynamic_iota dynamic_pad dynamic_reshape
dynamic_slice dynamic_update_slice exponential exponential_minus_one fft floor gather
get_dimension_size get_tuple_element if imag infeed iota is_finite log log_plus_one logistic
map maximum minimum multiply negate not optimization_barrier or outfeed pad partition_id
popcnt power real recv reduce reduce_precision reduce_scatter reduce_window remainder
replica_id reshape return reverse rng rng_bit_generator round_nearest_afz round_nearest_even
rsqrt scatter select select_and_scatter send shift_left shift_right_arithmetic
shift_right_logical sign sine slice sort sqrt subtract tan tanh transpose triangular_solve
tuple uniform_dequantize uniform_quantize while xor""".split()


def spec_op_names() -> list[str]:
    root = shared_dir()
    spec = root / "reference" / "stablehlo-spec.md" if root else None
    if spec is None or not spec.is_file():
        return SPEC_OPS
    text = spec.read_text()
    ops = re.search(r"^## Ops\n(.*?)^## ", text, re.S | re.M)
    assert ops, "spec has no '## Ops' section"
    return [n for n in re.findall(r"^### (\w+)", ops.group(1), re.M) if n.islower()]


def test_every_spec_op_has_an_opdef():
    names = spec_op_names()
    assert len(names) >= 100
    defs = all_opdefs()
    missing = [n for n in names if f"stablehlo.{n}" not in defs]
    assert not missing, f"spec ops without an OpDef: {missing}"


def test_hard_coded_list_matches_spec():
    if shared_dir() is None:
        return
    assert set(SPEC_OPS) - {"return"} <= set(spec_op_names())
