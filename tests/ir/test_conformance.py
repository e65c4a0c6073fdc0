"""Every conformance module parses, verifies, and round-trips in both printed forms."""

from __future__ import annotations

from oxla.ir import parse_module, print_module, verify
from oxla.ir.infer import INFER_RULES, infer_result_types
from oxla.ir.verify.helpers import shapes_ok, types_ok


def test_all_conformance_modules_parse_and_verify(chunks):
    failures = []
    for path, text, off in chunks:
        try:
            verify(parse_module(text, path, off))
        except Exception as e:  # noqa: BLE001 - collect every failure
            failures.append(f"{path}:{off}: {e}")
    assert not failures, f"{len(failures)} of {len(chunks)} failed:\n" + "\n".join(failures[:10])
    assert len(chunks) >= 2405


def test_all_conformance_modules_round_trip_pretty_and_generic(chunks):
    bad = []
    for path, text, off in chunks:
        m = parse_module(text, path, off)
        for generic in (False, True):
            t1 = print_module(m, generic=generic)
            m2 = parse_module(t1, "rt")
            if print_module(m2, generic=generic) != t1:
                bad.append((path, off, generic))
            if generic:
                # The generic text must also read back to the same pretty text.
                assert print_module(m2) == print_module(m), (path, off)
    assert not bad, bad[:10]


def test_inferred_types_match_conformance_results(chunks):
    mismatches = []
    for path, text, off in chunks:
        for op in parse_module(text, path, off).walk():
            if op.name not in INFER_RULES:
                continue
            got = infer_result_types(op.name, op.operand_types, op.attributes)
            # dot_general may widen its result element type (preferred element type).
            check = shapes_ok if op.name == "stablehlo.dot_general" else types_ok
            ok = len(got) == len(op.results) and all(
                check(getattr(g, "shape", None), getattr(r.type, "shape", None))
                if check is shapes_ok else check(g, r.type)
                for g, r in zip(got, op.results))
            if not ok:
                mismatches.append((op.name, str(op.loc), got, op.result_types))
    assert not mismatches, mismatches[:5]
