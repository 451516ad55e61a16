"""The package type-checks: ``mypy`` with the strict configuration in pyproject.toml ([tool.mypy]:
strict, pandas and mpl_toolkits as untyped imports, files = nsysq) reports no error."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mypy") is None,
    reason="mypy is not installed: pip install -e '.[test]' to type-check the package",
)


def test_mypy_strict_is_clean_on_the_package(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy-cache"), "--no-error-summary"],
        cwd=ROOT,  # the [tool.mypy] section of pyproject.toml says what and how strictly
        capture_output=True,
        text=True,
        timeout=600,
    )
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    assert proc.returncode == 0, f"{len(errors)} mypy errors:\n" + "\n".join(errors) + proc.stderr
