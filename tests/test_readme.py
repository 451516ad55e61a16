"""README examples are real commands with their real output, and its first screen has the two commands."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_examples_are_current() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "update_readme.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr


def test_first_screen_has_install_and_test_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    first = "\n".join(text.splitlines()[:40])
    commands = re.findall(r"```(?:bash|sh)\n(.*?)```", first, re.S)
    assert commands, "the first screen shows the set-up commands"
    lines = [ln for ln in commands[0].splitlines() if ln.strip() and not ln.startswith("#")]
    assert len(lines) == 2
    assert "pip install" in lines[0] and "examples/" in lines[0]
    assert "pytest" in lines[1]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for line in lines:
        assert line.strip() in ci, f".ci/run does not run the README's command: {line}"
