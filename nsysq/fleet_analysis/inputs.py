"""Turn what the user typed (paths, globs, directories) into the list of traces to read.

A directory gives its exports (``*.sqlite``) and the reports (``*.nsys-rep``) that have no export
of their name beside them; the worker that opens a report exports it (nsysq.export.nsys_rep).
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
REPORT_SUFFIX = ".nsys-rep"
_GLOB_CHARS = frozenset("*?[")


def expand(inputs: Iterable[str | Path]) -> list[str]:
    """Paths in the order given (a glob's or a directory's matches sorted), each once."""
    found: list[str] = []
    for item in inputs:
        text = str(item)
        path = Path(text)
        if path.is_dir():
            found.extend(_in_folder(path) or [text])
        elif _GLOB_CHARS & set(text) and not path.exists():
            found.extend(sorted(glob.glob(text, recursive=True)) or [text])
        else:
            found.append(text)
    if not found:
        raise UsageError("nsysq fleet needs at least one trace: paths, globs or a directory.")
    return list(dict.fromkeys(found))


def _in_folder(folder: Path) -> list[str]:
    """Every export under ``folder``, and every report without an export of its name beside it
    (nsys export writes ``X.sqlite`` beside ``X.nsys-rep``: the same run, read once)."""
    exports = {p for p in folder.rglob("*" + EXPORT_SUFFIX) if p.is_file()}
    reports = {
        p
        for p in folder.rglob("*" + REPORT_SUFFIX)
        if p.is_file() and p.with_name(p.name[: -len(REPORT_SUFFIX)] + EXPORT_SUFFIX) not in exports
    }
    return sorted(str(p) for p in exports | reports)
