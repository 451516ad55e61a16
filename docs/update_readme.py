"""Re-run every ``$ nsysq ...`` example in README.md and paste its real output under it.

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
BLOCK = re.compile(r"```console\n\$ (nsysq [^\n]*)\n(.*?)```", re.S)


def run(command: str) -> str:
    args = shlex.split(command)
    env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"}
    proc = subprocess.run(
        [sys.executable, "-m", "nsysq", *args[1:]],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return "\n".join(line.rstrip() for line in proc.stdout.splitlines()) + "\n"


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
