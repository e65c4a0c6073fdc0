"""Keeping LLVM's own diagnostics off the user's terminal.

LLVM's default diagnostic handler writes straight to file descriptor 2 from C++: a loop
marked ``llvm.loop.vectorize.enable`` (:func:`oxla_codegen_llvm.loops.vectorize_hint`)
that the vectorizer declines yields an always-printed ``remark: <unknown>:0:0: loop not
vectorized: ...`` and a ``warning: ... the optimizer was unable to perform the requested
transformation``. They are not errors (the loop runs scalar) and llvmlite cannot install
a handler, so :func:`llvm_diagnostics_quiet` drops those lines from fd 2 while LLVM
runs, unless ``OXLA_DEBUG`` is set (the CLI's ``--debug`` sets it).
"""

from __future__ import annotations

import re
from contextlib import AbstractContextManager

from oxla.stderr_filter import dropping_stderr_lines

LLVM_LINE = re.compile(r"(?:remark|warning|note): <unknown>:\d+:\d+: ")
"""The start of a line LLVM's default diagnostic handler prints."""


def llvm_diagnostics_quiet() -> AbstractContextManager[None]:
    """A context in which LLVM's remark/warning/note lines do not reach stderr."""
    return dropping_stderr_lines(LLVM_LINE)
