"""The pass manager: pipeline strings, pass options, verification, IR dumps, timing.

A pipeline string is a comma-separated list of pass names, each with optional
options in braces, as in MLIR: ``inline,canonicalize{max-iterations=10 debug=true},cse``.
Option names are kebab-case in the string and snake_case fields of the pass
dataclass; values are converted to the field's type (``int``, ``float``, ``bool``,
``str``, or a comma-free list of ints written ``[1,2]``... kept as ``str``).
A registered pipeline name (``default``) expands to its passes.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from oxla.errors import PassError
from oxla.ir import Module, print_module
from oxla.ir.gcpause import gc_paused
from oxla.protocols import LazyPass

PIPELINES: dict[str, str] = {}
"""Named pipelines (``default``) -> pipeline string; filled by :mod:`oxla.passes`."""


def _registry() -> dict[str, Any]:
    from oxla import plugins

    return plugins.passes()


def _split_top(text: str) -> list[str]:
    """Splits ``text`` at commas outside braces and brackets."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
            if depth < 0:
                raise PassError(f"unbalanced '{ch}' in pipeline '{text}'")
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth:
        raise PassError(f"unbalanced braces in pipeline '{text}'")
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def _parse_options(name: str, body: str) -> dict[str, str]:
    opts: dict[str, str] = {}
    for item in body.replace(",", " ").split():
        key, eq, value = item.partition("=")
        if not eq:
            value = "true"  # a bare flag: ``canonicalize{debug}``
        opts[key.strip()] = value.strip()
    return opts


def _convert(pass_name: str, fld: dataclasses.Field, text: str) -> Any:
    kind = str(fld.type).replace(" ", "")
    try:
        if kind.startswith("bool"):
            if text.lower() in ("true", "1", "yes", "on"):
                return True
            if text.lower() in ("false", "0", "no", "off"):
                return False
            raise ValueError(text)
        if kind.startswith("int"):
            return int(text)
        if kind.startswith("float"):
            return float(text)
    except ValueError:
        raise PassError(
            f"pass '{pass_name}' option '{fld.name.replace('_', '-')}' expects {kind}, got '{text}'"
        ) from None
    return text


def make_pass(name: str, options: dict[str, str] | None = None) -> Any:
    """Creates pass ``name`` from the registry with kebab-case string ``options``.

    Raises:
        PassError: unknown pass or option, or a malformed option value.
    """
    table = _registry()
    info = table.get(name)
    if info is None:
        known = ", ".join(sorted([*table, *PIPELINES]))
        raise PassError(
            f"unknown pass '{name}'; registered: {known}",
            notes=["plugins add passes through the 'oxla_passes' hook"],
        )
    options = options or {}
    cls = info.factory.load() if isinstance(info.factory, LazyPass) else info.factory
    kwargs: dict[str, Any] = {}
    fields = {f.name: f for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else {}
    for key, value in options.items():
        snake = key.replace("-", "_")
        if fields and snake not in fields or snake == "name":
            have = ", ".join(sorted(f.replace("_", "-") for f in fields if f != "name"))
            raise PassError(f"pass '{name}' has no option '{key}'; options: {have or 'none'}")
        kwargs[snake] = _convert(name, fields[snake], value) if fields else value
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise PassError(f"cannot create pass '{name}': {exc}") from None


def parse_pipeline(text: str) -> list[Any]:
    """Parses a pipeline string into pass objects.

    Args:
        text: ``name{opt=value ...},name2,...``; a registered pipeline name expands.

    Returns:
        The passes, in order.

    Raises:
        PassError: unknown pass or option, or malformed text.
    """
    passes: list[Any] = []
    for item in _split_top(text):
        name, brace, rest = item.partition("{")
        name = name.strip()
        if brace and not rest.endswith("}"):
            raise PassError(f"expected '}}' at the end of '{item}' in the pipeline")
        options = _parse_options(name, rest[:-1]) if brace else {}
        if name in PIPELINES and not brace:
            passes.extend(parse_pipeline(PIPELINES[name]))
            continue
        if not name:
            raise PassError(f"empty pass name in pipeline '{text}'")
        passes.append(make_pass(name, options))
    return passes


def _verify(module: Module, after: str) -> None:
    try:
        from oxla.ir import verifier  # noqa: F401
    except ModuleNotFoundError:  # the verifier has not landed: nothing to check
        return
    from oxla.errors import VerifyError
    from oxla.ir import verify

    try:
        verify(module)
    except VerifyError as exc:
        raise PassError(
            f"module does not verify after pass '{after}': {exc.message}", exc.loc
        ) from exc


@dataclass
class PassTiming:
    """Seconds spent in one pass run."""

    name: str
    seconds: float


def format_timing(timings: Sequence[PassTiming]) -> str:
    """A table like MLIR's ``--mlir-timing``: pass, seconds, percent, and a total."""
    total = sum(t.seconds for t in timings) or 1e-12
    lines = [
        "===" + "-" * 60 + "===",
        "  Pass execution timing report",
        "===" + "-" * 60 + "===",
        f"  {'seconds':>10}  {'percent':>8}  pass",
    ]
    for t in timings:
        lines.append(f"  {t.seconds:10.4f}  {100 * t.seconds / total:7.1f}%  {t.name}")
    lines.append(f"  {sum(t.seconds for t in timings):10.4f}  {100.0:7.1f}%  total")
    return "\n".join(lines)


@dataclass
class PassManager:
    """Runs a list of passes over a module.

    Attributes:
        passes: pass objects (``name`` attribute and ``run(module)``).
        verify_each: verify the module after every pass (PassError naming the pass).
        print_before: pass names to print the IR before; ``"all"`` in it means every pass.
        print_after: pass names to print the IR after; ``"all"`` means every pass.
        dump_dir: a directory receiving ``NN-passname.mlir`` after each pass
            (``00-input.mlir`` first).
        timing: collect per-pass times (printed with :func:`format_timing`).
        generic: print IR in the generic form.
        out: where printed IR goes.
    """

    passes: list[Any]
    verify_each: bool = False
    print_before: set[str] = field(default_factory=set)
    print_after: set[str] = field(default_factory=set)
    dump_dir: str | None = None
    timing: bool = False
    generic: bool = False
    out: TextIO = field(default_factory=lambda: sys.stderr)
    timings: list[PassTiming] = field(default_factory=list)

    def __post_init__(self) -> None:
        """Refuses print_before/print_after names that no pass of the pipeline has
        (they would print nothing, silently)."""
        running = [p.name for p in self.passes]
        for option, names in (("print-ir-before", self.print_before),
                              ("print-ir-after", self.print_after)):
            for name in sorted(set(names) - {"all"} - set(running)):
                known = sorted(_registry())
                what = "is not in the pipeline" if name in known else "is not a known pass"
                raise PassError(
                    f"--{option} '{name}' {what}; the pipeline runs: "
                    f"{', '.join(dict.fromkeys(running)) or 'nothing'}",
                    notes=[f"known passes: {', '.join(known)}"])

    @classmethod
    def from_pipeline(cls, text: str, **kwargs: Any) -> PassManager:
        return cls(parse_pipeline(text), **kwargs)

    def _print(self, module: Module, when: str, name: str) -> None:
        print(f"// -----// IR Dump {when} {name} //----- //", file=self.out)
        print(print_module(module, generic=self.generic), file=self.out)

    def _dump(self, module: Module, index: int, name: str) -> None:
        assert self.dump_dir is not None
        os.makedirs(self.dump_dir, exist_ok=True)
        path = os.path.join(self.dump_dir, f"{index:02d}-{name}.mlir")
        with open(path, "w") as f:
            f.write(print_module(module, generic=self.generic))
            f.write("\n")

    def run(self, module: Module) -> Module:
        """Runs every pass in order on ``module`` (in place) and returns it.

        Raises:
            PassError: a pass failed or (with ``verify_each``) left invalid IR.
        """
        with gc_paused():
            return self._run(module)

    def _run(self, module: Module) -> Module:
        if self.dump_dir is not None:
            self._dump(module, 0, "input")
        if self.verify_each:
            # An invalid input is the input's fault, not the first pass's.
            from oxla.ir import verify

            verify(module)
        for i, p in enumerate(self.passes, start=1):
            name = p.name
            if "all" in self.print_before or name in self.print_before:
                self._print(module, "Before", name)
            start = time.perf_counter()
            p.run(module)
            self.timings.append(PassTiming(name, time.perf_counter() - start))
            if self.verify_each:
                _verify(module, name)
            if "all" in self.print_after or name in self.print_after:
                self._print(module, "After", name)
            if self.dump_dir is not None:
                self._dump(module, i, name)
        return module

    def timing_report(self) -> str:
        return format_timing(self.timings)


def run_pipeline(module: Module, pipeline: str = "default", **kwargs: Any) -> Module:
    """Parses ``pipeline`` and runs it on ``module`` in place.

    Args:
        module: the module to transform.
        pipeline: a pipeline string or a registered pipeline name.
        **kwargs: :class:`PassManager` options (``verify_each=True`` ...).

    Returns:
        ``module``.
    """
    return PassManager.from_pipeline(pipeline, **kwargs).run(module)
