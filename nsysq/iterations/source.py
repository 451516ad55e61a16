"""Where the iterations come from, and which GPU work each one holds (docs/iters.md).

In order: ``--nvtx NAME`` (every kept range of that name, on the thread and domain whose ranges
of that name hold the most GPU work); else NVTX step ranges, detected: PyTorch's
``ProfilerStep#N``, otherwise the range name that repeats at least MIN_INSTANCES times at one
nesting level on one thread, does not overlap itself and holds more than MIN_SHARE of the GPU
work its thread launches (queries/iters/candidates.sql and shares.sql; the largest share wins,
then the outer level); else the period of the kernel names on the busiest stream (nsysq.iterations.period).

An iteration's GPU work: with NVTX, the ops the NVTX attribution gives its range by launch
attribution (nsysq.analyses.nvtx.build_pairs: the launching CUDA call lies inside the range,
on the range's thread; every op of one launch goes together); with the period, the ops of the
stream's process and device that start inside the period's window. Either way the iterations'
launches are kept as the temp table ``nsysq_iter_launches`` (globalPid, correlationId, it), which
the table (nsysq.iterations.table) and the ``--iteration`` scope (nsysq.iterations.scope) read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from nsysq.analyses import nvtx as nvtx_mod
from nsysq.base.errors import NoDataError, UsageError
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

    def __len__(self) -> int:
        return len(self.numbers)


def find_iterations(trace: Session, *, nvtx: str | None = None, source: str | None = None) -> Iterations:
    """The iterations of ``trace`` (see the module doc); ``nvtx``: this range name; ``source``:
    force "nvtx" or "period". Raises NoDataError when the source asked for finds none."""
    if source is not None and source not in SOURCES:
        raise UsageError(f"--source {source!r} is not one of {', '.join(SOURCES)}.")
    if nvtx is not None and source == "period":
        raise UsageError("--nvtx NAME names NVTX ranges; it does not combine with --source period.")
    if nvtx is not None:
        return _named(trace, nvtx)
    why_not = ""
    if source != "period":
        found, why_not = _detected(trace)
        if found is not None:
            return found
        if source == "nvtx":
            raise NoDataError(f"{trace.path.name}: {why_not}; name the step range with --nvtx NAME.")
    return _period(trace, why_not)


def _attribution(trace: Session) -> None:
    with trace.bounded_memory(nvtx_mod.WORK_MEMORY):
        nvtx_mod.build_pairs(trace, extend_unended=False)


def _named(trace: Session, name: str) -> Iterations:
    nvtx_mod.require_ranges(trace)
    _attribution(trace)
    threads = trace.run("iters_named", range_name=name).records()
    if not threads:
        raise UsageError(
            f"no kept NVTX range is named {name!r} in {trace.path.name} (nsysq nvtx lists the range names)."
        )
    chosen = threads[0]
    where = "" if len(threads) == 1 else f" on the thread with the most GPU work of {len(threads)} threads"
    why = f"the {chosen['instances']} ranges named {name!r} (--nvtx){where}"
    return _from_ranges(trace, chosen["tid"], chosen["dom"], None, False, name, why)


def _detected(trace: Session) -> tuple[Iterations | None, str]:
    """The detected NVTX step ranges, or None and why none."""
    try:  # the ranges and their stacks only: no GPU op is read until a candidate needs it
        nvtx_mod.stack_check(trace)
    except NoDataError:
        return None, "it recorded no NVTX ranges"
    trace.materialize("iters_candidates", GROUPS, rebuild=True, min_instances=MIN_INSTANCES)
    steps = trace.sql_table(f"SELECT tid, dom, lvl, instances FROM {GROUPS} WHERE profiler").records()
    if steps:  # the groups come most instances first
        r = steps[0]
        why = f"PyTorch's ProfilerStep#N ranges ({r['instances']} on one thread, depth {r['lvl']})"
        _attribution(trace)
        return _from_ranges(trace, r["tid"], r["dom"], r["lvl"], True, "ProfilerStep#N", why), ""
    fits = int(trace.sql_table(f"SELECT count(*) FROM {GROUPS} WHERE fit").rows[0][0])
    shares = []
    if fits:
        _attribution(trace)
        shares = trace.run("iters_shares").records()
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
    return _from_ranges(trace, r["tid"], r["dom"], r["lvl"], False, str(r["name"]), why), ""


def _from_ranges(
    trace: Session, tid: int, dom: int, lvl: int | None, profiler: bool, name: str, why: str
) -> Iterations:
    ranges = trace.run(
        "iters_ranges", tid=tid, dom=dom, lvl=lvl, profiler=profiler, range_name=name
    ).records()
    trace.materialize("iters_nvtx_launches", LAUNCHES, rebuild=True, rids=[int(r["rid"]) for r in ranges])
    names = [str(r["name"]) for r in ranges]
    steps = [_STEP.match(n) for n in names]
    numbers = [int(m.group(1)) for m in steps] if profiler and all(steps) else list(range(len(names)))  # type: ignore[union-attr]
    return Iterations(
        numbers=numbers,
        names=names,
        starts=np.array([int(r["start"]) for r in ranges], dtype=np.int64),
        ends=np.array([int(r["end"]) for r in ranges], dtype=np.int64),
        source="nvtx",
        label=name,
        why=why,
    )


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
