"""nsys analyze's rules over GPU time, per process and device: gpu_gaps (idle gaps longer than
--gap) and gpu_time_util (stretches of --chunks slices under --threshold % utilization). The ops
are nsys gaps' rows (nsysq.gputime.gap_unions.read_ops: kernels, memcpys, memsets, whole-graph
executions; decoded columns on a direct read); the arithmetic is on sorted numpy arrays, one pass
per (process, device) lane, no loop over rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from nsysq.base.units import ms_to_ns
from nsysq.stats.rules.base import Context, Outcome, finding

if TYPE_CHECKING:
    from numpy.typing import NDArray

_PID_BITS = 0xFFFFFF


@dataclass(frozen=True)
class Lane:
    """The GPU ops of one process on one device (clipped to the window), ``pid`` and ``device``
    None when NULL."""

    pid: int | None
    device: int | None
    starts: NDArray[np.int64]
    ends: NDArray[np.int64]


def lanes(ctx: Context) -> list[Lane]:
    """Every (process, device) with GPU ops in the window, read once per check run."""
    if "lanes" not in ctx.memo:
        ctx.memo["lanes"] = _read_lanes(ctx)
    every: list[Lane] = ctx.memo["lanes"]
    return every


def _read_lanes(ctx: Context) -> list[Lane]:
    from nsysq.gputime import gap_unions as gu

    parts = gu.read_ops(ctx.trace)
    cols: dict[str, list[Any]] = {"pid": [], "dev": [], "s": [], "e": []}
    for part in parts:
        keep = np.ones(len(part.s), dtype=bool) if part.valid is None else part.valid
        n = int(keep.sum())
        for key, values in (("pid", part.pid), ("dev", part.dev)):
            cols[key].append(
                np.full(n, gu.NULL, np.int64) if values is None else values[keep].astype(np.int64)
            )
        cols["s"].append(part.s[keep].astype(np.int64))
        cols["e"].append(part.e[keep].astype(np.int64))
    pid, dev, s, e = (
        np.concatenate(cols[k]) if cols[k] else np.zeros(0, np.int64) for k in ("pid", "dev", "s", "e")
    )
    s, e, keep = _clipped(s, e, *ctx.bounds)
    pid, dev = pid[keep], dev[keep]
    if len(s) and (pid.min() != pid.max() or dev.min() != dev.max()):  # several lanes: group them
        order = np.lexsort((dev, pid))
        pid, dev, s, e = pid[order], dev[order], s[order], e[order]
    cuts = np.flatnonzero((np.diff(pid) != 0) | (np.diff(dev) != 0)) + 1
    out = []
    for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(s)], strict=True):
        if hi > lo:
            p, d = int(pid[lo]), int(dev[lo])
            out.append(
                Lane(
                    None if p == gu.NULL else (p >> 24) & _PID_BITS,
                    None if d == gu.NULL else d,
                    np.sort(s[lo:hi]),
                    np.sort(e[lo:hi]),
                )
            )
    return out


def _clipped(s: Any, e: Any, lo: int | None, hi: int | None) -> tuple[Any, Any, Any]:
    """The ops overlapping [lo, hi) (as timeline keeps them), clipped to it, and which they are."""
    if lo is None and hi is None:
        return s, e, slice(None)
    keep = np.ones(len(s), dtype=bool)
    if hi is not None:
        keep &= s < hi
    if lo is not None:
        keep &= e >= lo
    s, e = s[keep], e[keep]
    if lo is not None:
        s = np.maximum(s, lo)
    if hi is not None:
        e = np.minimum(e, hi)
    return s, np.maximum(e, s), keep


def gpu_gaps(ctx: Context) -> Outcome:
    """Idle gaps strictly longer than --gap ms inside each lane's span (arrays until the rows kept)."""
    from nsysq.gputime.intervals import Sorted, gaps

    longer = ms_to_ns(ctx.options.gap_ms)
    cols: dict[str, list[Any]] = {"start": [], "dur": [], "lane": []}
    every = lanes(ctx)
    for i, lane in enumerate(every):
        starts, ends = gaps(Sorted(lane.starts, lane.ends))
        at = np.flatnonzero(ends - starts > longer)
        cols["start"].append(starts[at])
        cols["dur"].append((ends - starts)[at])
        cols["lane"].append(np.full(len(at), i, np.int64))
    start, dur, lane_of = (np.concatenate(cols[k]) if every else np.zeros(0, np.int64) for k in cols)
    # lanes are in (pid, device) order: the lane index breaks ties as pid then device do
    order = np.lexsort((lane_of, start, -dur))
    rows = ctx.options.row_limit
    kept = order[:rows] if rows else order
    found = [_at(ctx, every[int(lane_of[k])], int(start[k]), int(dur[k])) for k in kept]
    status = "found" if len(order) else "clean"
    return Outcome(status, len(order), int(dur.sum()), [finding("gpu_gaps", **f) for f in found])


def _at(ctx: Context, lane: Lane, start: int, duration: int, **extra: Any) -> dict[str, Any]:
    return {
        "start_ns": start - ctx.t0,
        "duration_ns": duration,
        "pid": lane.pid,
        "device_id": lane.device,
        **extra,
    }


def _sorted_outcome(rule: str, found: list[dict[str, Any]], rows: int) -> Outcome:
    """Longest first; ties: earlier start, then lower pid and device (NULL first, as -1)."""

    def key(f: dict[str, Any]) -> tuple[Any, ...]:
        pid, device = (-1 if f[k] is None else f[k] for k in ("pid", "device_id"))
        return (-f["duration_ns"], f["start_ns"], pid, device)

    found.sort(key=key)
    return Outcome.of(rule, found, sum(f["duration_ns"] for f in found), rows)


def covered(starts: Any, ends: Any, at: Any, origin: int) -> Any:
    """For each instant of ``at``, the summed time of the ops before it (sum of |op ∩ (-inf, t)|,
    concurrent ops adding up): two binary searches and prefix sums, relative to ``origin``."""
    s, e, t = starts - origin, ends - origin, at - origin
    cs = np.r_[0, np.cumsum(s)]
    ce = np.r_[0, np.cumsum(e)]
    ns = np.searchsorted(s, t, side="left")
    ne = np.searchsorted(e, t, side="left")
    return (ns * t - cs[ns]) - (ne * t - ce[ne])


def gpu_time_util(ctx: Context) -> Outcome:
    """Per lane, its span cut in --chunks slices of ceil(span / chunks) ns (the last clipped); the
    slices under --threshold % (the ops' summed overlap over the slice's length), merged when
    consecutive, with their length-weighted utilization rounded to 1 decimal."""
    found = []
    for lane in lanes(ctx):
        found += _low_stretches(ctx, lane)
    return _sorted_outcome("gpu_time_util", found, ctx.options.row_limit)


def _low_stretches(ctx: Context, lane: Lane) -> list[dict[str, Any]]:
    first, last = int(lane.starts[0]), int(lane.ends[-1])
    span = last - first
    if span <= 0:
        return []
    size = -(-span // ctx.options.chunks)
    bounds = np.minimum(first + size * np.arange(-(-span // size) + 1, dtype=np.int64), last)
    busy = np.diff(covered(lane.starts, lane.ends, bounds, first))
    length = np.diff(bounds)
    low = 100.0 * busy / length < ctx.options.threshold_pct
    edges = np.diff(np.r_[0, low.astype(np.int8), 0])
    out = []
    for a, b in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1), strict=True):
        run_busy, run_len = int(busy[a:b].sum()), int(length[a:b].sum())
        util = np.floor(100.0 * run_busy / run_len * 10 + 0.5) / 10
        detail = f"{util:.1f}% busy over {b - a} of {len(length)} chunks"
        out.append(_at(ctx, lane, int(bounds[a]), run_len, value_pct=float(util), detail=detail))
    return out
