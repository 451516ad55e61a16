"""nsys analyze's rules over GPU time, per process and device: gpu_gaps (idle gaps longer than
--gap) and gpu_time_util (stretches of --chunks slices under --threshold % utilization). The ops
are the lanes of nsysq.stats.rules.ops (nsys gaps' rows, read once per check run, clipped to the
window); the arithmetic is on sorted numpy arrays, one pass per (process, device) lane, no loop
over rows."""

from __future__ import annotations

from typing import Any

import numpy as np

from nsysq.base.units import ms_to_ns
from nsysq.stats.rules.base import Context, Outcome, finding
from nsysq.stats.rules.ops import Lane, idle, lanes


def gpu_gaps(ctx: Context) -> Outcome:
    """Idle gaps strictly longer than --gap ms inside each lane's span (arrays until the rows kept)."""
    longer = ms_to_ns(ctx.options.gap_ms)
    cols: dict[str, list[Any]] = {"start": [], "dur": [], "lane": []}
    every = lanes(ctx, windowed=True)
    for i, lane in enumerate(every):
        for starts, ends in idle(lane.ops):
            length = ends - starts
            at = np.flatnonzero(length > longer)
            cols["start"].append(starts[at])
            cols["dur"].append(length[at])
            cols["lane"].append(np.full(len(at), i, np.int64))
    start, dur, lane_of = (np.concatenate(cols[k]) if cols[k] else np.zeros(0, np.int64) for k in cols)
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
    """For each instant of ``at`` (in increasing order), the summed time of the ops before it (sum
    of |op ∩ (-inf, t)|, concurrent ops adding up): the ops' starts before t count t - start, their
    ends before t take back t - end; relative to ``origin`` (a sum of raw timestamps would not fit
    in 64 bits), summed between consecutive instants (no copy of the ops as a whole)."""
    t = at - origin
    return _before(starts, at, t, origin) - _before(ends, at, t, origin)


def _before(values: Any, at: Any, t: Any, origin: int) -> Any:
    """For each instant of ``at``, the sum of (t - v) over the sorted ``values`` v before it."""
    n = np.searchsorted(values, at, side="left")
    cuts = np.r_[0, n]
    sums = np.cumsum([int((values[a:b] - origin).sum()) for a, b in zip(cuts[:-1], cuts[1:], strict=True)])
    return n * t - np.asarray(sums, dtype=np.int64)


def gpu_time_util(ctx: Context) -> Outcome:
    """Per lane, its span cut in --chunks slices of ceil(span / chunks) ns (the last clipped); the
    slices under --threshold % (the ops' summed overlap over the slice's length), merged when
    consecutive, with their length-weighted utilization rounded to 1 decimal."""
    found = []
    for lane in lanes(ctx, windowed=True):
        found += _low_stretches(ctx, lane)
    return _sorted_outcome("gpu_time_util", found, ctx.options.row_limit)


def _low_stretches(ctx: Context, lane: Lane) -> list[dict[str, Any]]:
    starts, ends = lane.ops.starts, lane.ops.ends
    first, last = int(starts[0]), int(ends[-1])
    span = last - first
    if span <= 0:
        return []
    size = -(-span // ctx.options.chunks)
    bounds = np.minimum(first + size * np.arange(-(-span // size) + 1, dtype=np.int64), last)
    busy = np.diff(covered(starts, ends, bounds, first))
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
