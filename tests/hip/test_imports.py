"""oxla_backend_hip keeps issue #13's import rules (tests/unit/test_import_rules.py), and
importing its plugin entry loads neither llvmlite, the GPU layer nor the backend."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.unit.import_graph import cycles, load_package
from tests.unit.test_import_rules import lazy_own_imports, private_imports

ROOT = Path(__file__).resolve().parents[2] / "extensions" / "backend_hip" / "oxla_backend_hip"


def test_import_rules():
    pkg = load_package(ROOT, "oxla_backend_hip")
    assert lazy_own_imports(pkg, "oxla_backend_hip") == []
    assert cycles(pkg.edges(include_lazy=True)) == []
    assert private_imports(pkg, "oxla_backend_hip") == []


def test_plugin_discovery_is_cheap():
    code = ("import sys, oxla_backend_hip.plugin as p; p.oxla_backends(); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('llvmlite', 'msgpack', 'oxla_codegen_llvm') or m == 'oxla_backend_hip.backend'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
