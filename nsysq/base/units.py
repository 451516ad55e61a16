"""Time and size units: the conversion factors, and the text a person reads for a time or a size.

Every nsysq module formats times and sizes with these functions (tables format their cells in
``nsysq.base.render``). Times are nanoseconds unless a function takes a ``unit``; a missing value (None
or NaN) prints as a dash rather than as ``nan``. Numbers keep three significant digits, and a value
that rounds up to the next unit is written in it ("1.00 s", never "1e+03 ms").
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from nsysq.base.errors import UsageError

#: Nanoseconds per unit, for every unit ``--time-unit`` and ``Table.in_unit`` accept.
TIME_UNITS: dict[str, int] = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
#: How each unit is written under a plot (``us`` is the micro sign there; prose keeps ``us``).
TIME_UNIT_LABELS: dict[str, str] = {"ns": "ns", "us": "µs", "ms": "ms", "s": "s"}
#: Decimal size units (as nsys writes sizes), largest first.
_DECIMAL_SIZES: tuple[tuple[float, str], ...] = ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"))
#: Binary size units for file sizes (KB = 1024 B), smallest first.
_BINARY_SIZES: tuple[str, ...] = ("B", "KB", "MB", "GB")

MISSING_PROSE = "-"
MISSING_PLOT = "–"


def check_unit(unit: str) -> str:
    """``unit`` when it is a time unit nsysq knows, else a UsageError naming the choices."""
    if unit not in TIME_UNITS:
        raise UsageError(f"unknown time unit {unit!r}; use one of ns, us, ms, s.")
    return unit


def time_factor(src: str, dst: str) -> float:
    """What to multiply a time in ``src`` by to express it in ``dst`` (works on arrays too)."""
    return TIME_UNITS[src] / TIME_UNITS[dst]


def convert(value: float, src: str, dst: str) -> float:
    """A time in ``src`` expressed in ``dst``."""
    return value * time_factor(src, dst)


def ms_to_ns(ms: float) -> int:
    """Milliseconds (as ``--from``/``--to`` take them) to whole nanoseconds."""
    return round(ms * TIME_UNITS["ms"])


def axis_unit(max_ns: float) -> str:
    """The unit a plot axis reaching ``max_ns`` uses: s from 10 s (so 1-10 s reads as ms), ms from
    1 ms, us from 1 us, else ns."""
    if max_ns >= 10 * TIME_UNITS["s"]:
        return "s"
    if max_ns >= TIME_UNITS["ms"]:
        return "ms"
    if max_ns >= TIME_UNITS["us"]:
        return "us"
    return "ns"


def is_missing(value: Any) -> bool:
    """True for None and NaN (what pandas and SQL give for "no value"); False for text."""
    if value is None:
        return True
    try:
        return math.isnan(value)
    except (TypeError, ValueError):
        return False


def _three_digits(value: float) -> float:
    """|value| rounded to three significant digits (what the text will show)."""
    return abs(float(f"{value:.3g}"))


def fmt_in_unit(value: float | None, unit: str) -> str:
    """A time already in ``unit``, as plots label bars: ``877 ms``, ``6.17 ms``, ``0.85 µs``.

    Three significant digits from 1 up (thousands separated), two decimals below 1, two
    significant digits below 0.01; ``–`` when missing.
    """
    if value is None or is_missing(value):
        return MISSING_PLOT
    value = float(value) + 0.0  # -0.0 prints as 0
    shown = _three_digits(value)
    if shown >= 100:
        text = f"{value:,.0f}"
    elif shown >= 10:
        text = f"{value:.1f}"
    elif shown >= 0.01 or value == 0:
        text = f"{value:.2f}"
    else:
        text = f"{value:.2g}"
    return f"{text} {TIME_UNIT_LABELS[unit]}"


def _prose_number(value: float) -> str:
    """Three significant digits without an exponent: 6.17, 45.2, 88, 1,250."""
    shown = _three_digits(value)
    if shown < 10:
        return f"{value:.2f}"
    if shown < 1000:
        return f"{value:.3g}"
    return f"{value:,.0f}"


def fmt_time(ns: float | None) -> str:
    """A time in nanoseconds as a person writes it: 88 ms, 6.17 ms, 1.25 s, 45.2 us, 870 ns.

    The unit is the largest in which the value shows as at least 1; ``-`` when missing.
    """
    if ns is None or is_missing(ns):
        return MISSING_PROSE
    value = float(ns) + 0.0  # -0.0 prints as 0
    for unit in ("s", "ms", "us"):
        scaled = value / TIME_UNITS[unit]
        if _three_digits(scaled) >= 1:
            return f"{_prose_number(scaled)} {unit}"
    return f"{value:.0f} ns"


def fmt_ms(ns: float | None) -> str:
    """A time in nanoseconds as milliseconds with one decimal: ``1,298.3 ms``; ``–`` when missing."""
    if ns is None or is_missing(ns):
        return MISSING_PLOT
    return f"{convert(float(ns), 'ns', 'ms'):,.1f} ms"


def fmt_bytes(n: float | None) -> str:
    """A byte count in decimal units, as nsys writes them: 81 MB, 163 MB, 8.88 MB, 512 B."""
    if n is None or is_missing(n):
        return MISSING_PROSE
    value = float(n) + 0.0  # -0.0 prints as 0
    for div, unit in _DECIMAL_SIZES:
        scaled = value / div
        if _three_digits(scaled) >= 1:
            shown = _three_digits(scaled)
            return f"{scaled:.3g} {unit}" if shown < 1000 else f"{scaled:,.0f} {unit}"
    return f"{value:.0f} B"


def fmt_file_size(n: float) -> str:
    """A file size in binary units (1 KB = 1024 B), as the cache and the notebook card show it:
    ``812 B``, ``2.5 KB``, ``1,310.7 MB``, up to GB."""
    value, level = float(n), 0
    while level < len(_BINARY_SIZES) - 1 and abs(round(value, 0 if level == 0 else 1)) >= 1024:
        value, level = value / 1024, level + 1
    if level == 0:
        return f"{value:,.0f} B"
    return f"{value:,.1f} {_BINARY_SIZES[level]}"


def condensed(names: Iterable[str], *, empty: str = "") -> str:
    """Repeated names counted once, in order of first appearance: ``7× NVIDIA GeForce RTX 3090``,
    ``2× A100, 1× T4``; a name seen once stays as it is (``NVIDIA H200``)."""
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    if len(counts) == 1 and next(iter(counts.values())) == 1:
        return next(iter(counts))
    return ", ".join(f"{n}× {name}" for name, n in counts.items()) or empty
