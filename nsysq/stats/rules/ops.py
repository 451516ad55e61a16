"""The GPU ops the rules over GPU time share (gpu_gaps, gpu_time_util, launch_bound), read once per
check run: nsys gaps' op rows (nsysq.gputime.gap_unions.read_ops: kernels, memcpys, memsets,
whole-graph executions; decoded columns on a direct read), split into one lane per (process,
device) with its starts and its ends sorted separately (nsysq.gputime.intervals), and per device
the merge of its lanes (what ``nsysq gaps`` unions). Each lane is gathered straight from the rows
into its own two arrays, one lane at a time: no temporary as large as all the ops."""

from __future__ import annotations

from concurrent.futures import Executor, Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from nsysq.gputime.intervals import Sorted
from nsysq.stats.rules.base import Context

if TYPE_CHECKING:
    from collections.abc import Iterator

    from numpy.typing import NDArray

    from nsysq.gputime.gap_unions import Part

_PID_BITS = 0xFFFFFF
_CHUNK = 1 << 18
Key = tuple[int, int]
"""A lane's (globalPid, deviceId), NULL as nsysq.gputime.gap_unions.NULL."""


@dataclass(frozen=True)
class Lane:
    """The GPU ops of one process on one device, ``pid`` and ``device`` None when NULL."""

    key: Key
    pid: int | None
    device: int | None
    ops: Sorted


def parts(ctx: Context) -> list[Part]:
    """The GPU op rows of the scope, one Part per source table, read once per check run (without
    their stream and correlation ids: launch_bound's host side reads its own, gap_unions.read_ops)."""
    from nsysq.gputime import gap_unions as gu

    if "parts" not in ctx.memo:
        ctx.memo["parts"] = gu.read_ops(ctx.trace, ids=False)
    every: list[Part] = ctx.memo["parts"]
    return every


def lanes(ctx: Context, *, windowed: bool) -> list[Lane]:
    """Every (process, device) with timed GPU ops, in (globalPid, deviceId) order (NULL first);
    with ``windowed``, the ops overlapping the window, clipped to it (as timeline keeps them)."""
    name, lo, hi = _which(ctx, windowed)
    if name not in ctx.memo:
        ctx.memo[name] = _read(parts(ctx), lo, hi)
    if isinstance(ctx.memo[name], Future):  # gathered beside the SQL rules: wait for it
        ctx.memo[name] = ctx.memo[name].result()
    every: list[Lane] = ctx.memo[name]
    return every


def gather_beside(ctx: Context, pool: Executor, *, windowed: bool) -> None:
    """Start gathering :func:`lanes` on ``pool``'s thread (numpy releases the GIL while it copies and
    sorts), once the rows are read here (reading them may run SQL, which stays on this thread)."""
    name, lo, hi = _which(ctx, windowed)
    if name not in ctx.memo:
        ctx.memo[name] = pool.submit(_read, parts(ctx), lo, hi)


def _which(ctx: Context, windowed: bool) -> tuple[str, int | None, int | None]:
    """The memo name of the lanes asked for, and the window they are clipped to."""
    lo, hi = ctx.bounds if windowed else (None, None)
    return ("lanes" if lo is None and hi is None else "windowed lanes"), lo, hi


def devices(ctx: Context) -> dict[int, Sorted]:
    """Per device with timed GPU ops (gap_unions.NULL: no deviceId), its ops in the whole scope as
    one sorted set: the merge of its lanes' (nsys gaps' per-device union)."""
    by_device: dict[int, list[Sorted]] = {}
    for lane in lanes(ctx, windowed=False):
        by_device.setdefault(lane.key[1], []).append(lane.ops)
    return {device: sets[0].merged(*sets[1:]) for device, sets in by_device.items()}


def _read(every: list[Part], lo: int | None, hi: int | None) -> list[Lane]:
    from nsysq.gputime import gap_unions as gu

    found = [_pairs(part) for part in every]
    out = []
    for key in sorted(set().union(*found)):
        s, e = _gather(every, found, key)
        if lo is not None or hi is not None:
            s, e = _clipped(s, e, lo, hi)
            if not len(s):
                continue
        pid, device = key
        decoded = None if pid == gu.NULL else (pid >> 24) & _PID_BITS
        out.append(Lane(key, decoded, None if device == gu.NULL else device, Sorted.owned(s, e)))
    return out


def idle(ops: Sorted) -> Iterator[tuple[NDArray[np.int64], NDArray[np.int64]]]:
    """The idle gaps of ``ops`` in time order (nsysq.gputime.intervals.gaps), _CHUNK ops at a time:
    each slice's temporaries are small and their memory is reused, where whole-lane ones would each
    be fresh memory (page faults) at millions of ops."""
    from nsysq.gputime.intervals import gaps

    last = len(ops) - 1
    for lo in range(0, max(last, 0), _CHUNK):
        hi = min(lo + _CHUNK, last) + 1  # the slices overlap by one op: each gap is in one slice
        yield gaps(Sorted(ops.starts[lo:hi], ops.ends[lo:hi]))


def _ids(part: Part) -> tuple[Any, Any]:
    """The part's globalPid and deviceId of its timed rows (NULL and a missing column as NULL)."""
    from nsysq.gputime import gap_unions as gu

    n = len(part.s)
    pid, dev = (np.full(n, gu.NULL, np.int64) if v is None else v for v in (part.pid, part.dev))
    return (pid, dev) if part.valid is None else (pid[part.valid], dev[part.valid])


def _pairs(part: Part) -> set[Key]:
    """The distinct (globalPid, deviceId) of the part's timed rows."""
    pid, dev = _ids(part)
    if not len(pid):
        return set()
    pids = _distinct(pid)
    if len(pids) == 1:
        return {(pids[0], d) for d in _distinct(dev)}
    return {(p, d) for p in pids for d in _distinct(dev[pid == p])}


def _distinct(values: Any) -> list[int]:
    """The distinct ``values`` in order: no pass over a column holding one value (often all)."""
    from nsysq.gputime.intervals import groups

    if values.strides == (0,) or int(values.min()) == int(values.max()):
        return [int(values[0])]
    return groups(values)


def _gather(every: list[Part], found: list[set[Key]], key: Key) -> tuple[Any, Any]:
    """The starts and ends of lane ``key``'s ops, copied into two arrays of their own."""
    chosen = [(part, _rows(part, pairs, key)) for part, pairs in zip(every, found, strict=True)]
    sizes = [len(part.s) if rows is None else int(np.count_nonzero(rows)) for part, rows in chosen]
    s, e = np.empty(sum(sizes), np.int64), np.empty(sum(sizes), np.int64)
    at = 0
    for (part, rows), size in zip(chosen, sizes, strict=True):
        for source, target in ((part.s, s), (part.e, e)):
            if rows is None:
                target[at : at + size] = source
            elif size:
                np.compress(rows, source, out=target[at : at + size])
        at += size
    return s, e


def _rows(part: Part, pairs: set[Key], key: Key) -> Any:
    """Which of the part's rows are lane ``key``'s timed ops: None for every row, else a mask (an id
    column is compared only when the part's timed rows hold more than one value of it)."""
    if key not in pairs:
        return np.zeros(len(part.s), dtype=bool)
    if pairs == {key} and part.valid is None:
        return None
    rows = np.ones(len(part.s), dtype=bool) if part.valid is None else part.valid.copy()
    for values, at in ((part.pid, 0), (part.dev, 1)):
        if values is not None and len({k[at] for k in pairs}) > 1:
            rows &= values == key[at]
    return rows


def _clipped(s: Any, e: Any, lo: int | None, hi: int | None) -> tuple[Any, Any]:
    """The ops overlapping [lo, hi) (as timeline keeps them), clipped to it."""
    keep = np.ones(len(s), dtype=bool)
    if hi is not None:
        keep &= s < hi
    if lo is not None:
        keep &= e >= lo
    s, e = s[keep], e[keep]
    if lo is not None:
        np.maximum(s, lo, out=s)
    if hi is not None:
        np.minimum(e, hi, out=e)
    return s, np.maximum(e, s, out=e)
