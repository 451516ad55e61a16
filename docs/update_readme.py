"""Re-run every ``$ nsysq ...`` example in README.md and paste its real output under it, as a
terminal 100 columns wide shows it.

Usage: python docs/update_readme.py [--check]. tests/test_readme.py runs the --check mode, so the
README's examples are always real commands with their real output.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
WIDTH = 100
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
BLOCK = re.compile(r"```console\n\$ (nsysq [^\n]*)\n(.*?)```", re.S)


def run(command: str) -> str:
    args = shlex.split(command)
    # As a person sees it in a terminal 100 columns wide: rich takes FORCE_COLOR for a terminal
    # (the compact columns, fitted), the styles it then writes are stripped below.
    env = {**os.environ, "COLUMNS": str(WIDTH), "FORCE_COLOR": "1", "NO_COLOR": "1", "TERM": "xterm"}
    proc = subprocess.run(
        [sys.executable, "-m", "nsysq", *args[1:]],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    shown = ANSI.sub("", proc.stdout)
    return "\n".join(line.rstrip() for line in shown.splitlines()) + "\n"


def render(text: str) -> str:
    return BLOCK.sub(lambda m: f"```console\n$ {m.group(1)}\n{run(m.group(1))}```", text)


def main() -> int:
    text = README.read_text(encoding="utf-8")
    new = render(text)
    if "--check" in sys.argv:
        if new != text:
            sys.stderr.write("README.md examples are stale; run: python docs/update_readme.py\n")
            return 1
        return 0
    README.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
