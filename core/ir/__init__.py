"""oxla.ir: the StableHLO IR (types, attributes, operations, parser, printer, verifier).

Import from here, not from the private modules::

    from oxla.ir import parse_module, print_module, verify
    module = parse_module(text, "model.mlir")
    verify(module)
"""

from __future__ import annotations

from oxla.ir import attributes, types
from oxla.ir.attributes import *  # noqa: F403
from oxla.ir.builder import Builder
from oxla.ir.infer import infer_result_types
from oxla.ir.lexer import split_input_file
from oxla.ir.location import (
    UNKNOWN,
    CallSiteLoc,
    FileLineColLoc,
    FusedLoc,
    Location,
    NameLoc,
    UnknownLoc,
)
from oxla.ir.opdef import OpDef, all_opdefs, lookup_opdef
from oxla.ir.operation import (
    Block,
    BlockArgument,
    Module,
    Operation,
    OpResult,
    Region,
    Use,
    Value,
    func_name,
    func_type,
    func_visibility,
)
from oxla.ir.parser import (
    parse_attribute,
    parse_file,
    parse_input_spec,
    parse_main_signature,
    parse_module,
    parse_type,
)
from oxla.ir.printer import print_module, print_op
from oxla.ir.types import *  # noqa: F403


def verify(module_or_op) -> None:
    """Checks a module (or op) against the spec's constraints.

    Raises:
        VerifyError: naming the op, the constraint and the location.
    """
    from oxla.ir.verifier import verify as _verify

    _verify(module_or_op)


__all__ = [
    "attributes",
    "types",
    "parse_main_signature",
    "parse_module",
    "parse_file",
    "parse_type",
    "parse_attribute",
    "parse_input_spec",
    "print_module",
    "print_op",
    "verify",
    "Builder",
    "infer_result_types",
    "split_input_file",
    "Module",
    "Operation",
    "Block",
    "Region",
    "Value",
    "OpResult",
    "BlockArgument",
    "Use",
    "OpDef",
    "all_opdefs",
    "lookup_opdef",
    "func_name",
    "func_type",
    "func_visibility",
    "Location",
    "UnknownLoc",
    "FileLineColLoc",
    "NameLoc",
    "CallSiteLoc",
    "FusedLoc",
    "UNKNOWN",
]
