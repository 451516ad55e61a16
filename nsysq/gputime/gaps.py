"""Gaps: how busy each GPU was, where it sat idle, and what its host threads were doing meanwhile.

The rows come from SQL (``queries/gap/ops.sql``: the GPU ops; ``queries/gap/calls.sql``: the CUDA
API calls) or, on a direct read of the export's pages, from the decoded columns; the arithmetic is
in nsysq.gputime.gap_unions: per device and per stream the union of kernel, memcpy, memset and whole-graph
intervals (their starts and ends sorted, nsysq.gputime.intervals), the idle gaps between them, the host
threads feeding each device (``queries/gap/feeders.sql``'s correlationId join) and each gap's time
split into four causes by those threads' calls. Call names are classified by the API-call rules
(data: ``queries/rules/gap_cause_rules.toml``, applied by ``queries/gap/call_classes.sql``); the ops
around the listed gaps are named by ``queries/gap/ends.sql``. docs/gaps.md gives each cause's
exact rule.
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from nsysq import catalog
from nsysq.base.errors import NoDataError, UsageError
from nsysq.base.table import Table
from nsysq.base.threads import before_threads
from nsysq.catalog import rules as rules_mod
from nsysq.session.scope import stamp

if TYPE_CHECKING:
    from nsysq.gputime.intervals import Union
    from nsysq.session import Session

DEFAULT_TOP = 10
ANALYSIS = "gaps/1"
"""This computation's name and version: part of the key its kept answers are stored under."""
PREFETCH = ("gap_ops", "gap_calls")
"""The queries whose columns a gaps run decodes up front (one pass per table)."""
WORK_MEMORY = "300MB"
"""DuckDB's working memory for the gaps queries (past it, it spills to a temporary directory):
with the decoded event columns of a 5M-kernel trace (~560 MB) the process stays near 1 GB."""
CAUSES: dict[str, str] = {
    "host_wait": "host waiting on the GPU",
    "launch_bound": "launch-bound",
    "host_busy": "host busy elsewhere: CPU-bound or Python",
    "unknown": "unknown",
}
"""Every cause code, most specific first, with the sentence docs/gaps.md explains it by."""
CALL_CAUSES = ("launch_bound", "host_wait")
"""The causes an API-call rule may name (host_busy and unknown follow from the absence of a call)."""

DEVICE_COLUMNS = (
    "device_id", "ops", "skipped_ops", "start_ns", "span_ns", "busy_ns", "idle_ns", "busy_pct",
    "idle_gaps", "feeding_threads", "host_wait_ns", "launch_bound_ns", "host_busy_ns", "unknown_ns",
)  # fmt: skip
STREAM_COLUMNS = ("device_id", "stream_id", "ops", "start_ns", "span_ns", "busy_ns", "busy_pct")
GAP_COLUMNS = (
    "rank", "device_id", "start_ns", "gap_ns", "cause", "host_wait_ns", "launch_bound_ns",
    "host_busy_ns", "unknown_ns", "before_kind", "before_name", "before_stream", "after_kind",
    "after_name", "after_stream",
)  # fmt: skip
NO_GPU_OPS = (
    "{name} recorded no GPU work (no kernels, memcpys or memsets); profile with nsys profile "
    "--trace=cuda (the default) and export again with nsys export --type=sqlite."
)
"""What a trace without GPU ops is told (``name``: its file's name)."""


@dataclass(frozen=True)
class CallRule:
    """One API-call rule: calls whose lower-cased name is LIKE ``like`` count as ``cause``."""

    order: int
    cause: str
    like: str
    note: str = ""


@dataclass(frozen=True)
class GapsResult:
    """What ``nsysq gaps`` prints: per device, per stream, and the longest gaps."""

    devices: Table
    streams: Table
    gaps: Table

    def in_unit(self, unit: str) -> GapsResult:
        return GapsResult(self.devices.in_unit(unit), self.streams.in_unit(unit), self.gaps.in_unit(unit))

    def tables(self) -> dict[str, Table]:
        return {"devices": self.devices, "streams": self.streams, "gaps": self.gaps}

    def top(self, n: int) -> GapsResult:
        """This result as ``gaps(trace, top=n)`` returns it, from one computed with ``top`` >= n (the
        list is ranked longest first, ties by device then start, so its first n rows are those):
        the n longest gaps listed, the footer's ``top`` and ``listed_gaps`` set to match."""
        if n < 0 or n > int(self.devices.footer["top"]):
            raise UsageError(f"top({n}) needs a result listing at least {n} gaps.")
        listed = self.gaps.rows[:n]
        footer = {**self.devices.footer, "top": n, "listed_gaps": len(listed)}
        return GapsResult(replace(self.devices, footer=footer), self.streams, replace(self.gaps, rows=listed))


@functools.cache
def load_call_rules(path: str | None = None) -> tuple[CallRule, ...]:
    """The API-call rules (packaged ``gap_cause_rules.toml`` unless ``path``), validated."""

    def refused(cause: str) -> str | None:
        return None if cause in CALL_CAUSES else f"use one of {', '.join(CALL_CAUSES)}"

    rules = rules_mod.load_like_rules("gap_cause_rules.toml", path, "cause", "call", refused)
    return tuple(CallRule(r.order, r.label, r.like, r.note) for r in rules)


def call_cause(name: str | None, rules: tuple[CallRule, ...] | None = None) -> str | None:
    """The cause the first matching rule gives an API call named ``name`` (None: no rule matches)."""
    if name is None:
        return None
    for rule in rules if rules is not None else load_call_rules():
        if rules_mod.like_to_regex(rule.like).fullmatch(name.lower()):
            return rule.cause
    return None


def gaps(trace: Session, *, top: int = DEFAULT_TOP, min_gap_ns: int = 0) -> GapsResult:
    """Busy, idle and idle-by-cause per device, busy per stream, and the ``top`` longest idle gaps
    of at least ``min_gap_ns``. Raises NoDataError when the trace has no kernel, memcpy or memset."""
    if top < 0:
        raise UsageError("--top must be 0 (no gap list) or a positive number of gaps.")
    if min_gap_ns < 0:
        raise UsageError("--min-gap must be 0 or more.")
    call_rules = load_call_rules()
    # Three queries, so the correlationId join and the two sorts never hold memory at once; each
    # within WORK_MEMORY of DuckDB memory beside the decoded columns.
    with trace.bounded_memory(WORK_MEMORY):
        return _gaps(trace, call_rules, top, min_gap_ns)


def _gaps(trace: Session, call_rules: tuple[CallRule, ...], top: int, min_gap_ns: int) -> GapsResult:
    import json

    note = trace.whole_graph_note()  # first: the result's own queries run last (see --show-sql)
    params = {
        "top": top,
        "min_gap": min_gap_ns,
        "call_causes": [r.cause for r in call_rules],
        "call_patterns": [r.like for r in call_rules],
    }
    _, rows = trace.kept("gap_ops", ANALYSIS, params, lambda: _kept_rows(trace, call_rules, top, min_gap_ns))
    sections: dict[str, list[dict[str, Any]]] = {"device": [], "gap": [], "stream": []}
    for section, record in rows:
        sections[section].append(json.loads(record))
    base = Table(kind="gaps", columns=(), rows=[], queries=_labels())
    result = _result(base, sections, top, min_gap_ns)
    devices_table = result.devices
    if note:
        devices_table = replace(devices_table, notes=(*devices_table.notes, note))
    return replace(result, devices=stamp(devices_table, trace.scope))


def _kept_rows(
    trace: Session, call_rules: tuple[CallRule, ...], top: int, min_gap_ns: int
) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    """The records of every section as (section, JSON) rows: what a kept answer holds."""
    import json

    sections = _sections(trace, call_rules, top, min_gap_ns)
    rows = [(name, json.dumps(record)) for name, records in sections.items() for record in records]
    return ("section", "record"), rows


def _sections(
    trace: Session, call_rules: tuple[CallRule, ...], top: int, min_gap_ns: int
) -> dict[str, list[dict[str, Any]]]:
    """Device, gap and stream records, computed from the rows (nsysq.gputime.gap_unions)."""
    from nsysq.gputime import gap_unions as gu

    parts = gu.read_ops(trace)
    lanes = gu.lanes(parts)
    if not lanes:
        raise NoDataError(NO_GPU_OPS.format(name=trace.path.name))
    t0, devices = trace.t0, list(lanes)
    lane_list = [(d, s) for d, in_device in lanes.items() for s in in_device]
    ops = gu.without_correlation(parts)  # the unions need no correlation columns
    # The GPU side (each device's and stream's union) and the host side (the API calls, the feeding
    # threads, their calls' coverage) are independent until the causes: the GPU side on a thread of
    # its own from now on (numpy's sorts and ufuncs release the GIL), while this thread reads the
    # calls (their decode may still run) and does the host side; only this thread runs SQL.
    before_threads()  # numpy imported here, not by the thread (a cached copy imports none first)
    with ThreadPoolExecutor(1, thread_name_prefix="nsysq-gaps") as gpu:
        unions = gpu.submit(lambda: [_device_union(ops, d) for d in devices])
        streams = gpu.submit(lambda: [_stream(t0, ops, *lane) for lane in lane_list])
        fed_by, covers = host_side(trace, parts, devices, call_rules)
        fed = {d: (covers.get(threads), len(threads)) for d, threads in fed_by.items()}
        per_device = [_device(t0, ops, u, *fed[u.device]) for u in unions.result()]
        stream_records = streams.result()
    listed = _listed(trace, [gaps for _, gaps in per_device], top, min_gap_ns)
    return {"device": [record for record, _ in per_device], "gap": listed, "stream": stream_records}


def host_side(
    trace: Session,
    parts: list[Any],
    devices: list[int],
    call_rules: tuple[CallRule, ...],
    causes: tuple[str, ...] = CALL_CAUSES,
) -> tuple[dict[int, tuple[int, ...]], dict[tuple[int, ...], Any]]:
    """Each device's feeding threads and the coverage of their calls (see _call_coverages), the
    calls classed by ``call_rules`` (a call whose class is not in ``causes`` counts as neither:
    with only launch_bound, both coverages are the launch calls'). ``parts`` (gap_unions.read_ops)
    is emptied once the feeding threads are known: its correlation columns can go."""
    from nsysq.gputime import gap_unions as gu

    calls = gu.read_calls(trace)
    feeding = _feeding(trace, parts, calls, devices)
    parts.clear()
    return _call_coverages(trace, replace(calls, corr=None), feeding, devices, call_rules, causes)


def _call_coverages(
    trace: Session,
    calls: Any,
    feeding: dict[int, list[int]],
    devices: list[int],
    call_rules: tuple[CallRule, ...],
    causes: tuple[str, ...],
) -> tuple[dict[int, tuple[int, ...]], dict[tuple[int, ...], Any]]:
    """Each device's feeding threads, and per set of feeding threads the coverage of their launch
    and launch-or-sync calls (built once per set: devices fed by the same threads share it); then
    the API calls' decoded columns are released (the caller drops its ``calls``)."""
    from nsysq.export import schema
    from nsysq.gputime import gap_unions as gu

    fed_by = {d: tuple(feeding.get(d, [])) for d in devices}
    keys = sorted({threads for threads in fed_by.values() if threads})
    names = gu.call_names(calls) if keys else []  # no feeding thread: no call to classify
    classes = _call_classes(trace, names, call_rules)
    classes_of = gu.classified(calls, {name: c for name, c in classes.items() if c in causes})
    coverages = [gu.call_coverage(calls, classes_of, list(k)) for k in keys]  # one at a time: memory
    trace.release_columns(schema.RUNTIME)
    return fed_by, dict(zip(keys, coverages, strict=True))


def _feeding(trace: Session, parts: list[Any], calls: Any, devices: list[int]) -> dict[int, list[int]]:
    """The threads feeding each device; then the correlation columns' memory goes."""
    from nsysq.export import schema
    from nsysq.gputime import gap_unions as gu

    feeding = gu.feeders(parts, calls, devices)
    if feeding is None:  # correlation ids repeat among the calls: let SQL join them
        feeding = {}
        for device, thread in trace.run("gap_feeders").rows:
            feeding.setdefault(gu.NULL if device is None else int(device), []).append(int(thread))
    else:
        trace.note_query("gap_feeders", "computed from the rows above (nsysq.gputime.gap_unions)")
    for events in (schema.KERNEL, schema.MEMCPY, schema.MEMSET, schema.RUNTIME):
        trace.release_columns(events, ("correlationId", "globalPid"))  # only the feeders read them
    return feeding


def _call_classes(trace: Session, names: list[int], call_rules: tuple[CallRule, ...]) -> dict[int, str]:
    """The cause each API-call name id of ``names`` counts for (by the rules)."""
    table = trace.run(
        "gap_call_classes",
        name_ids=names,
        call_causes=[r.cause for r in call_rules],
        call_patterns=[r.like for r in call_rules],
    )
    return {int(name): str(cause) for name, cause in table.rows}


@dataclass(frozen=True)
class _DeviceUnion:
    """One device's ops as a union: how many, the first start, the totals and the idle gaps."""

    device: int
    ops: int
    first: int
    whole: Union
    starts: Any
    ends: Any


def _device_union(parts: list[Any], device: int) -> _DeviceUnion:
    from nsysq.gputime import gap_unions as gu
    from nsysq.gputime.intervals import gaps as gaps_of
    from nsysq.gputime.intervals import union

    ops = gu.intervals_of(parts, gu.on_device(device))
    starts, ends = gaps_of(ops)
    return _DeviceUnion(device, len(ops), int(ops.starts[0]), union(ops), starts, ends)


def _device(
    t0: int,
    parts: list[Any],
    ops: _DeviceUnion,
    calls: tuple[Any, Any] | None,
    threads: int,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One device's record and its gaps (starts, ends, the four cause columns); ``calls``: the
    coverage of its feeding threads' launch and launch-or-sync calls (None: no feeding thread)."""
    from nsysq.gputime import gap_unions as gu

    starts, ends, device = ops.starts, ops.ends, ops.device
    lengths = ends - starts
    if calls is not None:
        launching, waiting = gu.causes(starts, ends, *calls)
        found = {"host_wait": waiting, "launch_bound": launching, "host_busy": lengths - waiting - launching}
        found["unknown"] = lengths * 0
    else:
        zero = lengths * 0
        found = {"host_wait": zero, "launch_bound": zero, "host_busy": zero, "unknown": lengths}
    record = {
        "device_id": None if device == gu.NULL else device,
        "ops": ops.ops,
        "skipped_ops": gu.skipped(parts, device),
        "start_ns": ops.first - t0,
        "span_ns": ops.whole.span,
        "busy_ns": ops.whole.busy,
        "idle_ns": ops.whole.idle,
        "idle_gaps": ops.whole.gaps,
        "feeding_threads": threads,
        **{f"{cause}_ns": int(values.sum()) for cause, values in found.items()},
    }
    return record, {"device": device, "starts": starts, "ends": ends, **found}


def _listed(
    trace: Session, every_gap: list[dict[str, Any]], top: int, min_gap_ns: int
) -> list[dict[str, Any]]:
    """The ``top`` longest gaps of at least ``min_gap_ns`` (longest first; ties: lower device,
    devices without an id last, then earlier start), with the ops before and after each."""
    import numpy as np

    from nsysq.gputime import gap_unions as gu

    def joined(key: str) -> Any:
        return np.concatenate([g[key] for g in every_gap]) if every_gap else np.zeros(0, np.int64)

    device = np.concatenate([np.full(len(g["starts"]), g["device"], dtype=np.int64) for g in every_gap])
    starts, ends = joined("starts"), joined("ends")
    length = ends - starts
    chosen = np.flatnonzero(length >= min_gap_ns)
    no_id = device[chosen] == gu.NULL
    order = np.lexsort((starts[chosen], device[chosen], no_id, -length[chosen]))[:top]
    picked = chosen[order]
    causes = {cause: joined(cause)[picked] for cause in CAUSES}
    if not len(picked):
        return []
    named = trace.run(
        "gap_ends",
        ranks=list(range(1, len(picked) + 1)),
        devices=[None if d == gu.NULL else int(d) for d in device[picked]],
        starts=[int(v) for v in starts[picked]],
        ends=[int(v) for v in ends[picked]],
    ).records()
    out = []
    for i, at in enumerate(picked):
        out.append(
            {
                "rank": i + 1,
                "device_id": None if device[at] == gu.NULL else int(device[at]),
                "start_ns": int(starts[at]) - trace.t0,
                "gap_ns": int(length[at]),
                **{f"{cause}_ns": int(causes[cause][i]) for cause in CAUSES},
                **{k: v for k, v in named[i].items() if k != "rank"},
            }
        )
    return out


def _stream(t0: int, parts: list[Any], device: int, stream: int) -> dict[str, Any]:
    from nsysq.gputime import gap_unions as gu
    from nsysq.gputime.intervals import union

    ops = gu.intervals_of(parts, gu.on_stream(device, stream))
    whole = union(ops)
    return {
        "device_id": None if device == gu.NULL else device,
        "stream_id": None if stream == gu.NULL else stream,
        "ops": len(ops),
        "start_ns": int(ops.starts[0]) - t0,
        "span_ns": whole.span,
        "busy_ns": whole.busy,
    }


def _labels() -> tuple[str, ...]:
    """The queries behind every gaps result (their rows read through SQL or from decoded columns)."""
    names = ("gap_ops", "gap_calls", "gap_feeders", "gap_call_classes", "gap_ends")
    return tuple(catalog.get(name).label for name in names)


def _pct(part: int | None, whole: int | None) -> float | None:
    return 100.0 * part / whole if part is not None and whole else None


def _dominant(record: dict[str, Any]) -> str:
    """The cause with most time in a gap (ties go to the cause listed first in CAUSES)."""
    return max(CAUSES, key=lambda c: (int(record[f"{c}_ns"]), -list(CAUSES).index(c)))


def _result(table: Table, sections: dict[str, list[dict[str, Any]]], top: int, min_gap_ns: int) -> GapsResult:
    spans = {r["device_id"]: r["span_ns"] for r in sections["device"]}
    devices = [{**r, "busy_pct": _pct(r["busy_ns"], r["span_ns"])} for r in sections["device"]]
    streams = [{**r, "busy_pct": _pct(r["busy_ns"], spans.get(r["device_id"]))} for r in sections["stream"]]
    listed = [{**r, "cause": _dominant(r)} for r in sections["gap"]]
    listed.sort(key=lambda r: r["rank"])
    footer = {
        "devices": len(devices),
        "span_ns": sum(int(r["span_ns"]) for r in devices),
        "busy_ns": sum(int(r["busy_ns"]) for r in devices),
        "idle_ns": sum(int(r["idle_ns"]) for r in devices),
        "idle_gaps": sum(int(r["idle_gaps"]) for r in devices),
        "skipped_ops": sum(int(r["skipped_ops"]) for r in devices),
        "top": top,
        "min_gap_ns": min_gap_ns,
        "listed_gaps": len(listed),
    }
    notes: list[str] = []
    if footer["skipped_ops"]:
        notes.append(f"{footer['skipped_ops']} GPU op(s) with a NULL start or end were left out.")
    unknown = [r["device_id"] for r in devices if r["unknown_ns"]]
    if unknown:
        notes.append(
            "no CUDA API call matches the ops of device(s) "
            + ", ".join(str(d) for d in unknown)
            + " by correlationId, so their idle time has cause unknown."
        )
    base = replace(table, rows=[], columns=(), footer={}, notes=())
    return GapsResult(
        devices=_table(base, "gaps", DEVICE_COLUMNS, devices, footer, tuple(notes)),
        streams=_table(base, "gaps_streams", STREAM_COLUMNS, streams, {}, ()),
        gaps=_table(base, "gaps_list", GAP_COLUMNS, listed, {}, ()),
    )


def _table(
    base: Table,
    kind: str,
    columns: tuple[str, ...],
    records: list[dict[str, Any]],
    footer: dict[str, Any],
    notes: tuple[str, ...],
) -> Table:
    rows = [tuple(_int(c, r[c]) for c in columns) for r in records]
    return replace(base, kind=kind, columns=columns, rows=rows, footer=footer, notes=notes)


def _int(column: str, value: Any) -> Any:
    """Nanosecond sums come back from DuckDB as HUGEINT/Decimal: hand out plain ints."""
    if value is not None and (column.endswith("_ns") or column in ("ops", "idle_gaps")):
        return int(value)
    return value
