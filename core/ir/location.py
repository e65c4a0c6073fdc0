"""Source locations that travel with every operation.

A location is either a span in an input file (``file:line:col``, 1-based), a location
taken from the text (``loc("name")``, ``loc("file":3:4)``, fused and call-site
locations) or unknown. Spans can render the source line with carets under the fault.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class SourceFile:
    """The text of one input, kept so diagnostics can show the faulty line."""

    name: str
    text: str = field(repr=False)

    def line(self, lineno: int) -> str:
        """Returns line ``lineno`` (1-based) without its newline, or '' if out of range."""
        lines = self.text.splitlines()
        return lines[lineno - 1] if 0 < lineno <= len(lines) else ""


@dataclass(frozen=True, slots=True)
class Location:
    """Base class: an unknown location."""

    def is_unknown(self) -> bool:
        return True

    def snippet(self) -> str:
        return ""

    def __str__(self) -> str:
        return "loc(unknown)"


@dataclass(frozen=True, slots=True)
class UnknownLoc(Location):
    """``loc(unknown)``."""


@dataclass(frozen=True, slots=True)
class FileLineColLoc(Location):
    """A position in a named file; ``length`` is how many characters to underline.

    ``source`` is set for positions in text oxla parsed itself, so the line can be shown.
    """

    file: str
    line: int
    col: int
    length: int = 1
    source: SourceFile | None = field(default=None, compare=False, repr=False)

    def is_unknown(self) -> bool:
        return False

    def snippet(self) -> str:
        if self.source is None:
            return ""
        text = self.source.line(self.line)
        if not text:
            return ""
        return f"{text}\n{' ' * (self.col - 1)}{'^' * max(1, self.length)}"

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True, slots=True)
class NameLoc(Location):
    """``loc("name")`` or ``loc("name"(child))``: a named location, as frontends emit."""

    name: str
    child: Location | None = None

    def is_unknown(self) -> bool:
        return False

    def snippet(self) -> str:
        return self.child.snippet() if self.child is not None else ""

    def __str__(self) -> str:
        if self.child is not None and not self.child.is_unknown():
            return f"{self.child} ({self.name})"
        return self.name


@dataclass(frozen=True, slots=True)
class CallSiteLoc(Location):
    """``loc(callsite(callee at caller))``."""

    callee: Location
    caller: Location

    def is_unknown(self) -> bool:
        return self.callee.is_unknown() and self.caller.is_unknown()

    def snippet(self) -> str:
        return self.callee.snippet() or self.caller.snippet()

    def __str__(self) -> str:
        return str(self.callee) if not self.callee.is_unknown() else str(self.caller)


@dataclass(frozen=True, slots=True)
class FusedLoc(Location):
    """``loc(fused[a, b])`` or ``loc(fused<meta>[...])``; ``metadata`` is kept as text."""

    locations: tuple[Location, ...]
    metadata: str | None = None

    def is_unknown(self) -> bool:
        return all(loc.is_unknown() for loc in self.locations)

    def snippet(self) -> str:
        for loc in self.locations:
            s = loc.snippet()
            if s:
                return s
        return ""

    def __str__(self) -> str:
        for loc in self.locations:
            if not loc.is_unknown():
                return str(loc)
        return "loc(unknown)"


UNKNOWN = UnknownLoc()
