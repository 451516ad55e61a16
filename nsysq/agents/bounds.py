"""What confines a tool call: the folders it may read (``--root``) and write (``--out``), and the
size of its answer (``limit`` rows per list, :data:`MAX_BYTES` in all).

Pure functions over paths and JSON values; the server calls them before and after the command.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nsysq.base.errors import UsageError

MAX_BYTES = 256 * 1024
"""The largest result a tool returns (its JSON, compact): past it rows are cut further."""
HOW_TO_GET_MORE = (
    "ask again with a larger limit (0: every row, up to 256 kB), a narrower scope (device, stream, "
    "pid, nvtx, a time window) or one section"
)


@dataclass(frozen=True)
class Folders:
    """The folders a call may read (``roots``) and write (``out``, None: no writing), resolved."""

    roots: tuple[Path, ...]
    out: Path | None

    @classmethod
    def make(cls, roots: list[Path], out: Path | None) -> Folders:
        for folder in [*roots, *([out] if out else [])]:
            if not folder.is_dir():
                raise UsageError(f"{folder} is not a folder; give an existing folder to --root / --out.")
        return cls(
            tuple(Path(os.path.realpath(r)) for r in roots), Path(os.path.realpath(out)) if out else None
        )

    def readable(self, text: str) -> str:
        """The real path of ``text`` (relative: to the first root) when it lies under a root."""
        return str(_inside(text, self.roots, self.roots[0], "--root folders"))

    def writable(self, text: str) -> str:
        """The real path of output file ``text`` (relative: to ``out``) when it lies under ``out``."""
        if self.out is None:
            raise UsageError("this server writes no files; start it with --out DIR to allow it.")
        return str(_inside(text, (self.out,), self.out, "--out folder"))


def _inside(text: str, folders: tuple[Path, ...], base: Path, what: str) -> Path:
    path = Path(text)
    if ".." in path.parts:
        raise UsageError(f"{text}: '..' is not allowed in a path; give it from one of the {what}.")
    real = Path(os.path.realpath(path if path.is_absolute() else base / path))
    if not any(real == f or f in real.parents for f in folders):
        shown = ", ".join(str(f) for f in folders)
        raise UsageError(f"{text} is outside the {what} ({shown}); only files under them can be used.")
    return real


def row_lists(value: Any, path: str = "") -> list[tuple[str, list[Any]]]:
    """Every list of objects (rows) inside ``value``, with its dotted path, outermost first."""
    found: list[tuple[str, list[Any]]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            found += row_lists(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        if value and all(isinstance(v, dict) for v in value):
            found.append((path, value))
        for i, item in enumerate(value):
            found += row_lists(item, f"{path}[{i}]")
    return found


def cut_rows(document: Any, keep: int) -> tuple[Any, list[dict[str, Any]]]:
    """A copy of ``document`` with every list of rows cut to its first ``keep`` items, and what was cut
    (``path``, ``kept``, ``total``)."""
    copy = json.loads(json.dumps(document))
    cuts = []
    for path, rows in row_lists(copy):
        if len(rows) > keep:
            cuts.append({"path": path, "kept": keep, "total": len(rows)})
            del rows[keep:]
    return copy, cuts


def bound(document: Any, keep: int | None, max_bytes: int = MAX_BYTES) -> dict[str, Any] | Any:
    """``document`` with its row lists cut to ``keep`` (None: uncut) and then halved until its JSON
    fits ``max_bytes``; when something was cut, an object document gets a ``cut`` key saying what
    and how to get the rest."""
    rows = keep
    while True:
        out, cuts = cut_rows(document, rows) if rows is not None else (document, [])
        size = len(json.dumps(out, ensure_ascii=False))
        if size <= max_bytes or rows == 0:
            break
        longest = max((len(r) for _, r in row_lists(out)), default=0)
        rows = longest // 2 if rows is None else min(rows, longest) // 2
    if size > max_bytes:
        raise UsageError(
            f"the result is {size // 1024} kB, more than the {max_bytes // 1024} kB cap even without rows; "
            "ask for one section or a narrower scope."
        )
    if cuts and isinstance(out, dict):
        reason = (
            "limit" if rows == keep else f"size: cut to {rows} rows per list to fit {max_bytes // 1024} kB"
        )
        out["cut"] = {"lists": cuts, "reason": reason, "how": HOW_TO_GET_MORE}
    return out
