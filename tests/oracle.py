"""Independent answers computed with raw SQL through Python's sqlite3: the tests' oracle.

Nothing here imports nsysq's engine; it reads the export the way the article does.
"""

from __future__ import annotations

import re
import sqlite3
import statistics
import tomllib
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


# -- gaps and overlap: plain Python sweeps over the raw rows ------------------------------------------
# Nothing below imports nsysq: interval unions by a sort-and-merge loop, causes by intersecting
# merged interval lists, categories and kinds by re-reading the TOML rule files (data, not code).

_GPU_OP_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
Interval = tuple[int, int]
_CAUSES = ("host_wait", "launch_bound", "host_busy", "unknown")


def _rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    with connect(path) as con:
        try:
            return con.execute(sql).fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc) or "no such column" in str(exc):
                return []
            raise


def gpu_ops(path: Path) -> list[tuple[Any, Any, int, int, Any, Any]]:
    """(device, stream, start, end, correlationId, process) of every kernel, memcpy and memset with
    a start and an end; an end before the start counts as zero-length."""
    present = tables(path)
    out = []
    for table in _GPU_OP_TABLES:
        if table not in present:
            continue
        cols = {r[1] for r in _rows(path, f"PRAGMA table_info({table})")}
        pid = "globalPid >> 24" if "globalPid" in cols else "NULL"
        sql = (
            f'SELECT deviceId, streamId, start, "end", correlationId, {pid} FROM {table} '
            'WHERE start IS NOT NULL AND "end" IS NOT NULL'
        )
        out += [(d, s, a, max(a, b), c, p) for d, s, a, b, c, p in _rows(path, sql)]
    return out


def merge(intervals: list[Interval]) -> list[Interval]:
    """The union of ``intervals`` as sorted, disjoint (start, end) pairs; touching intervals merge,
    a zero-length interval apart from the others stays an island of length 0."""
    merged: list[list[int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(a, b) for a, b in merged]


def length(intervals: list[Interval]) -> int:
    return sum(b - a for a, b in intervals)


def intersect(xs: list[Interval], ys: list[Interval]) -> list[Interval]:
    """Intersection of two sorted disjoint interval lists (two pointers)."""
    out, i, j = [], 0, 0
    while i < len(xs) and j < len(ys):
        lo, hi = max(xs[i][0], ys[j][0]), min(xs[i][1], ys[j][1])
        if lo < hi:
            out.append((lo, hi))
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return out


def idle_gaps(intervals: list[Interval]) -> list[Interval]:
    """The holes between the merged islands of ``intervals``."""
    islands = merge(intervals)
    return [(a[1], b[0]) for a, b in zip(islands, islands[1:], strict=False) if b[0] > a[1]]


def _like(pattern: str) -> re.Pattern[str]:
    return re.compile("".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern), re.S)


def _toml_rules(name: str) -> list[dict[str, Any]]:
    text = (Path(__file__).resolve().parents[1] / "queries" / name).read_text(encoding="utf-8")
    return list(tomllib.loads(text)["rule"])


def _first(rules: list[dict[str, Any]], key: str, text: str | None) -> Any:
    for rule in rules:
        if text is not None and _like(rule["like"]).fullmatch(text.lower()):
            return rule[key]
    return None


def gaps_by_device(path: Path) -> dict[Any, dict[str, Any]]:
    """Per device: span, busy (union length), idle, gap list, and idle by cause, by plain sweeps."""
    ops = gpu_ops(path)
    call_rules = _toml_rules("gap_cause_rules.toml")
    names = dict(_rows(path, "SELECT id, value FROM StringIds"))
    calls = _rows(
        path,
        'SELECT globalTid, globalTid >> 24, correlationId, nameId, start, "end" '
        'FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE start IS NOT NULL AND "end" IS NOT NULL '
        "AND globalTid IS NOT NULL",
    )
    by_corr: dict[Any, list[tuple[int, int]]] = {}
    for tid, proc, corr, *_ in calls:
        by_corr.setdefault(corr, []).append((tid, proc))
    feeders: dict[Any, set[int]] = {}
    for dev, _s, _a, _b, corr, proc in ops:
        for tid, call_proc in by_corr.get(corr, []):
            if proc is None or proc == call_proc:
                feeders.setdefault(dev, set()).add(tid)
    classes: dict[int, dict[str, list[Interval]]] = {}
    for tid, _p, _c, name_id, start, end in calls:
        cause = _first(call_rules, "cause", names.get(name_id))
        if cause:
            classes.setdefault(tid, {}).setdefault(cause, []).append((start, max(start, end)))
    out: dict[Any, dict[str, Any]] = {}
    for dev in {op[0] for op in ops}:
        spans = [(a, b) for d, _s, a, b, _c, _p in ops if d == dev]
        gaps = idle_gaps(spans)
        threads = feeders.get(dev, set())
        launch = merge([iv for t in threads for iv in classes.get(t, {}).get("launch_bound", [])])
        wait = merge([iv for t in threads for iv in classes.get(t, {}).get("host_wait", [])])
        per_gap = []
        for gap in gaps:
            g_launch = length(intersect([gap], launch))
            g_wait = length(intersect([gap], wait)) - length(intersect(intersect([gap], wait), launch))
            size = gap[1] - gap[0]
            if not threads:
                causes = {"host_wait": 0, "launch_bound": 0, "host_busy": 0, "unknown": size}
            else:
                causes = {
                    "host_wait": g_wait,
                    "launch_bound": g_launch,
                    "host_busy": size - g_wait - g_launch,
                    "unknown": 0,
                }
            per_gap.append((gap, causes))
        first, last = min(a for a, _ in spans), max(b for _, b in spans)
        out[dev] = {
            "ops": len(spans),
            "first": first,
            "span": last - first,
            "busy": length(merge(spans)),
            "idle": length(gaps),
            "gaps": per_gap,
            "feeding_threads": len(threads),
            "causes": {c: sum(p[1][c] for p in per_gap) for c in _CAUSES},
        }
    return out


def busy_by_stream(path: Path) -> dict[tuple[Any, Any], dict[str, int]]:
    """Per (device, stream): ops, span and union length."""
    lanes: dict[tuple[Any, Any], list[Interval]] = {}
    for dev, stream, a, b, _c, _p in gpu_ops(path):
        lanes.setdefault((dev, stream), []).append((a, b))
    return {
        lane: {
            "ops": len(ivs),
            "span": max(b for _, b in ivs) - min(a for a, _ in ivs),
            "busy": length(merge(ivs)),
        }
        for lane, ivs in lanes.items()
    }


def overlap_by_device(path: Path) -> tuple[dict[Any, dict[str, int]], dict[tuple[Any, str], dict[str, int]]]:
    """Per device: comm, compute, overlap, exposed, memcpy and memcpy overlap; per (device,
    collective kind): comm, overlap, exposed. Categories from lineup_rules.toml, kinds from
    collective_rules.toml, matched here with Python regexes."""
    lineup = _toml_rules("lineup_rules.toml")
    kinds = _toml_rules("collective_rules.toml")
    names = dict(_rows(path, "SELECT id, value FROM StringIds"))
    kernels = _rows(
        path,
        'SELECT deviceId, start, "end", shortName, demangledName '
        'FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE start IS NOT NULL AND "end" IS NOT NULL',
    )
    comm: dict[Any, list[Interval]] = {}
    compute: dict[Any, list[Interval]] = {}
    by_kind: dict[tuple[Any, str], list[Interval]] = {}
    for dev, a, b, short_id, dem_id in kernels:
        short, dem = names.get(short_id), names.get(dem_id)
        category = None
        for rule in lineup:
            text = dem if rule["field"] == "demangled" else short
            if text is not None and _like(rule["like"]).fullmatch(text.lower()):
                category = rule["category"]
                break
        iv = (a, max(a, b))
        if category == "NCCL / communication":
            comm.setdefault(dev, []).append(iv)
            by_kind.setdefault((dev, _first(kinds, "kind", short) or "unknown"), []).append(iv)
        else:
            compute.setdefault(dev, []).append(iv)
    copies: dict[Any, list[Interval]] = {}
    for dev, a, b in _rows(
        path,
        'SELECT deviceId, start, "end" FROM CUPTI_ACTIVITY_KIND_MEMCPY '
        'WHERE start IS NOT NULL AND "end" IS NOT NULL',
    ):
        copies.setdefault(dev, []).append((a, max(a, b)))
    devices: dict[Any, dict[str, int]] = {}
    for dev in set(comm) | set(compute) | set(copies):
        c, p, m = merge(comm.get(dev, [])), merge(compute.get(dev, [])), merge(copies.get(dev, []))
        ov, mov = length(intersect(c, p)), length(intersect(m, p))
        devices[dev] = {
            "comm": length(c),
            "compute": length(p),
            "overlap": ov,
            "exposed": length(c) - ov,
            "memcpy": length(m),
            "memcpy_overlap": mov,
            "memcpy_exposed": length(m) - mov,
        }
    collectives = {}
    for (dev, kind), ivs in by_kind.items():
        c = merge(ivs)
        ov = length(intersect(c, merge(compute.get(dev, []))))
        collectives[(dev, kind)] = {"comm": length(c), "overlap": ov, "exposed": length(c) - ov}
    return devices, collectives


def trace_t0(path: Path) -> int:
    """The earliest start among kernels, memcpys, memsets and CUDA API calls."""
    starts = [
        scalar(path, f"SELECT min(start) FROM {t}", None)
        for t in (*_GPU_OP_TABLES, "CUPTI_ACTIVITY_KIND_RUNTIME")
    ]
    return min(s for s in starts if s is not None)


# -- fleet: raw SQL per file, summed over the files in plain Python --------------------------------------
def kernel_launches(path: Path) -> list[tuple[str, str, str, int | None]]:
    """Every kernel launch as (short label, demangled label, category, duration): names labelled as
    nsysq labels unresolved ids, categories by the first lineup_rules.toml rule that matches (Python
    regexes), durations ``end - start`` (None when either is NULL)."""
    rules = _toml_rules("lineup_rules.toml")
    names = dict(_rows(path, "SELECT id, value FROM StringIds"))
    launches = []
    sql = 'SELECT shortName, demangledName, "end" - start FROM CUPTI_ACTIVITY_KIND_KERNEL'
    for short_id, dem_id, dur in _rows(path, sql):
        short, dem = names.get(short_id), names.get(dem_id)
        category = "Other"
        for rule in rules:
            text = dem if rule["field"] == "demangled" else short
            if text is not None and _like(rule["like"]).fullmatch(text.lower()):
                category = rule["category"]
                break
        launches.append((_label(short_id, short), _label(dem_id, dem), category, dur))
    return launches


def _label(name_id: Any, value: str | None) -> str:
    if value is not None:
        return value
    return "<null name id>" if name_id is None else f"<unresolved id {name_id}>"


def fleet_merged(paths: list[Path]) -> dict[str, Any]:
    """Per short name and per category over all ``paths``: instances, total, min, max, sum of
    squares (exact Python ints) and every duration (for the exact median)."""
    kernels: dict[str, dict[str, Any]] = {}
    categories: dict[str, dict[str, Any]] = {}
    for path in paths:
        for short, _dem, category, dur in kernel_launches(path):
            for key, into in ((short, kernels), (category, categories)):
                entry = into.setdefault(key, {"instances": 0, "total": 0, "sum_sq": 0, "values": []})
                entry["instances"] += 1
                if dur is not None:
                    entry["total"] += dur
                    entry["sum_sq"] += dur * dur
                    entry["values"].append(dur)
    for into in (kernels, categories):
        for entry in into.values():
            entry["min"] = min(entry["values"], default=None)
            entry["max"] = max(entry["values"], default=None)
    return {"kernels": kernels, "categories": categories}
