"""Where a command writes its file: one check of the name and the folder, made before any data is
read, with the same sentences for every command that writes one (plot, export, report)."""

from __future__ import annotations

import os

from nsysq.base.errors import UsageError


def check_output_path(path: str | os.PathLike[str], suffixes: tuple[str, ...]) -> None:
    """Raise UsageError unless ``path``'s name ends in one of ``suffixes`` (any case; the suffix
    picks the format) and its folder exists."""
    name = os.path.basename(os.fspath(path))
    if not name.lower().endswith(suffixes):
        raise UsageError(f"end the output name {name!r} with {_listed(suffixes)}.")
    folder = os.path.dirname(os.fspath(path)) or "."
    if not os.path.isdir(folder):
        raise UsageError(f"the folder {folder!r} does not exist; create it first.")


def _listed(suffixes: tuple[str, ...]) -> str:
    """``.png, .svg or .pdf``."""
    return suffixes[0] if len(suffixes) == 1 else f"{', '.join(suffixes[:-1])} or {suffixes[-1]}"
