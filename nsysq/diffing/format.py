"""Text helpers for findings: times and byte counts as a person writes them, ratios, plurals, lists."""

from __future__ import annotations


def fmt_time(ns: float | None) -> str:
    """88 ms, 6.17 ms, 1.25 s, 45.2 us: what a person would write."""
    if ns is None:
        return "-"
    v = float(ns)
    for div, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "us")):
        if abs(v) >= div:
            x = v / div
            return (
                f"{x:.2f} {unit}"
                if abs(x) < 10
                else f"{x:.3g} {unit}"
                if abs(x) < 1000
                else f"{x:,.0f} {unit}"
            )
    return f"{v:.0f} ns"


def fmt_bytes(n: float | None) -> str:
    """Decimal units, as nsys and the article use them: 81 MB, 163 MB, 8.88 MB."""
    if n is None:
        return "-"
    v = float(n)
    for div, unit in ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if abs(v) >= div:
            return f"{v / div:.3g} {unit}"
    return f"{v:.0f} B"


def _x(r: float | None) -> str:
    return "-" if r is None else f"{r:.2f}x"


def _s(n: int) -> str:
    return "s" if n != 1 else ""


def _split(names: str | None) -> list[str]:
    return [n for n in (names or "").split(", ") if n]


def _short_list(names: str | None, n: int = 3) -> str:
    items = _split(names)
    return ", ".join(items[:n]) + (f" and {len(items) - n} more" if len(items) > n else "")
