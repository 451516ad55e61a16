"""The arithmetic of nsys's printed numbers: SQLite's ``round`` (half away from zero, on the decimal
digits), time-unit conversion, and the text of a cell in nsys's CSV and console layouts.

nsys's report scripts round in SQLite, so nsysq rounds with SQLite too (Python's own ``round`` is
half-to-even on the binary value: ``round(3138.25, 1)`` is 3138.2 where SQLite prints 3138.3)."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Sequence

from nsysq.base.units import TIME_UNITS


@functools.cache
def _rounder() -> sqlite3.Connection:
    con = sqlite3.connect(":memory:", check_same_thread=False)
    con.execute("CREATE TABLE v (i INTEGER PRIMARY KEY, x REAL)")
    return con


def sqlite_round(values: Sequence[float | None], digits: int) -> list[float | None]:
    """Each value rounded to ``digits`` decimals by SQLite's ``round`` (None stays None); one
    statement for the whole column."""
    if not values:
        return []
    con = _rounder()
    with con:
        con.execute("DELETE FROM v")
        con.executemany("INSERT INTO v VALUES (?, ?)", [(i, v) for i, v in enumerate(values)])
        rows = con.execute("SELECT round(x, ?) FROM v ORDER BY i", (digits,)).fetchall()
        con.execute("DELETE FROM v")
    return [None if r[0] is None else float(r[0]) for r in rows]


def round1(value: float) -> float:
    """One value, SQLite-rounded to 1 decimal."""
    return sqlite_round([value], 1)[0] or 0.0


def in_unit(values: Sequence[int | float | None], unit: str) -> list[float | None]:
    """Nanosecond values expressed in ``unit`` (floats; None stays None)."""
    per = TIME_UNITS[unit]
    return [None if v is None else float(v) / per for v in values]


def group_digits(text: str, sep: str = ",", size: int = 3) -> str:
    """``1234567.5`` as ``1,234,567.5``: the integer part grouped (the console layout's locale
    grouping; nsys uses the user's locale, nsysq the common 3-digit grouping)."""
    sign = "-" if text.startswith("-") else ""
    body = text[len(sign) :]
    whole, dot, frac = body.partition(".")
    groups: list[str] = []
    while len(whole) > size:
        groups.insert(0, whole[-size:])
        whole = whole[:-size]
    groups.insert(0, whole)
    return sign + sep.join(groups) + dot + frac
