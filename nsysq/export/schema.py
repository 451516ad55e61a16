"""The canonical tables nsysq's queries read, and how each is made from whatever an export holds.

Every query in ``queries/`` names the real nsys tables (``CUPTI_ACTIVITY_KIND_KERNEL``, ``StringIds``,
...) and only the columns listed here. The engine exposes each one as a DuckDB view with exactly
these columns: a column the export lacks reads as NULL, a table the export lacks (nsys omits empty
tables) is an empty view, and enum tables absent before nsys 2023.1 come from built-in maps that
match NVIDIA's documented numbering. One mechanism, so queries never branch on the nsys version.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from nsysq.export.check import SourceSchema

if TYPE_CHECKING:
    import duckdb

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
GRAPH_TRACE = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
NVTX = "NVTX_EVENTS"
OSRT = "OSRT_API"
STRINGS = "StringIds"
COPY_KIND = "ENUM_CUDA_MEMCPY_OPER"
MEM_KIND = "ENUM_CUDA_MEM_KIND"
GPU = "TARGET_INFO_GPU"
LEGACY_GPU = "TARGET_INFO_CUDA_GPU"
CUDA_DEVICE = "TARGET_INFO_CUDA_DEVICE"

_I = "BIGINT"
_T = "VARCHAR"

CANONICAL: dict[str, tuple[tuple[str, str], ...]] = {
    KERNEL: tuple(
        (c, _I)
        for c in (
            "start",
            "end",
            "deviceId",
            "contextId",
            "streamId",
            "correlationId",
            "globalPid",
            "demangledName",
            "shortName",
            "mangledName",
            "launchType",
            "registersPerThread",
            "gridX",
            "gridY",
            "gridZ",
            "blockX",
            "blockY",
            "blockZ",
            "staticSharedMemory",
            "dynamicSharedMemory",
            "localMemoryPerThread",
            "localMemoryTotal",
            "sharedMemoryExecuted",
            "graphNodeId",
            "graphId",
            "clusterX",
            "clusterY",
            "clusterZ",
        )
    ),
    MEMCPY: tuple(
        (c, _I)
        for c in (
            "start",
            "end",
            "deviceId",
            "contextId",
            "streamId",
            "correlationId",
            "globalPid",
            "bytes",
            "copyKind",
            "srcKind",
            "dstKind",
            "srcDeviceId",
            "dstDeviceId",
            "graphNodeId",
            "copyCount",
        )
    ),
    MEMSET: tuple(
        (c, _I)
        for c in (
            "start",
            "end",
            "deviceId",
            "contextId",
            "streamId",
            "correlationId",
            "globalPid",
            "value",
            "bytes",
            "memKind",
            "graphNodeId",
        )
    ),
    # One row per execution of a CUDA graph traced whole (nsys --cuda-graph-trace=graph, the default):
    # its kernels are then absent from the kernel table.
    GRAPH_TRACE: tuple(
        (c, _I)
        for c in (
            "start",
            "end",
            "deviceId",
            "contextId",
            "streamId",
            "correlationId",
            "globalPid",
            "graphId",
            "graphExecId",
        )
    ),
    RUNTIME: tuple(
        (c, _I)
        for c in (
            "start",
            "end",
            "eventClass",
            "globalTid",
            "correlationId",
            "nameId",
            "returnValue",
        )
    ),
    # OS runtime calls (nsys --trace=osrt): eventClass 27 the calls, 31/32 the start/finish markers.
    OSRT: tuple((c, _I) for c in ("start", "end", "eventClass", "globalTid", "nameId", "returnValue")),
    NVTX: (
        ("start", _I),
        ("end", _I),
        ("eventType", _I),
        ("rangeId", _I),
        ("category", _I),
        ("text", _T),
        ("globalTid", _I),
        ("endGlobalTid", _I),
        ("textId", _I),
        ("domainId", _I),
    ),
    STRINGS: (("id", _I), ("value", _T)),
    # The GPUs and their per-SM limits: TARGET_INFO_GPU from nsys 2021.2, TARGET_INFO_CUDA_GPU
    # (one row per process and device) before, TARGET_INFO_CUDA_DEVICE (process ordinal -> GPU) from 2025.1.
    GPU: (
        ("id", _I),
        ("name", _T),
        ("busLocation", _T),
        ("smCount", _I),
        ("cuDevice", _I),
        ("uuid", _T),
        ("computeMajor", _I),
        ("computeMinor", _I),
        ("threadsPerWarp", _I),
        ("maxWarpsPerSm", _I),
        ("maxBlocksPerSm", _I),
        ("maxThreadsPerBlock", _I),
        ("maxRegistersPerSm", _I),
        ("maxRegistersPerBlock", _I),
        ("maxShmemPerSm", _I),
        ("maxShmemPerBlock", _I),
        ("maxShmemPerBlockOptin", _I),
    ),
    LEGACY_GPU: (
        ("deviceId", _I),
        ("pid", _I),
        ("name", _T),
        ("pciBusId", _T),
        ("numMultiprocessors", _I),
        ("computeCapabilityMajor", _I),
        ("computeCapabilityMinor", _I),
        ("numThreadsPerWarp", _I),
        ("maxWarpsPerMultiprocessor", _I),
        ("maxBlocksPerMultiprocessor", _I),
        ("maxThreadsPerBlock", _I),
        ("maxRegistersPerMultiprocessor", _I),
        ("maxRegistersPerBlock", _I),
        ("maxSharedMemoryPerMultiprocessor", _I),
        ("maxSharedMemoryPerBlock", _I),
    ),
    CUDA_DEVICE: (("gpuId", _I), ("cudaId", _I), ("pid", _I), ("numMultiprocessors", _I)),
    COPY_KIND: (("id", _I), ("name", _T), ("label", _T)),
    MEM_KIND: (("id", _I), ("name", _T), ("label", _T)),
}

# NVIDIA's documented values (SQLite Schema Event Values); identical in exports without ENUM tables.
BUILTIN_ENUMS: dict[str, tuple[tuple[int, str, str], ...]] = {
    COPY_KIND: (
        (0, "CUDA_MEMCPY_KIND_UNKNOWN", "Unknown"),
        (1, "CUDA_MEMCPY_KIND_HTOD", "Host-to-Device"),
        (2, "CUDA_MEMCPY_KIND_DTOH", "Device-to-Host"),
        (3, "CUDA_MEMCPY_KIND_HTOA", "Host-to-Array"),
        (4, "CUDA_MEMCPY_KIND_ATOH", "Array-to-Host"),
        (5, "CUDA_MEMCPY_KIND_ATOA", "Array-to-Array"),
        (6, "CUDA_MEMCPY_KIND_ATOD", "Array-to-Device"),
        (7, "CUDA_MEMCPY_KIND_DTOA", "Device-to-Array"),
        (8, "CUDA_MEMCPY_KIND_DTOD", "Device-to-Device"),
        (9, "CUDA_MEMCPY_KIND_HTOH", "Host-to-Host"),
        (10, "CUDA_MEMCPY_KIND_PTOP", "Peer-to-Peer"),
        (11, "CUDA_MEMCPY_KIND_UVM_HTOD", "Unified Host-to-Device"),
        (12, "CUDA_MEMCPY_KIND_UVM_DTOH", "Unified Device-to-Host"),
        (13, "CUDA_MEMCPY_KIND_UVM_DTOD", "Unified Device-to-Device"),
    ),
    MEM_KIND: (
        (0, "CUDA_MEMOPR_MEMORY_KIND_PAGEABLE", "Pageable"),
        (1, "CUDA_MEMOPR_MEMORY_KIND_PINNED", "Pinned"),
        (2, "CUDA_MEMOPR_MEMORY_KIND_DEVICE", "Device"),
        (3, "CUDA_MEMOPR_MEMORY_KIND_ARRAY", "Array"),
        (4, "CUDA_MEMOPR_MEMORY_KIND_MANAGED", "Managed"),
        (5, "CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC", "Device Static"),
        (6, "CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC", "Managed Static"),
        (7, "CUDA_MEMOPR_MEMORY_KIND_UNKNOWN", "Unknown"),
    ),
}

# Tables whose absence means "no such events were recorded", with what the user can do about it.
EVENT_TABLES: Mapping[str, str] = {
    KERNEL: "CUDA kernels",
    MEMCPY: "memory copies",
    MEMSET: "memsets",
    NVTX: "NVTX ranges",
    RUNTIME: "CUDA API calls",
}


def quote(identifier: str) -> str:
    """``identifier`` as a double-quoted SQL identifier."""
    return '"' + identifier.replace('"', '""') + '"'


def _literal(value: object) -> str:
    if isinstance(value, int):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


def view_sql(table: str, schema: SourceSchema, source: str = "src") -> str:
    """The SELECT that presents ``table`` with its canonical columns from the attached export."""
    cols = CANONICAL[table]
    present = set(schema.columns.get(table, ()))
    if table in present_tables(schema):
        items = [f"{quote(c)}" if c in present else f"CAST(NULL AS {t}) AS {quote(c)}" for c, t in cols]
        return f"SELECT {', '.join(items)} FROM {source}.{quote(table)}"
    if table in BUILTIN_ENUMS:
        rows = ", ".join("(" + ", ".join(_literal(v) for v in row) + ")" for row in BUILTIN_ENUMS[table])
        names = ", ".join(quote(c) for c, _ in cols)
        return f"SELECT * FROM (VALUES {rows}) AS t({names})"
    items = [f"CAST(NULL AS {t}) AS {quote(c)}" for c, t in cols]
    return f"SELECT {', '.join(items)} WHERE false"


def text_columns(table: str, source: SourceSchema) -> list[str]:
    """The text columns of ``table`` the export holds."""
    present = set(source.columns.get(table, ()))
    return [c for c, t in CANONICAL[table] if t == _T and c in present]


# Relations derived from the canonical views by a packaged query (view name -> query name): a view
# on a direct read, a table stored in the cached copy, so the copy answers without re-aggregating.
# In dependency order: the launch devices read the GPUs, the per-name statistics read both.
DERIVED: Mapping[str, str] = {
    "nsysq_gpus": "gpus",
    "nsysq_launch_devices": "launch_devices",
    "nsysq_kernel_name_stats": "kernel_name_stats",
}


def present_tables(schema: SourceSchema) -> set[str]:
    """Canonical tables the export really holds."""
    return {table for table in CANONICAL if schema.has(table)}


def create_views(con: duckdb.DuckDBPyConnection, schema: SourceSchema, source: str = "src") -> None:
    """Create one view per canonical table in the connection's main schema, and the view of the
    CUDA_VISIBLE_DEVICES values the export records."""
    for table in CANONICAL:
        con.execute(f"CREATE OR REPLACE VIEW main.{quote(table)} AS {view_sql(table, schema, source)}")
    con.execute(visible_devices_view(schema))


VISIBLE_DEVICES = "nsysq_cuda_visible_devices"


def visible_devices_view(schema: SourceSchema) -> str:
    """The view ``nsysq_cuda_visible_devices(source, list)``: each CUDA_VISIBLE_DEVICES value the
    export records (read with SQLite when the trace opens: the tables holding it are environment
    dumps, not always valid UTF-8, which DuckDB's scanner refuses), 1 = the launched processes'
    environment, 2 = the environment nsys ran in. queries/launch/devices.sql reads it."""
    rows = ", ".join(f"({source}, {_literal(value)})" for source, value in schema.visible_devices)
    create = f"CREATE OR REPLACE VIEW main.{VISIBLE_DEVICES} AS"
    if not rows:
        return f"{create} SELECT 0 AS source, '' AS list WHERE false"
    return f"{create} SELECT * FROM (VALUES {rows}) AS t(source, list)"
