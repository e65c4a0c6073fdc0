"""Dropping known noise that native libraries write to file descriptor 2.

LLVM's diagnostic handler and TensorFlow's C++ logging write to fd 2 directly, where
Python's ``warnings``/``logging`` cannot filter them. :func:`dropping_stderr_lines`
captures fd 2 in a temporary file while its body runs and writes everything back except
the lines that match, unless ``OXLA_DEBUG`` is set (the CLI's ``--debug`` sets it).
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_saved_fd: int | None = None
_capture = None
_patterns: list[re.Pattern[str]] = []


def debug_output() -> bool:
    """True when native libraries' logs should reach stderr as they are (``OXLA_DEBUG``)."""
    return os.environ.get("OXLA_DEBUG", "") not in ("", "0")


def drop_lines(text: str, patterns: list[re.Pattern[str]]) -> str:
    """``text`` without the lines that one of ``patterns`` matches at their start."""
    return "".join(line for line in text.splitlines(keepends=True)
                   if not any(p.match(line) for p in patterns))


@contextmanager
def dropping_stderr_lines(pattern: str | re.Pattern[str]) -> Iterator[None]:
    """Runs the body with fd 2 captured; on the way out writes back all but the lines
    matching ``pattern`` (``re.match``). Re-entrant and thread-safe: the first context
    in redirects, the last one out restores, and the lines any of them drop are dropped
    (other output written meanwhile is delayed, not lost). A no-op under ``OXLA_DEBUG``
    or when fd 2 cannot be duplicated."""
    global _depth
    if debug_output():
        yield
        return
    compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
    with _lock:
        active = _depth > 0 or _redirect()
        if active:
            _depth += 1
            _patterns.append(compiled)
    if not active:
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
    patterns = list(_patterns)
    _saved_fd, _capture = None, None
    _patterns.clear()
    if saved is None or capture is None:
        return
    os.dup2(saved, 2)
    os.close(saved)
    capture.seek(0)
    rest = drop_lines(capture.read().decode("utf-8", "replace"), patterns)
    capture.close()
    if rest:
        os.write(2, rest.encode())
