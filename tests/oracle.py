"""Independent answers computed with raw SQL through Python's sqlite3: the tests' oracle.

Nothing here imports nsysq's engine; it reads the export the way the article does.
"""

from __future__ import annotations

import sqlite3
import statistics
from pathlib import Path
from typing import Any


def connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)


def tables(path: Path) -> set[str]:
    with connect(path) as con:
        return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def scalar(path: Path, sql: str, default: Any = 0) -> Any:
    with connect(path) as con:
        try:
            value = con.execute(sql).fetchone()[0]
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return default
            raise
    return default if value is None else value


def kernel_count(path: Path) -> int:
    return int(scalar(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"))


def kernel_ns(path: Path) -> int:
    return int(scalar(path, 'SELECT sum("end" - start) FROM CUPTI_ACTIVITY_KIND_KERNEL'))


def per_short_name(path: Path) -> dict[str, tuple[int, int]]:
    """name -> (instances, total_ns); unresolved ids under nsysq's placeholder text."""
    sql = """
        SELECT COALESCE(s.value, CASE WHEN k.shortName IS NULL THEN '<null name id>'
                                 ELSE '<unresolved id ' || k.shortName || '>' END),
               count(*), sum(k."end" - k.start)
        FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN StringIds s ON s.id = k.shortName
        GROUP BY 1"""
    with connect(path) as con:
        return {r[0]: (r[1], r[2]) for r in con.execute(sql)}


def durations(path: Path, short_name: str) -> list[int]:
    sql = """SELECT k."end" - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k
             JOIN StringIds s ON s.id = k.shortName WHERE s.value = ?"""
    with connect(path) as con:
        return [r[0] for r in con.execute(sql, (short_name,))]


def launches_named(path: Path, name: str) -> int:
    sql = """SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k
             WHERE k.shortName IN (SELECT id FROM StringIds WHERE value = ?)
                OR k.demangledName IN (SELECT id FROM StringIds WHERE value = ?)"""
    with connect(path) as con:
        return int(con.execute(sql, (name, name)).fetchone()[0])


def stats(values: list[int]) -> dict[str, float | None]:
    return {
        "instances": len(values),
        "total": sum(values),
        "avg": statistics.fmean(values),
        "med": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "stddev": statistics.stdev(values) if len(values) > 1 else None,
    }


def count(path: Path, table: str, where: str = "") -> int:
    return int(scalar(path, f"SELECT count(*) FROM {table} {where}"))


def memcpy_by_kind(path: Path) -> dict[int, tuple[int, int]]:
    if "CUPTI_ACTIVITY_KIND_MEMCPY" not in tables(path):
        return {}
    with connect(path) as con:
        return {
            r[0]: (r[1], r[2])
            for r in con.execute(
                "SELECT copyKind, count(*), sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY 1"
            )
        }


def census_totals(path: Path) -> dict[str, Any]:
    """SQLite's own single-threaded full scan of the kernel table: instances and total_ns per short
    name (as nsysq labels it) and overall. Raises sqlite3.DatabaseError when SQLite cannot read it
    (a damaged file: nsysq must then fail with the damage message)."""
    per_name = per_short_name(path)
    with connect(path) as con:
        row = con.execute('SELECT count(*), sum("end" - start) FROM CUPTI_ACTIVITY_KIND_KERNEL').fetchone()
    return {"per_name": per_name, "instances": int(row[0]), "total_ns": int(row[1] or 0)}
