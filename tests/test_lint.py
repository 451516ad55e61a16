"""ruff lint and ruff format are part of the suite, so CI is red when either would change a file."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ["nsysq", "tests", "bench", "docs", "hatch_build.py"]

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("ruff") is None, reason="ruff is not installed (pip install '.[test]')"
)


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args, *TARGETS], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def test_ruff_check_is_clean() -> None:
    proc = _ruff("check", "--no-cache")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format_is_clean() -> None:
    proc = _ruff("format", "--check", "--no-cache")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_no_module_defines_a_name_twice() -> None:
    """A second top-level ``def`` or ``class`` of one name silently replaces the first (ruff's F811
    misses it when the first is used in between): two merged branches each adding ``_label`` to
    tests/oracle.py once made the fleet oracle call the stats one."""
    import ast
    from collections import Counter

    twice = []
    for path in sorted([*ROOT.glob("nsysq/**/*.py"), *ROOT.glob("tests/*.py"), *ROOT.glob("bench/*.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        names = Counter(node.name for node in tree.body if isinstance(node, kinds))
        twice += [f"{path.relative_to(ROOT)}: {name}" for name, n in names.items() if n > 1]
    assert twice == []
