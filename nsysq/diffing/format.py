"""Text helpers for findings: ratios, plurals, lists. Times and byte counts are written by
:mod:`nsysq.base.units` (``fmt_time``, ``fmt_bytes``)."""

from __future__ import annotations


def _x(r: float | None) -> str:
    return "-" if r is None else f"{r:.2f}x"


def _s(n: int) -> str:
    return "s" if n != 1 else ""


def _split(names: str | None) -> list[str]:
    return [n for n in (names or "").split(", ") if n]


def _short_list(names: str | None, n: int = 3) -> str:
    items = _split(names)
    return ", ".join(items[:n]) + (f" and {len(items) - n} more" if len(items) > n else "")
