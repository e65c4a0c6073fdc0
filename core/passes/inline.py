"""``inline``: inlines calls to private functions and drops unused private functions."""

from __future__ import annotations

from dataclasses import dataclass

from oxla.errors import PassError
from oxla.ir import (
    ArrayAttr,
    DictionaryAttr,
    Module,
    Operation,
    SymbolRefAttr,
    func_name,
    func_visibility,
)


def _callee(call: Operation) -> str:
    a = call.attributes.get("callee")
    if isinstance(a, SymbolRefAttr):
        return a.root
    return str(a).lstrip("@")


def _symbol_refs(attr, out: set[str]) -> None:
    if isinstance(attr, SymbolRefAttr):
        out.add(attr.root)
    elif isinstance(attr, ArrayAttr):
        for a in attr.value:
            _symbol_refs(a, out)
    elif isinstance(attr, DictionaryAttr):
        for _, a in attr.entries:
            _symbol_refs(a, out)


def inline_call(call: Operation, target: Operation) -> None:
    """Replaces ``call`` (a ``func.call``, or any op whose operands are ``target``'s
    arguments and whose results are its returned values, such as ``composite``) by a
    copy of the body of function ``target``.

    Assumes ``target`` has a body ending with ``func.return``.
    """
    body = target.regions[0].blocks[0]
    mapping = dict(zip(body.args, call.operands))
    block = call.parent
    assert block is not None
    results = None
    for op in body.ops:
        if op.name == "func.return":
            results = [mapping.get(v, v) for v in op.operands]
            break
        block.insert_before(call, op.clone(mapping))
    assert results is not None, "a function body ends with func.return"
    for old, new in zip(call.results, results):
        old.replace_all_uses_with(new)
    call.erase()


@dataclass(frozen=True)
class Inline:
    """Replaces each ``func.call`` of a private function that has a body by the body.

    Assumes: no recursion (the spec forbids it); a call chain deeper than
    ``max_depth`` is a PassError. Public functions are never inlined (they are entry
    points other code may call) and never removed.

    Guarantees: afterwards no ``func.call`` targets a private function with a body,
    and private functions no symbol refers to are gone.
    """

    name: str = "inline"
    max_depth: int = 64

    def run(self, module: Module) -> None:
        funcs = {func_name(f): f for f in module.functions}
        for _ in range(self.max_depth):
            calls = [op for op in module.walk() if op.name == "func.call"]
            inlined = False
            for call in calls:
                target = funcs.get(_callee(call))
                if (
                    target is None
                    or func_visibility(target) != "private"
                    or not target.regions
                    or not target.regions[0].blocks
                ):
                    continue
                inline_call(call, target)
                inlined = True
            if not inlined:
                break
        else:
            raise PassError(
                f"inlining did not finish after {self.max_depth} rounds: "
                "recursive calls are not allowed"
            )
        self._drop_unused(module)

    @staticmethod
    def _drop_unused(module: Module) -> None:
        while True:
            used: set[str] = set()
            for op in module.walk():
                if op.name == "func.call":
                    used.add(_callee(op))
                if op.parent is not module.body:
                    for a in op.attributes.values():
                        _symbol_refs(a, used)
            dead = [
                f
                for f in module.functions
                if func_visibility(f) == "private" and func_name(f) not in used
            ]
            if not dead:
                return
            for f in dead:
                f.erase()
