"""Keeping LLVM's own diagnostics off the user's terminal.

LLVM's default diagnostic handler writes straight to file descriptor 2 from C++: a loop
marked ``llvm.loop.vectorize.enable`` (:func:`oxla_codegen_llvm.loops.vectorize_hint`)
that the vectorizer declines yields an always-printed ``remark: <unknown>:0:0: loop not
vectorized: ...`` and a ``warning: ... the optimizer was unable to perform the requested
transformation``. They are not errors (the loop runs scalar) and llvmlite cannot install
a handler, so :func:`llvm_diagnostics_quiet` captures fd 2 while LLVM runs and drops
those lines, unless ``OXLA_DEBUG`` is set (the CLI's ``--debug`` sets it).
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_LLVM_LINE = re.compile(r"^(?:remark|warning|note): <unknown>:\d+:\d+: ")
_lock = threading.Lock()
_depth = 0
_saved_fd: int | None = None
_capture = None


def show_llvm_diagnostics() -> bool:
    """True when LLVM's remarks and warnings should reach stderr (``OXLA_DEBUG`` set)."""
    return os.environ.get("OXLA_DEBUG", "") not in ("", "0")


def filter_llvm_lines(text: str) -> str:
    """``text`` without LLVM's ``remark:/warning:/note: <unknown>:L:C:`` lines."""
    return "".join(line for line in text.splitlines(keepends=True)
                   if not _LLVM_LINE.match(line))


@contextmanager
def llvm_diagnostics_quiet() -> Iterator[None]:
    """Redirects fd 2 to a temporary file while the body runs; on the way out writes
    back everything but LLVM's diagnostic lines. Re-entrant and thread-safe: the first
    thread in redirects, the last one out restores (other output written meanwhile is
    delayed, not lost). A no-op when :func:`show_llvm_diagnostics` is true or fd 2
    cannot be duplicated."""
    global _depth
    if show_llvm_diagnostics():
        yield
        return
    with _lock:
        if _depth == 0 and not _redirect():
            redirected = False
        else:
            redirected = True
            _depth += 1
    if not redirected:  # fd 2 could not be captured: LLVM prints as it would
        yield
        return
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                _restore()


def _redirect() -> bool:
    """Points fd 2 at a temporary file; False when that is impossible here."""
    global _saved_fd, _capture
    try:
        sys.stderr.flush()
        capture = tempfile.TemporaryFile()
        saved = os.dup(2)
        os.dup2(capture.fileno(), 2)
    except (OSError, ValueError):
        return False
    _saved_fd, _capture = saved, capture
    return True


def _restore() -> None:
    global _saved_fd, _capture
    saved, capture = _saved_fd, _capture
    _saved_fd, _capture = None, None
    if saved is None or capture is None:
        return
    os.dup2(saved, 2)
    os.close(saved)
    capture.seek(0)
    rest = filter_llvm_lines(capture.read().decode("utf-8", "replace"))
    capture.close()
    if rest:
        os.write(2, rest.encode())
