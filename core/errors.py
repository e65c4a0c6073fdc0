"""The oxla error hierarchy.

Every user-facing failure is an :class:`OxlaError`. Messages follow MLIR's diagnostic
shape: ``file:line:col: error: message``, lowercase, no trailing period, expected
before actual, then the offending source line with carets under the fault.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oxla.ir.location import Location


class OxlaError(Exception):
    """Base of all oxla errors a user can cause.

    Args:
        message: one lowercase line, no trailing period.
        loc: where the fault is, when known; rendered in front of the message.
        notes: extra lines printed after the message (hints, what to do).
    """

    def __init__(self, message: str, loc: Location | None = None, notes: list[str] | None = None):
        self.message = message
        self.loc = loc
        self.notes = list(notes or [])
        super().__init__(self.render())

    def render(self, with_snippet: bool = True) -> str:
        """Returns the diagnostic text: ``loc: error: message`` plus the source snippet."""
        head = f"error: {self.message}"
        if self.loc is not None and not self.loc.is_unknown():
            head = f"{self.loc}: {head}"
        lines = [head]
        if with_snippet and self.loc is not None:
            snippet = self.loc.snippet()
            if snippet:
                lines.append(snippet)
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)

    def one_line(self) -> str:
        """Returns the diagnostic's first line, as the CLI prints it."""
        return self.render(with_snippet=False).splitlines()[0]


class ParseError(OxlaError):
    """Malformed MLIR text: raised by the lexer and parser with a ``file:line:col``."""


class VerifyError(OxlaError):
    """An operation breaks a constraint of the StableHLO spec (names the constraint)."""


class PassError(OxlaError):
    """A pass or pipeline string is invalid, or a pass failed."""


class LoweringError(OxlaError):
    """An op cannot be compiled by a backend or imported by a frontend."""


class PluginError(OxlaError):
    """A plugin is missing, broken, or two plugins claim the same name."""


class RuntimeInputError(OxlaError):
    """An executable was called with the wrong number, shapes or dtypes of arguments."""


class InterpreterError(OxlaError):
    """The reference interpreter hit a program error (e.g. an unknown custom call target)."""


class NotSupportedError(LoweringError):
    """A feature that oxla does not implement (yet); says so instead of guessing."""


def int_setting(name: str, value: str, minimum: int = 1,
                what: str = "a positive integer") -> int:
    """``value`` (the text of setting ``name``, e.g. an environment variable) as an
    integer of at least ``minimum``.

    Raises:
        OxlaError: ``value`` is not such an integer: "``name`` must be ``what``, got
            '``value``'" (one line, naming the setting).
    """
    try:
        n = int(value)
    except ValueError:
        n = minimum - 1
    if n < minimum:
        raise OxlaError(f"{name} must be {what}, got '{value}'")
    return n
