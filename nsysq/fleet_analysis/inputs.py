"""Turn what the user typed (paths, globs, directories) into the list of traces to read.

Every input is accounted for: a glob or a directory that matches no export, and a path that does
not exist, stay in the list (the per-trace read then fails with its own sentence), so the answer
always says what became of each argument.
"""

from __future__ import annotations

import glob
from collections.abc import Iterable
from pathlib import Path

from nsysq.base.errors import UsageError

EXPORT_SUFFIX = ".sqlite"
_GLOB_CHARS = frozenset("*?[")


def expand(inputs: Iterable[str | Path]) -> list[str]:
    """Paths in the order given (a glob's or a directory's matches sorted), each once."""
    found: list[str] = []
    for item in inputs:
        text = str(item)
        path = Path(text)
        if path.is_dir():
            matches = sorted(str(p) for p in path.rglob("*" + EXPORT_SUFFIX) if p.is_file())
            found.extend(matches or [text])
        elif _GLOB_CHARS & set(text) and not path.exists():
            found.extend(sorted(glob.glob(text, recursive=True)) or [text])
        else:
            found.append(text)
    if not found:
        raise UsageError("nsysq fleet needs at least one trace: paths, globs or a directory.")
    return list(dict.fromkeys(found))
