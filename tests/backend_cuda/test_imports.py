"""oxla_backend_cuda keeps issue #13's import rules (tests/unit/test_import_rules.py):
no function-level import of its own modules outside ``plugin.py``, no cycle, no private
names across modules; and importing the plugin entry loads neither the driver bindings,
llvmlite nor the backend."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.unit.import_graph import cycles, load_package
from tests.unit.test_import_rules import lazy_own_imports, private_imports

ROOT = Path(__file__).resolve().parents[2] / "extensions" / "backend_cuda" / "oxla_backend_cuda"


def test_import_rules():
    pkg = load_package(ROOT, "oxla_backend_cuda")
    assert lazy_own_imports(pkg, "oxla_backend_cuda") == []
    assert cycles(pkg.edges(include_lazy=True)) == []
    assert private_imports(pkg, "oxla_backend_cuda") == []


def test_plugin_discovery_is_cheap():
    code = ("import sys, oxla_backend_cuda.plugin as p; p.oxla_backends(); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('cuda', 'llvmlite', 'oxla_codegen_llvm') or m == 'oxla_backend_cuda.backend'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
