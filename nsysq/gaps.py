"""Gaps: how busy each GPU was, where it sat idle, and what its host threads were doing meanwhile.

Three packaged queries do the work in DuckDB: ``queries/gap_feeders.sql`` finds the host threads
feeding each device, ``queries/gaps.sql`` computes the union of kernel, memcpy and
memset intervals per device (ops sorted by start, running maximum of their ends),
the idle gaps between them, and a sweep over the gaps and the CUDA API calls of the host threads
feeding each device, which splits every gap's time into four causes, and ``queries/gap_streams.sql``
the same unions per stream. The API-call rules are data
(``queries/gap_cause_rules.toml``); docs/gaps.md gives each cause's exact rule.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from nsysq import rules as rules_mod
from nsysq.errors import NoDataError, UsageError
from nsysq.scope import stamp
from nsysq.table import Table

if TYPE_CHECKING:
    from nsysq.trace import Trace

DEFAULT_TOP = 10
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
_NO_GPU_OPS = (
    "{name} recorded no GPU work (no kernels, memcpys or memsets); profile with nsys profile "
    "--trace=cuda (the default) and export again with nsys export --type=sqlite."
)


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


def gaps(trace: Trace, *, top: int = DEFAULT_TOP, min_gap_ns: int = 0) -> GapsResult:
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


def _gaps(trace: Trace, call_rules: tuple[CallRule, ...], top: int, min_gap_ns: int) -> GapsResult:
    from nsysq import schema

    note = trace.whole_graph_note()  # first: the result's own queries run last (see --show-sql)
    feeders = trace.run("gap_feeders")
    for events in (schema.KERNEL, schema.MEMCPY, schema.MEMSET, schema.RUNTIME):
        trace.release_columns(events, ("correlationId", "globalPid"))  # only the feeders read them
    table = trace.run(
        "gaps",
        t0=trace.t0,
        feeder_devices=feeders.column("device_id"),
        feeder_threads=feeders.column("thread"),
        top=top,
        min_gap=min_gap_ns,
        call_causes=[r.cause for r in call_rules],
        call_patterns=[r.like for r in call_rules],
    )
    sections: dict[str, list[dict[str, Any]]] = {"device": [], "gap": []}
    for record in table.records():
        sections[record["section"]].append(record)
    if not sections["device"]:
        raise NoDataError(_NO_GPU_OPS.format(name=trace.path.name))
    trace.release_columns(schema.RUNTIME)  # the stream unions read GPU ops only
    streams = trace.run("gap_streams", t0=trace.t0)
    sections["stream"] = streams.records()
    queries = (*feeders.queries, *table.queries, *streams.queries)
    result = _result(replace(table, queries=queries), sections, top, min_gap_ns)
    devices = replace(result.devices, notes=(*result.devices.notes, note)) if note else result.devices
    return replace(result, devices=stamp(devices, trace.scope))


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
