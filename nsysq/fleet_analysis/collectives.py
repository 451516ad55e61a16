"""``nsysq fleet collectives``: NCCL collectives matched across ranks; the rank that makes the others wait.

A rank is one process on one device: one per file in a job with one export per rank, or each
(process, device) of one export holding several. Each file's report (:mod:`nsysq.fleet_analysis.
collective_partial`) holds only its communication kernels' timestamps. On the driver each rank's
streams with communication kernels are numbered in the order of their first kernel (the j-th
communicator stream of every rank is one communicator), and on each stream the k-th kernel of a
collective kind is that kind's k-th collective: the same (stream, kind, k) on every rank is one
collective. Positions some ranks lack (their counts differ) and positions whose kernel names differ
between ranks are not matched, and are counted. Arrivals are aligned on one clock (each export's
``utcEpochNs`` + timestamp); the skew, the wait it causes and who arrived last follow.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from nsysq.base.errors import NoDataError, UsageError
from nsysq.base.table import Table
from nsysq.base.units import fmt_time
from nsysq.fleet_analysis.collective_partial import (
    CollectiveJob,
    CollectiveReport,
    Phase,
    PhaseReport,
    PhaseTask,
    RankKernels,
    read_collectives,
    read_phases,
)
from nsysq.fleet_analysis.engines import Engine, held, make_engine
from nsysq.fleet_analysis.inputs import expand

if TYPE_CHECKING:
    import pandas as pd

    from nsysq.export.reader import CacheMode

COLLECTIVE_COLUMNS = (
    "name", "seq", "ranks", "first_start_ns", "skew_ns", "last_path", "wait_ns", "duration_ns", "kind",
    "stream",
)  # fmt: skip
RANK_COLUMNS = (
    "path", "collectives", "last_arrivals", "caused_wait_ns", "waited_ns", "nccl_kernels", "pid", "device_id",
)  # fmt: skip
FIRST = np.iinfo(np.int64).min
"""The window start of a rank's first communication kernel: from its first kernel or range."""
SHARED_CLOCK_WARNING = (
    "warning: {n} of {total} file(s) lack TARGET_INFO_SESSION_START_TIME (listed in the footer): "
    "their capture start is unknown, so every file's timestamps are taken to be on one shared "
    "clock; skews between files are then only right if the captures started together."
)


@dataclass
class Rank:
    """One rank on the driver: its label and, per (stream slot, kind), its kernels on the one clock
    (``lo``: the end of its previous communication kernel, the start of the phase before each)."""

    label: str
    path: str
    pid: int
    device: int
    offset: int
    kernels: int
    groups: dict[tuple[int, str], tuple[Any, Any, Any, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class CollectivesResult:
    """The tables of ``nsysq fleet collectives``, the verdict, and what could not be matched."""

    collectives_table: Table
    ranks_table: Table
    verdict: str
    match: dict[str, Any]
    phases: tuple[Phase, ...] = ()
    failed: tuple[tuple[str, str], ...] = ()

    @property
    def collectives(self) -> pd.DataFrame:
        """One row per matched collective, in time order."""
        return self.collectives_table.to_pandas()

    @property
    def ranks(self) -> pd.DataFrame:
        """One row per rank, the one that makes the others wait most first."""
        return self.ranks_table.to_pandas()

    def document(self, unit: str = "ns") -> dict[str, Any]:
        """The JSON document (docs/json.md, fleet collectives)."""
        from nsysq.base.sections import sections_document

        tables = {
            "collectives": self.collectives_table.in_unit(unit),
            "ranks": self.ranks_table.in_unit(unit),
        }
        doc = sections_document("fleet_collectives", tables)
        doc["verdict"] = self.verdict
        doc["match"] = self.match
        doc["phases"] = [_phase_record(p, unit) for p in self.phases]
        return doc


def collectives(
    paths: Iterable[str | Path] | str | Path,
    *,
    engine: str | Engine = "local",
    address: str | None = None,
    workers: int | None = None,
    rules: str | Path | None = None,
    cache: CacheMode = "reuse",
    limit: int = 0,
) -> CollectivesResult:
    """Match the NCCL collectives of the ranks in ``paths`` (one export per rank, or exports holding
    several processes or devices); see :class:`CollectivesResult`. ``limit`` > 0 keeps the
    collectives with the most wait (still in time order)."""
    if limit < 0:
        raise UsageError("--limit must be 0 (every collective) or a positive number of rows.")
    inputs = expand([paths] if isinstance(paths, (str, Path)) else paths)
    job = CollectiveJob(rules=_rules(rules), cache=cache)
    runner = engine if not isinstance(engine, str) else _engine(engine, address, workers, inputs)
    reports: dict[int, CollectiveReport] = {}
    with held(runner):  # the same workers read the blamed rank's phases
        for index, report in runner.map(functools.partial(read_collectives, job=job), inputs):
            _check_version(report.nsysq_version)
            reports[index] = report
        if set(reports) != set(range(len(inputs))):
            raise UsageError(f"the {runner.name} engine returned no answer for some trace(s).")
        ordered = [reports[i] for i in range(len(inputs))]
        return _answer(ordered, runner, job, limit)


def _rules(rules: str | Path | None) -> str | None:
    if rules is None:
        return None
    from nsysq.catalog.rules import load_lineup_rules

    load_lineup_rules(rules)  # a bad rules file fails once, here
    return str(Path(rules).resolve())


def _engine(name: str, address: str | None, workers: int | None, inputs: list[str]) -> Engine:
    sizes = [Path(p).stat().st_size if Path(p).is_file() else 0 for p in inputs]
    return make_engine(name, address=address, workers=workers, largest_trace_bytes=max(sizes, default=0))


def _check_version(version: str) -> None:
    from nsysq.base.version import __version__

    if version != __version__:
        raise UsageError(
            f"a worker ran nsysq {version} but this is nsysq {__version__}; "
            "install the same version where the engine's workers run."
        )


def _answer(
    reports: list[CollectiveReport], runner: Engine, job: CollectiveJob, limit: int
) -> CollectivesResult:
    ok = [r for r in reports if r.status == "ok"]
    failed = tuple((r.path, r.reason or "") for r in reports if r.status != "ok")
    unclocked = [r.path for r in ok if r.ranks and r.clock.offset is None]
    shared = bool(unclocked)
    ranks = [rank for r in ok for rank in _ranks_of(r, shared)]
    if len(ranks) < 2:
        raise NoDataError(
            f"fleet collectives needs NCCL kernels on two ranks or more, and found {len(ranks)}; give one "
            "export per rank, or an export holding several processes or devices."
        )
    origin = 0 if shared else min(r.clock.utc_epoch_ns or 0 for r in ok if r.ranks)
    matched = match(ranks, origin)
    blamed = _blamed(matched["per_rank"])
    phase = _phases(runner, ranks[blamed], matched, blamed, job) if blamed is not None else PhaseReport()
    queries = tuple(dict.fromkeys(q for r in ok for q in r.queries)) + phase.queries
    footer = _footer(reports, ranks, matched, runner.name, shared, unclocked)
    verdict = _verdict(ranks, matched, blamed, phase)
    notes = (
        *(f"{path}: {reason}" for path, reason in failed),
        *(f"no NCCL kernel in {r.path}: not a rank" for r in ok if not r.ranks),
        *matched["notes"],
        *([SHARED_CLOCK_WARNING.format(n=len(unclocked), total=len(ok))] if shared else []),
        *([f"{ranks[blamed].path}: {phase.reason}"] if blamed is not None and phase.reason else []),
    )
    rows = _limited(matched["rows"], limit)
    table = Table(kind="fleet_collectives", columns=COLLECTIVE_COLUMNS, rows=rows, queries=queries,
                  footer={**footer, "shown_rows": len(rows)}, notes=notes)  # fmt: skip
    rank_rows = sorted(matched["per_rank"], key=lambda r: (-r[3], r[0]))
    ranks_table = Table(kind="fleet_collective_ranks", columns=RANK_COLUMNS, rows=rank_rows, queries=queries,
                        footer={"ranks": len(ranks), "verdict": verdict})  # fmt: skip
    return CollectivesResult(table, ranks_table, verdict, matched["match"], tuple(phase.phases), failed)


def _limited(rows: list[tuple[Any, ...]], limit: int) -> list[tuple[Any, ...]]:
    if limit <= 0 or len(rows) <= limit:
        return rows
    kept = sorted(range(len(rows)), key=lambda i: (-rows[i][6], i))[:limit]
    return [rows[i] for i in sorted(kept)]


def _ranks_of(report: CollectiveReport, shared: bool) -> list[Rank]:
    """The report's ranks on the driver: labels, and per (stream slot, kind) their kernels aligned."""
    offset = 0 if shared else int(report.clock.offset or 0)
    several = len(report.ranks) > 1
    out = []
    for kernels in report.ranks:
        label = f"{report.path} [pid {kernels.pid}, device {kernels.device}]" if several else report.path
        rank = Rank(label, report.path, kernels.pid, kernels.device, offset, len(kernels))
        rank.groups = _groups(kernels, report, offset)
        out.append(rank)
    return out


def _groups(k: RankKernels, report: CollectiveReport, offset: int) -> dict[tuple[int, str], tuple[Any, ...]]:
    """Per (stream slot, kind): starts, ends, name codes and window starts, in launch order. Streams
    are numbered by their first kernel; a window starts at the end of the rank's previous
    communication kernel (any stream; FIRST for the first)."""
    order = np.lexsort((k.stream, k.start))
    ends = k.end[order]
    before = np.maximum.accumulate(np.concatenate([np.asarray([FIRST], dtype=np.int64), ends[:-1]]))
    lo = np.empty(len(order), dtype=np.int64)
    lo[order] = np.where(before == FIRST, FIRST, np.minimum(before, k.start[order]))
    streams, seen = np.unique(k.stream[order], return_index=True)
    first = {int(stream): slot for slot, stream in enumerate(streams[np.argsort(seen, kind="stable")])}
    table = np.asarray(report.names, dtype=object)
    out: dict[tuple[int, str], tuple[Any, ...]] = {}
    for stream, slot in first.items():
        on = k.stream == stream
        for code in np.unique(k.kind[on]):
            rows = np.flatnonzero(on & (k.kind == code))
            rows = rows[np.argsort(k.start[rows], kind="stable")]
            names = table[k.name[rows]] if len(table) else np.asarray([], dtype=object)
            out[(slot, report.kinds[int(code)])] = (
                k.start[rows] + offset,
                k.end[rows] + offset,
                names,
                lo[rows],
            )
    return out


@dataclass
class _Tally:
    """The running sums of the matched collectives: rows, and per rank its waits and late arrivals."""

    ranks: list[Rank]
    origin: int
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    late: list[list[tuple[tuple[int, str], int]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        n = len(self.ranks)
        self.caused, self.waited = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        self.lasts, self.taken = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        self.late = [[] for _ in self.ranks]

    def add(self, key: tuple[int, str], k: int, arrivals: Any, ends: Any, name: str) -> None:
        """One collective: every rank's arrival (kernel start) and kernel end on the one clock."""
        last = int(np.argmax(arrivals))  # ties: the first rank in input order
        top, first = int(arrivals[last]), int(arrivals.min())
        wait = int((top - arrivals).sum())
        self.caused[last] += wait
        self.waited += top - arrivals
        self.lasts[last] += 1
        self.taken += 1
        self.late[last].append((key, k))
        self.rows.append((name, k, len(self.ranks), first - self.origin, top - first, self.ranks[last].label,
                          wait, int(ends[last]) - top, key[1], key[0]))  # fmt: skip

    def per_rank(self) -> list[tuple[Any, ...]]:
        return [
            (
                r.label,
                int(self.taken[i]),
                int(self.lasts[i]),
                int(self.caused[i]),
                int(self.waited[i]),
                r.kernels,
                r.pid,
                r.device,
            )  # fmt: skip
            for i, r in enumerate(self.ranks)
        ]


def _lined_up(ranks: list[Rank], key: tuple[int, str]) -> tuple[list[int], Any, Any, Any]:
    """Every rank's kernel counts of ``key``, and the starts, ends and names of the positions all
    ranks have (ranks x positions)."""
    counts = [len(r.groups[key][0]) if key in r.groups else 0 for r in ranks]
    m, n = min(counts), len(ranks)
    if not m:
        return counts, np.zeros((n, 0), np.int64), np.zeros((n, 0), np.int64), np.zeros((n, 0), object)
    stacked = [np.stack([r.groups[key][i][:m] for r in ranks]) for i in range(3)]
    return counts, stacked[0], stacked[1], stacked[2]


def match(ranks: list[Rank], origin: int) -> dict[str, Any]:
    """Every (stream slot, kind, k) on every rank: matched when every rank has it and the kernel
    names agree. Rows per matched collective, per-rank sums, and the counts of what did not match."""
    tally = _Tally(ranks, origin)
    groups: list[dict[str, Any]] = []
    notes: list[str] = []
    positions: dict[tuple[int, str], list[int]] = {}
    for key in sorted({key for r in ranks for key in r.groups}):
        counts, starts, ends, names = _lined_up(ranks, key)
        same = (names == names[0]).all(axis=0)
        short, differ = max(counts) - min(counts), int((~same).sum())
        groups.append({"stream": key[0], "kind": key[1], "matched": int(same.sum()),
                       "counts_differ": short, "names_differ": differ, "min_count": min(counts),
                       "max_count": max(counts)})  # fmt: skip
        if short or differ:
            notes.append(_group_note(key, ranks, counts, differ))
        positions[key] = [int(k) for k in np.flatnonzero(same)]
        for k in positions[key]:
            tally.add(key, k, starts[:, k], ends[:, k], str(names[0, k]))
    rows = sorted(tally.rows, key=lambda r: (r[3], r[9], r[8], r[1]))
    counts_differ = sum(int(g["counts_differ"]) for g in groups)
    names_differ = sum(int(g["names_differ"]) for g in groups)
    summary = {"matched": len(rows), "unmatched": counts_differ + names_differ,
               "counts_differ": counts_differ, "names_differ": names_differ, "groups": groups}  # fmt: skip
    return {"rows": rows, "per_rank": tally.per_rank(), "late": tally.late, "match": summary, "notes": notes,
            "positions": positions}  # fmt: skip


def _group_note(key: tuple[int, str], ranks: list[Rank], counts: list[int], differ: int) -> str:
    slot, kind = key
    by_count: dict[int, list[str]] = {}
    for rank, count in zip(ranks, counts, strict=True):
        by_count.setdefault(count, []).append(
            Path(rank.label).name if rank.label == rank.path else rank.label
        )
    ordered = sorted(by_count.items(), reverse=True)
    if len(ordered) > _COUNTS_LISTED:  # many ranks, each its own count: the range and its two ends
        (most, top), (fewest, bottom) = ordered[0], ordered[-1]
        seen = (
            f"{fewest}-{most} per rank over {len(ranks)} ranks "
            f"(most on {_few(top)}, fewest on {_few(bottom)})"
        )
    else:
        seen = "; ".join(f"{count} on {_few(labels)}" for count, labels in ordered)
    text = f"stream {slot} {kind}: {seen}: {max(counts) - min(counts)} not matched (counts differ)"
    return text + (f"; {differ} not matched (kernel names differ between ranks)" if differ else "")


_COUNTS_LISTED = 3
"""A note lists each count of a collective and its ranks up to this many counts, else their range."""


def _few(labels: list[str]) -> str:
    return ", ".join(labels) if len(labels) <= 3 else f"{len(labels)} ranks"


def _blamed(per_rank: list[tuple[Any, ...]]) -> int | None:
    """The rank whose late arrivals caused the most wait (None: nobody made anyone wait)."""
    best = max(range(len(per_rank)), key=lambda i: (per_rank[i][3], -i))
    return best if per_rank[best][3] > 0 else None


def _phases(
    runner: Engine, rank: Rank, matched: dict[str, Any], index: int, job: CollectiveJob
) -> PhaseReport:
    """The phases before the blamed rank's late collectives (one more task, on its file)."""
    late = set(matched["late"][index])
    keys = sorted(rank.groups)
    lo: list[int | None] = []
    hi: list[int] = []
    flags: list[bool] = []
    group: list[int] = []
    for g, key in enumerate(keys):
        starts, _, _, los = rank.groups[key]
        for k in matched["positions"].get(key, []):
            lo.append(None if los[k] == FIRST else int(los[k]))
            hi.append(int(starts[k]) - rank.offset)
            flags.append((key, k) in late)
            group.append(g)
    task = PhaseTask(rank.path, rank.pid, rank.device, tuple(lo), tuple(hi), tuple(flags), tuple(group),
                     job.rules, job.cache)  # fmt: skip
    for _, report in runner.map(read_phases, [task]):
        return report
    return PhaseReport()


def _footer(
    reports: list[CollectiveReport],
    ranks: list[Rank],
    matched: dict[str, Any],
    engine: str,
    shared: bool,
    unclocked: list[str],
) -> dict[str, Any]:
    ok = [r for r in reports if r.status == "ok"]
    summary = matched["match"]
    return {
        "traces": len(reports),
        "traces_ok": len(ok),
        "traces_failed": len(reports) - len(ok),
        "ranks": len(ranks),
        "nccl_kernels": sum(r.kernels for r in ranks),
        "collectives": summary["matched"],
        "unmatched": summary["unmatched"],
        "unmatched_counts_differ": summary["counts_differ"],
        "unmatched_names_differ": summary["names_differ"],
        "total_wait_ns": sum(int(row[6]) for row in matched["rows"]),
        "clock": "shared (assumed)" if shared else "utcEpochNs",
        "files_without_clock": ", ".join(unclocked) if unclocked else "none",
        "engine": engine,
    }


def _verdict(ranks: list[Rank], matched: dict[str, Any], blamed: int | None, phase: PhaseReport) -> str:
    rows = matched["rows"]
    if not rows:
        return "no collective matched on every rank: nothing to compare (see the unmatched counts)."
    if blamed is None:
        return f"no rank made the others wait: all {len(rows)} collectives started at the same time."
    label, _, lasts, caused = matched["per_rank"][blamed][:4]
    total = sum(int(row[6]) for row in rows)
    text = (
        f"{Path(ranks[blamed].path).name}{label[len(ranks[blamed].path) :]} makes the others wait: last to "
        f"arrive at {lasts} of {len(rows)} collectives, causing {fmt_time(caused)} of the "
        f"{fmt_time(total)} waited ({100.0 * caused / total:.0f}%)"
    )
    if not phase.phases:
        return text + "; no NVTX range or kernel category grew before those collectives on that rank."
    top = phase.phases[0]
    return text + (
        f"; before them its {top.what} {top.name!r} took {fmt_time(top.late_ns)} in all against a typical "
        f"{fmt_time(top.typical_ns)} (+{fmt_time(top.growth_ns)})"
    )


def _phase_record(phase: Phase, unit: str) -> dict[str, Any]:
    from nsysq.base.units import time_factor

    scale = time_factor("ns", unit)
    return {
        "what": phase.what,
        "name": phase.name,
        f"late_{unit}": phase.late_ns * scale,
        f"typical_{unit}": phase.typical_ns * scale,
        f"growth_{unit}": phase.growth_ns * scale,
    }
