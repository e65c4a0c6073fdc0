"""The MLIR lexer: text -> tokens with spans (``file:line:col``).

Token kinds follow MLIR's ``Lexer.cpp``. The parser may reset the position (for
dimension lists such as ``2x3xf32``, lexed like MLIR does).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from oxla.errors import ParseError
from oxla.ir.location import FileLineColLoc, SourceFile

# Leading whitespace and ``//`` comments are consumed by the same match as the token
# (one regex call per token: the lexer is the parser's hot path). The skip is possessive
# (``*+``): a backtracking one would, at the end of the input, give back the tail of a
# last-line comment and lex ``// end }`` as the token ``}``.
_WS_RE = re.compile(r"(?:\s|//[^\n]*+)*+")
_TOKEN_RE = re.compile(
    r"""
    (?:\s|//[^\n]*+)*+
    (?:
    (?P<float>\d+\.\d*(?:[eE][-+]?\d+)?)
  | (?P<hex>0x[0-9a-fA-F]+)
  | (?P<int>\d+)
  | (?P<percent>%[\w$.\-]+)
  | (?P<caret>\^[\w$.\-]+)
  | (?P<at>@(?:[A-Za-z_][\w$.\-]*|"(?:[^"\\]|\\.)*"))
  | (?P<filemeta>\{-\#|\#-\})
  | (?P<hash>\#[\w$.\-]+)
  | (?P<bang>![\w$.\-]+)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<ident>[A-Za-z_][\w$.]*)
  | (?P<punct>->|::|\.\.\.|[()\[\]{}<>,:=?*+\-|])
    )
    """,
    re.VERBOSE,
)


@dataclass(slots=True)
class Token:
    """A token: ``kind`` is one of the regex group names above (or ``eof``)."""

    kind: str
    text: str
    start: int
    end: int


class Lexer:
    """Turns MLIR text into tokens on demand.

    Args:
        text: the whole input.
        filename: used in error locations.
        line_offset: added to reported line numbers (for split files).
    """

    def __init__(self, text: str, filename: str = "<string>", line_offset: int = 0):
        self.text = text
        self.source = SourceFile(filename, text)
        self.filename = filename
        self.line_offset = line_offset
        self.pos = 0
        self._line_starts: list[int] | None = None

    def next(self) -> Token:
        """Returns the next token (skipping whitespace and ``//`` comments).

        Raises:
            ParseError: on a character that starts no token.
        """
        text, pos = self.text, self.pos
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            pos = _WS_RE.match(text, pos).end()  # type: ignore[union-attr]
            self.pos = pos
            if pos >= len(text):
                return Token("eof", "", pos, pos)
            raise ParseError(f"unexpected character '{text[pos]}'", self.location(pos))
        kind = m.lastgroup
        end = m.end()
        self.pos = end
        start = m.start(kind)  # type: ignore[arg-type]
        return Token(kind, text[start:end], start, end)  # type: ignore[arg-type]

    def location(self, offset: int, length: int = 1) -> FileLineColLoc:
        """The ``file:line:col`` of a character offset (1-based line and column)."""
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        line = bisect.bisect_right(self._line_starts, offset) - 1
        col = offset - self._line_starts[line] + 1
        return FileLineColLoc(
            self.filename, line + 1 + self.line_offset, col, length, self._shifted_source()
        )

    def _shifted_source(self) -> SourceFile:
        if self.line_offset == 0:
            return self.source
        return SourceFile(self.filename, "\n" * self.line_offset + self.text)


def split_input_file(text: str) -> list[tuple[str, int]]:
    """Splits text at ``// -----`` lines, as ``-split-input-file`` does.

    Returns:
        (chunk, line_offset) pairs, line_offset being the number of lines before it.
    """
    chunks: list[tuple[str, int]] = []
    lines = text.split("\n")
    start = 0
    for i, line in enumerate(lines):
        if line.strip().startswith("// -----"):
            chunks.append(("\n".join(lines[start:i]), start))
            start = i + 1
    chunks.append(("\n".join(lines[start:]), start))
    return chunks
