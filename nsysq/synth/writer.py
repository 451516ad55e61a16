"""Write synthetic Nsight Systems SQLite exports with the real DDL of a chosen nsys version.

Rows are plain dicts keyed by real column names.  Name columns (KERNEL ``demangledName`` /
``shortName`` / ``mangledName``, RUNTIME ``nameId``, NVTX ``textId`` / ``jsonTextId``,
ThreadNames ``nameId``) may be given as ``str`` (interned into ``StringIds`` like nsys does) or
as ``int`` (written verbatim, so a test can point at an id that is not in ``StringIds``).
Missing ``NOT NULL`` columns are filled with realistic defaults; nullable columns not given are
NULL unless a realistic default is listed in ``_DEFAULTS``.  A key that is a column of the same
table in *another* nsys version is dropped silently (so one row dict serves several versions);
a key that is a column in no version raises ``ValueError``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nsysq.synth import schemas

Row = dict[str, Any]

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
GRAPH_TRACE = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
NVTX = "NVTX_EVENTS"

#: ``globalPid``/``globalTid`` encoding observed in every real export:
#: pid = (gid >> 24) & 0xFFFFFF, tid = gid & 0xFFFFFF; the top bits hold the VM id (1 << 48).
VM_BITS = 1 << 48


def global_pid(pid: int) -> int:
    """Serialized GlobalId of process ``pid`` (thread bits zero), as nsys writes it."""
    return VM_BITS | (pid << 24)


def global_tid(pid: int, tid: int) -> int:
    """Serialized GlobalId of thread ``tid`` in process ``pid``."""
    return VM_BITS | (pid << 24) | tid


DEFAULT_PID = 4242

_STRING_COLUMNS: dict[str, tuple[str, ...]] = {
    KERNEL: ("demangledName", "shortName", "mangledName"),
    RUNTIME: ("nameId",),
    NVTX: ("textId", "jsonTextId"),
    "ThreadNames": ("nameId",),
}

# Realistic defaults (values as seen in the real 2024.6-2025.5 exports).
_DEFAULTS: dict[str, Row] = {
    KERNEL: {
        "deviceId": 0,
        "contextId": 1,
        "greenContextId": 0,
        "streamId": 7,
        "globalPid": global_pid(DEFAULT_PID),
        "launchType": 1,
        "cacheConfig": 1,
        "registersPerThread": 32,
        "gridX": 132,
        "gridY": 1,
        "gridZ": 1,
        "blockX": 128,
        "blockY": 1,
        "blockZ": 1,
        "staticSharedMemory": 0,
        "dynamicSharedMemory": 0,
        "localMemoryPerThread": 0,
        "localMemoryTotal": 0,
        "sharedMemoryExecuted": 0,
        "sharedMemoryLimitConfig": 0,
        "clusterX": 0,
        "clusterY": 0,
        "clusterZ": 0,
        "clusterSchedulingPolicy": 1,
        "maxPotentialClusterSize": 0,
        "maxActiveClusters": 0,
    },
    MEMCPY: {
        "deviceId": 0,
        "contextId": 1,
        "greenContextId": 0,
        "streamId": 7,
        "globalPid": global_pid(DEFAULT_PID),
        "bytes": 4096,
        "copyKind": 1,
        "srcKind": 0,
        "dstKind": 2,
        "copyCount": 1,
    },
    MEMSET: {
        "deviceId": 0,
        "contextId": 1,
        "greenContextId": 0,
        "streamId": 7,
        "globalPid": global_pid(DEFAULT_PID),
        "value": 0,
        "bytes": 4096,
        "memKind": 2,
    },
    RUNTIME: {
        "eventClass": 0,
        "globalTid": global_tid(DEFAULT_PID, DEFAULT_PID),
        "returnValue": 0,
    },
    NVTX: {"eventType": 59, "globalTid": global_tid(DEFAULT_PID, DEFAULT_PID), "domainId": 0},
    GRAPH_TRACE: {
        "deviceId": 0,
        "contextId": 1,
        "greenContextId": 0,
        "streamId": 7,
        "globalPid": global_pid(DEFAULT_PID),
        "graphId": 1,
        "graphExecId": 1,
    },
    "ThreadNames": {"priority": 0, "globalTid": global_tid(DEFAULT_PID, DEFAULT_PID)},
    "TARGET_INFO_CUDA_DEVICE": {"gpuId": 0, "cudaId": 0, "pid": DEFAULT_PID},
    "ANALYSIS_DETAILS": {"globalVid": VM_BITS},
}

#: The real H200 row (2025.1 export), minus its uuid.  Used as the default GPU.
H200: Row = {
    "vmId": VM_BITS,
    "id": 0,
    "name": "NVIDIA H200",
    "busLocation": "0000:45:00.0",
    "isDiscrete": 1,
    "l2CacheSize": 62914560,
    "totalMemory": 150121545728,
    "memoryBandwidth": 4916736000000,
    "clockRate": 1980000000,
    "smCount": 132,
    "pwGpuId": 0,
    "uuid": "00000000-0000-0000-0000-0000000000h2",
    "luid": 0,
    "chipName": "GH100",
    "cuDevice": 0,
    "ctxswDevPath": "",
    "ctrlDevPath": "",
    "revision": 161,
    "nodeMask": 0,
    "constantMemory": 65536,
    "maxIPC": 0,
    "maxRegistersPerBlock": 65536,
    "maxShmemPerBlock": 49152,
    "maxShmemPerBlockOptin": 232448,
    "maxShmemPerSm": 233472,
    "maxRegistersPerSm": 65536,
    "threadsPerWarp": 32,
    "asyncEngines": 3,
    "maxWarpsPerSm": 64,
    "maxBlocksPerSm": 32,
    "maxThreadsPerBlock": 1024,
    "maxBlockDimX": 1024,
    "maxBlockDimY": 1024,
    "maxBlockDimZ": 64,
    "maxGridDimX": 2147483647,
    "maxGridDimY": 65535,
    "maxGridDimZ": 65535,
    "computeMajor": 9,
    "computeMinor": 0,
    "smMajor": 9,
    "smMinor": 0,
}

#: The real legacy row layout (2020.3 TARGET_INFO_CUDA_GPU) for a Tesla V100-PCIE-32GB.
V100_LEGACY: Row = {
    "vmId": VM_BITS,
    "name": "Tesla V100-PCIE-32GB",
    "pciBusId": "0000:05:00.0",
    "globalMemoryBandwidth": 0,
    "globalMemorySize": 32510,
    "constantMemorySize": 65536,
    "l2CacheSize": 6291456,
    "numThreadsPerWarp": 32,
    "coreClockRate": 1380000,
    "numMemcpyEngines": 7,
    "numMultiprocessors": 80,
    "maxIPC": 4,
    "maxWarpsPerMultiprocessor": 64,
    "maxBlocksPerMultiprocessor": 32,
    "maxRegistersPerBlock": 65536,
    "maxSharedMemoryPerBlock": 49152,
    "maxThreadsPerBlock": 1024,
    "maxBlockDimX": 1024,
    "maxBlockDimY": 1024,
    "maxBlockDimZ": 64,
    "maxGridDimX": 2147483647,
    "maxGridDimY": 65535,
    "maxGridDimZ": 65535,
    "computeCapabilityMajor": 7,
    "computeCapabilityMinor": 0,
    "deviceId": 0,
    "pid": DEFAULT_PID,
    "maxSharedMemoryPerMultiprocessor": 98304,
    "maxRegistersPerMultiprocessor": 65536,
}


@dataclass
class TraceSpec:
    """Everything one synthetic export contains.

    ``gpus`` are TARGET_INFO_GPU rows (TARGET_INFO_CUDA_GPU rows for 2020.3); ``strings`` are
    interned first, in order, so their ids are 1..n.  ``metadata`` overrides/extends the export
    metadata keys, ``capture_metadata`` the META_DATA_CAPTURE keys (2023.3+ schemas).
    ``lazy=True`` omits every table without rows (like ``nsys export`` by default);
    ``lazy=False`` creates every table this package knows for ``version``.
    """

    version: str = schemas.LATEST
    kernels: list[Row] = field(default_factory=list)
    memcpys: list[Row] = field(default_factory=list)
    memsets: list[Row] = field(default_factory=list)
    nvtx: list[Row] = field(default_factory=list)
    runtime: list[Row] = field(default_factory=list)
    graph_traces: list[Row] = field(default_factory=list)
    gpus: list[Row] = field(default_factory=list)
    cuda_devices: list[Row] = field(default_factory=list)
    threads: list[Row] = field(default_factory=list)
    strings: list[str] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)
    capture_metadata: dict[str, str] = field(default_factory=dict)
    analysis: Row | None = None
    lazy: bool = True


class StringTable:
    """Interns strings into consecutive ids starting at 1 (nsys numbering also starts at 1)."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def intern(self, value: str) -> int:
        got = self.ids.get(value)
        if got is None:
            got = self.ids[value] = len(self.ids) + 1
        return got

    def rows(self) -> list[tuple[int, str]]:
        return [(i, v) for v, i in self.ids.items()]


def export_metadata(version: str, overrides: Mapping[str, str], lazy: bool) -> list[tuple[str, str]]:
    """Export-metadata rows in the key style of ``version`` (synthetic host/user/paths)."""
    info = schemas.VERSION_INFO[version]
    style = info["metadata"]
    if style is None:
        return []
    product = str(info["product"])
    schema = str(info["schema"])
    major, minor, micro = schema.split(".")
    rows: dict[str, str] = {
        "EXPORT_PRODUCT_NAME": "NVIDIA Nsight Systems",
        "EXPORT_PRODUCT_VERSION": product,
        "EXPORT_PRODUCT_DATE": version,
        "EXPORT_SCHEMA_VERSION": schema,
        "EXPORT_SCHEMA_VERSION_MAJOR": major,
        "EXPORT_SCHEMA_VERSION_MINOR": minor,
        "EXPORT_SCHEMA_VERSION_MICRO": micro,
        "EXPORT_PLATFORM": "linux-desktop",
        "EXPORT_ARCH": "x64",
        "EXPORT_TIME_UTC": "2026-01-01T00:00:00",
        "EXPORT_HOST": "nsysq-synth",
        "EXPORT_USER": "nsysq",
    }
    lazy_s = "true" if lazy else "false"
    if version == "2022.2":
        # 2022.2 used un-prefixed keys and the misspelled OUTUPT.
        rows.update(
            {
                "EXPORT_INPUT_FILE": "synth.nsys-rep",
                "EXPORT_OUTUPT_FILE": "synth.sqlite",
                "EXPORT_OVERWRITE": "false",
                "EXPORT_LAZY": lazy_s,
            }
        )
    else:
        out_key = "OUTUPT" if version == "2023.1" else "OUTPUT"
        rows.update(
            {
                "EXPORT_PARAM_INPUT_FILE": "synth.nsys-rep",
                f"EXPORT_PARAM_{out_key}_FILE": "synth.sqlite",
                "EXPORT_PARAM_OVERWRITE": "true",
                "EXPORT_PARAM_LAZY": lazy_s,
                "EXPORT_PARAM_TIME_NORMALIZE": "false",
                "EXPORT_PARAM_TIME_SHIFT": "0",
            }
        )
        if style == "META_DATA_EXPORT":
            rows.update({"EXPORT_PARAM_TABLES_TO_EXPORT": "", "EXPORT_PARAM_TIMES_TO_EXPORT": ""})
        rows["EXPORT_CONFIG_TIME_SHIFT"] = "0"
    rows["EXPORT_TIME"] = "0.05 sec" if style == "META_DATA_EXPORT" else "0.05"
    rows.update(overrides)
    return list(rows.items())


def capture_metadata(overrides: Mapping[str, str]) -> list[tuple[str, str]]:
    """A small, realistic META_DATA_CAPTURE (2023.3+), no environment variables."""
    rows: list[tuple[str, str]] = [
        ("DEVICE_ID", "Local (CLI)"),
        ("CAPTURE_EVENT_TYPE", "NvtxEvents"),
        ("CAPTURE_EVENT_TYPE", "Cuda"),
        ("DEVICE_TYPE", "Unix"),
        ("PROCESS_0:COMMAND", "python"),
        ("PROCESS_0:COLLECT_NVTX_TRACE", "true"),
        ("PROCESS_0:COLLECT_CUDA_TRACE", "true"),
        ("PROCESS_0:CUDA_GRAPH_TRACE_OPTIONS:MODE", "Graph"),
        ("SHOW_BACKTRACE", "false"),
    ]
    keys = {k for k, _ in rows}
    rows = [(k, overrides.get(k, v)) for k, v in rows]
    rows += [(k, v) for k, v in overrides.items() if k not in keys]
    return rows


def create_tables(con: sqlite3.Connection, version: str, names: Iterable[str]) -> None:
    """Run the real DDL of ``version`` for ``names`` (in the version's table order)."""
    wanted = set(names)
    for table in schemas.tables(version):
        if table in wanted:
            con.execute(schemas.DDL[version][table])


def _prepare(
    version: str, table: str, rows: list[Row], strings: StringTable, auto: dict[str, int]
) -> tuple[list[str], list[tuple[Any, ...]]]:
    cols = schemas.columns(version, table)
    colset = set(cols)
    known = schemas.all_known_columns(table)
    not_null = schemas.not_null_columns(version, table)
    defaults = _DEFAULTS.get(table, {})
    str_cols = _STRING_COLUMNS.get(table, ())
    out: list[tuple[Any, ...]] = []
    for row in rows:
        unknown = set(row) - known
        if unknown:
            raise ValueError(f"{table}: no such column in any nsys version: {sorted(unknown)}")
        values: Row = {c: defaults[c] for c in cols if c in defaults}
        values.update({k: v for k, v in row.items() if k in colset})
        if table == KERNEL:
            if "gridId" in colset and "gridId" not in row:
                auto["gridId"] = auto.get("gridId", 0) + 1
                values["gridId"] = auto["gridId"]
        for c in str_cols:
            v = values.get(c)
            if isinstance(v, str):
                values[c] = strings.intern(v)
        missing = [c for c in cols if c in not_null and values.get(c) is None]
        if missing:
            raise ValueError(f"{table}: NOT NULL column(s) without a value: {missing}")
        out.append(tuple(values.get(c) for c in cols))
    return cols, out


def write_trace(path: str | Path, spec: TraceSpec) -> Path:
    """Write ``spec`` as an nsys-style SQLite export at ``path`` (overwritten) and return it."""
    version = schemas.check_version(spec.version)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-journal", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    data = _table_rows(version, spec)
    con = sqlite3.connect(path)
    try:
        con.execute("PRAGMA journal_mode=DELETE")
        names = set(schemas.tables(version)) if not spec.lazy else {t for t, (_, r) in data.items() if r}
        names = names | {"StringIds"}  # nsys always writes the string table
        create_tables(con, version, names)
        for table in schemas.tables(version):
            if table not in data or table not in names:
                continue
            cols, values = data[table]
            if not values:
                continue
            collist = ", ".join(f'"{c}"' for c in cols)
            marks = ", ".join("?" for _ in cols)
            con.executemany(f'INSERT INTO "{table}" ({collist}) VALUES ({marks})', values)
        con.commit()
    finally:
        con.close()
    return path


def _table_rows(version: str, spec: TraceSpec) -> dict[str, tuple[list[str], list[tuple[Any, ...]]]]:
    """The columns and rows ``spec`` puts in each table of an nsys ``version`` export: events, GPUs,
    metadata, enum tables and (last, once every string is interned) StringIds."""
    strings = StringTable()
    for s in spec.strings:
        strings.intern(s)
    auto: dict[str, int] = {}
    gpu_table = "TARGET_INFO_CUDA_GPU" if version == "2020.3" else "TARGET_INFO_GPU"
    data: dict[str, tuple[list[str], list[tuple[Any, ...]]]] = {}
    sources: list[tuple[str, list[Row]]] = [
        ("ThreadNames", spec.threads),
        (gpu_table, spec.gpus),
        ("TARGET_INFO_CUDA_DEVICE", spec.cuda_devices),
        (RUNTIME, spec.runtime),
        (KERNEL, spec.kernels),
        (MEMCPY, spec.memcpys),
        (MEMSET, spec.memsets),
        (NVTX, spec.nvtx),
        (GRAPH_TRACE, spec.graph_traces),
    ]
    available = set(schemas.tables(version))
    for table, rows in sources:
        if not rows:
            continue
        if table not in available:
            raise ValueError(f"table {table} does not exist in nsys {version} exports")
        data[table] = _prepare(version, table, rows, strings, auto)
    if spec.analysis is not None and "ANALYSIS_DETAILS" in available:
        data["ANALYSIS_DETAILS"] = _prepare(version, "ANALYSIS_DETAILS", [spec.analysis], strings, auto)
    meta_style = schemas.VERSION_INFO[version]["metadata"]
    if meta_style is not None:
        rows_meta = export_metadata(version, spec.metadata, spec.lazy)
        data[meta_style] = (["name", "value"], rows_meta)
        if meta_style == "META_DATA_EXPORT":
            data["META_DATA_CAPTURE"] = (["name", "value"], capture_metadata(spec.capture_metadata))
    for enum_table, enum_rows in schemas.ENUM_ROWS.get(version, {}).items():
        data[enum_table] = (["id", "name", "label"], list(enum_rows))
    data["StringIds"] = (["id", "value"], strings.rows())
    return data
