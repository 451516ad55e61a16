"""The per-trace work of nsysq fleet: one pure function from a path to a small, mergeable report.

:func:`read_trace` is what every engine maps over the inputs (a thread on this machine, a Ray task
on a cluster): it opens the trace the one way nsysq opens traces (:class:`nsysq.trace.Trace`), runs
the packaged per-trace queries and returns a :class:`TraceReport` of plain Python values (picklable,
a few hundred kB at most). A trace nsysq cannot answer (not an export, damaged, no kernels) gives a
report with status ``failed`` and the error's one sentence; it never stops the other traces.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nsysq.base.errors import NsysqError
from nsysq.base.units import condensed
from nsysq.export import engine
from nsysq.fleet_analysis.stats import LOG_GAMMA

if TYPE_CHECKING:
    from nsysq.export.reader import CacheMode
    from nsysq.session import Session

Row = tuple[Any, ...]
KernelPart = tuple[str, int, int, int, "int | None", "int | None", Any]
"""One kernel name in one trace: name, instances, total, sum of squares, min, max (exact Python
integers), and its known buckets as an int64 array of rows (bucket, count, lo, hi), or None."""


@dataclass(frozen=True)
class Job:
    """What each trace is asked (the same for every trace of one fleet question)."""

    census: bool = True
    lineup: bool = True
    idle: bool = False
    span: bool = True
    names: str = "short"
    rules: str | None = None
    cache: CacheMode = "reuse"
    nsys: str | None = None  # --nsys: resolved on the worker (nsysq.export.nsys_rep.find_nsys)
    identity: bool = True  # the GPU and nsys version columns (fleet census and lineup show neither)


@dataclass
class TraceReport:
    """One trace's answer: identity, totals, and the mergeable per-kernel and per-category rows."""

    path: str
    status: str = "ok"
    reason: str | None = None
    nsysq_version: str = ""
    gpu: str | None = None
    nsys_version: str | None = None
    kernels: int | None = None
    kernel_ns: int | None = None
    span_ns: int | None = None
    busy_ns: int | None = None
    idle_ns: int | None = None
    reader: str | None = None
    kernels_by_name: list[KernelPart] = field(default_factory=list)  # fleet_kernel_buckets, per name
    lineup: list[Row] = field(default_factory=list)  # fleet_lineup_kernels rows
    queries: tuple[str, ...] = ()


def read_trace(path: str, job: Job) -> TraceReport:
    """Answer ``job`` for the trace at ``path``; an NsysqError becomes a failed report."""
    from nsysq.base.version import __version__

    report = TraceReport(path=path, nsysq_version=__version__)
    try:
        with engine.one_instance_per_thread():  # one sqlite-extension load per worker, not per trace
            _answer(report, job)
    except NsysqError as exc:
        return TraceReport(path=path, status="failed", reason=str(exc), nsysq_version=__version__)
    return report


def _answer(report: TraceReport, job: Job) -> None:
    from nsysq.trace import Trace

    with Trace(Path(report.path), cache=job.cache, prefetch="fleet_kernel_buckets", nsys=job.nsys) as trace:
        answer(trace.session, job, report)


def answer(trace: Session, job: Job, report: TraceReport) -> None:
    """Fill ``report`` from an open trace (``--show-sql`` runs this on one trace and prints its SQL)."""
    from nsysq.analyses.info import identity

    trace.require_kernels()
    if job.identity:
        who = identity(trace)
        report.nsys_version = str(who["nsys_version"])
        report.gpu = condensed(who["gpus"]) or None
    queries: list[str] = []
    if job.span:
        span = trace.run("fleet_gpu_span")
        report.span_ns = _int(span.records()[0]["span_ns"])
        queries += span.queries
    if job.census:
        buckets = trace.run("fleet_kernel_buckets", names=job.names, log_gamma=LOG_GAMMA)
        report.kernels_by_name = by_name(_ints(buckets.rows))
        queries += buckets.queries
    if job.lineup:
        queries += _lineup(trace, report, job.rules)
    if job.idle:
        queries += _idle(trace, report)
    # Launches and time come from rows already read (every launch is in one bucket and one category).
    rows = [(r[1], r[2]) for r in report.kernels_by_name] or [(r[2], r[3]) for r in report.lineup]
    report.kernels = sum(int(n) for n, _ in rows)
    report.kernel_ns = sum(int(ns or 0) for _, ns in rows)
    report.reader = trace.kernel_reader
    report.queries = tuple(dict.fromkeys(queries))


def by_name(rows: Sequence[Row]) -> list[KernelPart]:
    """The bucket rows grouped by kernel name, where the trace is read (the driver then adds a few
    totals and one array per name and trace, not every row)."""
    import numpy as np

    grouped: dict[str, list[Row]] = {}
    for row in rows:
        grouped.setdefault(row[0], []).append(row)
    parts: list[KernelPart] = []
    for name, mine in grouped.items():
        _, buckets, counts, totals, sums_sq, los, his = zip(*mine, strict=True)
        known = [
            (b, c, lo, hi)
            for b, c, lo, hi in zip(buckets, counts, los, his, strict=True)
            if b is not None and lo is not None and hi is not None
        ]
        parts.append((
            name,
            sum(counts),
            sum(t or 0 for t in totals),
            sum(q or 0 for q in sums_sq),
            min((lo for lo in los if lo is not None), default=None),
            max((hi for hi in his if hi is not None), default=None),
            np.array(known, dtype=np.int64) if known else None,
        ))  # fmt: skip
    return parts


def _lineup(trace: Session, report: TraceReport, rules: str | None) -> tuple[str, ...]:
    if rules is None:
        trace.use_rules()
    else:
        from nsysq.catalog.rules import load_lineup_rules

        trace.use_rules(load_lineup_rules(rules), source=rules)
    table = trace.run("fleet_lineup_kernels")
    report.lineup = _ints(table.rows)
    return table.queries


def _idle(trace: Session, report: TraceReport) -> tuple[str, ...]:
    from nsysq.gputime.gaps import gaps

    devices = gaps(trace, top=0).devices
    report.busy_ns = int(devices.footer["busy_ns"])
    report.idle_ns = int(devices.footer["idle_ns"])
    return devices.queries


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _ints(rows: Sequence[Row]) -> list[Row]:
    """DuckDB hands HUGEINT sums back as int and DECIMAL sums as Decimal: keep plain ints. A column
    is looked at by the types it holds (one pass in C), and only a column holding another type than
    str, int or None is converted value by value."""
    columns = list(zip(*rows, strict=True))
    for i, column in enumerate(columns):
        if not all(t is type(None) or issubclass(t, (str, int)) for t in set(map(type, column))):
            columns[i] = tuple(v if isinstance(v, (str, int)) or v is None else int(v) for v in column)
    return list(zip(*columns, strict=True))
