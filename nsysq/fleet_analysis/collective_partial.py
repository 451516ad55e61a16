"""The per-trace work of ``nsysq fleet collectives``: pure functions from a path to small reports.

:func:`read_collectives` is what the engine maps over the inputs: it opens the trace the one way
nsysq opens traces, finds its communication kernels (the lineup's "NCCL / communication" category,
their collective kind from the kernel name by queries/rules/collective_rules.toml, per name pair:
queries/kernel/comm_pairs.sql, as ``nsysq overlap`` reads them) and returns, per rank (process and
device) in the file, only their streams, starts, ends, kinds and names as numpy arrays, with the
file's capture clock. :func:`read_phases` runs afterwards on the one rank that made the others
wait: the time of each NVTX range and lineup category in the window before each of its
collectives, summed over its late collectives against its own typical window.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from nsysq.base.errors import NsysqError
from nsysq.export import engine

if TYPE_CHECKING:
    from nsysq.export.check import SourceSchema
    from nsysq.export.reader import CacheMode
    from nsysq.session import Session

SESSION_START = "TARGET_INFO_SESSION_START_TIME"
NEAR_TIE = 0.05
"""Phases whose growth is within this fraction of the largest are near ties: the one with the
smallest typical time (the most specific: a range inside another that grew as much) is named."""
_TRAILING_NUMBER = re.compile(r"\d+$")


@dataclass(frozen=True)
class CollectiveJob:
    """What each trace is asked (the same for every trace of one question)."""

    rules: str | None = None
    cache: CacheMode = "reuse"


@dataclass(frozen=True)
class Clock:
    """When the capture started, from TARGET_INFO_SESSION_START_TIME (None: the file lacks it).

    nsys writes event timestamps from the capture's start, so absolute (UTC epoch) ns is
    ``utcEpochNs + timestamp``; exports that record ``systemClockNs`` (nsys 2026) write them on
    the target's system clock, on which the capture started at ``systemClockNs``; an export made
    with ``nsys export --ts-normalize`` already holds UTC epoch timestamps."""

    utc_epoch_ns: int | None = None
    system_clock_ns: int | None = None
    normalized: bool = False

    @property
    def offset(self) -> int | None:
        """What turns this export's timestamps into UTC epoch ns (None: unknown)."""
        if self.normalized:
            return 0
        if self.utc_epoch_ns is None:
            return None
        return self.utc_epoch_ns - (self.system_clock_ns or 0)


@dataclass
class RankKernels:
    """One rank's communication kernels in launch order per stream: arrays of equal length; ``kind``
    and ``name`` index the report's ``kinds`` and ``names``."""

    pid: int
    device: int
    stream: Any
    start: Any
    end: Any
    kind: Any
    name: Any

    def __len__(self) -> int:
        return len(self.start)


@dataclass
class CollectiveReport:
    """One trace's answer: identity, clock, and per rank its communication kernels."""

    path: str
    status: str = "ok"
    reason: str | None = None
    nsysq_version: str = ""
    nsys_version: str | None = None
    clock: Clock = field(default_factory=Clock)
    ranks: list[RankKernels] = field(default_factory=list)
    kinds: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    reader: str | None = None
    queries: tuple[str, ...] = ()


def read_collectives(path: str, job: CollectiveJob) -> CollectiveReport:
    """Answer ``job`` for the trace at ``path``; an NsysqError becomes a failed report."""
    from nsysq.base.version import __version__

    report = CollectiveReport(path=path, nsysq_version=__version__)
    try:
        with engine.one_instance_per_thread():
            from nsysq.trace import Trace

            with Trace(Path(path), cache=job.cache, prefetch="fleet_collective_kernels") as trace:
                answer(trace.session, job, report)
    except NsysqError as exc:
        return CollectiveReport(path=path, status="failed", reason=str(exc), nsysq_version=__version__)
    return report


def use_rules(trace: Session, rules: str | None) -> None:
    """The lineup rules that decide which kernels communicate (packaged, or a rules file)."""
    if rules is None:
        trace.use_rules()
    else:
        from nsysq.catalog.rules import load_lineup_rules

        trace.use_rules(load_lineup_rules(rules), source=rules)


def answer(trace: Session, job: CollectiveJob, report: CollectiveReport) -> None:
    """Fill ``report`` from an open trace (``--show-sql`` runs this on one trace and prints its SQL)."""
    from nsysq.analyses.info import nsys_version
    from nsysq.gputime.gpu_ops import COMPUTE, pair_classes
    from nsysq.gputime.overlap import COMM_CATEGORY, load_kind_rules

    trace.require_kernels()
    report.nsys_version = nsys_version(trace)
    report.clock = read_clock(trace.path, trace.schema)
    use_rules(trace, job.rules)
    kind_rules = load_kind_rules()
    pairs = trace.run(
        "kernel_comm_pairs",
        comm_category=COMM_CATEGORY,
        kind_names=[r.kind for r in kind_rules],
        kind_patterns=[r.like for r in kind_rules],
    )
    queries = list(pairs.queries)
    kinds = tuple(sorted({str(kind) for _, _, is_comm, kind in pairs.rows if is_comm}))
    code = {kind: k + 1 for k, kind in enumerate(kinds)}
    classes = {(int(s), int(d)): code[str(k)] if c else COMPUTE for s, d, c, k in pairs.rows}
    report.kinds, report.reader = kinds, trace.kernel_reader
    sids = sorted({s for (s, _), cls in classes.items() if cls != COMPUTE})
    if sids:
        names = trace.run("fleet_comm_names", comm_category=COMM_CATEGORY)
        rows = trace.run_arrays("fleet_collective_kernels", comm_sids=sids)
        queries += [*names.queries, *_labels("fleet_collective_kernels")]
        report.ranks, report.names = _ranks(rows, pair_classes, classes, dict(names.rows))
    report.queries = tuple(dict.fromkeys(queries))


def _labels(name: str) -> tuple[str, ...]:
    from nsysq import catalog

    return (catalog.get(name).label,)


def _ranks(
    rows: dict[str, Any], classify: Any, classes: dict[tuple[int, int], int], names: dict[int, str]
) -> tuple[list[RankKernels], tuple[str, ...]]:
    """The rows split by (pid, device), each kernel with its kind code (0-based) and name code."""
    col = {k: np.ma.getdata(v).astype(np.int64) for k, v in rows.items()}
    cls = classify(col["sid"], col["did"], classes)
    keep = cls > 0  # a short name with a compute pair too: its compute rows go
    col = {k: v[keep] for k, v in col.items()}
    kind = (cls[keep] - 1).astype(np.int16)
    sids = sorted({int(s) for s in np.unique(col["sid"])})
    name_of = tuple(names.get(s, f"<unresolved id {s}>") for s in sids)
    name = np.searchsorted(np.asarray(sids, dtype=np.int64), col["sid"]).astype(np.int32)
    out = []
    pairs: Any = np.unique(np.stack([col["pid"], col["dev"]], axis=1), axis=0) if len(kind) else []
    for pid, dev in pairs:
        on = (col["pid"] == pid) & (col["dev"] == dev)
        out.append(
            RankKernels(int(pid), int(dev), col["stream"][on], col["s"][on], col["e"][on], kind[on], name[on])
        )
    return out, name_of


def read_clock(path: Path, schema: SourceSchema) -> Clock:
    """The capture clock of the export at ``path``. TARGET_INFO_SESSION_START_TIME and the export
    metadata are small tables no canonical view holds (nsysq.export.schema; a cached copy lacks
    them), so they are read from the file itself, as ``nsysq info`` reads the nsys version."""
    import sqlite3

    from nsysq.export.check import connect_readonly

    con = connect_readonly(path)
    try:
        normalized = False
        for table in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
            if schema.has(table):
                rows = con.execute(f"SELECT value FROM {table} WHERE name = 'EXPORT_PARAM_TIME_NORMALIZE'")
                normalized = any(str(v).lower() == "true" for (v,) in rows.fetchall())
                break
        if not schema.has(SESSION_START):
            return Clock(normalized=normalized)
        system = "systemClockNs" if "systemClockNs" in schema.columns.get(SESSION_START, ()) else "NULL"
        try:
            row = con.execute(f"SELECT utcEpochNs, {system} FROM {SESSION_START} LIMIT 1").fetchone()
        except sqlite3.Error:
            row = None
    finally:
        con.close()
    if row is None or row[0] is None:
        return Clock(normalized=normalized)
    return Clock(int(row[0]), None if row[1] is None else int(row[1]), normalized)


# -- the phases before the late rank's collectives ----------------------------------------------------
@dataclass(frozen=True)
class PhaseTask:
    """One rank's windows on its own export's clock: ``lo`` (None for the first: from the rank's
    first kernel or range), ``hi`` (the collective's start), ``late`` (the rank arrived last),
    ``group`` (the collective's stream and kind, so a window is compared with its own kind)."""

    path: str
    pid: int
    device: int
    lo: tuple[int | None, ...]
    hi: tuple[int, ...]
    late: tuple[bool, ...]
    group: tuple[int, ...]
    rules: str | None = None
    cache: CacheMode = "reuse"


@dataclass(frozen=True)
class Phase:
    """A phase (an NVTX range name or a lineup category) before the late collectives: its time
    summed over them, and what it would have been at the typical (median) time of each one's kind."""

    what: str  # "NVTX range" or "category"
    name: str
    late_ns: int
    typical_ns: float

    @property
    def growth_ns(self) -> float:
        return self.late_ns - self.typical_ns


@dataclass
class PhaseReport:
    phases: list[Phase] = field(default_factory=list)
    queries: tuple[str, ...] = ()
    reason: str | None = None


def read_phases(task: PhaseTask) -> PhaseReport:
    """The phases that grew before the late collectives, the one to name first."""
    try:
        with engine.one_instance_per_thread():
            from nsysq.trace import Trace

            with Trace(Path(task.path), cache=task.cache, prefetch=None) as trace:
                return phases(trace.session, task)
    except NsysqError as exc:
        return PhaseReport(reason=str(exc))


def phases(trace: Session, task: PhaseTask) -> PhaseReport:
    """Per NVTX range name (trailing numbers read as N: ProfilerStep#N) and per lineup category, its
    time in each window; each late window against the median of the rank's on-time windows of its
    kind; the phases that grew, the one to name first."""
    from nsysq.gputime.overlap import COMM_CATEGORY

    use_rules(trace, task.rules)
    hi = np.asarray(task.hi, dtype=np.int64)
    known = [v for v in task.lo if v is not None]
    top = int(hi.max())
    floor = min([*known, int(hi.min())])
    kernels = trace.run_arrays(
        "fleet_phase_kernels", pid=task.pid, dev=task.device, lo=-(2**62), hi=top, comm_category=COMM_CATEGORY
    )
    ranges = _range_arrays(trace)
    labelled = [*_by_label("category", kernels, None), *_by_label("NVTX range", ranges, task.pid)]
    first = min([floor, *(int(s.min()) for _, _, s, _ in labelled if len(s))])
    lo = np.asarray([first if v is None else v for v in task.lo], dtype=np.int64)
    found: list[Phase | None] = list(_phases_of(labelled, lo, hi, task))
    grew = sorted((p for p in found if p is not None and p.growth_ns > 0), key=_order(found))
    queries = (*_labels("fleet_phase_kernels"), *_labels("nvtx_ranges_sorted"), *_labels("nvtx_ranges"))
    return PhaseReport(phases=grew[:5], queries=queries)


def _range_arrays(trace: Session) -> dict[str, np.ndarray]:
    """The trace's NVTX ranges as arrays (``queries/nvtx/ranges.sql``, which numbers the ranges of
    the sorted table ``ranges_sorted.sql`` builds first, as nsysq nvtx builds them)."""
    trace.materialize("nvtx_ranges_sorted", "nsysq_nvtx_ranges_sorted", extend_unended=False)
    try:
        return trace.run_arrays("nvtx_ranges", extend_unended=False)
    finally:
        trace.drop_materialized("nsysq_nvtx_ranges_sorted")


def _order(found: list[Phase | None]) -> Any:
    best = max((p.growth_ns for p in found if p is not None), default=0.0)

    def key(p: Phase) -> tuple[Any, ...]:
        near = p.growth_ns >= (1 - NEAR_TIE) * best
        return (not near, p.typical_ns if near else -p.growth_ns, p.what, p.name)

    return key


def _by_label(what: str, rows: dict[str, Any], pid: int | None) -> list[tuple[str, str, Any, Any]]:
    """(what, label, starts, ends) per category, or per NVTX range name of process ``pid``."""
    if not rows or not len(next(iter(rows.values()))):
        return []
    if pid is None:
        labels = np.asarray(rows["category"], dtype=object)
        s, e = np.ma.getdata(rows["s"]).astype(np.int64), np.ma.getdata(rows["e"]).astype(np.int64)
    else:
        dropped = rows["dropped"]
        kept = np.ma.getmaskarray(dropped) | np.asarray(
            [d is None for d in np.ma.getdata(dropped)], dtype=bool
        )
        ended = ~np.ma.getmaskarray(rows["end"]) & kept
        mine = ended & (((np.ma.getdata(rows["pid"]).astype(np.int64) >> 24) & 0xFFFFFF) == pid)
        labels = np.asarray(
            [_TRAILING_NUMBER.sub("N", str(n)) for n in np.asarray(rows["name"])[mine]], dtype=object
        )
        s = np.ma.getdata(rows["start"])[mine].astype(np.int64)
        e = np.maximum(np.ma.getdata(rows["end"])[mine].astype(np.int64), s)
    if not len(labels):
        return []
    names, inverse = np.unique(labels.astype(str), return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(len(names) + 1))
    return [
        (what, str(name), s[order[bounds[i] : bounds[i + 1]]], e[order[bounds[i] : bounds[i + 1]]])
        for i, name in enumerate(names)
    ]


def window_sums(s: Any, e: Any, lo: Any, hi: Any) -> Any:
    """For each window [lo, hi], the summed overlap of the intervals [s, e] with it: F(hi) - F(lo),
    where F(t) = sum over intervals of their length before t (prefix sums of sorted starts and
    ends; times taken from the smallest, so the integer sums cannot overflow)."""
    base = min(int(s.min()), int(lo.min()))
    ss, es = np.sort(s - base), np.sort(e - base)
    cs = np.concatenate([[0], np.cumsum(ss)])
    ce = np.concatenate([[0], np.cumsum(es)])

    def covered(t: Any) -> Any:
        i, j = np.searchsorted(ss, t, "left"), np.searchsorted(es, t, "left")
        return (i * t - cs[i]) - (j * t - ce[j])

    return covered(np.maximum(hi, lo) - base) - covered(lo - base)


def _phases_of(labelled: list[tuple[str, str, Any, Any]], lo: Any, hi: Any, task: PhaseTask) -> list[Phase]:
    """Each phase's time summed over the late windows, and at the typical (median on-time) time of
    each late window's group (of every on-time window when its group has none)."""
    late = np.asarray(task.late, dtype=bool)
    if not labelled or not late.any():
        return []
    per = np.stack([window_sums(s, e, lo, hi) for _, _, s, e in labelled])  # phases x windows
    group = np.asarray(task.group, dtype=np.int64)
    ontime = per[:, ~late]
    overall = np.median(ontime, axis=1) if ontime.shape[1] else np.zeros(len(per))
    typical = np.zeros(len(per))
    for g in np.unique(group[late]):
        mine = per[:, (group == g) & ~late]
        median = np.median(mine, axis=1) if mine.shape[1] else overall
        typical += int(np.count_nonzero(late & (group == g))) * median
    totals = per[:, late].sum(axis=1)
    return [
        Phase(what, name, int(totals[i]), float(typical[i])) for i, (what, name, _, _) in enumerate(labelled)
    ]
