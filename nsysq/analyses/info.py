"""Info: what an export holds — nsys version, GPUs, time span, row counts, tables — and what to distrust."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from nsysq import catalog
from nsysq.base.table import Table
from nsysq.export import schema
from nsysq.export.check import connect_readonly

if TYPE_CHECKING:
    from nsysq.session import Session

_MODE_KEY_SUFFIX = "CUDA_GRAPH_TRACE_OPTIONS:MODE"
# The packaged queries info reads (graph_launches is added by _warnings, which runs it).
_QUERIES = ("event_counts", "trace_span", "kernel_totals", "process_work")


def _rows(con: sqlite3.Connection, sql: str) -> list[tuple[Any, ...]]:
    try:
        return con.execute(sql).fetchall()
    except sqlite3.Error:
        return []


def _metadata(trace: Session, con: sqlite3.Connection) -> dict[str, str]:
    for table in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
        if trace.schema.has(table):
            return {str(k): str(v) for k, v in _rows(con, f"SELECT name, value FROM {table}")}
    return {}


# The per-SM limits info shows for each GPU (queries/gpus.sql names and explains each).
GPU_LIMITS = (
    "threads_per_warp",
    "max_warps_per_sm",
    "max_threads_per_sm",
    "max_blocks_per_sm",
    "max_registers_per_sm",
    "max_shared_memory_per_sm",
    "reserved_shared_memory_per_block",
)


def _gpus(trace: Session) -> tuple[list[dict[str, Any]], tuple[str, ...]]:
    """Every GPU the export describes (queries/gpus.sql), with its SM count and per-SM limits, and
    the labels of the queries read."""
    table = trace.run("gpus")
    gpus = []
    for r in table.records():
        major, minor = r["compute_major"], r["compute_minor"]
        gpu = {
            "id": r["gpu_id"],
            "name": r["name"],
            "sm_count": r["sms"],
            "compute_capability": None if major is None else f"{major}.{minor}",
            "cuda_device": r["cuda_device"],
            "bus_location": r["bus_location"],
            "source": r["source"],
            "pid": r["pid"],
        }
        gpu.update({key: r[key] for key in GPU_LIMITS})
        gpus.append(gpu)
    return gpus, table.queries


def _warnings(
    trace: Session,
    con: sqlite3.Connection,
    meta: dict[str, str],
    counts: dict[str, Any],
    totals: dict[str, Any],
    queries: list[str],
) -> list[str]:
    """The reasons not to trust the data whole; appends the label of any query it runs to ``queries``."""
    warns: list[str] = []
    graphs = _graph_warning(trace, con, queries)
    if graphs:
        warns.append(graphs)
    partial = {
        k: v
        for k, v in meta.items()
        if k in ("EXPORT_PARAM_TABLES_TO_EXPORT", "EXPORT_PARAM_TIMES_TO_EXPORT") and v.strip()
    }
    if partial:
        warns.append(
            "partial export ("
            + ", ".join(f"{k}={v}" for k, v in partial.items())
            + "): totals cover only what was exported; export again without those options."
        )
    if totals.get("unresolved_names"):
        warns.append(
            f"{totals['unresolved_names']} kernel launches have a name id missing from StringIds; "
            "they are counted under '<unresolved id N>' rows."
        )
    if not counts["kernels"]:
        warns.append("no CUDA kernels were recorded; profile with nsys profile --trace=cuda to capture them.")
    return warns


def _graph_warning(trace: Session, con: sqlite3.Connection, queries: list[str]) -> str | None:
    """Why CUDA graph work may be missing from the totals (graphs traced whole, or launched and not
    traced at all), or None; appends the label of any query it runs to ``queries``."""
    capture = (
        dict(_rows(con, "SELECT name, value FROM META_DATA_CAPTURE"))
        if trace.schema.has("META_DATA_CAPTURE")
        else {}
    )
    graph_mode = sorted({str(v) for k, v in capture.items() if str(k).endswith(_MODE_KEY_SUFFIX)})
    graph_rows = (
        _rows(con, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE")[0][0]
        if trace.schema.has("CUPTI_ACTIVITY_KIND_GRAPH_TRACE")
        else 0
    )
    launches = node_kernels = 0
    if not graph_rows and "Node" not in graph_mode:  # graphs traced whole, or a capture that does not say
        graph = trace.run("graph_launches")
        launches = int(graph.rows[0][0])
        queries.extend(graph.queries)
    if launches and "Graph" not in graph_mode:  # per node, or not traced at all?
        node = trace.run("graph_node_kernels")
        node_kernels = int(node.rows[0][0])
        queries.extend(node.queries)
    if graph_rows or (launches and "Graph" in graph_mode):
        seen = f"{graph_rows} graph executions" if graph_rows else f"{launches} cudaGraphLaunch calls"
        shown = (
            "census, lineup, timeline and gaps show each graph as a 'graph <id>' row "
            "(nsysq graphs lists them); "
            if graph_rows
            else ""
        )
        return (
            f"CUDA graphs were traced as whole graphs ({seen}): the kernels they ran are missing "
            f"from the kernel table; {shown}profile with --cuda-graph-trace=node to see them."
        )
    if launches and not node_kernels:
        return (
            f"CUDA graphs were launched ({launches} cudaGraphLaunch calls) but neither their executions "
            "nor their kernels are in the export: their GPU time is missing from every total; profile "
            "with nsys profile --cuda-graph-trace=node to see them."
        )
    return None


def _processes(trace: Session, con: sqlite3.Connection) -> list[dict[str, Any]]:
    """The processes with GPU work (queries/process_work.sql), named from PROCESSES where the export
    has it (nsys 2022.2+; None otherwise)."""
    names: dict[int, str] = {}
    if trace.schema.has("PROCESSES"):
        names = {
            int(pid): str(name)
            for pid, name in _rows(con, "SELECT pid, name FROM PROCESSES")
            if pid is not None
        }
    out = []
    for record in trace.run("process_work").records():
        pid = None if record["pid"] is None else int(record["pid"])
        out.append(
            {
                "pid": pid,
                "name": names.get(pid) if pid is not None else None,
                **{k: v for k, v in record.items() if k != "pid"},
            }
        )
    return out


def _is_display_adapter(gpu: dict[str, Any]) -> bool:
    """Non-CUDA adapters nsys lists on Windows (Intel UHD, Microsoft Basic Render): no SMs, no bus."""
    return gpu.get("sm_count") == 0 and not gpu.get("bus_location")


def nsys_version(trace: Session) -> str:
    """The nsys version that wrote the export (identity's, without reading the GPUs)."""
    con = connect_readonly(trace.path)
    try:
        return _metadata(trace, con).get("EXPORT_PRODUCT_VERSION", "unknown")
    finally:
        con.close()


def identity(trace: Session) -> dict[str, Any]:
    """The nsys version and the CUDA GPUs' names, read cheaply from the small metadata tables.

    The GPUs come through the trace's reader (queries/gpus.sql). The version is read from the file
    itself: META_DATA_EXPORT (EXPORT_META_DATA before nsys 2023.3, neither before 2022) is not a
    canonical table (nsysq.export.schema), so a cached copy does not hold it and no packaged query
    can read it."""
    con = connect_readonly(trace.path)
    try:
        meta = _metadata(trace, con)
    finally:
        con.close()
    gpus, _ = _gpus(trace)
    return {
        "nsys_version": meta.get("EXPORT_PRODUCT_VERSION", "unknown"),
        "gpus": [str(g["name"]) for g in gpus if not _is_display_adapter(g)],
    }


def info(trace: Session) -> dict[str, Any]:
    """Everything ``nsysq info`` prints, as a JSON-ready dict with stable keys."""
    con = connect_readonly(trace.path)
    try:
        meta = _metadata(trace, con)
        gpus, gpu_queries = _gpus(trace)
        counts = trace.run("event_counts").records()[0]
        totals = trace.kernel_totals
        queries = [*gpu_queries, *(catalog.get(name).label for name in _QUERIES)]  # span, totals: cached
        warnings = _warnings(trace, con, meta, counts, totals, queries)
        processes = _processes(trace, con)
    finally:
        con.close()
    span = trace.span
    present = set(trace.schema.tables)
    return {
        "path": str(trace.path),
        "size_bytes": trace.path.stat().st_size,
        "exported_from": None if trace.exported is None else trace.exported.to_dict(),
        "nsys_version": meta.get("EXPORT_PRODUCT_VERSION", "unknown (no export metadata)"),
        "schema_version": meta.get("EXPORT_SCHEMA_VERSION", "unknown"),
        "platform": meta.get("EXPORT_PLATFORM"),
        "gpus": [g for g in gpus if not _is_display_adapter(g)],
        "other_adapters": [g["name"] for g in gpus if _is_display_adapter(g)],
        "t0_ns": span["t0"],
        "t_end_ns": span["t_end"],
        "span_ns": span["span_ns"],
        "counts": {k: int(v) for k, v in counts.items()},
        "kernel_ns": int(totals["kernel_ns"]),
        "unresolved_kernel_names": int(totals["unresolved_names"]),
        "zero_length_kernels": int(totals["zero_length"]),
        "processes": processes,
        "event_tables": {t: (t in present) for t in schema.EVENT_TABLES},
        "tables": sorted(present),
        "warnings": warnings,
        "cache": trace.cache_status(),
        "reader": trace.kernel_reader,
        "queries": queries,
    }


def _process_text(proc: dict[str, Any]) -> str:
    """``python3: 120 kernels (3.2 ms), 4 memcpys, 0 memsets on device 0,1``."""
    name = proc["name"] or "(no name in the export)"
    text = f"{name}: {proc['kernels']:,} kernels ({proc['kernel_ns'] / 1e6:,.3f} ms)"
    if proc["graph_executions"]:
        text += f", {proc['graph_executions']:,} whole-graph executions ({proc['graph_ns'] / 1e6:,.3f} ms)"
    return text + f", {proc['memcpys']:,} memcpys, {proc['memsets']:,} memsets on device {proc['devices']}"


def _alike_gpus(gpus: list[dict[str, Any]]) -> list[tuple[list[str], tuple[str, str, str]]]:
    """The GPUs grouped by what info prints of them, in order: seven identical GPUs are one entry
    (``7× NVIDIA GeForce RTX 3090``), their ids listed."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for gpu in gpus:
        about = f"{gpu['name']} ({gpu['sm_count']} SMs, compute {gpu['compute_capability']})"
        groups.setdefault((about, *_limits_text(gpu)), []).append(str(gpu["id"]))
    return [(ids, text) for text, ids in groups.items()]


def _id_list(ids: list[str]) -> str:
    """``0-6`` for consecutive ids, else ``0, 2, 5``."""
    numbers = [int(i) for i in ids] if all(i.isdigit() for i in ids) else []
    if len(numbers) > 2 and numbers == list(range(numbers[0], numbers[0] + len(numbers))):
        return f"{numbers[0]}-{numbers[-1]}"
    return ", ".join(ids)


def info_table(data: dict[str, Any]) -> Table:
    """Flatten ``info()`` into (section, key, value) rows for table, CSV and markdown output."""
    rows: list[tuple[Any, ...]] = []
    for key in ("path", "size_bytes", "nsys_version", "schema_version", "platform"):
        rows.append(("file", key, data[key]))
    source = data.get("exported_from")
    if source:
        how = "export reused" if source["reused"] else f"exported in {source['export_seconds']:.1f} s"
        rows.append(("file", "exported_from", f"{how} by nsys {source['nsys_version']}: {source['report']}"))
    for ids, (about, per_sm, shared) in _alike_gpus(data["gpus"]):
        count = f"{len(ids)}× " if len(ids) > 1 else ""
        key = f"gpu {ids[0]}" if len(ids) == 1 else f"gpus {_id_list(ids)}"
        rows.append(("gpu", key, count + about))
        rows.append(("gpu", f"{key} per SM", per_sm))
        rows.append(("gpu", f"{key} shared memory", shared))
    for name in data.get("other_adapters", []):
        rows.append(("gpu", "other adapter", f"{name} (not a CUDA device)"))
    for key in ("t0_ns", "t_end_ns", "span_ns"):
        rows.append(("time", key, data[key]))
    for key, value in data["counts"].items():
        rows.append(("counts", key, value))
    for key in ("kernel_ns", "unresolved_kernel_names", "zero_length_kernels"):
        rows.append(("counts", key, data[key]))
    for proc in data.get("processes", []):
        rows.append(("process", f"pid {proc['pid']}", _process_text(proc)))
    for table, present in data["event_tables"].items():
        rows.append(("tables", table, "present" if present else "absent (no such events)"))
    rows.append(("tables", "all tables", len(data["tables"])))
    for extra in ("cache", "reader"):
        if extra in data:
            rows.append(("cache", extra, data[extra]))
    for warning in data["warnings"]:
        rows.append(("warning", "", warning))
    return Table(
        kind="info",
        columns=("section", "key", "value"),
        rows=rows,
        queries=tuple(data["queries"]),
    )


def _limits_text(gpu: dict[str, Any]) -> tuple[str, str]:
    """The per-SM limits of one GPU in two short lines ("?" for a limit the export lacks)."""

    def val(key: str, unit: str = "") -> str:
        value = gpu.get(key)
        return "?" if value is None else f"{value:,}{unit}"

    per_sm = (
        f"{val('max_threads_per_sm')} threads ({val('max_warps_per_sm')} warps), "
        f"{val('max_blocks_per_sm')} blocks, {val('max_registers_per_sm')} registers"
    )
    shared = (
        f"{val('max_shared_memory_per_sm', ' B')} per SM, {val('reserved_shared_memory_per_block', ' B')} "
        f"reserved per block ({gpu.get('source')})"
    )
    return per_sm, shared
