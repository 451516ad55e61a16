"""The trace reports: ``cuda_gpu_trace`` (one row per kernel, memcpy and memset, in start order)
and ``cuda_api_trace`` (one row per CUDA API call). Sizes in MB (10^6 bytes, 3 decimals),
throughput in MB/s from nsys's integer formula (bytes x (10^9 div duration))."""

from __future__ import annotations

from typing import Any

from nsysq.base.table import Table
from nsysq.stats.flavor import memory_label
from nsysq.stats.model import INT, MB, TEXT, TIME, Built, Column, Context
from nsysq.stats.numbers import sqlite_round
from nsysq.stats.summaries import time_cells

GPU_TRACE_COLUMNS: tuple[Column, ...] = (
    Column("start_ns", "Start ({unit})", TIME),
    Column("duration_ns", "Duration ({unit})", TIME),
    Column("corr_id", "CorrId", INT),
    Column("grid_x", "GrdX", INT),
    Column("grid_y", "GrdY", INT),
    Column("grid_z", "GrdZ", INT),
    Column("block_x", "BlkX", INT),
    Column("block_y", "BlkY", INT),
    Column("block_z", "BlkZ", INT),
    Column("registers_per_thread", "Reg/Trd", INT),
    Column("static_shared_mb", "StcSMem (MB)", MB),
    Column("dynamic_shared_mb", "DymSMem (MB)", MB),
    Column("bytes_mb", "Bytes (MB)", MB),
    Column("throughput_mbps", "Throughput (MBps)", MB),
    Column("src_kind", "SrcMemKd", TEXT),
    Column("dst_kind", "DstMemKd", TEXT),
    Column("device", "Device", TEXT),
    Column("context_id", "Ctx", INT),
    Column("stream_id", "Strm", INT),
    Column("name", "Name", TEXT),
)
API_TRACE_COLUMNS: tuple[Column, ...] = (
    Column("start_ns", "Start ({unit})", TIME),
    Column("duration_ns", "Duration ({unit})", TIME),
    Column("name", "Name", TEXT),
    Column("result", "Result", INT),
    Column("corr_id", "CorrID", INT),
    Column("pid", "Pid", INT),
    Column("tid", "Tid", INT),
)
# nsysq column -> the query's byte column it shows in MB
_MB_SOURCES = {
    "static_shared_mb": "static_shared_bytes",
    "dynamic_shared_mb": "dynamic_shared_bytes",
    "bytes_mb": "bytes",
    "throughput_mbps": "throughput_bps",
}


def gpu_trace(ctx: Context) -> Built:
    table = ctx.run("stats_gpu_trace")
    records = table.records()
    for r in records:
        if r["op"] != "kernel":
            r["name"] = memory_label(ctx.flavor, r["op"], r["copy_kind"], r["kind_label"])
    return GPU_TRACE_COLUMNS, _table("cuda_gpu_trace", GPU_TRACE_COLUMNS, records, ctx.unit, table.queries)


def api_trace(ctx: Context) -> Built:
    table = ctx.run("stats_api_trace")
    return API_TRACE_COLUMNS, _table(
        "cuda_api_trace", API_TRACE_COLUMNS, table.records(), ctx.unit, table.queries
    )


def _table(
    kind: str, columns: tuple[Column, ...], records: list[dict[str, Any]], unit: str, queries: tuple[str, ...]
) -> Table:
    data: list[list[Any]] = []
    for column in columns:
        if column.kind == MB:
            raw = [r[_MB_SOURCES[column.key]] for r in records]
            data.append(sqlite_round([None if v is None else float(v) / 1e6 for v in raw], 3))
        elif column.kind == TIME:
            data.append(time_cells([int(r[column.key]) for r in records], unit))
        else:
            data.append([r[column.key] for r in records])
    rows = [tuple(col[i] for col in data) for i in range(len(records))]
    return Table(
        kind=kind, columns=tuple(c.key_in(unit) for c in columns), rows=rows, queries=queries, unit=unit
    )
