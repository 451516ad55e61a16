"""Where the iterations come from, and which GPU work each one holds (docs/iters.md).

In order: ``--nvtx NAME`` (every kept range of that name, on the thread and domain whose ranges
of that name hold the most GPU work); else NVTX step ranges, detected: PyTorch's
``ProfilerStep#N``, otherwise the range name that repeats at least MIN_INSTANCES times at one
nesting level on one thread, does not overlap itself and holds more than MIN_SHARE of the GPU
work its thread launches (queries/iters/candidates.sql and shares.sql; the largest share wins,
then the outer level); else the period of the kernel names on the busiest stream (nsysq.iterations.period).

An iteration's GPU work: with NVTX, the ops the NVTX attribution gives its range by launch
attribution (the launching CUDA call lies inside the range, on the range's thread; every op of one
launch goes together): when the push/pop stacks nest, found from the launching calls by binary
search (nsysq.iterations.launches; the candidates grouped by nsysq.iterations.candidates), else
from nsysq.analyses.nvtx.build_pairs by the SQL of queries/iters/; with the period, the ops of the
stream's process and device that start inside the period's window. Either way the iterations'
launches are kept as the temp table ``nsysq_iter_launches`` (globalPid, correlationId, it), which
the table (nsysq.iterations.table) and the ``--iteration`` scope (nsysq.iterations.scope) read.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from nsysq.analyses import nvtx as nvtx_mod
from nsysq.analyses import nvtx_ranges, nvtx_sweep
from nsysq.base.errors import NoDataError, UsageError
from nsysq.base.sums import sum_by
from nsysq.base.threads import Background, side_by_side
from nsysq.export import schema
from nsysq.iterations import candidates, launches
from nsysq.iterations.period import find_period

if TYPE_CHECKING:
    from nsysq.session import Session

SOURCES = ("nvtx", "period")
MIN_INSTANCES = 3
MIN_SHARE = 0.5
LAUNCHES = "nsysq_iter_launches"
GROUPS = "nsysq_iter_groups"
_STEP = re.compile(r"^ProfilerStep#(\d+)$")


@dataclass(frozen=True)
class Iterations:
    """The iterations of a trace: ``numbers`` (N of ProfilerStep#N, else 0-based), ``names``,
    ``starts`` and ``ends`` (absolute ns; the range's CPU span or the period's window), ``source``
    ("nvtx" or "period"), ``label`` (the range name, or the period), ``why`` (one sentence),
    ``regular`` (the period's share of regular periods; None for NVTX). Their launches are in
    LAUNCHES."""

    numbers: list[int]
    names: list[str]
    starts: Any
    ends: Any
    source: str
    label: str
    why: str
    regular: float | None = None
    kept: launches.Kept | None = None

    def __len__(self) -> int:
        return len(self.numbers)


def find_iterations(
    trace: Session,
    *,
    nvtx: str | None = None,
    source: str | None = None,
    meanwhile: Callable[[], object] | None = None,
) -> Iterations:
    """The iterations of ``trace`` (see the module doc); ``nvtx``: this range name; ``source``:
    force "nvtx" or "period". Raises NoDataError when the source asked for finds none.
    ``meanwhile``: work of the caller's (on this thread, with the session) run at most once while
    the launching calls are still being joined on the second core, instead of waiting idle."""
    if source is not None and source not in SOURCES:
        raise UsageError(f"--source {source!r} is not one of {', '.join(SOURCES)}.")
    if nvtx is not None and source == "period":
        raise UsageError("--nvtx NAME names NVTX ranges; it does not combine with --source period.")
    if nvtx is not None:
        return _named(trace, nvtx, meanwhile)
    why_not = ""
    if source != "period":
        found, why_not = _detected(trace, meanwhile)
        if found is not None:
            return found
        if source == "nvtx":
            raise NoDataError(f"{trace.path.name}: {why_not}; name the step range with --nvtx NAME.")
    return _period(trace, why_not)


def _attribution(trace: Session) -> None:
    with trace.bounded_memory(nvtx_mod.WORK_MEMORY):
        nvtx_mod.build_pairs(trace, extend_unended=False)


NOTE = "found from the launching calls (nsysq.iterations.launches); this query gives the same rows"
#: What the launches of the NVTX attribution are built from, for --show-sql's script (in order).
_ATTRIBUTION = ("nvtx_ops", "nvtx_ancestors", "nvtx_inner", "nvtx_pairs")


@dataclass
class _Path:
    """How the ranges' GPU work is found: from the launching calls (``stacks``, when the push/pop
    stacks nest; nsysq.iterations.launches) or, when the calls cannot be read or the stacks do not
    nest, from the NVTX attribution's pairs (the SQL of queries/iters/)."""

    stacks: nvtx_sweep.Stacks | None = None
    calls: launches.Calls | None = None
    read: bool = False
    ranges: candidates.Ranges | None = None  # the candidate groups' ranges, when found from the stacks
    reading: Background[launches.Calls | None] | None = None  # the calls, joined beside the stacks
    meanwhile: Callable[[], object] | None = None  # run (once) rather than wait for the calls
    early: bool = False  # reading joins the calls as the background decode gives them (calls_decoding)

    def fast(self, trace: Session) -> launches.Calls | None:
        if self.stacks is not None and not self.read:
            if self.reading is not None and not self.reading.done() and self.meanwhile is not None:
                self.meanwhile()
            self.meanwhile = None
            reading, self.reading = self.reading, None
            self.calls = reading.result() if reading is not None else launches.read_calls(trace)
            if self.early:  # the session's own read (its checks, notes and release) still follows
                fetched = launches.fetch_calls(trace)
                if self.calls is None:
                    self.calls = (
                        launches.calls_from(fetched) if fetched is not None else launches.read_calls(trace)
                    )
            self.read = True
        return self.calls


def _path(trace: Session, meanwhile: Callable[[], object] | None = None) -> _Path:
    """The ranges' stacks (nsysq_nvtx_stack) by the sweep when they nest, else by SQL; and the path.
    The launching calls decode while the ranges are built and are joined to their GPU ops on a
    second thread while the stacks are swept (launches.calls_from): the stacks' path reads them."""
    early = None
    if trace.schema.has(schema.NVTX):
        trace.prefetch(("iters_call_arrays", "iters_op_arrays"))
        early = launches.calls_decoding(trace)  # joined as soon as they are decoded, beside the ranges
    reading = early
    try:
        nvtx_mod.require_ranges(trace)
        if early is None:
            fetched = launches.fetch_calls(trace)
            reading = Background(partial(launches.calls_from, fetched)) if fetched is not None else None
            del fetched
        stacks = nvtx_mod.swept_stacks(trace)
    except BaseException:
        if reading is not None:  # nothing outlives the call; this error is the one raised
            with contextlib.suppress(BaseException):
                reading.result()
        raise
    if stacks is None:
        if reading is not None:
            reading.result()  # not read on the SQL path: waited for, let go
        nvtx_mod.stack_check(trace)
        return _Path()
    return _Path(stacks=stacks, reading=reading, meanwhile=meanwhile, early=early is not None)


def _named(trace: Session, name: str, meanwhile: Callable[[], object] | None) -> Iterations:
    path = _path(trace, meanwhile)
    calls = path.fast(trace)
    if calls is None:
        _attribution(trace)
        threads = trace.run("iters_named", range_name=name).records()
    else:
        threads = _named_threads(trace, calls, name)
    if not threads:
        raise UsageError(
            f"no kept NVTX range is named {name!r} in {trace.path.name} (nsysq nvtx lists the range names)."
        )
    chosen = threads[0]
    where = "" if len(threads) == 1 else f" on the thread with the most GPU work of {len(threads)} threads"
    why = f"the {chosen['instances']} ranges named {name!r} (--nvtx){where}"
    return _from_ranges(trace, path, (chosen["tid"], chosen["dom"], None), False, name, why)


def _named_threads(trace: Session, calls: launches.Calls, name: str) -> list[dict[str, Any]]:
    """queries/iters/named.sql's rows from the calls: per thread and domain with ranges named
    ``name``, their instances and GPU work (each op once), most GPU work first."""
    r = {k: np.ma.getdata(v) for k, v in trace.run_arrays("iters_named_ranges", range_name=name).items()}
    keys = sorted({(int(t), int(d)) for t, d in zip(r["tid"], r["dom"], strict=True)})
    threads = []
    for tid, dom in keys:
        rows = np.flatnonzero((r["tid"] == tid) & (r["dom"] == dom))
        at, _ = launches.held(calls, calls.thread(tid), r["start"][rows], r["end"][rows], r["pushpop"][rows])
        gpu = int(launches.gpu_of(calls, at, np.zeros(len(at), np.int64), 1, distinct=True)[0])
        threads.append({"tid": tid, "dom": dom, "instances": len(rows), "gpu_ns": gpu})
    return sorted(threads, key=lambda t: (-t["gpu_ns"], -t["instances"], t["tid"], t["dom"]))


def _detected(trace: Session, meanwhile: Callable[[], object] | None) -> tuple[Iterations | None, str]:
    """The detected NVTX step ranges, or None and why none."""
    try:  # the ranges and their stacks only: no GPU op is read until a candidate needs it
        path = _path(trace, meanwhile)
    except NoDataError:
        return None, "it recorded no NVTX ranges"
    groups = _groups(trace, path)
    steps = [g for g in groups if g["profiler"]]
    if steps:  # the groups come most instances first
        r = steps[0]
        why = f"PyTorch's ProfilerStep#N ranges ({r['instances']} on one thread, depth {r['lvl']})"
        where = (r["tid"], r["dom"], r["lvl"])
        return _from_ranges(trace, path, where, True, "ProfilerStep#N", why, group=r["group"]), ""
    fits = [g for g in groups if g["fit"]]
    shares = _shares(trace, path, fits) if fits else []
    fit = [r for r in shares if r["thread_gpu_ns"] and r["gpu_ns"] > MIN_SHARE * r["thread_gpu_ns"]]
    if not fit:
        return None, (
            f"no NVTX range name repeats {MIN_INSTANCES}+ times at one depth on one thread without "
            f"overlapping itself and holds over {MIN_SHARE:.0%} of its thread's GPU work"
        )
    r = fit[0]  # the largest share, then the outer level, then fewer instances
    share = 100.0 * r["gpu_ns"] / r["thread_gpu_ns"]
    why = (
        f"the range {r['name']!r} repeats {r['instances']} times at depth {r['lvl']} on one thread, "
        f"does not overlap itself and holds {share:.0f}% of the GPU work its thread launches"
    )
    where = (r["tid"], r["dom"], r["lvl"])
    return _from_ranges(trace, path, where, False, str(r["name"]), why, group=r.get("group")), ""


def _groups(trace: Session, path: _Path) -> list[dict[str, Any]]:
    """queries/iters/candidates.sql's rows: from the sweep's stacks when the path has them
    (nsysq.iterations.candidates), else by the query, kept as GROUPS."""
    found = None if path.stacks is None else candidates.groups(trace, path.stacks, MIN_INSTANCES)
    if found is not None:
        rows, path.ranges = found
        return rows
    trace.materialize("iters_candidates", GROUPS, rebuild=True, min_instances=MIN_INSTANCES)
    return trace.sql_table(f"SELECT * FROM {GROUPS}").records()


def _shares(trace: Session, path: _Path, fits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """queries/iters/shares.sql's rows for the ``fits`` groups, or the first of them: from the
    calls when it can (the fit groups' ranges are disjoint, so a push/pop group holds each call
    once), else by the query over the NVTX attribution's pairs. From the calls, the groups are
    summed a level at a time, outer first, and the deeper levels are skipped once a group holds
    all of its thread's GPU work: no group can hold more, and at an equal share the outer level
    comes first (shares.sql's order), so the rows' first is the query's first."""
    calls = path.fast(trace)
    ranges = path.ranges
    if calls is None or ranges is None:
        if not trace.is_materialized(GROUPS, min_instances=MIN_INSTANCES):
            trace.materialize("iters_candidates", GROUPS, rebuild=True, min_instances=MIN_INSTANCES)
        _attribution(trace)
        return trace.run("iters_shares").records()
    rows_out: list[dict[str, Any]] = []
    for lvl in sorted({int(g["lvl"]) for g in fits}):
        rows_out += _level_shares(calls, ranges, [g for g in fits if int(g["lvl"]) == lvl])
        if any(r["thread_gpu_ns"] and r["gpu_ns"] == r["thread_gpu_ns"] for r in rows_out):
            break
    return sorted(rows_out, key=_share_order)


def _level_shares(
    calls: launches.Calls, ranges: candidates.Ranges, fits: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """shares.sql's columns for the ``fits`` groups, from the calls (the threads shared between
    this core and the second one)."""
    chosen = np.zeros(int(ranges.group.max()) + 1, dtype=bool)
    chosen[[g["group"] for g in fits]] = True
    tids = sorted({int(g["tid"]) for g in fits})
    of = partial(_threads_gpu, calls, ranges, chosen[ranges.group], len(chosen))
    if len(tids) > 1:  # numpy alone on the second core
        (gpu, threads), (theirs, their_threads) = side_by_side(
            partial(of, tids[0::2]), partial(of, tids[1::2])
        )
        gpu += theirs
        threads.update(their_threads)
    else:
        gpu, threads = of(tids)
    return [{**g, "gpu_ns": int(gpu[g["group"]]), "thread_gpu_ns": threads[int(g["tid"])]} for g in fits]


def _threads_gpu(
    calls: launches.Calls, ranges: candidates.Ranges, picked: Any, n: int, tids: list[int]
) -> tuple[Any, dict[int, int]]:
    """Per group 0..n-1, the GPU time its ranges (``picked`` per range: of a fit group) on threads
    ``tids`` hold; and per thread, the GPU time of every call it launches (numpy alone: it may run
    on a thread of its own)."""
    gpu = np.zeros(n, dtype=np.int64)
    threads = {}
    for tid in tids:
        at = ranges.on_thread(picked, tid)
        order = calls.thread(tid)
        threads[tid] = int(calls.gpu[order].sum())
        gpu += _group_gpu(calls, order, ranges.stacks, ranges.rows[at], ranges.group[at], n)
    return gpu, threads


def _group_gpu(
    calls: launches.Calls, order: Any, stacks: nvtx_sweep.Stacks, rows: Any, group: Any, n: int
) -> Any:
    """Per group 0..n-1: the GPU time of the calls (``order``: one thread's) its ranges (``rows``
    of the stacks, of groups ``group``) hold, each call once per group: a fit group's push/pop
    ranges are disjoint, so by a prefix sum per range (launches.held_gpu) when the thread's calls
    do not overlap, else by the pairs."""
    starts, ends, pushpop = stacks.start[rows], stacks.end[rows], stacks.pushpop[rows]
    per_range = launches.held_gpu(calls, order, starts, ends) if pushpop.all() else None
    if per_range is not None:
        return sum_by(group, per_range, n)
    at, pos = launches.held(calls, order, starts, ends, pushpop)
    return launches.gpu_of(calls, at, group[pos], n, distinct=not pushpop.all())


def _share_order(r: dict[str, Any]) -> tuple[Any, ...]:
    """shares.sql's ORDER BY: the largest share, then the outer level, then fewer instances."""
    share = r["gpu_ns"] / max(r["thread_gpu_ns"], 1)
    return (-share, r["lvl"], r["instances"], r["tid"], r["dom"], r["name"])


def _from_ranges(
    trace: Session,
    path: _Path,
    where: tuple[int, int, int | None],
    profiler: bool,
    name: str,
    why: str,
    *,
    group: int | None = None,
) -> Iterations:
    """The iterations: queries/iters/ranges.sql's ranges (those of candidate group ``group`` when
    it is known and the groups came from the stacks), with their launches."""
    tid, dom, lvl = where
    params = {"tid": tid, "dom": dom, "lvl": lvl, "profiler": profiler, "range_name": name}
    found = _group_ranges(trace, path, group, params)
    if found is None:
        ranges = trace.run("iters_ranges", **params).records()
        rids = [int(r["rid"]) for r in ranges]
        names = [str(r["name"]) for r in ranges]
        starts = np.array([int(r["start"]) for r in ranges], dtype=np.int64)
        ends = np.array([int(r["end"]) for r in ranges], dtype=np.int64)
    else:
        rids, names, starts, ends = found
    kept = _keep_launches(trace, path, tid, rids, starts, ends)
    steps = [_STEP.match(n) for n in names]
    numbers = [int(m.group(1)) for m in steps] if profiler and all(steps) else list(range(len(names)))  # type: ignore[union-attr]
    return Iterations(
        numbers=numbers, names=names, starts=starts, ends=ends, source="nvtx", label=name, why=why,
        kept=kept,
    )  # fmt: skip


_RANGES_NOTE = (
    "the candidate group's ranges, from the stacks and the kept name codes (nsysq.iterations.source); "
    "this query gives the same rows"
)


def _group_ranges(
    trace: Session, path: _Path, group: int | None, params: dict[str, Any]
) -> tuple[list[int], list[str], Any, Any] | None:
    """ranges.sql's rows (rids, names, starts, ends; ``params`` bound) for the ranges of candidate
    group ``group`` (one thread, domain, step name and level: the params'), from the stacks, by
    start then rid; None when the groups or the names were not found so."""
    name = None if params["profiler"] else params["range_name"]
    state = nvtx_ranges.kept(trace, "nsysq_nvtx_ranges")
    ranges = path.ranges
    if group is None or ranges is None or state is None or state.codes is None:
        return None
    rows = ranges.rows[ranges.group == group]  # rid order
    names_of = state.codes.names
    wanted = [
        (candidates.PROFILER_STEP.fullmatch(n) is not None) if name is None else n == name for n in names_of
    ]
    rows = rows[np.asarray(wanted, dtype=bool)[state.codes.name_code[rows]]]
    rows = rows[np.argsort(ranges.stacks.start[rows], kind="stable")]
    names = np.asarray(names_of, dtype=object)[state.codes.name_code[rows]].tolist()
    trace.note_query("iters_ranges", _RANGES_NOTE, **params)
    return (rows + 1).tolist(), names, ranges.stacks.start[rows], ranges.stacks.end[rows]


def _keep_launches(
    trace: Session, path: _Path, tid: int, rids: list[int], starts: Any, ends: Any
) -> launches.Kept | None:
    """LAUNCHES for the ranges ``rids``: from the calls (returns which calls are kept), else from
    the NVTX attribution's pairs (returns None)."""
    calls = path.fast(trace)
    if calls is None:
        _attribution(trace)
        trace.materialize("iters_nvtx_launches", LAUNCHES, rebuild=True, rids=rids)
        return None
    assert path.stacks is not None  # calls are read only on that path
    pushpop = path.stacks.pushpop[np.asarray(rids, dtype=np.int64) - 1]
    at, it = launches.held(calls, calls.thread(tid), starts, ends, pushpop)
    for step in _ATTRIBUTION:  # what iters_nvtx_launches reads, for --show-sql's script
        table = "nsysq_" + step
        trace.note_materialized(step, table, NOTE, **({"innermost": False} if step == "nvtx_pairs" else {}))
    columns = {**calls.launches(at), "it": it}
    trace.keep_arrays("iters_nvtx_launches", LAUNCHES, columns, note=NOTE, rids=rids)
    kept = np.zeros(len(calls.s), dtype=bool)
    kept[at] = True
    it_of = np.full(len(calls.s), -1, dtype=np.int32 if len(starts) < (1 << 31) else np.int64)  # memory
    it_of[at] = it
    once = int(np.count_nonzero(kept)) == len(at)  # no call held by two iterations (nested ranges)
    return launches.Kept(calls, kept, it_of if once else None)


def _period(trace: Session, why_not: str) -> Iterations:
    trace.require_kernels()
    streams = trace.run("iters_streams").records()
    if not streams:
        raise NoDataError(f"{trace.path.name} has no kernels with a stream to find a period in.")
    busiest = streams[0]
    pid, dev, stream = int(busiest["pid"]), int(busiest["dev"]), int(busiest["stream"])
    rows = trace.run_arrays("iters_stream_kernels", pid=pid, dev=dev, stream=stream)
    starts, ends, codes = (np.ma.getdata(rows[k]).astype(np.int64) for k in ("s", "e", "sid"))
    found = find_period(codes)
    if found is None:
        raise NoDataError(
            f"{trace.path.name}: {why_not + '; and ' if why_not else ''}the kernel names on its busiest "
            f"stream ({stream} on device {dev}) do not repeat; name the step range with --nvtx NAME."
        )
    cuts = found.cuts
    win_starts = starts[cuts]
    # The last period ends as long after its start as the typical one (or at its last kernel's end,
    # or the trace's end, whichever is later / earlier): its window is not cut at its last kernel.
    last = min(len(starts), int(cuts[-1]) + found.length) - 1
    typical = int(np.median(np.diff(win_starts))) if len(win_starts) > 1 else 0
    last_end = min(max(int(ends[last]), int(win_starts[-1]) + typical), int(trace.span["t_end"] or 0))
    win_ends = np.append(win_starts[1:], max(last_end, int(ends[last]), int(win_starts[-1]) + 1))
    trace.materialize(
        "iters_period_launches", LAUNCHES, rebuild=True, pid=pid, dev=dev,
        starts=[int(v) for v in win_starts], ends=[int(v) for v in win_ends],
    )  # fmt: skip
    kernels = f"{found.length} kernels" if found.length != 1 else "kernel"
    label = f"period of {kernels} on stream {stream} (device {dev}, pid {(pid >> 24) & 0xFFFFFF})"
    why = (
        f"{why_not + ', so ' if why_not else ''}the kernel names on the busiest stream ({stream}, device "
        f"{dev}) repeat every {kernels}: {found.regular:.0%} of the {len(cuts)} periods have the same "
        "sequence"
    )
    return Iterations(
        numbers=list(range(len(cuts))),
        names=[f"period {i}" for i in range(len(cuts))],
        starts=win_starts,
        ends=win_ends,
        source="period",
        label=label,
        why=why,
        regular=found.regular,
    )
