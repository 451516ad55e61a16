"""Export a trace (or a window of it) as a Chrome Trace Event Format file for Perfetto and chrome://tracing.

Layout of the file (the JSON Object Format of the Trace Event Format):

* one process per GPU (pid ``GPU_PID_BASE + deviceId``, named ``GPU <id>``) with one thread (track)
  per stream (tid = streamId): kernels, memcpys, memsets and CUDA graph executions as complete
  (``X``) events;
* the host processes and threads of the export (pid and tid from ``globalTid``) with their CUDA API
  calls as ``X`` events; NVTX ranges on a companion track per thread (tid + ``NVTX_TID_OFFSET``,
  named ``thread <tid> NVTX``): push/pop ranges as ``X``, start/end ranges as async ``b``/``e``
  pairs (they may cross threads and need not nest), marks as instant ``i`` events;
* a flow arrow (``s`` at the launch call, ``f`` with ``bp: "e"`` at the GPU op) for each GPU op
  whose launching call (same correlationId, same process) is in the file.

A scoped export (the scope mechanism of :mod:`nsysq.session.scope`: ``--device``, ``--stream``, ``--pid``,
``--nvtx``, ``--nvtx-like``) writes the GPU ops in scope. On the CPU side, ``--pid`` alone keeps
every CUDA API call and NVTX event of the process; a scope that picks ops within a process (device,
stream, NVTX ranges) keeps the calls that launched an op in scope and the NVTX ranges holding such a
call on its thread (:func:`launches_only`), so every call written has its arrow.

Timestamps are microseconds from the trace start (``Session.t0``) with three decimals, so exact to the
ns; ``args`` holds ``start_ns``, ``end_ns`` (from the trace start) and ``duration_ns`` exactly. An
NVTX event that began before the trace start is drawn from it (``args.before_trace_start_ns``):
viewers drop negative timestamps.
"""

from __future__ import annotations

import functools
import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from nsysq.base.errors import UsageError
from nsysq.base.output_path import check_output_path
from nsysq.base.table import Table
from nsysq.base.units import ms_to_ns

if TYPE_CHECKING:
    from nsysq.session import Session
    from nsysq.session.scope import Scope

__all__ = [
    "EVENT_GUARD",
    "GPU_PID_BASE",
    "NVTX_TID_OFFSET",
    "ExportRows",
    "collect",
    "events",
    "launches_only",
    "summary",
    "write",
]

EVENT_GUARD = 1_000_000
"""Above this many trace events the export warns and suggests a window (viewers slow down or fail)."""
GPU_PID_BASE = 1_000_000_000
"""GPU processes get pid GPU_PID_BASE + deviceId: above any host pid (Linux pids stay below 2**22)."""
NVTX_TID_OFFSET = 1 << 24
"""A thread's NVTX track has tid = thread tid + NVTX_TID_OFFSET (thread ids use 24 bits)."""
LANE_TID_STEP = 1 << 26
"""Complete events of one track that overlap without nesting (kernels overlapping on one stream,
push/pop ranges closed out of order) go to extra tracks: lane k of a track has its tid + k *
LANE_TID_STEP and the track's name with " (overlap k)". On one track a viewer drops them (Perfetto
counts ``slice_drop_overlapping_complete_event``)."""
SUFFIXES = (".json", ".json.gz")
LAUNCHES_TABLE = "nsysq_export_launches"
_US = 1000.0
_PID_MASK = 0xFFFFFF
_OP_CATEGORY = {"kernel": "kernel", "memcpy": "memcpy", "memset": "memset", "graph": "graph"}
_OP_ARGS = (
    "device_id",
    "stream_id",
    "correlation_id",
    "demangled_name",
    "grid",
    "block",
    "registers_per_thread",
    "shared_bytes",
    "bytes",
    "copy_kind",
    "graph_exec_id",
)


@dataclass(frozen=True)
class ExportRows:
    """What one export writes: the rows of the three export queries and the window (ns from t0)."""

    t0: int
    from_ns: int | None
    to_ns: int | None
    ops: Table
    calls: Table
    nvtx: Table
    scope: str | None = None
    launches_only: bool = False

    @property
    def queries(self) -> tuple[str, ...]:
        return self.ops.queries + self.calls.queries + self.nvtx.queries

    @functools.cached_property
    def layout(self) -> Layout:
        return _layout(self)


@dataclass(frozen=True)
class Layout:
    """The rows as the file draws them: each GPU op, call and NVTX event with its ``pid`` and
    ``tid`` (lanes applied), and the extra lane tracks to name: (pid, tid, name)."""

    ops: list[dict[str, Any]]
    calls: list[dict[str, Any]]
    nvtx: list[dict[str, Any]]
    lane_tracks: list[tuple[int, int, str]]


def check_output(path: Path) -> None:
    """Raise UsageError unless ``path`` ends in .json or .json.gz and its folder exists."""
    check_output_path(path, SUFFIXES)


def collect(trace: Session, *, start_ms: float | None = None, end_ms: float | None = None) -> ExportRows:
    """Read the GPU ops, CUDA API calls and NVTX events overlapping [start_ms, end_ms) (ms from the
    trace start; None = open), in the trace's scope: see :func:`launches_only` for what a scoped
    export keeps on the CPU side."""
    if start_ms is not None and end_ms is not None and end_ms <= start_ms:
        raise UsageError(f"--to ({end_ms} ms) must be after --from ({start_ms} ms).")
    from_ns = None if start_ms is None else ms_to_ns(start_ms)
    to_ns = None if end_ms is None else ms_to_ns(end_ms)
    t0 = trace.t0
    window = {"t0": t0, "from_ns": from_ns, "to_ns": to_ns}
    calls, nvtx = "export_api_calls", "export_nvtx"
    if launches_only(trace.scope):
        trace.materialize("export_launches", LAUNCHES_TABLE, rebuild=True)
        calls, nvtx = "export_launch_calls", "export_launch_nvtx"
    return ExportRows(
        t0=t0,
        from_ns=from_ns,
        to_ns=to_ns,
        ops=trace.run("export_gpu_ops", **window),
        calls=trace.run(calls, **window),
        nvtx=trace.run(nvtx, **window),
        scope=trace.scope.describe() or None,
        launches_only=launches_only(trace.scope),
    )


def launches_only(scope: Scope) -> bool:
    """Whether an export in ``scope`` keeps only the launching calls on the CPU side.

    A scope that picks GPU ops within a process (``--device``, ``--stream``, ``--nvtx``,
    ``--nvtx-like``) writes the CUDA API calls that launched an op in scope and the NVTX ranges that
    hold such a call on its thread (queries/export/launch_calls.sql, export_launch_nvtx.sql): the
    other calls and ranges of the process belong to no device or stream, and would bury the scope
    in the whole run. ``--pid`` alone keeps every call and NVTX event of the process."""
    return any(v is not None for v in (scope.device, scope.stream, scope.ops))


def _drawn(record: dict[str, Any], t0: int) -> tuple[int, int]:
    """(start, end) in ns as the file draws the event (see :func:`_timing`)."""
    start = int(record["start_ns"])
    end = int(record["end_ns"]) if record["end_ns"] is not None else start
    return max(start, t0), max(end, start, t0)


def lanes(spans: list[tuple[Any, int, int]]) -> list[int]:
    """For (track, start, end) spans, the lane of each: on every (track, lane) the spans nest or
    follow one another. Greedy in start order (longer first at one start): a span goes to the first
    lane whose innermost open span holds it or has ended; lane 0 holds everything that nests."""
    order = sorted(range(len(spans)), key=lambda i: (spans[i][1], -spans[i][2]))
    open_ends: dict[Any, list[list[int]]] = {}
    out = [0] * len(spans)
    for i in order:
        track, start, end = spans[i]
        stacks = open_ends.setdefault(track, [])
        for lane, stack in enumerate(stacks):
            while stack and stack[-1] <= start:
                stack.pop()
            if not stack or end <= stack[-1]:
                stack.append(end)
                out[i] = lane
                break
        else:
            stacks.append([end])
            out[i] = len(stacks) - 1
    return out


def _placed(
    records: list[dict[str, Any]], ids: list[tuple[int, int]], lane_of: list[int], name: Any
) -> tuple[list[dict[str, Any]], set[tuple[int, int, int, str]]]:
    """``records`` with their ``pid`` and ``tid`` (lane applied), and the lane tracks used."""
    placed, extra = [], set()
    for record, (pid, tid), lane in zip(records, ids, lane_of, strict=True):
        placed.append({**record, "pid": pid, "tid": tid + lane * LANE_TID_STEP})
        if lane:
            extra.add((pid, tid + lane * LANE_TID_STEP, lane, name(record, tid)))
    return placed, extra


def _lanes_of(records: list[dict[str, Any]], ids: list[tuple[int, int]], t0: int, slice_: Any) -> list[int]:
    """The lane of each record on its track (0 for the records ``slice_`` says are not drawn as
    complete events)."""
    picked = [i for i, r in enumerate(records) if slice_(r)]
    lane_of = [0] * len(records)
    spans = [(ids[i], *_drawn(records[i], t0)) for i in picked]
    for i, lane in zip(picked, lanes(spans), strict=True):
        lane_of[i] = lane
    return lane_of


def _every(record: dict[str, Any]) -> bool:
    return True


def _push_pop(record: dict[str, Any]) -> bool:
    return bool(record["kind"] == "push_pop" and record["end_ns"] is not None)


def _layout(rows: ExportRows) -> Layout:
    ops, calls, nvtx = rows.ops.records(), rows.calls.records(), rows.nvtx.records()
    op_ids = [(gpu_pid(o["device_id"]), int(o["stream_id"] or 0)) for o in ops]
    call_ids = [host_ids(c["thread"] or 0) for c in calls]
    nvtx_ids = [(p, t + NVTX_TID_OFFSET) for p, t in (host_ids(n["thread"] or 0) for n in nvtx)]
    placed_ops, extra_ops = _placed(
        ops, op_ids, _lanes_of(ops, op_ids, rows.t0, _every), lambda r, tid: f"stream {r['stream_id']}"
    )
    placed_calls, extra_calls = _placed(
        calls, call_ids, _lanes_of(calls, call_ids, rows.t0, _every), lambda r, tid: f"thread {tid}"
    )
    placed_nvtx, extra_nvtx = _placed(
        nvtx,
        nvtx_ids,
        _lanes_of(nvtx, nvtx_ids, rows.t0, _push_pop),
        lambda r, tid: f"thread {tid - NVTX_TID_OFFSET} NVTX",
    )
    tracks = [
        (pid, tid, f"{name} (overlap {lane})")
        for pid, tid, lane, name in sorted(extra_ops | extra_calls | extra_nvtx)
    ]
    return Layout(placed_ops, placed_calls, placed_nvtx, tracks)


def _launch_index(
    calls: list[dict[str, Any]],
) -> tuple[dict[tuple[Any, Any], dict[str, Any]], dict[Any, dict[str, Any]]]:
    """The first call per (process, correlationId), and per correlationId alone (for ops whose
    process is unknown)."""
    by_process: dict[tuple[Any, Any], dict[str, Any]] = {}
    by_corr: dict[Any, dict[str, Any]] = {}
    for call in calls:
        corr = call["correlation_id"]
        if corr is None:
            continue
        by_process.setdefault((call["process"], corr), call)
        by_corr.setdefault(corr, call)
    return by_process, by_corr


def launch_pairs(rows: ExportRows) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(call, op) for each GPU op whose launching call is among the exported calls (records of
    ``rows.layout``: with their track's ``pid`` and ``tid``)."""
    by_process, by_corr = _launch_index(rows.layout.calls)
    pairs = []
    for op in rows.layout.ops:
        corr = op["correlation_id"]
        if corr is None:
            continue
        call = by_corr.get(corr) if op["process"] is None else by_process.get((op["process"], corr))
        if call is not None:
            pairs.append((call, op))
    return pairs


def _us(ns: int) -> float:
    return round(ns / _US, 3)


def _timing(start: int, end: int, t0: int) -> dict[str, Any]:
    """``ts``/``dur`` in µs and the exact ns (from the trace start) in ``args``.

    An event that began before the trace start (an NVTX range or mark opened before the first CUDA
    call, e.g. around model set-up) is drawn from the trace start: viewers drop events with a
    negative timestamp (Perfetto counts them as ``trace_sorter_negative_timestamp_dropped``).
    ``args`` keeps its exact start and duration, and ``before_trace_start_ns`` says how much of it
    is not drawn."""
    shown_start, shown_end = max(start, t0), max(end, start, t0)
    args = {"start_ns": start - t0, "end_ns": end - t0, "duration_ns": end - start}
    if start < t0:
        args["before_trace_start_ns"] = t0 - start
    return {"ts": _us(shown_start - t0), "dur": _us(shown_end - shown_start), "args": args}


def host_ids(thread: int) -> tuple[int, int]:
    """(pid, tid) of an nsys globalTid."""
    return (int(thread) >> 24) & _PID_MASK, int(thread) & _PID_MASK


def gpu_pid(device_id: Any) -> int:
    return GPU_PID_BASE + int(device_id or 0)


def _meta(name: str, pid: int, tid: int, value: Any) -> dict[str, Any]:
    key = "name" if name.endswith("_name") else "sort_index"
    return {"name": name, "ph": "M", "pid": pid, "tid": tid, "args": {key: value}}


def _metadata(rows: ExportRows) -> Iterator[dict[str, Any]]:
    """Process and thread names (and sort order: GPUs first) for every track that holds events."""
    streams = sorted({(r[0], r[1]) for r in _op_tracks(rows.ops)}, key=lambda t: (t[0] or 0, t[1] or 0))
    for device in sorted({d for d, _ in streams}, key=lambda d: d or 0):
        pid = gpu_pid(device)
        yield _meta("process_name", pid, 0, f"GPU {device}")
        yield _meta("process_sort_index", pid, 0, int(device or 0))
    for device, stream in streams:
        yield _meta("thread_name", gpu_pid(device), int(stream or 0), f"stream {stream}")
        yield _meta("thread_sort_index", gpu_pid(device), int(stream or 0), int(stream or 0))
    threads = {t for t in rows.calls.column("thread") if t is not None}
    nvtx_threads = {t for t in rows.nvtx.column("thread") if t is not None}
    for pid in sorted({host_ids(t)[0] for t in threads | nvtx_threads}):
        yield _meta("process_name", pid, 0, f"process {pid}")
        yield _meta("process_sort_index", pid, 0, 1000 + pid)
    for thread in sorted(threads):
        pid, tid = host_ids(thread)
        yield _meta("thread_name", pid, tid, f"thread {tid}")
    for thread in sorted(nvtx_threads):
        pid, tid = host_ids(thread)
        yield _meta("thread_name", pid, tid + NVTX_TID_OFFSET, f"thread {tid} NVTX")
    for pid, tid, name in rows.layout.lane_tracks:
        yield _meta("thread_name", pid, tid, name)


def _op_tracks(ops: Table) -> Iterator[tuple[Any, Any]]:
    i, j = ops.columns.index("device_id"), ops.columns.index("stream_id")
    for row in ops.rows:
        yield row[i], row[j]


def _op_events(rows: ExportRows) -> Iterator[dict[str, Any]]:
    for op in rows.layout.ops:
        event = {
            "name": op["name"],
            "cat": _OP_CATEGORY[op["kind"]],
            "ph": "X",
            "pid": op["pid"],
            "tid": op["tid"],
            **_timing(op["start_ns"], op["end_ns"], rows.t0),
        }
        event["args"].update({k: op[k] for k in _OP_ARGS if op[k] is not None})
        yield event


def _call_events(rows: ExportRows) -> Iterator[dict[str, Any]]:
    for call in rows.layout.calls:
        event = {"name": call["name"], "cat": "cuda_api", "ph": "X", "pid": call["pid"], "tid": call["tid"]}
        event.update(_timing(call["start_ns"], call["end_ns"], rows.t0))
        for key in ("correlation_id", "event_class", "return_value"):
            if call[key] is not None:
                event["args"][key] = call[key]
        yield event


def _nvtx_events(rows: ExportRows) -> Iterator[dict[str, Any]]:
    for n, mark in enumerate(rows.layout.nvtx):
        if mark["end_ns"] is None:
            continue  # never closed: counted in the summary's footer
        base = {"name": mark["name"], "cat": "nvtx", "pid": mark["pid"], "tid": mark["tid"]}
        timing = _timing(mark["start_ns"], mark["end_ns"], rows.t0)
        if mark["kind"] == "push_pop":
            yield {**base, "ph": "X", **timing}
        elif mark["kind"] == "mark":
            yield {**base, "ph": "i", "s": "t", "ts": timing["ts"], "args": timing["args"]}
        else:
            yield {**base, "ph": "b", "id": n, "ts": timing["ts"], "args": timing["args"]}
            end = max(int(mark["end_ns"]), int(mark["start_ns"]), rows.t0)
            yield {**base, "ph": "e", "id": n, "ts": _us(end - rows.t0), "args": {}}


def _flow_events(rows: ExportRows) -> Iterator[dict[str, Any]]:
    for n, (call, op) in enumerate(launch_pairs(rows)):
        common = {"name": "launch", "cat": "launch", "id": n}
        yield {
            **common,
            "ph": "s",
            "pid": call["pid"],
            "tid": call["tid"],
            "ts": _us(call["start_ns"] - rows.t0),
        }
        yield {
            **common,
            "ph": "f",
            "bp": "e",
            "pid": op["pid"],
            "tid": op["tid"],
            "ts": _us(op["start_ns"] - rows.t0),
        }


def events(rows: ExportRows) -> Iterator[dict[str, Any]]:
    """Every trace event of the export, metadata first."""
    yield from _metadata(rows)
    yield from _op_events(rows)
    yield from _call_events(rows)
    yield from _nvtx_events(rows)
    yield from _flow_events(rows)


def _duration(table: Table, where: str | None = None) -> tuple[int, int]:
    """(rows, summed duration ns) of ``table``, optionally of one ``kind``."""
    n = total = 0
    for r in table.records():
        if where is not None and r["kind"] != where:
            continue
        if r["end_ns"] is None:
            continue
        n += 1
        total += int(r["end_ns"]) - int(r["start_ns"])
    return n, total


def summary(rows: ExportRows, *, output: str | None = None) -> Table:
    """One row per kind of event written (trace events and summed duration in ns), with a footer
    that reconciles: ops = flows + ops without their launch call in the file."""
    lines: list[tuple[Any, ...]] = []
    for kind in ("kernel", "memcpy", "memset", "graph"):
        lines.append((kind, *_duration(rows.ops, kind)))
    lines.append(("cuda_api", *_duration(rows.calls)))
    for kind, label in (
        ("push_pop", "nvtx_push_pop"),
        ("start_end", "nvtx_start_end"),
        ("mark", "nvtx_mark"),
    ):
        lines.append((label, *_duration(rows.nvtx, kind)))
    flows = len(launch_pairs(rows))
    metadata = sum(1 for _ in _metadata(rows))
    unclosed = sum(1 for v in rows.nvtx.column("end_ns") if v is None)
    start_end = next(r[1] for r in lines if r[0] == "nvtx_start_end")
    trace_events = sum(r[1] for r in lines) + start_end + 2 * flows + metadata
    footer: dict[str, Any] = {
        "t0_ns": rows.t0,
        "from_ns": rows.from_ns,
        "to_ns": rows.to_ns,
        "gpu_ops": len(rows.ops.rows),
        "flows": flows,
        "ops_without_call": len(rows.ops.rows) - flows,
        "unclosed_nvtx_ranges": unclosed,
        "metadata_events": metadata,
        "trace_events": trace_events,
        "host_events": "launches" if rows.launches_only else "all",
        "output": output,
    }
    if rows.scope is not None:
        footer["scope"] = rows.scope
    return Table(
        kind="export",
        columns=("kind", "events", "duration_ns"),
        rows=[tuple(r) for r in lines],
        queries=rows.queries,
        footer=footer,
    )


def suggested_window(rows: ExportRows, span_ns: int, trace_events: int) -> tuple[float, float]:
    """A window (ms from the trace start) of about EVENT_GUARD events, starting where this one does."""
    lo = rows.from_ns or 0
    hi = rows.to_ns if rows.to_ns is not None else span_ns
    width = max(1, int((hi - lo) * EVENT_GUARD / max(trace_events, 1)))
    return lo / 1e6, (lo + width) / 1e6


def write(rows: ExportRows, path: Path, *, about: dict[str, Any]) -> int:
    """Write the export to ``path`` (gzip when it ends in .gz); return the bytes written."""
    opener: Any = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "wt", encoding="utf-8") as out:
            _dump(rows, out, about)
    except OSError as exc:
        raise UsageError(f"could not write {path}: {exc.strerror or exc}.") from None
    return path.stat().st_size


def _dump(rows: ExportRows, out: IO[str], about: dict[str, Any]) -> None:
    other = {**about, "t0_ns": rows.t0, "from_ns": rows.from_ns, "to_ns": rows.to_ns, "scope": rows.scope}
    out.write('{"displayTimeUnit":"ns","otherData":' + json.dumps(other, ensure_ascii=False))
    out.write(',"traceEvents":[\n')
    first = True
    for event in events(rows):
        if not first:
            out.write(",\n")
        out.write(json.dumps(event, ensure_ascii=False, separators=(",", ":")))
        first = False
    out.write("\n]}\n")
