"""Independent answers computed with raw SQL through Python's sqlite3: the tests' oracle.

Nothing here imports nsysq's engine; it reads the export the way the article does.
"""

from __future__ import annotations

import bisect
import math
import re
import sqlite3
import statistics
import tomllib
from dataclasses import dataclass
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

# GPU work: kernels, memcpys, memsets and executions of CUDA graphs traced whole (their kernels are
# not in the kernel table; each execution occupies its device and stream from start to end).
_GPU_OP_TABLES = (
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
)
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
    text = (Path(__file__).resolve().parents[1] / "queries" / "rules" / name).read_text(encoding="utf-8")
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
    collective_rules.toml, matched here with Python regexes. Executions of CUDA graphs traced whole
    are neither communication nor compute: graph (their union), graph_overlap (communication time
    under a graph execution and no compute kernel), memcpy_graph_overlap (the same for memcpys);
    with the counts kernels, comm_kernels, memcpys, graph_executions."""
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
    copies, graphs = (
        _timed_by_device(path, "CUPTI_ACTIVITY_KIND_MEMCPY"),
        _timed_by_device(path, _GRAPH_TRACE),
    )
    devices: dict[Any, dict[str, int]] = {}
    for dev in set(comm) | set(compute) | set(copies) | set(graphs):
        c, p, m = merge(comm.get(dev, [])), merge(compute.get(dev, [])), merge(copies.get(dev, []))
        g = merge(graphs.get(dev, []))
        p_or_g = merge(p + g)
        ov, mov = length(intersect(c, p)), length(intersect(m, p))
        devices[dev] = {
            "kernels": len(comm.get(dev, [])) + len(compute.get(dev, [])),
            "comm_kernels": len(comm.get(dev, [])),
            "comm": length(c),
            "compute": length(p),
            "overlap": ov,
            "exposed": length(c) - ov,
            "memcpys": len(copies.get(dev, [])),
            "memcpy": length(m),
            "memcpy_overlap": mov,
            "memcpy_exposed": length(m) - mov,
            "graph_executions": len(graphs.get(dev, [])),
            "graph": length(g),
            "graph_overlap": length(intersect(c, p_or_g)) - ov,
            "memcpy_graph_overlap": length(intersect(m, p_or_g)) - mov,
        }
    collectives = {}
    for (dev, kind), ivs in by_kind.items():
        c = merge(ivs)
        ov = length(intersect(c, merge(compute.get(dev, []))))
        collectives[(dev, kind)] = {"comm": length(c), "overlap": ov, "exposed": length(c) - ov}
    return devices, collectives


def _timed_by_device(path: Path, table: str) -> dict[Any, list[Interval]]:
    """Per deviceId, the (start, end) of the rows of ``table`` with both (an end before the start
    counts as zero-length)."""
    out: dict[Any, list[Interval]] = {}
    sql = f'SELECT deviceId, start, "end" FROM {table} WHERE start IS NOT NULL AND "end" IS NOT NULL'
    for dev, a, b in _rows(path, sql):
        out.setdefault(dev, []).append((a, max(a, b)))
    return out


def trace_t0(path: Path) -> int:
    """The earliest start among kernels, memcpys, memsets and CUDA API calls."""
    starts = [
        scalar(path, f"SELECT min(start) FROM {t}", None)
        for t in (*_GPU_OP_TABLES, "CUPTI_ACTIVITY_KIND_RUNTIME")
    ]
    return min(s for s in starts if s is not None)


# -- NVTX (nsysq nvtx, --nvtx scopes) ---------------------------------------------------------------
_PID_MASK = ~0xFFFFFF  # globalTid -> globalPid: the thread bits cleared, as nsys documents


@dataclass(frozen=True)
class NvtxRange:
    """One NVTX range row the projection keeps: same-thread, ended, push/pop or start/end."""

    tid: int
    domain: str
    dom: int
    name: str
    start: int
    end: int
    push_pop: bool


def nvtx_ranges(path: Path, *, extend: bool = False) -> tuple[list[NvtxRange], int, int]:
    """The kept ranges, and the counts of range rows ended on another thread and never ended.
    Domain names come from the DomainCreate (75) row of the same id in the same process. With
    ``extend``, a range that never ended (on its own thread) is kept, ending at the last NVTX
    timestamp (the greatest end, or start when there is none, of any NVTX row), as nsys does."""
    if "NVTX_EVENTS" not in tables(path):
        return [], 0, 0
    rows = _rows(
        path,
        'SELECT n.eventType, n.start, n."end", n.globalTid, n.endGlobalTid, n.domainId, n.text, s.value '
        "FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId",
    )
    domains = {
        (tid & _PID_MASK, dom): text if text is not None else value
        for kind, _, _, tid, _, dom, text, value in rows
        if kind == 75
    }
    last = max((e if e is not None else s) for _, s, e, *_ in rows) if rows else 0
    kept, other_thread, never_ended = [], 0, 0
    for kind, start, end, tid, end_tid, dom, text, value in rows:
        if kind not in (59, 60, 70, 71):
            continue
        if end_tid is not None and end_tid != tid:
            other_thread += 1
            continue
        if end is None and extend:
            end = last
        if end is None:
            never_ended += 1
            continue
        dom = dom or 0
        domain = "" if dom == 0 else domains.get((tid & _PID_MASK, dom), f"domain {dom}")
        name = text if text is not None else (value if value is not None else "<unnamed range>")
        kept.append(NvtxRange(tid, domain, dom, name, start, end, kind in (59, 70)))
    return kept, other_thread, never_ended


def nvtx_kernels(path: Path, table: str = "CUPTI_ACTIVITY_KIND_KERNEL") -> list[tuple[int, int, int, int]]:
    """(globalPid, correlationId, start, end) of every kernel (or every row of another GPU-op
    table: CUPTI_ACTIVITY_KIND_GRAPH_TRACE for the executions of CUDA graphs traced whole)."""
    if table not in tables(path):
        return []
    return _rows(path, f'SELECT globalPid, correlationId, start, "end" FROM {table}')


def nvtx_calls(path: Path) -> dict[tuple[int, int], list[tuple[int, int, int]]]:
    """(globalPid, correlationId) -> [(globalTid, start, end)] of the runtime and driver calls
    (eventClass 0 and 1 only: eventClass-67 backtrace rows share the correlationId)."""
    out: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    sql = (
        'SELECT globalTid, correlationId, start, "end" FROM CUPTI_ACTIVITY_KIND_RUNTIME '
        "WHERE eventClass IN (0, 1)"
    )
    for tid, corr, start, end in _rows(path, sql):
        out.setdefault((tid & _PID_MASK, corr), []).append((tid, start, end))
    return out


def nvtx_kernel_ranges(
    path: Path,
    *,
    innermost: bool = False,
    window: bool = False,
    table: str = "CUPTI_ACTIVITY_KIND_KERNEL",
    extend: bool = False,
) -> list[tuple[tuple[int, int, int, int], NvtxRange]]:
    """(kernel, range) for every kernel and every kept range on its launching call's thread whose
    interval holds the whole call (a plain interval test, no stacks). With ``innermost``, of the
    push/pop ranges of each domain only the deepest: the latest start (then the earliest end).
    With ``window``, instead every kept range of any thread whose interval holds the kernel's whole
    GPU interval. ``table``: the GPU ops to attribute (see nvtx_kernels); ``extend``: see nvtx_ranges."""
    ranges, _, _ = nvtx_ranges(path, extend=extend)
    if window:
        return [
            (k, r) for k in nvtx_kernels(path, table) for r in ranges if r.start <= k[2] and k[3] <= r.end
        ]
    by_thread: dict[int, list[NvtxRange]] = {}
    for r in ranges:
        by_thread.setdefault(r.tid, []).append(r)
    calls = nvtx_calls(path)
    out = []
    for kernel in nvtx_kernels(path, table):
        for tid, start, end in calls.get((kernel[0], kernel[1]), []):
            holding = [r for r in by_thread.get(tid, []) if r.start <= start and end <= r.end]
            if innermost:
                deepest: dict[int, NvtxRange] = {}
                for r in holding:
                    if r.push_pop:
                        best = deepest.get(r.dom)
                        if best is None or (r.start, -r.end) > (best.start, -best.end):
                            deepest[r.dom] = r
                holding = [r for r in holding if not r.push_pop] + list(deepest.values())
            out += [(kernel, r) for r in holding]
    return out


def nvtx_by_name(
    path: Path,
    *,
    innermost: bool = False,
    window: bool = False,
    table: str = "CUPTI_ACTIVITY_KIND_KERNEL",
    extend: bool = False,
) -> dict[tuple[str, str], tuple[int, int, int, int]]:
    """(domain, name) -> (instances, total_ns, kernels, kernel_ns) over the kept ranges: CPU-side
    instances and summed durations, and the kernels (or ``table``'s ops) attributed to their ranges."""
    ranges, _, _ = nvtx_ranges(path, extend=extend)
    out: dict[tuple[str, str], list[int]] = {}
    for r in ranges:
        row = out.setdefault((r.domain, r.name), [0, 0, 0, 0])
        row[0] += 1
        row[1] += r.end - r.start
    for kernel, r in nvtx_kernel_ranges(path, innermost=innermost, window=window, table=table, extend=extend):
        row = out[(r.domain, r.name)]
        row[2] += 1
        row[3] += kernel[3] - kernel[2]
    return {key: (a, b, c, d) for key, (a, b, c, d) in out.items()}


def nvtx_scoped_kernels(
    path: Path,
    name: str,
    domain: str | None = None,
    *,
    mode: str = "launch",
    table: str = "CUPTI_ACTIVITY_KIND_KERNEL",
) -> tuple[int, int]:
    """(kernels, kernel_ns) of the distinct kernels (or ``table``'s ops) attributed in ``mode``
    (launch, innermost, window) to any kept range named ``name`` (of ``domain`` when given): what
    a census scoped to that range adds up to."""
    pairs = nvtx_kernel_ranges(path, innermost=mode == "innermost", window=mode == "window", table=table)
    seen = {kernel for kernel, r in pairs if r.name == name and (domain is None or r.domain == domain)}
    return len(seen), sum(e - s for _, _, s, e in seen)


# -- scopes and CUDA graphs (issue 10): raw SQL and plain Python over the export ----------------------
_GRAPH_TRACE = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
_SCOPE_COLUMNS = {"device": "deviceId", "stream": "streamId", "pid": "(globalPid >> 24) & 16777215"}


def _scope_where(scope: dict[str, int | None]) -> str:
    terms = [f"{_SCOPE_COLUMNS[k]} = {int(v)}" for k, v in scope.items() if v is not None]
    return ("WHERE " + " AND ".join(terms)) if terms else ""


def gpu_scope_values(path: Path) -> dict[str, list[int]]:
    """The devices, streams and pids that hold any GPU op (kernel, memcpy, memset, graph execution)."""
    values: dict[str, set[int]] = {k: set() for k in _SCOPE_COLUMNS}
    present = tables(path)
    for table in _GPU_OP_TABLES:
        if table not in present:
            continue
        for dim, column in _SCOPE_COLUMNS.items():
            for (value,) in _rows(path, f"SELECT DISTINCT {column} FROM {table} WHERE {column} IS NOT NULL"):
                values[dim].add(int(value))
    return {k: sorted(v) for k, v in values.items()}


def scoped_kernels(path: Path, **scope: int | None) -> tuple[int, int]:
    """(launches, total ns) of the kernels in scope (device=, stream=, pid=)."""
    if "CUPTI_ACTIVITY_KIND_KERNEL" not in tables(path):
        return 0, 0
    rows = _rows(
        path, f'SELECT count(*), sum("end" - start) FROM CUPTI_ACTIVITY_KIND_KERNEL {_scope_where(scope)}'
    )
    return int(rows[0][0]), int(rows[0][1] or 0)


def graph_executions(path: Path, **scope: int | None) -> dict[int, tuple[int, int]]:
    """graphId -> (executions, total ns) of the CUDA graphs traced whole, in scope."""
    if _GRAPH_TRACE not in tables(path):
        return {}
    sql = f'SELECT graphId, count(*), sum("end" - start) FROM {_GRAPH_TRACE} {_scope_where(scope)} GROUP BY 1'
    return {int(g): (int(n), int(ns)) for g, n, ns in _rows(path, sql)}


def process_work(path: Path) -> dict[int, tuple[int, int]]:
    """pid -> (kernels, kernel ns), for every process with a kernel."""
    if "CUPTI_ACTIVITY_KIND_KERNEL" not in tables(path):
        return {}
    sql = (
        'SELECT (globalPid >> 24) & 16777215, count(*), sum("end" - start) '
        "FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY 1"
    )
    return {int(p): (int(n), int(ns)) for p, n, ns in _rows(path, sql)}


def _innermost_ranges(
    path: Path, calls: dict[tuple[int, int], tuple[int, int, int]]
) -> dict[tuple[int, int], str]:
    """(pid, correlationId) -> the name of the innermost NVTX range (same thread, containing the call)."""
    if "NVTX_EVENTS" not in tables(path):
        return {}
    strings = dict(_rows(path, "SELECT id, value FROM StringIds"))
    by_tid: dict[int, list[tuple[int, int, str]]] = {}
    sql = (
        'SELECT globalTid, start, "end", text, textId FROM NVTX_EVENTS '
        "WHERE eventType IN (59, 60, 70, 71) AND endGlobalTid IS NULL"
    )
    for tid, start, end, text, text_id in _rows(path, sql):
        name = text if text is not None else strings.get(text_id, "<unnamed range>")
        by_tid.setdefault(tid, []).append((start, end if end is not None else 2**63 - 1, name))
    out = {}
    for key, (tid, cs, ce) in calls.items():
        inside = [r for r in by_tid.get(tid, []) if r[0] <= cs and r[1] >= ce]
        if inside:
            out[key] = max(inside, key=lambda r: r[0])[2]
    return out


def graph_table(path: Path) -> dict[str, dict[str, Any]]:
    """What ``nsysq graphs`` should say, per graph label, computed from the raw rows in Python:
    node-traced launches are the kernels sharing (pid, correlationId) with graphNodeId or graphId set,
    whole-graph launches the GRAPH_TRACE rows; the NVTX range is the innermost on the launching thread."""
    present = tables(path)
    launches: dict[tuple[str, int, int], dict[str, Any]] = {}
    if "CUPTI_ACTIVITY_KIND_KERNEL" in present:
        cols = {r[1] for r in _rows(path, "PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)")}
        gid = "graphId" if "graphId" in cols else "NULL"
        sql = (
            f'SELECT globalPid >> 24, correlationId, start, "end", {gid}, graphNodeId '
            f"FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE graphNodeId IS NOT NULL OR {gid} IS NOT NULL"
        )
        for pid, corr, start, end, graph_id, node in _rows(path, sql):
            one = launches.setdefault(
                ("node", pid, corr), {"s": start, "e": end, "graph_id": None, "nodes": [], "n": 0}
            )
            one["s"], one["e"], one["n"] = min(one["s"], start), max(one["e"], end), one["n"] + 1
            one["graph_id"] = graph_id if graph_id is not None else one["graph_id"]
            one["nodes"].append(node)
    if _GRAPH_TRACE in present:
        for pid, corr, start, end, graph_id in _rows(
            path, f'SELECT globalPid >> 24, correlationId, start, "end", graphId FROM {_GRAPH_TRACE}'
        ):
            launches[("graph", pid, corr)] = {
                "s": start,
                "e": end,
                "graph_id": graph_id,
                "nodes": [],
                "n": None,
            }
    calls = {}
    for tid, corr, start, end in _rows(
        path,
        'SELECT globalTid, correlationId, start, "end" FROM CUPTI_ACTIVITY_KIND_RUNTIME '
        "WHERE eventClass IN (0, 1)",
    ):
        if any((mode, tid >> 24, corr) in launches for mode in ("node", "graph")):
            calls[(tid >> 24, corr)] = (tid, start, end)
    ranges = _innermost_ranges(path, calls)
    out: dict[str, dict[str, Any]] = {}
    for (mode, pid, corr), one in launches.items():
        label = (
            f"graph {one['graph_id']}"
            if one["graph_id"] is not None
            else f"graph of node {min(one['nodes'])}"
        )
        row = out.setdefault(label, {"traced": mode, "spans": [], "kernels": [], "ranges": []})
        row["spans"].append(one["e"] - one["s"])
        if one["n"] is not None:
            row["kernels"].append(one["n"])
        if (pid, corr) in ranges:
            row["ranges"].append(ranges[(pid, corr)])
    return out


# -- grid vs SMs: blocks, the SM count of the GPU each launch ran on, its fill --------------------------
# Plain SQL per table and a Python dict for the device mapping (TARGET_INFO_CUDA_DEVICE, else
# TARGET_INFO_GPU.cuDevice, else the legacy per-process TARGET_INFO_CUDA_GPU); nothing from nsysq.


def _columns(path: Path, table: str) -> set[str]:
    return {r[1] for r in _rows(path, f"PRAGMA table_info({table})")}


def device_sms(path: Path) -> dict[tuple[int, int], int]:
    """(pid, CUDA device ordinal) -> SM count, for every pair the kernel table holds and the export
    maps to a GPU with SMs."""
    present = tables(path)
    seen = _rows(
        path,
        "SELECT DISTINCT (globalPid >> 24) & 16777215, deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL",
    )
    gpu_cols = _columns(path, "TARGET_INFO_GPU") if "TARGET_INFO_GPU" in present else set()
    by_id: dict[int, int] = {}
    by_cu: dict[int, list[int]] = {}
    by_uuid: dict[str, int] = {}
    if "smCount" in gpu_cols:
        for gid, cu, sms, uuid in _rows(path, "SELECT id, cuDevice, smCount, uuid FROM TARGET_INFO_GPU"):
            if sms:
                by_id[gid] = sms
                by_cu.setdefault(cu, []).append(sms)
                by_uuid[str(uuid).lower()] = sms
    visible = cuda_visible_devices(path)
    mapped = {}
    if "TARGET_INFO_CUDA_DEVICE" in present:
        mapped = {
            (p, c): g for g, c, p in _rows(path, "SELECT gpuId, cudaId, pid FROM TARGET_INFO_CUDA_DEVICE")
        }
    legacy = {}
    if "TARGET_INFO_CUDA_GPU" in present:
        legacy = {
            (p, d): n
            for p, d, n in _rows(path, "SELECT pid, deviceId, numMultiprocessors FROM TARGET_INFO_CUDA_GPU")
        }
    out = {}
    for pid, dev in seen:
        through = _through_visible(visible, dev, by_cu, by_uuid)
        if (pid, dev) in mapped and mapped[(pid, dev)] in by_id:
            out[(pid, dev)] = by_id[mapped[(pid, dev)]]
        elif through is not None:
            if through:  # 0: a MIG instance, SM count unknown
                out[(pid, dev)] = through
        elif dev in by_cu:
            out[(pid, dev)] = by_cu[dev][0]
        elif (pid, dev) in legacy and legacy[(pid, dev)]:
            out[(pid, dev)] = legacy[(pid, dev)]
    return out


def cuda_visible_devices(path: Path) -> list[str] | None:
    """The entries of the one CUDA_VISIBLE_DEVICES value the export records (the launched
    processes' environment in META_DATA_CAPTURE, else nsys's DeviceEnvironment), None when it
    records none or several different ones. Read as bytes: environment dumps need not be UTF-8."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con.text_factory = lambda b: b.decode("utf-8", "replace")
    names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    sources: list[set[str]] = [set(), set()]
    key = "CUDA_VISIBLE_DEVICES="
    if "META_DATA_CAPTURE" in names:
        for name, value in con.execute("SELECT name, value FROM META_DATA_CAPTURE"):
            environment = name.startswith("PROCESS") and name.endswith(":ENVIRONMENT_VARIABLE")
            if environment and value.startswith(key):
                sources[0].add(value[len(key) :].strip().strip('"'))
    if "TARGET_INFO_SYSTEM_ENV" in names:
        for name, value in con.execute("SELECT name, value FROM TARGET_INFO_SYSTEM_ENV"):
            if name == "DeviceEnvironment":
                items = [v for v in value.split(";") if v.startswith(key)]
                sources[1] |= {v[len(key) :].strip().strip('"') for v in items}
    con.close()
    chosen = sources[0] or sources[1]
    return [e.strip() for e in chosen.pop().split(",")] if len(chosen) == 1 else None


def _through_visible(
    visible: list[str] | None, dev: int, by_cu: dict[int, list[int]], by_uuid: dict[str, int]
) -> int | None:
    """The SM count ordinal ``dev`` maps to through CUDA_VISIBLE_DEVICES (0: a MIG instance, whose
    count the export lacks), None when the list does not decide (docs/hardware.md)."""
    if visible is None or not 0 <= dev < len(visible):
        return None
    entry = visible[dev]
    if entry.upper().startswith("MIG-"):
        return 0
    if entry.upper().startswith("GPU-") and len(entry) > 4:
        hits = [sms for uuid, sms in by_uuid.items() if uuid.startswith(entry[4:].lower())]
        return hits[0] if len(hits) == 1 else None
    listed = sum(len(v) for v in by_cu.values())
    if entry.isdigit() and len(visible) < listed and int(entry) in by_cu:
        return by_cu[int(entry)][0]
    return None


def launch_fill(path: Path) -> dict[tuple[int, int], tuple[int, int | None, float | None]]:
    """(start, correlationId) -> (blocks, sms, sm_fill_pct) for every kernel launch."""
    sms_of = device_sms(path)
    out = {}
    sql = (
        "SELECT start, correlationId, gridX * gridY * gridZ, (globalPid >> 24) & 16777215, deviceId "
        "FROM CUPTI_ACTIVITY_KIND_KERNEL"
    )
    for start, corr, blocks, pid, dev in _rows(path, sql):
        sms = sms_of.get((pid, dev))
        fill = 100.0 * min(blocks, sms) / sms if sms else None
        out[(start, corr)] = (blocks, sms, fill)
    return out


def underfilled_by_short_name(path: Path) -> dict[str, int]:
    """Short name -> total ns of its launches with sm_fill_pct < 50 (names with none left out)."""
    sms_of = device_sms(path)
    sql = """
        SELECT COALESCE(s.value, CASE WHEN k.shortName IS NULL THEN '<null name id>'
                                 ELSE '<unresolved id ' || k.shortName || '>' END),
               k.gridX * k.gridY * k.gridZ, (k.globalPid >> 24) & 16777215, k.deviceId, k."end" - k.start
        FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN StringIds s ON s.id = k.shortName"""
    out: dict[str, int] = {}
    for name, blocks, pid, dev, dur in _rows(path, sql):
        sms = sms_of.get((pid, dev))
        if sms and 2 * min(blocks, sms) < sms:
            out[name] = out.get(name, 0) + dur
    return out


def diff_gpu_totals(path: Path) -> dict[str, int | None]:
    """The diff's GPU totals from the sweeps above: busy and idle summed over devices (None
    without GPU ops), exposed communication summed over devices."""
    devices = gaps_by_device(path)
    exposed = overlap_by_device(path)[0]
    return {
        "gpu_busy_ns": sum(d["busy"] for d in devices.values()) if devices else None,
        "gpu_idle_ns": sum(d["idle"] for d in devices.values()) if devices else None,
        "comm_exposed_ns": sum(d["exposed"] for d in exposed.values()),
    }


def _weighted_median(pairs: list[tuple[float, float]]) -> float:
    """The smallest value whose cumulative weight reaches half the total (pairs: value, weight)."""
    total = sum(w for _, w in pairs)
    running = 0.0
    for value, weight in sorted(pairs):
        running += weight
        if running >= total / 2:
            return value
    raise ValueError("no values")


def per_call_scores(path_a: Path, path_b: Path, min_ns: float, floor: float) -> dict[str, float | None]:
    """Per short name in both traces: the robust score of its per-call log-ratio (the diff's
    per-call test: times per call scaled by the mean call count, time-weighted median and MAD,
    spread at least ``floor``); None for a name that is not eligible."""
    a, b = per_short_name(path_a), per_short_name(path_b)
    scaled: dict[str, tuple[float, float]] = {}
    for name in set(a) & set(b):
        (ca, ta), (cb, tb) = a[name], b[name]
        mean_calls = (ca + cb) / 2
        scaled[name] = (ta / ca * mean_calls, tb / cb * mean_calls)
    eligible = {n: v for n, v in scaled.items() if v[0] > 0 and v[1] > 0 and max(v) >= min_ns}
    if not eligible:
        return dict.fromkeys(scaled)
    logs = {n: math.log(vb / va) for n, (va, vb) in eligible.items()}
    center = _weighted_median([(logs[n], va + vb) for n, (va, vb) in eligible.items()])
    mad = _weighted_median([(abs(logs[n] - center), va + vb) for n, (va, vb) in eligible.items()])
    spread = max(1.4826 * mad, floor)
    return {n: (logs[n] - center) / spread if n in eligible else None for n in scaled}


# -- nsysq export (issue 14) ------------------------------------------------------------------------
_EXPORT_OPS = {
    "kernel": "CUPTI_ACTIVITY_KIND_KERNEL",
    "memcpy": "CUPTI_ACTIVITY_KIND_MEMCPY",
    "memset": "CUPTI_ACTIVITY_KIND_MEMSET",
    "graph": "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
}
_NVTX_KINDS = {"nvtx_push_pop": 59, "nvtx_start_end": 60}


def _window_sql(t0: int, from_ns: int | None, to_ns: int | None, end: str = '"end"') -> str:
    parts = ["1"]
    if to_ns is not None:
        parts.append(f"start - {t0} < {to_ns}")
    if from_ns is not None:
        parts.append(f"{end} - {t0} >= {from_ns}")
    return " AND ".join(parts)


def export_counts(
    path: Path, from_ns: int | None = None, to_ns: int | None = None
) -> dict[str, tuple[int, int]]:
    """What `nsysq export` should write per kind: (events, summed duration ns) of the rows that
    overlap [from_ns, to_ns) (ns from the trace start), read straight from the export."""
    t0 = trace_t0(path)
    present = tables(path)
    out: dict[str, tuple[int, int]] = {}
    window = _window_sql(t0, from_ns, to_ns)
    for kind, table in _EXPORT_OPS.items():
        row = (
            _rows(path, f'SELECT count(*), sum("end" - start) FROM {table} WHERE {window}')
            if table in present
            else []
        )
        out[kind] = (int(row[0][0]), int(row[0][1] or 0)) if row else (0, 0)
    api = "CUPTI_ACTIVITY_KIND_RUNTIME"
    if api in present:
        row = _rows(
            path,
            f'SELECT count(*), sum("end" - start) FROM {api} '
            f"WHERE (eventClass IS NULL OR eventClass <> 67) AND {window}",
        )[0]
        out["cuda_api"] = (int(row[0]), int(row[1] or 0))
    else:
        out["cuda_api"] = (0, 0)
    has_nvtx = "NVTX_EVENTS" in present
    for kind, event_type in _NVTX_KINDS.items():
        sql = (
            f'SELECT count(*), sum("end" - start) FROM NVTX_EVENTS '
            f'WHERE eventType = {event_type} AND "end" IS NOT NULL AND {window}'
        )
        row = _rows(path, sql)[0] if has_nvtx else (0, 0)
        out[kind] = (int(row[0]), int(row[1] or 0))
    marks = _window_sql(t0, from_ns, to_ns, end="start")
    row = (
        _rows(path, f"SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 34 AND {marks}")[0]
        if has_nvtx
        else (0,)
    )
    out["nvtx_mark"] = (int(row[0]), 0)
    return out


def export_unclosed_nvtx(path: Path, from_ns: int | None = None, to_ns: int | None = None) -> int:
    if "NVTX_EVENTS" not in tables(path):
        return 0
    window = _window_sql(trace_t0(path), from_ns, to_ns, end="start")
    sql = f'SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60) AND "end" IS NULL AND {window}'
    return int(_rows(path, sql)[0][0])


def export_flows(path: Path, from_ns: int | None = None, to_ns: int | None = None) -> int:
    """GPU ops in the window whose launching CUDA API call (same correlationId, same process:
    globalPid >> 24 = globalTid >> 24, or any process when the op has no globalPid) is in the window."""
    present = tables(path)
    api = "CUPTI_ACTIVITY_KIND_RUNTIME"
    if api not in present:
        return 0
    t0 = trace_t0(path)
    call_window = _window_sql(t0, from_ns, to_ns).replace("start", "c.start").replace('"end"', 'c."end"')
    op_window = _window_sql(t0, from_ns, to_ns).replace("start", "o.start").replace('"end"', 'o."end"')
    total = 0
    for table in _EXPORT_OPS.values():
        if table not in present:
            continue
        sql = (
            f"SELECT count(*) FROM {table} AS o WHERE {op_window} AND EXISTS ("
            f"SELECT 1 FROM {api} AS c WHERE c.correlationId = o.correlationId "
            "AND (c.eventClass IS NULL OR c.eventClass <> 67) "
            f"AND (o.globalPid IS NULL OR (o.globalPid >> 24) = (c.globalTid >> 24)) AND {call_window})"
        )
        total += int(_rows(path, sql)[0][0])
    return total


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
        launches.append((_fleet_label(short_id, short), _fleet_label(dem_id, dem), category, dur))
    return launches


def _fleet_label(name_id: Any, value: str | None) -> str:
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


# -- diff's outlier scores on total time (queries/diff/outliers.sql) ---------------------------------
def total_scores(path_a: Path, path_b: Path, min_ns: float, floor: float) -> dict[str, float | None]:
    """Per short name in both traces: the robust score of ln(time in B / time in A) against the
    time-weighted median log-ratio of the eligible names (both times > 0, the larger >= ``min_ns``),
    scaled by 1.4826 x the time-weighted median absolute deviation, at least ``floor``; None for a
    name that is not eligible. Times are raw sqlite3 sums per short name."""
    a, b = per_short_name(path_a), per_short_name(path_b)
    both = {n: (a[n][1], b[n][1]) for n in set(a) & set(b)}
    eligible = {n: v for n, v in both.items() if v[0] > 0 and v[1] > 0 and max(v) >= min_ns}
    if not eligible:
        return dict.fromkeys(both)
    logs = {n: math.log(vb / va) for n, (va, vb) in eligible.items()}
    center = _weighted_median([(logs[n], va + vb) for n, (va, vb) in eligible.items()])
    mad = _weighted_median([(abs(logs[n] - center), va + vb) for n, (va, vb) in eligible.items()])
    spread = max(1.4826 * mad, floor)
    return {n: (logs[n] - center) / spread if n in eligible else None for n in both}


# -- nsysq export in a scope (issue 14): plain Python over raw rows ------------------------------------
_MASK24 = 0xFFFFFF


def nvtx_selected_launches(
    path: Path, name: str, domain: str | None = None, index: int | None = None
) -> set[tuple[int, int]]:
    """(globalPid, correlationId) of the kernels, memcpys and memsets whose launching call (eventClass
    0 or 1) lies wholly inside a kept range named ``name`` (of ``domain`` when given; only the
    ``index``-th such range in start order, then thread, when given) on the call's thread: the GPU
    work ``--nvtx name[@domain][/index]`` keeps."""
    ranges, _, _ = nvtx_ranges(path)
    chosen = sorted(
        (r for r in ranges if r.name == name and (domain is None or r.domain == domain)),
        key=lambda r: (r.start, r.tid),
    )
    if index is not None:
        chosen = chosen[index : index + 1]
    by_thread: dict[int, list[tuple[int, int, tuple[int, int]]]] = {}
    for key, calls in nvtx_calls(path).items():
        for tid, start, end in calls:
            by_thread.setdefault(tid, []).append((start, end, key))
    for calls in by_thread.values():
        calls.sort()
    held: set[tuple[int, int]] = set()
    for r in chosen:
        calls = by_thread.get(r.tid, [])
        i = bisect.bisect_left(calls, (r.start, -(2**63)))
        while i < len(calls) and calls[i][0] <= r.end:
            if calls[i][1] <= r.end:
                held.add(calls[i][2])
            i += 1
    launched = {
        (int(p), int(c))
        for table in _GPU_OP_TABLES[:3]
        for p, c in _rows(
            path, f"SELECT globalPid, correlationId FROM {table} WHERE correlationId IS NOT NULL"
        )
        if p is not None
    }
    return held & launched


def _in_window(start: int, end: int, t0: int, from_ns: int | None, to_ns: int | None) -> bool:
    return (to_ns is None or start - t0 < to_ns) and (from_ns is None or end - t0 >= from_ns)


def export_scoped(
    path: Path,
    *,
    device: int | None = None,
    stream: int | None = None,
    pid: int | None = None,
    launches: set[tuple[int, int]] | None = None,
    from_ns: int | None = None,
    to_ns: int | None = None,
) -> tuple[dict[str, tuple[int, int]], int]:
    """What a scoped `nsysq export` should write: (events, summed ns) per kind, and the launch
    arrows. GPU ops: those on ``device``/``stream``/of process ``pid``, and with ``launches`` those
    whose (globalPid, correlationId) is in the set. CPU side: with a device, stream or launch set,
    the calls that launched an op in scope and the ranges (push/pop, start/end, ended on their own
    thread) that hold such a call wholly on its thread; with ``pid`` alone, every call and NVTX
    event of the process."""
    t0, present = trace_t0(path), tables(path)
    scope = {"device": device, "stream": stream, "pid": pid}
    ops: dict[str, list[tuple[int, int, Any, Any]]] = {}
    for kind, table in _EXPORT_OPS.items():
        sql = f'SELECT start, "end", globalPid, correlationId FROM {table} {_scope_where(scope)}'
        rows = _rows(path, sql) if table in present else []
        ops[kind] = [
            r for r in rows if launches is None or (r[2] is not None and (int(r[2]), r[3]) in launches)
        ]
    launches_only = device is not None or stream is not None or launches is not None
    keys = {(r[3], r[2] >> 24) for rows in ops.values() for r in rows if r[2] is not None}
    loose = {r[3] for rows in ops.values() for r in rows if r[2] is None}
    sql = (
        'SELECT start, "end", globalTid, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME '
        "WHERE eventClass IS NULL OR eventClass <> 67"
    )
    calls = [
        c
        for c in (_rows(path, sql) if "CUPTI_ACTIVITY_KIND_RUNTIME" in present else [])
        if (pid is None or (c[2] >> 24) & _MASK24 == pid)
        and (not launches_only or (c[3] is not None and ((c[3], c[2] >> 24) in keys or c[3] in loose)))
    ]
    out = {
        kind: _summed([(s, e) for s, e, _, _ in rows if _in_window(s, e, t0, from_ns, to_ns)])
        for kind, rows in ops.items()
    }
    written = [c for c in calls if _in_window(c[0], c[1], t0, from_ns, to_ns)]
    out["cuda_api"] = _summed([(c[0], c[1]) for c in written])
    out.update(_scoped_nvtx(path, pid, calls if launches_only else None, t0, from_ns, to_ns))
    in_file = {(c[3], c[2] >> 24) for c in written}
    in_file_corr = {c[3] for c in written}
    flows = sum(
        1
        for rows in ops.values()
        for s, e, p, corr in rows
        if _in_window(s, e, t0, from_ns, to_ns)
        and ((corr, p >> 24) in in_file if p is not None else corr in in_file_corr)
    )
    return out, flows


def _summed(spans: list[tuple[int, int]]) -> tuple[int, int]:
    return len(spans), sum(e - s for s, e in spans)


def _scoped_nvtx(
    path: Path,
    pid: int | None,
    launch_calls: list[tuple[Any, ...]] | None,
    t0: int,
    from_ns: int | None,
    to_ns: int | None,
) -> dict[str, tuple[int, int]]:
    """Per NVTX kind, (events, summed ns) of a scoped export: every event of the process (or of the
    trace), or with ``launch_calls`` only the ranges holding one of those calls wholly."""
    has = "NVTX_EVENTS" in tables(path)
    sql = (
        'SELECT eventType, start, "end", globalTid, endGlobalTid FROM NVTX_EVENTS '
        "WHERE eventType IN (34, 59, 60)"
    )
    rows = [r for r in (_rows(path, sql) if has else []) if pid is None or (r[3] >> 24) & _MASK24 == pid]
    by_thread: dict[int, list[tuple[int, int]]] = {}
    for start, end, tid, _ in launch_calls or []:
        by_thread.setdefault(tid, []).append((start, end))
    for calls in by_thread.values():
        calls.sort()
    out: dict[str, list[tuple[int, int]]] = {"nvtx_push_pop": [], "nvtx_start_end": [], "nvtx_mark": []}
    for kind, start, end, tid, end_tid in rows:
        if kind == 34:
            if launch_calls is None and _in_window(start, start, t0, from_ns, to_ns):
                out["nvtx_mark"].append((start, start))
            continue
        if end is None or not _in_window(start, end, t0, from_ns, to_ns):
            continue
        if launch_calls is not None:
            if end_tid is not None and end_tid != tid:
                continue
            if not _holds_a_call(by_thread.get(tid, []), start, end):
                continue
        out["nvtx_push_pop" if kind == 59 else "nvtx_start_end"].append((start, end))
    return {kind: _summed(spans) for kind, spans in out.items()}


def _holds_a_call(calls: list[tuple[int, int]], start: int, end: int) -> bool:
    """Whether one of ``calls`` (sorted (start, end)) lies wholly inside [start, end]."""
    i = bisect.bisect_left(calls, (start, -(2**63)))
    while i < len(calls) and calls[i][0] <= end:
        if calls[i][1] <= end:
            return True
        i += 1
    return False


# -- nsysq check (issue 24): each rule over the raw rows, in plain Python ---------------------------
_MEM_KINDS = {
    0: "Pageable",
    1: "Pinned",
    2: "Device",
    3: "Array",
    4: "Managed",
    5: "Device Static",
    6: "Managed Static",
    7: "Unknown",
}
_SYNC_CALLS = ("cudaDeviceSynchronize", "cudaStreamSynchronize")
_KERNEL, _MEMCPY, _MEMSET = (f"CUPTI_ACTIVITY_KIND_{t}" for t in ("KERNEL", "MEMCPY", "MEMSET"))
_RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"


@dataclass(frozen=True)
class CheckArgs:
    """The options of one check run, as the oracle takes them (ns and percent)."""

    rows: int = 50
    gap_ns: int = 500_000_000
    threshold: float = 50.0
    chunks: int = 30
    fill: float = 50.0
    min_share: float = 1.0
    launch_pct: float = 10.0
    danger_share: float = 0.0
    from_ns: int | None = None
    to_ns: int | None = None


def _in_check_window(args: CheckArgs, t0: int, start: int, end: int) -> bool:
    return (args.to_ns is None or start - t0 < args.to_ns) and (
        args.from_ns is None or end - t0 >= args.from_ns
    )


def _mem_kinds(path: Path) -> dict[int, str]:
    if "ENUM_CUDA_MEM_KIND" in tables(path):
        return {int(i): str(label) for i, label in _rows(path, "SELECT id, label FROM ENUM_CUDA_MEM_KIND")}
    return dict(_MEM_KINDS)


def _copy_rule(is_memset: bool, name: str, op: dict[str, Any]) -> str | None:
    low = name.lower()
    if (
        not is_memset
        and re.fullmatch(r"cudamemcpy.*async.*", low, re.S)
        and 0 in (op["srcKind"], op["dstKind"])
    ):
        return "cuda_memcpy_async"
    if not is_memset and low.startswith("cudamemcpy") and "async" not in low:
        small = op["copyKind"] == 1 and op["bytes"] <= 64000
        same = op["srcDeviceId"] is not None and op["srcDeviceId"] == op["dstDeviceId"]
        return None if small or same else "cuda_memcpy_sync"
    if is_memset and low.startswith("cudamemset") and "async" not in low and op["memKind"] in (1, 4):
        return "cuda_memset_sync"
    return None


def _copy_findings(path: Path, args: CheckArgs, t0: int) -> dict[str, list[dict[str, Any]]]:
    present = tables(path)
    names = dict(_rows(path, "SELECT id, value FROM StringIds"))
    kinds = _mem_kinds(path)
    calls: dict[tuple[int, int], list[tuple[int, int, int, str]]] = {}
    sql = f'SELECT globalTid, correlationId, start, "end", nameId FROM {_RUNTIME} WHERE eventClass IN (0, 1)'
    for tid, corr, start, end, name_id in _rows(path, sql) if _RUNTIME in present else []:
        if corr is not None and tid is not None and name_id in names:
            calls.setdefault((tid & _PID_MASK, corr), []).append((tid, start, end, names[name_id]))
    out: dict[str, list[dict[str, Any]]] = {
        r: [] for r in ("cuda_memcpy_async", "cuda_memcpy_sync", "cuda_memset_sync")
    }
    for table, is_memset in ((_MEMCPY, False), (_MEMSET, True)):
        if table not in present:
            continue
        cols = _columns(path, table)
        wanted = ("start", "end", "deviceId", "streamId", "correlationId", "globalPid", "bytes", "copyKind",
                  "srcKind", "dstKind", "srcDeviceId", "dstDeviceId", "memKind")  # fmt: skip
        select = ", ".join(
            f'"{c}"' if c in cols and (is_memset == (c == "memKind") or c in wanted[:7]) else "NULL"
            for c in wanted
        )
        for values in _rows(path, f"SELECT {select} FROM {table}"):
            op = dict(zip(wanted, values, strict=True))
            if not _in_check_window(args, t0, op["start"], op["end"]):
                continue
            for tid, cs, ce, name in calls.get((op["globalPid"], op["correlationId"]), []):
                rule = _copy_rule(is_memset, name, op)
                if rule is None:
                    continue
                out[rule].append(
                    {
                        "start_ns": op["start"] - t0,
                        "duration_ns": op["end"] - op["start"],
                        "pid": (op["globalPid"] >> 24) & 0xFFFFFF,
                        "tid": tid & 0xFFFFFF,
                        "device_id": op["deviceId"],
                        "stream_id": op["streamId"],
                        "api_name": name,
                        "bytes": op["bytes"],
                        "src_kind": kinds.get(op["srcKind"]),
                        "dst_kind": kinds.get(op["dstKind"]),
                        "mem_kind": kinds.get(op["memKind"]),
                        "_key": (op["end"] - op["start"], op["start"], op["globalPid"], op["correlationId"]),
                        "_call": (tid, cs, ce),
                    }
                )
    for found in out.values():
        found.sort(key=lambda f: (-f["_key"][0], *f["_key"][1:]))
    return out


def _sync_findings(path: Path, args: CheckArgs, t0: int) -> list[dict[str, Any]]:
    names = dict(_rows(path, "SELECT id, value FROM StringIds"))
    found = []
    for tid, start, end, name_id in _rows(path, f'SELECT globalTid, start, "end", nameId FROM {_RUNTIME}'):
        name = names.get(name_id)
        if name is None or re.sub(r"_v[0-9]{4}$", "", name) not in _SYNC_CALLS:
            continue
        if _in_check_window(args, t0, start, end):
            found.append(
                {
                    "start_ns": start - t0,
                    "duration_ns": end - start,
                    "pid": (tid >> 24) & 0xFFFFFF,
                    "tid": tid & 0xFFFFFF,
                    "api_name": name,
                    "_key": (end - start, start, tid),
                    "_call": (tid, start, end),
                }
            )
    found.sort(key=lambda f: (-f["_key"][0], *f["_key"][1:]))
    return found


def _lanes(path: Path, args: CheckArgs, t0: int) -> dict[tuple[int, int], list[Interval]]:
    """(globalPid or -1, deviceId or -1) -> the GPU ops' intervals clipped to the window."""
    lanes: dict[tuple[int, int], list[Interval]] = {}
    present = tables(path)
    for table in _GPU_OP_TABLES:
        if table not in present:
            continue
        pid = "globalPid" if "globalPid" in _columns(path, table) else "NULL"
        sql = (
            f'SELECT {pid}, deviceId, start, "end" FROM {table} WHERE start IS NOT NULL AND "end" IS NOT NULL'
        )
        for gpid, dev, start, end in _rows(path, sql):
            end = max(start, end)
            if args.to_ns is not None and start >= t0 + args.to_ns:
                continue
            if args.from_ns is not None and end < t0 + args.from_ns:
                continue
            if args.from_ns is not None:
                start = max(start, t0 + args.from_ns)
            if args.to_ns is not None:
                end = min(end, t0 + args.to_ns)
            key = (-1 if gpid is None else gpid, -1 if dev is None else dev)
            lanes.setdefault(key, []).append((start, max(start, end)))
    return lanes


def _lane_finding(t0: int, lane: tuple[int, int], start: int, duration: int) -> dict[str, Any]:
    gpid, dev = lane
    pid = None if gpid == -1 else (gpid >> 24) & 0xFFFFFF
    return {
        "start_ns": start - t0,
        "duration_ns": duration,
        "pid": pid,
        "device_id": None if dev == -1 else dev,
    }


def _gap_findings(path: Path, args: CheckArgs, t0: int) -> list[dict[str, Any]]:
    found = []
    for lane, ivs in sorted(_lanes(path, args, t0).items()):
        for a, b in idle_gaps(ivs):
            if b - a > args.gap_ns:
                found.append({**_lane_finding(t0, lane, a, b - a), "_key": (b - a, a, *lane)})
    found.sort(key=lambda f: (-f["_key"][0], *f["_key"][1:]))
    return found


def _util_findings(path: Path, args: CheckArgs, t0: int) -> list[dict[str, Any]]:
    found = []
    for lane, ivs in sorted(_lanes(path, args, t0).items()):
        first, last = min(a for a, _ in ivs), max(b for _, b in ivs)
        span = last - first
        if span <= 0:
            continue
        size = -(-span // args.chunks)
        n = -(-span // size)
        busy = [0] * n
        for a, b in ivs:  # each op adds its overlap with every chunk it touches
            for k in range((a - first) // size, min(n - 1, (b - first) // size) + 1):
                lo, hi = first + k * size, min(first + (k + 1) * size, last)
                busy[k] += max(0, min(b, hi) - max(a, lo))
        lengths = [min(first + (k + 1) * size, last) - (first + k * size) for k in range(n)]
        low = [100.0 * busy[k] / lengths[k] < args.threshold for k in range(n)]
        k = 0
        while k < n:
            if not low[k]:
                k += 1
                continue
            j = k
            while j < n and low[j]:
                j += 1
            run_busy, run_len = sum(busy[k:j]), sum(lengths[k:j])
            util = math.floor(100.0 * run_busy / run_len * 10 + 0.5) / 10
            pid, dev = (-1 if v is None else v for v in (_lane_finding(t0, lane, 0, 0)["pid"], lane[1]))
            f = {**_lane_finding(t0, lane, first + k * size, run_len), "value_pct": util}
            found.append({**f, "_key": (run_len, f["start_ns"], pid, dev)})
            k = j
    found.sort(key=lambda f: (-f["_key"][0], *f["_key"][1:]))
    return found


def _kernel_rows(path: Path, args: CheckArgs, t0: int) -> list[dict[str, Any]]:
    names = dict(_rows(path, "SELECT id, value FROM StringIds"))
    columns = 'globalPid, deviceId, shortName, demangledName, gridX, gridY, gridZ, start, "end"'
    sql = f"SELECT {columns} FROM {_KERNEL}"
    out = []
    for gpid, dev, short, demangled, gx, gy, gz, start, end in _rows(path, sql):
        if _in_check_window(args, t0, start, end):
            out.append(
                {
                    "gpid": gpid,
                    "pid": (gpid >> 24) & 0xFFFFFF,
                    "dev": dev,
                    "short": _label(names, short),
                    "demangled": names.get(demangled),
                    "grid": (gx, gy, gz),
                    "start": start,
                    "dur": end - start,
                }
            )
    return out


def _underfilled_findings(path: Path, args: CheckArgs, t0: int) -> list[dict[str, Any]] | None:
    sms_of = device_sms(path)
    kernels = _kernel_rows(path, args, t0)
    all_ns = sum(k["dur"] for k in kernels)
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for k in kernels:
        sms = sms_of.get((k["pid"], k["dev"]))
        blocks = k["grid"][0] * k["grid"][1] * k["grid"][2]
        if sms and 100.0 * min(blocks, sms) / sms < args.fill:
            groups.setdefault((k["gpid"], k["dev"], k["short"], k["grid"], blocks, sms), []).append(k)
    found = []
    for (gpid, dev, name, _grid, blocks, sms), ks in groups.items():
        total = sum(k["dur"] for k in ks)
        if all_ns > 0 and 100.0 * total / all_ns >= args.min_share:
            found.append(
                {
                    "start_ns": min(k["start"] for k in ks) - t0,
                    "duration_ns": total,
                    "pid": (gpid >> 24) & 0xFFFFFF,
                    "device_id": dev,
                    "kernel": name,
                    "value_pct": 100.0 * min(blocks, sms) / sms,
                    "_key": (total, len(ks), name, (gpid >> 24) & 0xFFFFFF, dev, blocks),
                }
            )
    found.sort(key=lambda f: (-f["_key"][0], -f["_key"][1], *f["_key"][2:]))
    return None if not found and not sms_of else found


def _danger_findings(path: Path, args: CheckArgs, t0: int) -> list[dict[str, Any]]:
    rules = _toml_rules("danger_rules.toml")
    kernels = _kernel_rows(path, args, t0)
    all_ns = sum(k["dur"] for k in kernels)
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    kind_of: dict[tuple[str, str | None], str | None] = {}  # per (short, demangled) pair: first match
    for k in kernels:
        pair = (k["short"], k["demangled"])
        if pair not in kind_of:
            kind_of[pair] = None
            for rule in rules:
                text = k["demangled"] if rule["field"] == "demangled" else k["short"]
                if text is not None and _like(rule["like"]).fullmatch(text.lower()):
                    kind_of[pair] = rule["kind"]
                    break
        kind = kind_of[pair]
        if kind is not None:
            groups.setdefault((kind, k["short"]), []).append(k)
    found = []
    for (kind, name), ks in groups.items():
        total = sum(k["dur"] for k in ks)
        share = 100.0 * total / all_ns if all_ns else 0.0
        if all_ns > 0 and share >= args.danger_share:
            devices = sorted({k["dev"] for k in ks})
            found.append(
                {
                    "start_ns": min(k["start"] for k in ks) - t0,
                    "duration_ns": total,
                    "kernel": name,
                    "device_id": devices[0] if len(devices) == 1 else None,
                    "value_pct": share,
                    "_key": (total, len(ks), kind, name),
                }
            )
    found.sort(key=lambda f: (-f["_key"][0], -f["_key"][1], *f["_key"][2:]))
    return found


def _launch_bound_by_device(path: Path) -> dict[Any, tuple[int, int, int]]:
    """device -> (first op start, span, idle time inside launch calls of its feeding threads): the
    launch_bound cause of gaps_by_device, summed over the device's gaps by one two-pointer pass over
    the gaps and the merged launch calls (|gaps ∩ launch calls|) instead of one pass per gap."""
    ops = gpu_ops(path)
    launch_rules = _toml_rules("gap_cause_rules.toml")
    names = dict(_rows(path, "SELECT id, value FROM StringIds"))
    calls = _rows(
        path,
        'SELECT globalTid, globalTid >> 24, correlationId, nameId, start, "end" '
        f'FROM {_RUNTIME} WHERE start IS NOT NULL AND "end" IS NOT NULL AND globalTid IS NOT NULL',
    )
    by_corr: dict[Any, list[tuple[int, int]]] = {}
    for tid, proc, corr, *_ in calls:
        by_corr.setdefault(corr, []).append((tid, proc))
    feeders: dict[Any, set[int]] = {}
    for dev, _s, _a, _b, corr, proc in ops:
        for tid, call_proc in by_corr.get(corr, []):
            if proc is None or proc == call_proc:
                feeders.setdefault(dev, set()).add(tid)
    cause_of = {i: _first(launch_rules, "cause", v) for i, v in names.items()}
    launching: dict[int, list[Interval]] = {}
    for tid, _p, _c, name_id, start, end in calls:
        if cause_of.get(name_id) == "launch_bound":
            launching.setdefault(tid, []).append((start, max(start, end)))
    out = {}
    for dev in {op[0] for op in ops}:
        spans = [(a, b) for d, _s, a, b, _c, _p in ops if d == dev]
        launch = merge([iv for t in feeders.get(dev, set()) for iv in launching.get(t, [])])
        first, last = min(a for a, _ in spans), max(b for _, b in spans)
        out[dev] = (first, last - first, length(intersect(idle_gaps(spans), launch)))
    return out


def _launch_bound_findings(path: Path, args: CheckArgs, t0: int) -> list[dict[str, Any]]:
    found = []
    for dev, (first, span, lb) in _launch_bound_by_device(path).items():
        share = 100.0 * lb / span if span else 0.0
        if lb and share >= args.launch_pct:
            found.append({"start_ns": first - t0, "duration_ns": lb, "device_id": dev, "value_pct": share})
    found.sort(key=lambda f: (-f["duration_ns"], -1 if f["device_id"] is None else f["device_id"]))
    return found


def _innermost_nvtx(by_tid: dict[int, list[NvtxRange]], findings: list[dict[str, Any]]) -> None:
    for f in findings:
        call = f.get("_call")
        if call is None:
            continue
        tid, cs, ce = call
        holding = [r for r in by_tid.get(tid, []) if r.start <= cs and ce <= r.end]
        if holding:
            best = max(holding, key=lambda r: (r.start, -r.end))
            f["nvtx"] = f"{best.domain}:{best.name}" if best.domain else best.name


def check_rules(
    path: Path, args: CheckArgs | None = None
) -> dict[str, tuple[str, int, int, list[dict[str, Any]]]]:
    """rule -> (status, count, total_ns, the findings kept) as nsysq check should give them: every
    rule re-derived from the raw rows (statuses, counts before --rows, sums, sort orders, NVTX)."""
    args = args or CheckArgs()
    present = tables(path)
    t0 = trace_t0(path) if present & {*_GPU_OP_TABLES, _RUNTIME} else 0
    gpu = bool(present & set(_GPU_OP_TABLES))
    copies = _copy_findings(path, args, t0)
    plans: dict[str, tuple[bool, Any]] = {
        "cuda_memcpy_async": ({_MEMCPY, _RUNTIME} <= present, lambda: copies["cuda_memcpy_async"]),
        "cuda_memcpy_sync": ({_MEMCPY, _RUNTIME} <= present, lambda: copies["cuda_memcpy_sync"]),
        "cuda_memset_sync": ({_MEMSET, _RUNTIME} <= present, lambda: copies["cuda_memset_sync"]),
        "cuda_api_sync": (_RUNTIME in present, lambda: _sync_findings(path, args, t0)),
        "gpu_gaps": (gpu, lambda: _gap_findings(path, args, t0)),
        "gpu_time_util": (gpu, lambda: _util_findings(path, args, t0)),
        "underfilled": (_KERNEL in present, lambda: _underfilled_findings(path, args, t0)),
        "launch_bound": (gpu and _RUNTIME in present, lambda: _launch_bound_findings(path, args, t0)),
        "danger": (_KERNEL in present, lambda: _danger_findings(path, args, t0)),
    }
    by_tid: dict[int, list[NvtxRange]] = {}
    for r in nvtx_ranges(path)[0]:
        by_tid.setdefault(r.tid, []).append(r)
    out: dict[str, tuple[str, int, int, list[dict[str, Any]]]] = {}
    for rule, (runs, compute) in plans.items():
        found = compute() if runs else None
        if found is None:
            out[rule] = ("skipped", 0, 0, [])
            continue
        kept = found[: args.rows] if args.rows > 0 else found
        _innermost_nvtx(by_tid, kept)
        status = "found" if found else "clean"
        out[rule] = (status, len(found), sum(f["duration_ns"] for f in found), kept)
    return out


# -- fleet collectives: NCCL collectives matched across ranks -----------------------------------------
def _clock_offset(path: Path) -> int | None:
    """What turns the export's timestamps into UTC epoch ns: utcEpochNs (minus systemClockNs when
    the table has it); 0 for an export made with --ts-normalize; None without the table."""
    have = tables(path)
    for meta in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
        if meta in have:
            values = _rows(path, f"SELECT value FROM {meta} WHERE name = 'EXPORT_PARAM_TIME_NORMALIZE'")
            if any(str(v).lower() == "true" for (v,) in values):
                return 0
            break
    if "TARGET_INFO_SESSION_START_TIME" not in have:
        return None
    system = "systemClockNs" in _columns(path, "TARGET_INFO_SESSION_START_TIME")
    row = _rows(
        path, f"SELECT utcEpochNs{', systemClockNs' if system else ''} FROM TARGET_INFO_SESSION_START_TIME"
    )
    if not row or row[0][0] is None:
        return None
    return int(row[0][0]) - int((row[0][1] if system else 0) or 0)


def _categorized(path: Path) -> list[tuple[int, int, int, int, int, str, str | None]]:
    """(pid, device, stream, start, end, category, short name) of every kernel, by lineup_rules.toml."""
    lineup = _toml_rules("lineup_rules.toml")
    names = dict(_rows(path, "SELECT id, value FROM StringIds"))
    seen: dict[tuple[str | None, str | None], str] = {}
    out = []
    for start, end, dev, stream, gpid, sid, did in _rows(
        path,
        'SELECT start, "end", deviceId, streamId, globalPid, shortName, demangledName '
        'FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE start IS NOT NULL AND "end" IS NOT NULL',
    ):
        short, dem = names.get(sid), names.get(did)
        if (short, dem) not in seen:  # classified once per name pair
            seen[(short, dem)] = "Other"
            for rule in lineup:
                text = dem if rule["field"] == "demangled" else short
                if text is not None and _like(rule["like"]).fullmatch(text.lower()):
                    seen[(short, dem)] = rule["category"]
                    break
        category = seen[(short, dem)]
        pid = -1 if gpid is None else (gpid >> 24) & 0xFFFFFF
        out.append((pid, -1 if dev is None else dev, -1 if stream is None else stream, start, max(start, end),
                    category, short))  # fmt: skip
    return out


@dataclass
class OracleRank:
    label: str
    path: Path
    pid: int
    device: int
    offset: int
    kernels: list[tuple[int, int, int, str, str]]  # local start, end, stream, kind, name


def collective_ranks(paths: list[Path]) -> tuple[list[OracleRank], list[Path]]:
    """Every (file, pid, device) with communication kernels, and the files without a clock (then
    every offset is 0: one shared clock)."""
    kinds = _toml_rules("collective_rules.toml")
    found: list[tuple[Path, int, int, list[tuple[int, int, int, str, str]]]] = []
    unclocked = []
    offsets: dict[Path, int | None] = {}
    kind_of: dict[str | None, str] = {}
    for path in paths:
        per: dict[tuple[int, int], list[tuple[int, int, int, str, str]]] = {}
        for pid, dev, stream, start, end, category, short in _categorized(path):
            if category == "NCCL / communication":
                kind = kind_of.setdefault(short, _first(kinds, "kind", short) or "unknown")
                per.setdefault((pid, dev), []).append((start, end, stream, kind, str(short)))
        offsets[path] = _clock_offset(path)
        if per and offsets[path] is None:
            unclocked.append(path)
        for (pid, dev), rows in sorted(per.items()):
            found.append((path, pid, dev, rows))
    several = {p for p in paths if sum(1 for f in found if f[0] == p) > 1}
    ranks = [
        OracleRank(
            f"{p} [pid {pid}, device {dev}]" if p in several else str(p),
            p,
            pid,
            dev,
            0 if unclocked else int(offsets[p] or 0),
            rows,
        )  # fmt: skip
        for p, pid, dev, rows in found
    ]
    return ranks, unclocked


def _rank_groups(rank: OracleRank) -> dict[tuple[int, str], list[tuple[int, int, str, int | None]]]:
    """(slot, kind) -> [(absolute start, absolute end, name, local window start)] in launch order;
    slots number the streams by their first kernel; the window starts at the end of the previous
    communication kernel of the rank (None for its first)."""
    ordered = sorted(rank.kernels, key=lambda k: (k[0], k[2]))
    slots: dict[int, int] = {}
    windows: dict[int, int | None] = {}
    latest: int | None = None
    for i, (start, end, stream, _, _) in enumerate(ordered):
        slots.setdefault(stream, len(slots))
        windows[i] = None if latest is None else min(latest, start)
        latest = end if latest is None else max(latest, end)
    groups: dict[tuple[int, str], list[tuple[int, int, str, int | None]]] = {}
    for i, (start, end, stream, kind, name) in enumerate(ordered):
        groups.setdefault((slots[stream], kind), []).append(
            (start + rank.offset, end + rank.offset, name, windows[i])
        )
    for rows in groups.values():
        rows.sort(key=lambda r: r[0])
    return groups


def collectives_matched(paths: list[Path]) -> dict[str, Any]:
    """nsysq fleet collectives by plain loops: the matched collectives (name, seq, first start from
    the earliest capture start, skew, last rank, wait, duration), per rank (collectives, last
    arrivals, caused and waited wait), the unmatched counts, and the blamed rank's phases."""
    ranks, unclocked = collective_ranks(paths)
    origin = 0 if unclocked else min((_clock_epoch(r.path) for r in ranks), default=0)
    groups = [_rank_groups(r) for r in ranks]
    keys = sorted({k for g in groups for k in g})
    rows, counts_differ, names_differ = [], 0, 0
    per = {
        r.label: {"collectives": 0, "last_arrivals": 0, "caused_wait_ns": 0, "waited_ns": 0} for r in ranks
    }
    late: dict[str, set[tuple[tuple[int, str], int]]] = {r.label: set() for r in ranks}
    positions: dict[tuple[int, str], list[int]] = {}
    for key in keys:
        counts = [len(g.get(key, [])) for g in groups]
        counts_differ += max(counts) - min(counts)
        positions[key] = []
        for k in range(min(counts)):
            at = [g[key][k] for g in groups]
            if len({a[2] for a in at}) > 1:
                names_differ += 1
                continue
            positions[key].append(k)
            arrivals = [a[0] for a in at]
            top = max(arrivals)
            last = arrivals.index(top)
            wait = sum(top - a for a in arrivals)
            for r, a in zip(ranks, arrivals, strict=True):
                per[r.label]["collectives"] += 1
                per[r.label]["waited_ns"] += top - a
            per[ranks[last].label]["last_arrivals"] += 1
            per[ranks[last].label]["caused_wait_ns"] += wait
            late[ranks[last].label].add((key, k))
            rows.append({"name": at[0][2], "seq": k, "ranks": len(ranks),
                         "first_start_ns": min(arrivals) - origin, "skew_ns": top - min(arrivals),
                         "last_path": ranks[last].label, "wait_ns": wait,
                         "duration_ns": at[last][1] - top, "kind": key[1], "stream": key[0]})  # fmt: skip
    rows.sort(key=lambda r: (r["first_start_ns"], r["stream"], r["kind"], r["seq"]))
    blamed = max(ranks, key=lambda r: (per[r.label]["caused_wait_ns"], -ranks.index(r)))
    phases = []
    if per[blamed.label]["caused_wait_ns"] > 0:
        phases = collective_phases(blamed, groups[ranks.index(blamed)], positions, late[blamed.label])
    named = blamed.label if per[blamed.label]["caused_wait_ns"] else None
    return {"rows": rows, "ranks": per, "counts_differ": counts_differ, "names_differ": names_differ,
            "unclocked": unclocked, "blamed": named, "phases": phases}  # fmt: skip


def _clock_epoch(path: Path) -> int:
    row = _rows(path, "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME")
    return int(row[0][0])


def collective_phases(
    rank: OracleRank,
    groups: dict[tuple[int, str], list[tuple[int, int, str, int | None]]],
    positions: dict[tuple[int, str], list[int]],
    late: set[tuple[tuple[int, str], int]],
) -> list[tuple[str, str, int, float]]:
    """(what, name, late_ns, typical_ns) of every phase that grew, in the order nsysq names them:
    each window's overlap with every NVTX range (trailing number as N) of the rank's process and
    every non-communication kernel of its process and device, by category."""
    windows = []  # (lo, hi, late, group)
    for g, key in enumerate(sorted(groups)):
        for k in positions.get(key, []):
            start, _, _, lo = groups[key][k]
            windows.append((lo, start - rank.offset, (key, k) in late, g))
    intervals: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for pid, dev, _, start, end, category, _ in _categorized(rank.path):
        if pid == rank.pid and dev == rank.device and category != "NCCL / communication":
            intervals.setdefault(("category", category), []).append((start, end))
    ranges, _, _ = nvtx_ranges(rank.path)
    for r in ranges:
        if (r.tid >> 24) & 0xFFFFFF == rank.pid:
            intervals.setdefault(("NVTX range", re.sub(r"\d+$", "N", r.name)), []).append(
                (r.start, max(r.start, r.end))
            )
    first = min([w[0] for w in windows if w[0] is not None] + [w[1] for w in windows]
                + [s for ivs in intervals.values() for s, _ in ivs])  # fmt: skip
    windows = [(first if lo is None else lo, hi, is_late, g) for lo, hi, is_late, g in windows]
    found = []
    for (what, name), ivs in intervals.items():
        per = [sum(max(0, min(hi, e) - max(lo, s)) for s, e in ivs) for lo, hi, _, _ in windows]
        ontime = [p for p, w in zip(per, windows, strict=True) if not w[2]]
        overall = statistics.median(ontime) if ontime else 0.0
        typical = 0.0
        late_ns = 0
        for p, (_, _, is_late, g) in zip(per, windows, strict=True):
            if is_late:
                late_ns += p
                mine = [q for q, w in zip(per, windows, strict=True) if w[3] == g and not w[2]]
                typical += float(statistics.median(mine)) if mine else float(overall)
        found.append((what, name, late_ns, typical))
    grew = [f for f in found if f[2] - f[3] > 0]
    best = max((f[2] - f[3] for f in found), default=0.0)
    near = [f for f in grew if f[2] - f[3] >= 0.95 * best]
    rest = [f for f in grew if f not in near]
    near.sort(key=lambda f: (f[3], f[0], f[1]))
    rest.sort(key=lambda f: (-(f[2] - f[3]), f[0], f[1]))
    return (near + rest)[:5]


# -- nsys stats reports (nsysq stats) -----------------------------------------------------------
# Each function recomputes one report's rows from the raw table with a plain Python sweep, as nsys's
# rules state them (docs/stats.md): ordinary median, sample standard deviation (0 for one), SQLite's
# round to 1 decimal (3 for MB), Time (%) of the report's own total, rows by total then name. None
# when the export lacks the table (nsys prints SKIPPED).
_ROUNDER = sqlite3.connect(":memory:")


def _sqlround(value: float, digits: int = 1) -> float:
    return float(_ROUNDER.execute("SELECT round(?, ?)", (value, digits)).fetchone()[0])


def _strings(path: Path) -> dict[int, str]:
    with connect(path) as con:
        return dict(con.execute("SELECT id, value FROM StringIds"))


def _label(strings: dict[int, str], name_id: int | None) -> str:
    if name_id is None:
        return "<null name id>"
    return strings.get(name_id, f"<unresolved id {name_id}>")


def _time_rows(groups: dict[tuple[Any, ...], list[int]]) -> list[tuple[Any, ...]]:
    grand = sum(sum(d) for d in groups.values())
    rows = []
    for labels, durs in groups.items():
        total, n = sum(durs), len(durs)
        spread = statistics.stdev(durs) if n > 1 else 0.0
        pct = 100.0 * total / grand if grand else 0.0
        med = float(statistics.median(durs))
        rows.append((_sqlround(pct), total, n, _sqlround(total / n), _sqlround(med), min(durs), max(durs),
                     _sqlround(spread), *labels))  # fmt: skip
    return sorted(rows, key=lambda r: (-r[1], *map(str, r[8:])))


def _grouped(path: Path, sql: str, key: Any) -> dict[tuple[Any, ...], list[int]] | None:
    try:
        rows = _rows_or_raise(path, sql)
    except LookupError:
        return None
    groups: dict[tuple[Any, ...], list[int]] = {}
    for row in rows:
        groups.setdefault(key(row), []).append(int(row[-1]))
    return groups


def _rows_or_raise(path: Path, sql: str) -> list[tuple[Any, ...]]:
    with connect(path) as con:
        try:
            return con.execute(sql).fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                raise LookupError(str(exc)) from None
            raise


def stats_kernels(path: Path, column: str = "demangledName") -> list[tuple[Any, ...]] | None:
    """cuda_gpu_kern_sum (column demangledName) or its :base form (shortName)."""
    strings = _strings(path)
    sql = f'SELECT {column}, "end" - start FROM CUPTI_ACTIVITY_KIND_KERNEL'
    groups = _grouped(path, sql, lambda r: (r[0],))
    if groups is None:
        return None
    named: dict[tuple[Any, ...], list[int]] = {}
    for (name_id,), durs in groups.items():
        named[(_label(strings, name_id),)] = durs  # one name id per string in StringIds
    return _time_rows(named)


def stats_kernels_in_window(path: Path, from_ms: float, to_ms: float) -> int:
    """Kernels overlapping [t0 + from, t0 + to)."""
    t0 = trace_t0(path)
    a, b = t0 + round(from_ms * 1e6), t0 + round(to_ms * 1e6)
    return int(
        scalar(path, f'SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE "end" > {a} AND start < {b}')
    )


def _calls(path: Path, sql: str, strip: bool) -> list[tuple[Any, ...]] | None:
    strings = _strings(path)
    groups = _grouped(path, sql, lambda r: (r[0],))
    if groups is None:
        return None
    out: list[tuple[Any, ...]] = []
    for row in _time_rows({(i,): d for (i,), d in groups.items()}):
        name = _label(strings, row[8])
        if strip and re.search(r"_v\d{4}$", name):
            name = name[:-6]
        out.append((*row[:8], name))
    return sorted(out, key=lambda r: (-r[1], r[8]))


def stats_api(path: Path) -> list[tuple[Any, ...]] | None:
    """cuda_api_sum: every runtime/driver call, by name id, the _vNNNN suffix dropped."""
    return _calls(path, 'SELECT nameId, "end" - start FROM CUPTI_ACTIVITY_KIND_RUNTIME', strip=True)


def stats_osrt(path: Path) -> list[tuple[Any, ...]] | None:
    """osrt_sum: OS runtime calls (eventClass 27) by name."""
    return _calls(path, 'SELECT nameId, "end" - start FROM OSRT_API WHERE eventClass = 27', strip=False)


_SHORT_COPY = {1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA", 8: "DtoD",
               9: "HtoH", 10: "PtoP"}  # fmt: skip


def _copy_label(path: Path, kind: int) -> str:
    if "ENUM_CUDA_MEMCPY_OPER" in tables(path):
        label = scalar(path, f"SELECT label FROM ENUM_CUDA_MEMCPY_OPER WHERE id = {int(kind)}", "Unknown")
        return f"[CUDA memcpy {label}]"
    if kind in (11, 12, 13):
        return f"[CUDA Unified Memory memcpy {_SHORT_COPY[kind - 10]}]"
    return f"[CUDA memcpy {_SHORT_COPY.get(kind, 'Unknown')}]"


def stats_memory(path: Path, *, size: bool) -> list[tuple[Any, ...]] | None:
    """cuda_gpu_mem_time_sum (size=False) or cuda_gpu_mem_size_sum: memcpys by copy kind plus
    memsets, devices pooled."""
    value = "bytes" if size else '"end" - start'
    present = tables(path)
    groups: dict[tuple[Any, ...], list[int]] = {}
    if "CUPTI_ACTIVITY_KIND_MEMCPY" in present:
        labels: dict[int, str] = {}
        for kind, v in _rows(path, f"SELECT copyKind, {value} FROM CUPTI_ACTIVITY_KIND_MEMCPY"):
            if kind not in labels:
                labels[kind] = _copy_label(path, kind)
            groups.setdefault((labels[kind],), []).append(int(v))
    if "CUPTI_ACTIVITY_KIND_MEMSET" in present:
        for (v,) in _rows(path, f"SELECT {value} FROM CUPTI_ACTIVITY_KIND_MEMSET"):
            groups.setdefault(("[CUDA memset]",), []).append(int(v))
    if not present & {"CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"}:
        return None
    if not size:
        return _time_rows(groups)
    rows = []
    for (label,), values in groups.items():
        n, total = len(values), sum(values)
        spread = statistics.stdev(values) if n > 1 else 0.0
        mb = [total, total / n, float(statistics.median(values)), min(values), max(values), spread]
        rounded = [_sqlround(v / 1e6, 3) for v in mb]
        rows.append((rounded[0], n, *rounded[1:], label, total))
    return [r[:-1] for r in sorted(rows, key=lambda r: (-r[-1], r[-2]))]


def _nvtx_version_colon(path: Path) -> bool:
    for table in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
        if table in tables(path):
            version = str(
                scalar(path, f"SELECT value FROM {table} WHERE name = 'EXPORT_PRODUCT_VERSION'", "")
            )
            match = re.match(r"(\d{4})\.(\d+)", version)
            if match:
                return (int(match.group(1)), int(match.group(2))) >= (2023, 1)
    return "ENUM_CUDA_MEMCPY_OPER" in tables(path)


def stats_nvtx(path: Path) -> list[tuple[Any, ...]] | None:
    """nvtx_sum: push/pop and start/end ranges by (domain:text, style); an unended range lasts to
    the last NVTX timestamp."""
    if "NVTX_EVENTS" not in tables(path):
        return None
    strings = _strings(path)
    events = _rows(path, 'SELECT start, "end", eventType, text, textId, domainId, globalTid FROM NVTX_EVENTS')
    last = max((max(s, e if e is not None else s) for s, e, *_ in events), default=0)
    domains: dict[Any, str] = {}  # (domain id, pid): a domain id is registered per process
    for _s, _e, kind, text, text_id, dom, tid in events:
        key = (dom, None if tid is None else (tid >> 24) & 0xFFFFFF)
        if kind == 75:
            name = text if text is not None else strings.get(text_id)
            if name is not None and (key not in domains or name < domains[key]):
                domains[key] = name
    colon = _nvtx_version_colon(path)
    groups: dict[tuple[Any, ...], list[int]] = {}
    for start, end, kind, text, text_id, dom, tid in events:
        if kind not in (59, 60, 70, 71):
            continue
        key = (dom, None if tid is None else (tid >> 24) & 0xFFFFFF)
        body = text if text is not None else strings.get(text_id, "")
        body = "" if body is None else body
        name = f"{domains[key]}:{body}" if key in domains else (f":{body}" if colon else body)
        style = "PushPop" if kind in (59, 70) else "StartEnd"
        groups.setdefault((style, name), []).append((end if end is not None else last) - start)
    return sorted(_time_rows(groups), key=lambda r: (-r[1], r[9], r[8]))


def iteration_kernels(
    path: Path, name: str | None = None
) -> list[tuple[str, list[tuple[int, int, int, int]]]]:
    """A plain iteration splitter: the kept NVTX ranges named ``name`` (default: every
    ``ProfilerStep#N``) on the thread that has most of them, in start order, each with the kernels
    (globalPid, correlationId, start, end) whose launching call (eventClass 0 or 1, same
    correlationId in the same process) ran on that thread inside the range (call start and end
    within the range's start and end). Raw rows and a sweep; no nsysq code."""
    ranges, _, _ = nvtx_ranges(path)
    step = re.compile(r"^ProfilerStep#\d+$")
    chosen = [r for r in ranges if (r.name == name if name is not None else step.match(r.name))]
    if not chosen:
        return []
    tid = statistics.mode(r.tid for r in chosen)
    mine = sorted((r for r in chosen if r.tid == tid), key=lambda r: (r.start, r.end))
    calls = nvtx_calls(path)
    out: list[tuple[str, list[tuple[int, int, int, int]]]] = [(r.name, []) for r in mine]
    for kernel in nvtx_kernels(path):
        for call_tid, start, end in calls.get((kernel[0], kernel[1]), []):
            if call_tid != tid:
                continue
            for i, r in enumerate(mine):
                if r.start <= start and end <= r.end:
                    out[i][1].append(kernel)
    return out


def kernels_per_period(path: Path, anchor: str) -> list[int]:
    """Kernels of the busiest stream (most kernel time) cut at each kernel named ``anchor`` (short
    name): how many kernels of that device and process start in each cut, in order; what lies
    before the first anchor is left out. A plain sweep over raw rows."""
    rows = _rows(
        path,
        'SELECT k.globalPid, k.deviceId, k.streamId, k.start, k."end", s.value FROM '
        "CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN StringIds s ON s.id = k.shortName",
    )
    busy: dict[tuple[int, int, int], int] = {}
    for pid, dev, stream, start, end, _ in rows:
        busy[(pid, dev, stream)] = busy.get((pid, dev, stream), 0) + max(end - start, 0)
    pid, dev, stream = max(busy, key=lambda k: busy[k])
    cuts = sorted(r[3] for r in rows if r[:3] == (pid, dev, stream) and r[5] == anchor)
    counts = [0] * len(cuts)
    for p, d, _, start, _, _ in rows:
        if (p, d) == (pid, dev) and cuts and start >= cuts[0]:
            counts[bisect.bisect_right(cuts, start) - 1] += 1
    return counts
