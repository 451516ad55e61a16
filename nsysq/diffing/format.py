"""Text helpers for findings: ratios, plurals, lists. Times and byte counts are written by
:mod:`nsysq.base.units` (``fmt_time``, ``fmt_bytes``)."""

from __future__ import annotations


def fmt_ratio(r: float | None) -> str:
    """``1.23x``; ``-`` for no ratio."""
    return "-" if r is None else f"{r:.2f}x"


def plural(n: int) -> str:
    """The plural ending for ``n`` things: ``s`` unless ``n`` is 1."""
    return "s" if n != 1 else ""


def split_names(names: str | None) -> list[str]:
    """A ``", "``-joined list of names (as the diff queries aggregate them) as a list."""
    return [n for n in (names or "").split(", ") if n]


def short_list(names: str | None, n: int = 3) -> str:
    """The first ``n`` of a ``", "``-joined list, then ``and K more``."""
    items = split_names(names)
    return ", ".join(items[:n]) + (f" and {len(items) - n} more" if len(items) > n else "")
