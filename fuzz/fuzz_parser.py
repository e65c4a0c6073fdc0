"""Fuzz harness: the MLIR parser, the verifier and the printer's round trip.

Any input must either parse, verify, print and parse again, or raise an
:class:`oxla.errors.OxlaError` (``ParseError``, ``VerifyError``): anything else (an
``AssertionError``, a ``RecursionError``, a hang) is a bug.

Run: ``python fuzz/fuzz_parser.py -runs=100000`` (libFuzzer flags; see fuzz/README.md).
"""

from __future__ import annotations

import sys

try:
    import atheris
except ImportError:  # the random-mutation engine of harness.run
    atheris = None

if atheris is not None:
    with atheris.instrument_imports(include=["oxla"]):
        import oxla.ir  # noqa: F401 - instrumented for coverage
from oxla.errors import OxlaError
from oxla.ir import parse_module, print_module, verify


def one_input(data: bytes) -> None:
    """Parses and verifies ``data`` (UTF-8, bad bytes replaced); a verified module
    must print, in both forms, to text that parses and verifies again."""
    text = data.decode("utf-8", "replace")
    try:
        module = parse_module(text, "fuzz.mlir")
        verify(module)
    except OxlaError:
        return
    for generic in (False, True):
        printed = print_module(module, generic=generic)
        again = parse_module(printed, "printed.mlir")
        verify(again)


if __name__ == "__main__":
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from harness import collecting, run

    sys.exit(run(collecting(one_input, "parser"), "parser", sys.argv[1:]))
