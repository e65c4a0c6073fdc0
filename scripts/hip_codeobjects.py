"""The hip backend's code-object sweep over the conformance files (a script, not a test).

    .venv/bin/python scripts/hip_codeobjects.py ../shared/conformance/stablehlo \
        [--archs gfx90a,gfx942,gfx1100] [--every K] [--jobs 2] [--json OUT]

Every file (or every K-th) runs through ``oxla conformance --backend hip`` on the
simulated device with ``OXLA_HIP_ARCH`` set to all the archs: each compiled program gets
one code object per arch (LLVM's AMDGPU backend, code object v5, linked by ``ld.lld``)
whose metadata is checked against the program's launches, then runs on the simulated
device (host twins at the first arch's wavefront size), so a file passes only when its
code objects for every arch link and check AND its results match. Prints the counts and
the files whose failure is the code objects' (the linker, the lowering, a descriptor).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import sys

CODE_OBJECT = re.compile(r"ld\.lld|code object|kernarg|wavefront|LDS|AMDGPU|amdgcn|"
                         r"max_flat_workgroup", re.I)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--archs", default="gfx90a,gfx942,gfx1100")
    parser.add_argument("--every", type=int, default=1, help="every K-th file only")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    os.environ["OXLA_HIP_DEVICE"] = "sim"  # before the workers start: they inherit it
    os.environ["OXLA_HIP_ARCH"] = args.archs

    from oxla.conformance import discover, run_conformance

    files = [str(p) for p in discover(args.paths)][::max(args.every, 1)]
    report = run_conformance(files, "hip", jobs=args.jobs, timeout=args.timeout)
    counts = collections.Counter(r.status for r in report.files)
    co_fail = []
    for r in report.files:
        if r.status in ("pass", "skip"):
            continue
        text = " ".join([r.message] + [m for f in r.functions for m in f.messages])
        if CODE_OBJECT.search(text):
            co_fail.append((r.path, text[:200]))
    print(f"{len(files)} files, code objects for {args.archs}: "
          + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    print(f"failures from the code objects (lowering, ld.lld, descriptors): {len(co_fail)}")
    for path, text in co_fail[:20]:
        print(f"  {path}: {text}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"archs": args.archs, "files": len(files), "counts": dict(counts),
                       "code_object_failures": co_fail}, f, indent=1)
    return 0 if not co_fail else 1


if __name__ == "__main__":
    sys.exit(main())
