"""The launching calls as arrays: which GPU work NVTX iterations hold, without the whole attribution.

By launch attribution (docs/nvtx.md) a range holds the GPU ops of the CUDA runtime and driver calls
(eventClass 0 or 1, joined to the ops by correlationId in the process) on its thread that start
inside it and end by its end: for a push/pop range ``start <= call start < end`` (the stack as the
call's start sees it, where a range ending at that instant is closed: nsysq.analyses.nvtx_sweep) and
``call end <= end``; for a start/end range ``start <= call start`` and ``call end <= end``
(queries/nvtx/started.sql). When the push/pop stacks nest, these are exactly the pairs the NVTX
attribution gives the range, so the iterations (ranges of one name on one thread) need no pair of the
whole attribution: the calls of the range's thread sorted by start, and one binary search per range
(:func:`held`). Each call carries the GPU time of its ops, so a group of ranges' GPU work is a sum over
its calls (queries/iters/shares.sql's figures).

:func:`read_calls` reads the calls and the GPU ops (queries/iters/call_arrays.sql, op_arrays.sql)
and joins them by (process, correlation id) with one sort; None when a call's start or end is NULL,
two calls share a launch or the ids do not fit the join's key: the caller then takes the SQL path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from nsysq.session import Session

_THREAD_BITS = 24


@dataclass(frozen=True)
class Calls:
    """The launching calls (index = call) and every GPU op's call."""

    tid: Any
    corr: Any
    s: Any
    e: Any
    gpu: Any  # the GPU time of its ops: the sum of end - start over those with both (shares.sql's sum)
    launched: Any  # it has a GPU op
    op_call: Any  # per GPU op: its call's index, -1 when it has none
    op_ns: Any  # per GPU op: max(end - start, 0) when it has both, else 0
    op_timed: Any  # per GPU op: it has a start and an end

    def thread(self, tid: int) -> Any:
        """The indices of the calls of thread ``tid``, sorted by start."""
        mine = np.flatnonzero(self.tid == tid)
        return mine[np.argsort(self.s[mine], kind="stable")]

    def pid(self, at: Any) -> Any:
        """The globalPid of calls ``at``."""
        return (self.tid[at] >> _THREAD_BITS) << _THREAD_BITS


def read_calls(trace: Session) -> Calls | None:
    """The calls with their ops' GPU time (see the module doc; None: take the SQL path)."""
    calls = trace.run_arrays("iters_call_arrays")
    if any(np.ma.isMaskedArray(calls[k]) for k in ("s", "e")):
        return None
    tid = np.asarray(calls["tid"], dtype=np.int64)
    keys = _call_keys(tid, calls["corr"])
    if keys is None:
        return None
    ops = trace.run_arrays("iters_op_arrays")
    found = _join(keys, ops.pop("pid"), ops.pop("corr"))
    del keys
    if found is None:
        return None
    gs, gs_ok = _values(ops.pop("gs"))
    ge, ge_ok = _values(ops.pop("ge"))
    timed = gs_ok & ge_ok
    raw = np.subtract(ge, gs, out=ge)
    del gs
    raw[~timed] = 0
    shifted = found + 1  # bincount's keys: 0 for the ops without a call
    gpu = np.bincount(shifted, weights=raw, minlength=len(tid) + 1)[1:]
    launched = np.bincount(shifted, minlength=len(tid) + 1)[1:] > 0
    del shifted
    return Calls(
        tid=tid, corr=calls["corr"], s=np.asarray(calls["s"], dtype=np.int64),
        e=np.asarray(calls["e"], dtype=np.int64), gpu=np.rint(gpu).astype(np.int64), launched=launched,
        op_call=found, op_ns=np.maximum(raw, 0, out=raw), op_timed=timed,
    )  # fmt: skip


def _values(column: Any) -> tuple[Any, Any]:
    """A fetched column as int64 values (0 where NULL) and its validity."""
    if np.ma.isMaskedArray(column):
        return np.asarray(column.filled(0), dtype=np.int64), ~np.ma.getmaskarray(column)
    return np.asarray(column, dtype=np.int64), np.ones(len(column), dtype=bool)


_LIMIT = 1 << 31  # the key: process number < 2^31, 0 <= correlation id < 2^32


def _call_keys(tid: Any, corr: Any) -> Any | None:
    """Each call's key (process number << 32 | correlation id); None when one does not fit."""
    keys = tid >> _THREAD_BITS
    corr = np.asarray(corr, dtype=np.int64)
    if len(keys) and (keys.min() < 0 or keys.max() >= _LIMIT or corr.min() < 0 or corr.max() >= 2 * _LIMIT):
        return None
    keys <<= 32
    keys |= corr
    return keys


def _join(keys: Any, pid: Any, corr: Any) -> Any | None:
    """Per op, the index of the call with its key (-1 for none); None when two calls share one. An op
    whose globalPid has thread bits, or whose ids do not fit the key, matches no call."""
    increasing = bool(np.all(keys[1:] > keys[:-1]))  # the usual: ids grow with time
    order = None if increasing else np.argsort(keys, kind="stable")
    if order is not None:
        keys = keys[order]
        if np.any(keys[1:] == keys[:-1]):
            return None
    pid, pid_ok = _values(pid)
    corr, corr_ok = _values(corr)
    fits = pid_ok & corr_ok & (pid & ((1 << _THREAD_BITS) - 1) == 0) & (pid >= 0) & (corr >= 0)
    fits &= (pid >> _THREAD_BITS < _LIMIT) & (corr < 2 * _LIMIT)
    op_keys = pid >> _THREAD_BITS
    del pid
    op_keys <<= 32
    op_keys |= corr
    del corr
    op_keys[~fits] = -1
    if not len(keys):
        return np.full(len(op_keys), -1, dtype=np.int64)
    at = np.searchsorted(keys, op_keys)
    np.minimum(at, len(keys) - 1, out=at)
    hit = keys[at] == op_keys
    found = at if order is None else order[at]
    found[~hit] = -1
    return found


def held(calls: Calls, order: Any, starts: Any, ends: Any, pushpop: Any) -> tuple[Any, Any]:
    """The (call, range position) pairs of ranges ``starts``/``ends`` (push/pop or start/end, per
    ``pushpop``) over the calls ``order`` (one thread's, sorted by start): see the module doc."""
    cs = calls.s[order]
    lo = np.searchsorted(cs, starts, side="left")
    hi = np.where(pushpop, np.searchsorted(cs, ends, side="left"), np.searchsorted(cs, ends, side="right"))
    lengths = np.maximum(hi - lo, 0)
    position = np.repeat(np.arange(len(starts), dtype=np.int64), lengths)
    first = np.cumsum(lengths) - lengths
    at = order[lo[position] + np.arange(len(position), dtype=np.int64) - first[position]]
    inside = (calls.e[at] <= ends[position]) & calls.launched[at]
    return at[inside], position[inside]


def gpu_of(calls: Calls, at: Any, group: Any, n: int, *, distinct: bool) -> Any:
    """Per group 0..n-1: the GPU time of the calls ``at`` paired with it (each call once per group;
    ``distinct`` False when no call can be paired twice with one group)."""
    if distinct and len(at):
        key = np.unique(group.astype(np.int64) * np.int64(len(calls.s)) + at)
        group, at = key // len(calls.s), key % len(calls.s)
    return np.rint(np.bincount(group, weights=calls.gpu[at], minlength=n)).astype(np.int64)


@dataclass(frozen=True)
class Kept:
    """The calls and which of them the iterations hold (``mask``)."""

    calls: Calls
    mask: Any

    def unattributed(self, starts: Any, ends: Any) -> dict[str, int]:
        """queries/iters/unattributed.sql's row: the GPU ops with a start and an end whose call is
        not kept, and of them those whose call started inside a window [starts[i], ends[i]]
        (ascending starts), on any thread."""
        calls = self.calls
        left = calls.op_timed & ~np.append(self.mask, False)[calls.op_call]  # op_call -1: no call
        window = np.searchsorted(starts, calls.s, side="right") - 1
        if len(starts):
            inside = (window >= 0) & (calls.s <= ends[np.maximum(window, 0)])
        else:
            inside = np.zeros(len(calls.s), dtype=bool)
        during = left & np.append(inside, False)[calls.op_call]
        return {
            "ops": int(np.count_nonzero(left)),
            "gpu_ns": int(calls.op_ns.sum(where=left)),
            "during_ops": int(np.count_nonzero(during)),
            "during_gpu_ns": int(calls.op_ns.sum(where=during)),
        }
