"""The summary reports (``*_sum``): per-group statistics from one packaged query each, finished as
nsys finishes them. Avg = total / count; Med, StdDev (sample, 0 for one instance) from the query;
Avg, Med, StdDev and Time (%) rounded to 1 decimal by SQLite's ``round``; Time (%) = 100 x total /
the report's own total; sizes in MB = 10^6 bytes, 3 decimals; rows by total descending, then name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nsysq.base.table import Table
from nsysq.stats.model import COUNT, MB, PCT, STAT, TEXT, TIME, Column
from nsysq.stats.numbers import in_unit, sqlite_round


def summary_columns(count: tuple[str, str], labels: Sequence[tuple[str, str]]) -> tuple[Column, ...]:
    """``Time (%)``, ``Total Time``, the count column (key, header), Avg ... StdDev, then ``labels``
    (key, header) as text columns."""
    return (
        Column("time_pct", "Time (%)", PCT),
        Column("total_ns", "Total Time ({unit})", TIME),
        Column(count[0], count[1], COUNT),
        Column("avg_ns", "Avg ({unit})", STAT),
        Column("med_ns", "Med ({unit})", STAT),
        Column("min_ns", "Min ({unit})", TIME),
        Column("max_ns", "Max ({unit})", TIME),
        Column("stddev_ns", "StdDev ({unit})", STAT),
        *(Column(key, header, TEXT) for key, header in labels),
    )


SIZE_COLUMNS: tuple[Column, ...] = (
    Column("total_mb", "Total (MB)", MB),
    Column("count", "Count", COUNT),
    Column("avg_mb", "Avg (MB)", MB),
    Column("med_mb", "Med (MB)", MB),
    Column("min_mb", "Min (MB)", MB),
    Column("max_mb", "Max (MB)", MB),
    Column("stddev_mb", "StdDev (MB)", MB),
    Column("operation", "Operation", TEXT),
)


def sort_groups(groups: list[dict[str, Any]], total: str, name: str) -> list[dict[str, Any]]:
    """Largest ``total`` first; equal totals by ``name`` (then the rest of the label)."""
    return sorted(groups, key=lambda g: (-int(g[total] or 0), str(g[name]), str(g.get("style", ""))))


def time_summary(
    kind: str, columns: tuple[Column, ...], groups: list[dict[str, Any]], unit: str, queries: tuple[str, ...]
) -> Table:
    """A time summary from ``groups`` (dicts with ``count``, ``total_ns``, ``med_ns``, ``min_ns``,
    ``max_ns``, ``stddev_ns`` and the text columns' keys), already in nsys's row order."""
    count_key = columns[2].key
    totals = [int(g["total_ns"] or 0) for g in groups]
    grand = sum(totals)
    pct = sqlite_round([100.0 * t / grand if grand else 0.0 for t in totals], 1)
    avg = [t / int(g["count"]) for t, g in zip(totals, groups, strict=True)]
    cells: dict[str, list[Any]] = {
        "time_pct": pct,
        "total_ns": time_cells(totals, unit),
        count_key: [int(g["count"]) for g in groups],
        "avg_ns": _stat(avg, unit),
        "med_ns": _stat([float(g["med_ns"]) for g in groups], unit),
        "min_ns": time_cells([int(g["min_ns"]) for g in groups], unit),
        "max_ns": time_cells([int(g["max_ns"]) for g in groups], unit),
        "stddev_ns": _stat([float(g["stddev_ns"] or 0) for g in groups], unit),
    }
    for column in columns[8:]:
        cells[column.key] = [g[column.key] for g in groups]
    return _table(kind, columns, cells, len(groups), unit, queries)


def size_summary(groups: list[dict[str, Any]], unit: str, queries: tuple[str, ...]) -> Table:
    """The memory size summary from ``groups`` (``count``, ``total_bytes``, ``med_bytes``,
    ``min_bytes``, ``max_bytes``, ``stddev_bytes``, ``operation``), in nsys's row order."""

    def mb(values: list[float]) -> list[float | None]:
        return sqlite_round([v / 1e6 for v in values], 3)

    cells: dict[str, list[Any]] = {
        "total_mb": mb([float(g["total_bytes"]) for g in groups]),
        "count": [int(g["count"]) for g in groups],
        "avg_mb": mb([int(g["total_bytes"]) / int(g["count"]) for g in groups]),
        "med_mb": mb([float(g["med_bytes"]) for g in groups]),
        "min_mb": mb([float(g["min_bytes"]) for g in groups]),
        "max_mb": mb([float(g["max_bytes"]) for g in groups]),
        "stddev_mb": mb([float(g["stddev_bytes"] or 0) for g in groups]),
        "operation": [g["operation"] for g in groups],
    }
    return _table("cuda_gpu_mem_size_sum", SIZE_COLUMNS, cells, len(groups), unit, queries)


def time_cells(values: list[int], unit: str) -> list[Any]:
    """Integer ns as they are; in another unit, converted and rounded to 1 decimal."""
    return list(values) if unit == "ns" else sqlite_round(in_unit(values, unit), 1)


def _stat(values: list[float], unit: str) -> list[float | None]:
    return sqlite_round(in_unit(values, unit), 1)


def _table(
    kind: str,
    columns: tuple[Column, ...],
    cells: dict[str, list[Any]],
    n: int,
    unit: str,
    queries: tuple[str, ...],
) -> Table:
    keys = tuple(c.key_in(unit) for c in columns)
    data = [cells[c.key] for c in columns]
    rows = [tuple(col[i] for col in data) for i in range(n)]
    return Table(kind=kind, columns=keys, rows=rows, queries=queries, unit=unit)
