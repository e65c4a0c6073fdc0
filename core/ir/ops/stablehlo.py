"""StableHLO ops (spec section "Ops"), plus deprecated ops exporters still write.

Each row links to its spec section; semantics live in the interpreter and backends,
constraints in :mod:`oxla.ir.verifier`.
"""

from __future__ import annotations

from oxla.ir.opdef import (
    COLLECTIVE,
    COMMUTATIVE,
    CONTROL_FLOW,
    DEPRECATED,
    ELEMENTWISE,
    PURE,
    RETURN_LIKE,
    SAME_OPERANDS_AND_RESULT_SHAPE,
    SIDE_EFFECT,
    TERMINATOR,
    AttrDef,
    OpDef,
    OperandDef,
    RegionDef,
    ResultDef,
    attrs,
    operands,
    register,
    results,
)
from oxla.ir.syntax import (
    FUNCTIONAL,
    KW,
    SAME,
    Compare,
    Complex,
    Constant,
    GetTupleElement,
    OperandsKeywords,
    PairwiseTypes,
    ResultTypeOnly,
    Return,
    Select,
    Slice,
)
from oxla.ir.syntax_ops import Composite, Convolution, CustomCall, DotGeneral, Reduce, While

SPEC = "stablehlo-spec.md#"
EW = frozenset({PURE, ELEMENTWISE, SAME_OPERANDS_AND_RESULT_SHAPE})


def _ew_infer(operand_types, attributes=None, regions=None):
    return [operand_types[0]]


def unary(name: str, syntax=SAME, extra_attrs=(), infer=_ew_infer) -> OpDef:
    """An elementwise op with one operand (``stablehlo.abs`` ...)."""
    short = name.split(".", 1)[1]
    return OpDef(
        name, operands=operands("operand"), attributes=tuple(extra_attrs), traits=EW,
        spec=SPEC + short, syntax=syntax, infer=infer,
    )


def binary(name: str, commutative: bool = False) -> OpDef:
    """An elementwise op with operands ``lhs`` and ``rhs`` (``stablehlo.add`` ...)."""
    short = name.split(".", 1)[1]
    traits = EW | ({COMMUTATIVE} if commutative else set())
    return OpDef(name, operands=operands("lhs", "rhs"), traits=frozenset(traits),
                 spec=SPEC + short, syntax=SAME, infer=_ew_infer)


_RESULT = (ResultDef("result"),)


def op(name: str, ops=(), res=_RESULT, at=(), regions=(), traits=(PURE,),
       syntax=None, spec=None, **kw) -> OpDef:
    """Any other op; ``spec`` defaults to the op's own section."""
    short = name.split(".", 1)[1]
    return OpDef(name, operands=tuple(ops), results=tuple(res), attributes=tuple(at),
                 regions=tuple(regions), traits=frozenset(traits), syntax=syntax,
                 spec=SPEC + (spec or short), **kw)


_ACC = AttrDef("result_accuracy", "result_accuracy", optional=True)

UNARY = [
    "abs", "cbrt", "ceil", "cosine", "count_leading_zeros", "exponential",
    "exponential_minus_one", "floor", "imag", "log", "log_plus_one", "logistic", "negate",
    "not", "popcnt", "real", "round_nearest_afz", "round_nearest_even", "rsqrt", "sign",
    "sine", "sqrt", "tan", "tanh",
]
_WITH_ACCURACY = {"cbrt", "cosine", "exponential", "exponential_minus_one", "log",
                  "log_plus_one", "logistic", "rsqrt", "sine", "sqrt", "tan", "tanh"}

BINARY = {
    "add": True, "and": True, "atan2": False, "divide": False, "maximum": True,
    "minimum": True, "multiply": True, "or": True, "power": False, "remainder": False,
    "shift_left": False, "shift_right_arithmetic": False, "shift_right_logical": False,
    "subtract": False, "xor": True,
}

_REPLICA = AttrDef("replica_groups", "dense_i64_2d")
_CHANNEL = AttrDef("channel_handle", "channel_handle", optional=True)
_GLOBAL_IDS = AttrDef("use_global_device_ids", "unit", optional=True)
_CONV_ATTRS = (
    AttrDef("window_strides", "i64_array", optional=True),
    AttrDef("padding", "dense_i64_2d", optional=True),
    AttrDef("lhs_dilation", "i64_array", optional=True),
    AttrDef("rhs_dilation", "i64_array", optional=True),
    AttrDef("window_reversal", "bool_array", optional=True),
    AttrDef("dimension_numbers", "conv_dims"),
    AttrDef("feature_group_count", "i64"),
    AttrDef("batch_group_count", "i64"),
    AttrDef("precision_config", "precision_array", optional=True),
)
_V = {"variadic": True}

register(
    *(unary("stablehlo." + n, extra_attrs=(_ACC,) if n in _WITH_ACCURACY else ())
      for n in UNARY),
    *(binary("stablehlo." + n, c) for n, c in BINARY.items()),
    unary("stablehlo.is_finite", infer=None),
    unary("stablehlo.convert", infer=None),
    unary("stablehlo.bitcast_convert", syntax=FUNCTIONAL, infer=None),
    unary("stablehlo.uniform_quantize", infer=None),
    unary("stablehlo.uniform_dequantize", infer=None),
    unary("stablehlo.reduce_precision",
          syntax=OperandsKeywords((KW("format", "exponent_bits", "exp_mant"),), types="same"),
          extra_attrs=attrs(exponent_bits="i32", mantissa_bits="i32")),
    op("stablehlo.complex", operands("lhs", "rhs"), traits=EW, syntax=Complex()),
    op("stablehlo.clamp", operands("min", "operand", "max"), traits=(PURE,), syntax=SAME),
    op("stablehlo.select", operands("pred", "on_true", "on_false"), traits=(PURE,),
       syntax=Select()),
    op("stablehlo.compare", operands("lhs", "rhs"),
       at=(AttrDef("comparison_direction", "enum:comparison_direction"),
           AttrDef("compare_type", "enum:comparison_type", optional=True)),
       traits=EW, syntax=Compare()),
    op("stablehlo.after_all", [OperandDef("inputs", **_V)], traits=(), syntax=ResultTypeOnly()),
    op("stablehlo.all_gather", [OperandDef("operands", **_V)], [ResultDef("results", **_V)],
       attrs(all_gather_dim="i64") + (_REPLICA, _CHANNEL, _GLOBAL_IDS), traits=(COLLECTIVE,)),
    op("stablehlo.all_reduce", [OperandDef("operands", **_V)], [ResultDef("results", **_V)],
       (_REPLICA, _CHANNEL, _GLOBAL_IDS), [RegionDef("computation")], traits=(COLLECTIVE,)),
    op("stablehlo.all_to_all", [OperandDef("operands", **_V)], [ResultDef("results", **_V)],
       attrs(split_dimension="i64", concat_dimension="i64", split_count="i64")
       + (_REPLICA, _CHANNEL), traits=(COLLECTIVE,)),
    op("stablehlo.async_start", [OperandDef("operands", **_V)], regions=[RegionDef("body")],
       traits=()),
    op("stablehlo.async_done", operands("future"), [ResultDef("results", **_V)], traits=()),
    op("stablehlo.batch_norm_grad",
       operands("operand", "scale", "mean", "variance", "grad_output"),
       results("grad_operand", "grad_scale", "grad_offset"),
       attrs(epsilon="f32", feature_index="i64")),
    op("stablehlo.batch_norm_inference",
       operands("operand", "scale", "offset", "mean", "variance"),
       at=attrs(epsilon="f32", feature_index="i64")),
    op("stablehlo.batch_norm_training", operands("operand", "scale", "offset"),
       results("output", "batch_mean", "batch_var"), attrs(epsilon="f32", feature_index="i64")),
    op("stablehlo.broadcast_in_dim", operands("operand"),
       at=attrs(broadcast_dimensions="i64_array"),
       syntax=OperandsKeywords((KW("dims", "broadcast_dimensions", "i64_array"),))),
    op("stablehlo.case", operands("index"), [ResultDef("results", **_V)],
       regions=[RegionDef("branches", variadic=True)], traits=(CONTROL_FLOW,)),
    op("stablehlo.cholesky", operands("a"), at=(AttrDef("lower", "bool", optional=True),),
       syntax=OperandsKeywords((KW("lower", "lower", "bool", optional=True),), types="same")),
    op("stablehlo.collective_broadcast", [OperandDef("operands", **_V)],
       [ResultDef("results", **_V)],
       (_REPLICA, _CHANNEL, AttrDef("has_dynamic_root", "bool", optional=True)),
       traits=(COLLECTIVE,)),
    op("stablehlo.collective_permute", operands("operand"),
       at=(AttrDef("source_target_pairs", "dense_i64_2d"), _CHANNEL), traits=(COLLECTIVE,)),
    op("stablehlo.collective_reduce", [OperandDef("operands", **_V)],
       [ResultDef("results", **_V)], (_REPLICA, _CHANNEL), [RegionDef("computation")],
       traits=(COLLECTIVE,)),
    op("stablehlo.composite", [OperandDef("inputs", **_V)], [ResultDef("results", **_V)],
       attrs(name="string", composite_attributes=("dict", "optional"),
             decomposition="symbol", version=("i32", "optional")),
       traits=(), syntax=Composite()),
    op("stablehlo.concatenate", [OperandDef("inputs", **_V)], at=attrs(dimension="i64"),
       syntax=OperandsKeywords((KW("dim", "dimension", "i64"),))),
    op("stablehlo.constant", res=(ResultDef("output"),), at=attrs(value="dense"),
       syntax=Constant()),
    op("stablehlo.convolution", operands("lhs", "rhs"), at=_CONV_ATTRS, syntax=Convolution()),
    op("stablehlo.custom_call", [OperandDef("inputs", **_V)], [ResultDef("results", **_V)],
       attrs(call_target_name="string", has_side_effect=("bool", "optional"),
             backend_config=("any", "optional"), api_version=("any", "optional"),
             called_computations=("array", "optional"), operand_layouts=("array", "optional"),
             result_layouts=("array", "optional"),
             output_operand_aliases=("array", "optional")),
       traits=(SIDE_EFFECT,), syntax=CustomCall()),
    op("stablehlo.dot_general", operands("lhs", "rhs"),
       at=attrs(dot_dimension_numbers="dot_dims", precision_config=("precision_array",
                                                                    "optional"),
                algorithm=("dot_algorithm", "optional")),
       syntax=DotGeneral()),
    op("stablehlo.dynamic_broadcast_in_dim", operands("operand", "output_dimensions"),
       at=attrs(broadcast_dimensions="i64_array",
                known_expanding_dimensions=("i64_array", "optional"),
                known_nonexpanding_dimensions=("i64_array", "optional")),
       syntax=OperandsKeywords((KW("dims", "broadcast_dimensions", "i64_array"),))),
    op("stablehlo.dynamic_conv", operands("lhs", "rhs", "padding"), at=_CONV_ATTRS[:1]
       + _CONV_ATTRS[2:]),
    op("stablehlo.dynamic_gather", operands("operand", "start_indices", "slice_sizes"),
       at=attrs(dimension_numbers="gather_dims", indices_are_sorted=("bool", "optional"))),
    op("stablehlo.dynamic_iota", operands("output_shape"), at=attrs(iota_dimension="i64"),
       syntax=OperandsKeywords((KW("dim", "iota_dimension", "i64"),))),
    op("stablehlo.dynamic_pad",
       operands("operand", "padding_value", "edge_padding_low", "edge_padding_high",
                "interior_padding"), syntax=FUNCTIONAL),
    op("stablehlo.dynamic_reshape", operands("operand", "output_shape"), syntax=FUNCTIONAL),
    op("stablehlo.dynamic_slice", [OperandDef("operand"), OperandDef("start_indices", **_V)],
       at=attrs(slice_sizes="i64_array"),
       syntax=OperandsKeywords((KW("sizes", "slice_sizes", "i64_array"),))),
    op("stablehlo.dynamic_update_slice",
       [OperandDef("operand"), OperandDef("update"), OperandDef("start_indices", **_V)],
       syntax=FUNCTIONAL),
    op("stablehlo.fft", operands("operand"),
       at=attrs(fft_type="enum:fft_type", fft_length="i64_array"),
       syntax=OperandsKeywords((KW("type", "fft_type", "enum:fft_type"),
                                KW("length", "fft_length", "i64_array")))),
    op("stablehlo.gather", operands("operand", "start_indices"),
       at=attrs(dimension_numbers="gather_dims", slice_sizes="i64_array",
                indices_are_sorted=("bool", "optional"))),
    op("stablehlo.get_dimension_size", operands("operand"), at=attrs(dimension="i64"),
       syntax=OperandsKeywords((KW("dim", "dimension", "i64"),))),
    op("stablehlo.get_tuple_element", operands("operand"), at=attrs(index="i32"),
       syntax=GetTupleElement()),
    op("stablehlo.if", operands("pred"), [ResultDef("results", **_V)],
       regions=[RegionDef("true_branch"), RegionDef("false_branch")], traits=(CONTROL_FLOW,)),
    op("stablehlo.infeed", operands("token"), [ResultDef("results", **_V)],
       attrs(infeed_config=("string", "optional"), layout=("array", "optional")),
       traits=(SIDE_EFFECT,)),
    op("stablehlo.iota", res=(ResultDef("output"),), at=attrs(iota_dimension="i64"),
       syntax=OperandsKeywords((KW("dim", "iota_dimension", "i64"),), types="result",
                               prefix=True)),
    op("stablehlo.map", [OperandDef("inputs", **_V)], at=attrs(dimensions="i64_array"),
       regions=[RegionDef("computation")]),
    op("stablehlo.optimization_barrier", [OperandDef("operand", **_V)],
       [ResultDef("result", **_V)], traits=(), syntax=PairwiseTypes()),
    op("stablehlo.outfeed", [OperandDef("inputs", **_V), OperandDef("token")],
       at=attrs(outfeed_config=("string", "optional")), traits=(SIDE_EFFECT,)),
    op("stablehlo.pad", operands("operand", "padding_value"),
       at=attrs(edge_padding_low="i64_array", edge_padding_high="i64_array",
                interior_padding="i64_array"),
       syntax=OperandsKeywords((KW("low", "edge_padding_low", "i64_array"),
                                KW("high", "edge_padding_high", "i64_array"),
                                KW("interior", "interior_padding", "i64_array")))),
    op("stablehlo.partition_id", syntax=ResultTypeOnly()),
    op("stablehlo.recv", operands("token"), [ResultDef("results", **_V)],
       attrs(channel_handle="channel_handle", is_host_transfer=("bool", "optional"),
             source_target_pairs=("dense_i64_2d", "optional")), traits=(SIDE_EFFECT,)),
    op("stablehlo.reduce", [OperandDef("inputs", **_V), OperandDef("init_values", **_V)],
       [ResultDef("results", **_V)], attrs(dimensions="i64_array"), [RegionDef("body")],
       syntax=Reduce()),
    op("stablehlo.reduce_scatter", [OperandDef("operands", **_V)],
       [ResultDef("results", **_V)],
       attrs(scatter_dimension="i64") + (_REPLICA, _CHANNEL, _GLOBAL_IDS),
       [RegionDef("computation")], traits=(COLLECTIVE,)),
    op("stablehlo.reduce_window", [OperandDef("inputs", **_V), OperandDef("init_values", **_V)],
       [ResultDef("results", **_V)],
       attrs(window_dimensions="i64_array", window_strides=("i64_array", "optional"),
             base_dilations=("i64_array", "optional"),
             window_dilations=("i64_array", "optional"),
             padding=("dense_i64_2d", "optional")),
       [RegionDef("body")]),
    op("stablehlo.replica_id", syntax=ResultTypeOnly()),
    op("stablehlo.reshape", operands("operand"), syntax=FUNCTIONAL),
    op("stablehlo.reverse", operands("operand"), at=attrs(dimensions="i64_array"),
       syntax=OperandsKeywords((KW("dims", "dimensions", "i64_array"),), types="operand")),
    op("stablehlo.rng", operands("a", "b", "shape"),
       at=attrs(rng_distribution="enum:rng_distribution"), traits=(),
       syntax=OperandsKeywords((KW("distribution", "rng_distribution",
                                   "enum:rng_distribution"),))),
    op("stablehlo.rng_bit_generator", operands("initial_state"),
       results("output_state", "output"), attrs(rng_algorithm="enum:rng_algorithm"),
       syntax=OperandsKeywords((KW("algorithm", "rng_algorithm", "enum:rng_algorithm"),))),
    op("stablehlo.scatter",
       [OperandDef("inputs", **_V), OperandDef("scatter_indices"), OperandDef("updates", **_V)],
       [ResultDef("results", **_V)],
       attrs(scatter_dimension_numbers="scatter_dims",
             indices_are_sorted=("bool", "optional"), unique_indices=("bool", "optional")),
       [RegionDef("update_computation")]),
    op("stablehlo.select_and_scatter", operands("operand", "source", "init_value"),
       at=attrs(window_dimensions=("i64_array", "optional"),
                window_strides=("i64_array", "optional"), padding=("dense_i64_2d", "optional")),
       regions=[RegionDef("select"), RegionDef("scatter")]),
    op("stablehlo.send", [OperandDef("inputs", **_V), OperandDef("token")],
       at=attrs(channel_handle="channel_handle", is_host_transfer=("bool", "optional"),
                source_target_pairs=("dense_i64_2d", "optional")), traits=(SIDE_EFFECT,)),
    op("stablehlo.slice", operands("operand"),
       at=attrs(start_indices="i64_array", limit_indices="i64_array", strides="i64_array"),
       syntax=Slice()),
    op("stablehlo.sort", [OperandDef("inputs", **_V)], [ResultDef("results", **_V)],
       attrs(dimension=("i64", "optional"), is_stable=("bool", "optional")),
       [RegionDef("comparator")]),
    op("stablehlo.transpose", operands("operand"), at=attrs(permutation="i64_array"),
       syntax=OperandsKeywords((KW("dims", "permutation", "i64_array"),))),
    op("stablehlo.triangular_solve", operands("a", "b"),
       at=attrs(left_side="bool", lower="bool", unit_diagonal="bool",
                transpose_a="enum:transpose")),
    op("stablehlo.tuple", [OperandDef("val", **_V)], syntax=ResultTypeOnly()),
    op("stablehlo.while", [OperandDef("operand", **_V)], [ResultDef("results", **_V)],
       regions=[RegionDef("cond"), RegionDef("body")], traits=(CONTROL_FLOW,), syntax=While()),
    op("stablehlo.return", [OperandDef("results", **_V)], (),
       traits=(PURE, TERMINATOR, RETURN_LIKE), syntax=Return()),
    # Deprecated ops that exporters still write (spec "Deprecated Operations").
    op("stablehlo.broadcast", operands("operand"), at=attrs(broadcast_sizes="i64_array"),
       traits=(PURE, DEPRECATED), spec="deprecated-operations",
       syntax=OperandsKeywords((KW("sizes", "broadcast_sizes", "i64_array"),))),
    op("stablehlo.create_token", traits=(DEPRECATED,), spec="deprecated-operations",
       syntax=ResultTypeOnly()),
    op("stablehlo.cross-replica-sum", operands("operand"), at=(_REPLICA,),
       traits=(DEPRECATED, COLLECTIVE), spec="deprecated-operations"),
    op("stablehlo.dot", operands("lhs", "rhs"),
       at=attrs(precision_config=("precision_array", "optional")),
       traits=(PURE, DEPRECATED), spec="deprecated-operations",
       syntax=OperandsKeywords((KW("precision", "precision_config", "precision",
                                   optional=True),))),
    op("stablehlo.einsum", operands("lhs", "rhs"), at=attrs(einsum_config="string"),
       traits=(PURE, DEPRECATED), spec="deprecated-operations",
       syntax=OperandsKeywords((KW("config", "einsum_config", "string"),))),
    op("stablehlo.unary_einsum", operands("operand"), at=attrs(einsum_config="string"),
       traits=(PURE, DEPRECATED), spec="deprecated-operations",
       syntax=OperandsKeywords((KW("config", "einsum_config", "string"),))),
    op("stablehlo.torch_index_select", operands("operand", "index"),
       at=attrs(dim="i64", batch_dims="i64"), traits=(PURE, DEPRECATED),
       spec="deprecated-operations", syntax=FUNCTIONAL),
    op("stablehlo.real_dynamic_slice",
       operands("operand", "start_indices", "limit_indices", "strides"),
       traits=(PURE, DEPRECATED), spec="deprecated-operations", syntax=FUNCTIONAL),
)
