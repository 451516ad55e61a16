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
