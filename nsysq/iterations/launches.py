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
and joins them by their launch key (process, correlation id) with one sorted search (the calls'
decoded columns are freed once read); None when a call's start or end is NULL, two calls share a
launch or the ids do not fit the key: the caller then takes the SQL path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from nsysq.analyses import nvtx_native
from nsysq.analyses.nvtx_sweep import CALL_COLUMNS, GPU_COLUMNS, launch_rows
from nsysq.base.sorting import KeyIndex, ascending, lexsorted
from nsysq.base.sums import sum_by
from nsysq.base.threads import Background
from nsysq.export import schema

if TYPE_CHECKING:
    from nsysq.session import Session

_THREAD_BITS = 24


@dataclass(frozen=True)
class Calls:
    """The launching calls (index = call) and every GPU op's call."""

    tid: Any
    key: Any  # (process number << 32) | correlation id (queries/iters/call_arrays.sql)
    s: Any
    e: Any
    gpu: Any  # the GPU time of its ops: the sum of end - start over those with both (shares.sql's sum)
    launched: Any  # it has a GPU op
    op_call: Any  # per GPU op: its call's index, -1 when it has none
    op_ns: Any  # per GPU op: max(end - start, 0) when it has both, else 0
    op_timed: Any  # per GPU op: it has a start and an end
    threads: dict[int, Any] = field(default_factory=dict, compare=False, repr=False)  # thread()'s

    def thread(self, tid: int) -> Any:
        """The indices of the calls of thread ``tid``, sorted by start (found once per thread: the
        shares ask per level, the iterations once more)."""
        found = self.threads.get(tid)
        if found is None:
            found = self.threads[tid] = _thread_calls(self.tid, self.s, tid)
        return found

    def launches(self, at: Any) -> dict[str, Any]:
        """The (globalPid, correlationId) of calls ``at``."""
        key = self.key[at]
        return {"globalPid": (key >> 32) << _THREAD_BITS, "correlationId": key & 0xFFFFFFFF}


def _thread_calls(tids: Any, starts: Any, tid: int) -> Any:
    """The indices of the calls of thread ``tid`` (``tids``: each call's), sorted by ``starts``."""
    mine = np.flatnonzero(tids == tid)
    at = starts[mine]
    if ascending(at):  # the usual: read in start order
        return mine
    return mine[np.argsort(at, kind="stable")]


def read_calls(trace: Session) -> Calls | None:
    """The calls with their ops' GPU time (see the module doc; None: take the SQL path)."""
    fetched = fetch_calls(trace)
    if fetched is not None:
        return calls_from(fetched)
    calls = _decoded_calls(trace)
    if calls is None:
        calls = trace.run_arrays("iters_call_arrays")
    else:
        trace.note_query("iters_call_arrays", DECODED_NOTE)
    _release_calls(trace)
    ops = trace.run_arrays("iters_op_arrays")
    return _joined(calls, ops.pop("k"), ops.pop("d"))


def _release_calls(trace: Session) -> None:
    """Let go of the runtime table's decoded columns (memory: a later query that reads it decodes
    it again), the trace's span read first: the table's t0 reads them (every iters row counts from it)."""
    _ = trace.span
    trace.release_columns(schema.RUNTIME)


def _joined(calls: dict[str, Any], op_keys: Any, op_ns: Any) -> Calls | None:
    """The Calls from call_arrays.sql's columns and op_arrays.sql's k and d (None: see read_calls)."""
    if any(np.ma.isMaskedArray(calls[k]) for k in ("k", "s", "e")):
        return None
    keys = np.asarray(calls["k"], dtype=np.int64)
    found = _join(keys, op_keys)
    if found is None:
        return None
    raw, timed = _values(op_ns)
    n = len(keys)
    slot = found if n == 0 or found.min() >= 0 else np.where(found >= 0, found, n)  # n: no call
    gpu = sum_by(slot, raw, n + 1)[:n]
    launched = np.zeros(n + 1, dtype=bool)
    launched[slot] = True
    del slot
    launched = launched[:n]
    return Calls(
        tid=np.asarray(calls["tid"], dtype=np.int64), key=keys, s=np.asarray(calls["s"], dtype=np.int64),
        e=np.asarray(calls["e"], dtype=np.int64), gpu=gpu, launched=launched,
        op_call=found, op_ns=np.maximum(raw, 0, out=raw), op_timed=timed,
    )  # fmt: skip


@dataclass
class FetchedCalls:
    """The decoded columns :func:`calls_from` reads: the runtime table's and, per GPU-op table, its
    start, end, correlationId and globalPid (values, NULL mask or None)."""

    calls: dict[str, tuple[Any, Any]]
    ops: list[dict[str, tuple[Any, Any]]]


_OP_TABLES = (schema.KERNEL, schema.MEMCPY, schema.MEMSET, schema.GRAPH_TRACE)
#: The GPU ops' columns queries/iters/ops.sql reads (names only of kernels).
_ITER_OP_COLUMNS = ("start", "end", "deviceId", "shortName", "demangledName")


#: ops.sql's columns, as Kept.ops gives them.
_OPS_COLUMNS = ("it", "kind", "dev", "s", "e", "sid", "did")


def _op_part(out: dict[str, Any], columns: dict[str, tuple[Any, Any]], rows: Any, n: int, kind: int) -> None:
    """ops.sql's columns for ``rows`` of one GPU-op table (``kind``: its position in _OP_TABLES),
    written into ``out``'s arrays (as long as ``rows``; "it" is written by the caller)."""

    def column(name: str, dst: Any) -> None:
        """Column ``name`` into ``dst``: NULL (or a column the table lacks) as -1, as the query's COALESCE."""
        if name not in columns:
            dst[:] = -1
            return
        values, nulls = columns[name]
        values = np.broadcast_to(np.asarray(values), (n,))
        if values.dtype == dst.dtype:
            np.take(values, rows, out=dst)
        else:
            dst[:] = values[rows]
        if nulls is not None:
            dst[np.broadcast_to(np.asarray(nulls, dtype=bool), (n,))[rows]] = -1

    out["kind"][:] = kind
    for name, key in (("start", "s"), ("end", "e"), ("deviceId", "dev")):
        column(name, out[key])
    np.maximum(out["e"], out["s"], out=out["e"])
    for name, key in (("shortName", "sid"), ("demangledName", "did")):
        if kind == 0:  # the query reads the names of kernels alone
            column(name, out[key])
        else:
            out[key][:] = -1


def fetch_calls(trace: Session) -> FetchedCalls | None:
    """On an unscoped read with every table read as arrays (from the pages, or the cached copy:
    Session.decoded_arrays): the columns of call_arrays.sql and op_arrays.sql (this thread: the
    session is read here), the session letting go of the runtime table's at once (memory). None
    otherwise: read_calls takes the SQL."""
    fetched = _fetched([trace.decoded_arrays(t, columns) for t, columns in _reads(trace)])
    if fetched is None:
        return None
    trace.note_query("iters_call_arrays", DECODED_NOTE)
    trace.note_query("iters_op_arrays", DECODED_NOTE)
    _release_calls(trace)
    return fetched


def calls_decoding(trace: Session) -> Background[Calls | None] | None:
    """:func:`calls_from` on a thread of its own, started now and run as soon as the background
    decode (``Session.prefetch``) has read the columns :func:`fetch_calls` fetches; None when it
    does not read them all (then fetch_calls, and calls_from, once the calls are needed). Its None:
    the decode failed or a column is missing (then read_calls, on the session's thread). The
    session's own read of those columns (:func:`fetch_calls`) still follows, for its checks,
    notes and release."""
    waits = [trace.decoding_arrays(t, columns) for t, columns in _reads(trace)]
    ready = [w for w in waits if w is not None]
    if len(ready) != len(waits):
        return None

    def joined() -> Calls | None:
        fetched = _fetched([wait() for wait in ready])
        return None if fetched is None else calls_from(fetched)

    return Background(joined)


def _reads(trace: Session) -> list[tuple[str, tuple[str, ...]]]:
    """The (table, columns) fetch_calls reads: the runtime table's calls, then each GPU-op table's."""
    ops = [(t, GPU_COLUMNS) for t in _OP_TABLES if trace.schema.has(t)]
    return [(schema.RUNTIME, CALL_COLUMNS), *ops]


def _fetched(found: list[dict[str, Any] | None]) -> FetchedCalls | None:
    """The FetchedCalls of what was read for :func:`_reads` (in its order); None when a table's
    read gave no arrays or not every column."""
    calls, *ops = found
    if calls is None or len(calls) != len(CALL_COLUMNS):
        return None
    complete = [o for o in ops if o is not None and len(o) == len(GPU_COLUMNS)]
    return FetchedCalls(calls, complete) if len(complete) == len(ops) else None


def calls_from(fetched: FetchedCalls) -> Calls | None:
    """read_calls' Calls from the fetched columns, by numpy and the native join alone (it may run on
    a thread of its own): call_arrays.sql's and op_arrays.sql's columns computed as they compute
    them."""
    native = _native_calls(fetched)
    if native is not None:
        fetched.calls, fetched.ops = {}, []
        return native
    return numpy_calls(fetched)


def numpy_calls(fetched: FetchedCalls) -> Calls | None:
    """calls_from's Calls by numpy alone (where the native join does not answer)."""
    calls = _call_columns(fetched.calls)
    keys, durations = _op_columns(fetched.ops)
    fetched.calls, fetched.ops = {}, []
    return _joined(calls, keys, durations)


def _native_calls(fetched: FetchedCalls) -> Calls | None:
    """calls_from's Calls by the native join (nsysq.analyses.nvtx_native: call_keys, launch_ops)
    when no column it reads holds a NULL and the calls' keys fit and increase; None otherwise (or
    when it is not built): numpy answers, and decides."""
    tables = [fetched.calls, *fetched.ops]
    if any(nulls is not None and np.asarray(nulls, bool).any() for t in tables for _, nulls in t.values()):
        return None
    m = fetched.calls["start"][0].shape[0]
    rows = launch_rows(fetched.calls, m)

    def pick(column: str) -> Any:
        values = np.broadcast_to(np.asarray(fetched.calls[column][0]), (m,))
        return np.ascontiguousarray(values if rows is None else values[rows])

    tid = np.asarray(pick("globalTid"), dtype=np.int64)
    keys = nvtx_native.call_keys(tid, pick("correlationId"))
    if keys is None:
        return None
    index = KeyIndex(keys)
    ops = [(t["globalPid"][0], t["correlationId"][0], t["start"][0], t["end"][0]) for t in fetched.ops]
    joined = nvtx_native.launch_ops(keys, index.table, index.low, ops)
    if joined is None:
        return None
    s, e = (np.asarray(pick(c), dtype=np.int64) for c in ("start", "end"))
    return Calls(
        tid=tid, key=keys, s=s, e=e, gpu=joined.call_gpu, launched=joined.launched.view(bool),
        op_call=joined.op_call, op_ns=joined.op_ns, op_timed=np.broadcast_to(True, (len(joined.op_call),)),
    )  # fmt: skip


def _op_columns(tables: list[dict[str, tuple[Any, Any]]]) -> tuple[Any, Any]:
    """op_arrays.sql's k and d over the GPU-op tables one after the other (masked where NULL),
    written _RUN rows at a time (no temporary as long as a table: memory)."""
    total = sum(t["start"][0].shape[0] for t in tables)
    key, duration = np.zeros(total, np.int64), np.zeros(total, np.int64)
    no_key, no_duration = np.zeros(total, bool), np.zeros(total, bool)
    at = 0
    for found in tables:
        n = found["start"][0].shape[0]
        for a in range(0, n, _RUN):
            b = min(a + _RUN, n)
            out = slice(at + a, at + b)
            part = {c: _part(found[c], n, a, b) for c in GPU_COLUMNS}
            (pid, pid_null), (corr, corr_null) = part["globalPid"], part["correlationId"]
            fits = (
                (pid & 16777215 == 0)
                & (pid >= 0)
                & (pid >> 24 < (1 << 31))
                & (corr >= 0)
                & (corr < (1 << 32))
            )
            no_key[out] = pid_null | corr_null | ~fits
            key[out] = ((pid >> 24) << 32) | corr
            np.subtract(part["end"][0], part["start"][0], out=duration[out])
            no_duration[out] = part["start"][1] | part["end"][1]
        at += n
    key[no_key] = 0
    duration[no_duration] = 0
    return _masked(key, no_key), _masked(duration, no_duration)


_RUN = 1 << 20


def _part(column: tuple[Any, Any], n: int, a: int, b: int) -> tuple[Any, Any]:
    """Rows [a, b) of a decoded column (values, NULL mask or None; ``n`` rows, a value may stand
    for them all) as int64 values and a NULL mask."""
    values, nulls = column
    part = np.broadcast_to(np.asarray(values), (n,))[a:b].astype(np.int64)
    null = np.zeros(b - a, bool) if nulls is None else np.broadcast_to(np.asarray(nulls, bool), (n,))[a:b]
    return part, null


def _masked(values: Any, null: Any) -> Any:
    return np.ma.masked_array(values, null) if null.any() else values


DECODED_NOTE = "read from the decoded columns (nsysq.iterations.launches); this query gives the same rows"


def _decoded_calls(trace: Session) -> dict[str, Any] | None:
    """queries/iters/call_arrays.sql's columns (tid, k, s, e; masked where NULL, in row order) from
    the runtime table's decoded columns on a direct read (views of them where it can: memory);
    None when it is not one."""
    found = trace.decoded_arrays(schema.RUNTIME, CALL_COLUMNS)
    if found is None or len(found) != len(CALL_COLUMNS):
        return None
    return _call_columns(found)


def _call_columns(found: dict[str, tuple[Any, Any]]) -> dict[str, Any]:
    """call_arrays.sql's columns from the runtime table's decoded ones (numpy alone)."""
    rows = launch_rows(found, found["start"][0].shape[0])

    def pick(column: str) -> tuple[Any, Any]:
        values, nulls = found[column]
        values = np.asarray(values, dtype=np.int64)
        valid = None if nulls is None else ~np.asarray(nulls, dtype=bool)
        if rows is None:
            return values, valid
        return values[rows], None if valid is None else valid[rows]

    (tid, _), (corr, _) = pick("globalTid"), pick("correlationId")
    out = {"tid": tid, "k": _launch_keys(tid, corr)}
    for name, column in (("s", "start"), ("e", "end")):
        values, valid = pick(column)
        out[name] = values if valid is None or valid.all() else np.ma.masked_array(values, ~valid)
    return out


def _launch_keys(tid: Any, corr: Any) -> Any:
    """call_arrays.sql's k: (globalTid >> 24) << 32 | correlationId, masked where either does not fit."""
    key = tid >> 24
    key <<= 32
    key |= corr
    if not len(tid) or (
        tid.min() >= 0 and tid.max() >> 24 < 1 << 31 and corr.min() >= 0 and corr.max() < 1 << 32
    ):
        return key
    fits = (tid >= 0) & ((tid >> 24) < (1 << 31)) & (corr >= 0) & (corr < (1 << 32))
    return np.ma.masked_array(key, ~fits)


def _values(column: Any) -> tuple[Any, Any]:
    """A fetched column as int64 values (0 where NULL) and its validity."""
    if np.ma.isMaskedArray(column):
        return np.asarray(column.filled(0), dtype=np.int64), ~np.ma.getmaskarray(column)
    return np.asarray(column, dtype=np.int64), np.ones(len(column), dtype=bool)


def _join(keys: Any, op_keys: Any) -> Any | None:
    """Per op, the index of the call with its key (-1 for none: a NULL key matches no call); None
    when two calls share one."""
    increasing = bool(np.all(keys[1:] > keys[:-1]))  # the usual: ids grow with time
    order = None if increasing else np.argsort(keys, kind="stable")
    if order is not None:
        keys = keys[order]
        if np.any(keys[1:] == keys[:-1]):
            return None
    wanted = np.asarray(op_keys.filled(-1) if np.ma.isMaskedArray(op_keys) else op_keys, dtype=np.int64)
    at = KeyIndex(keys).find(wanted)
    if order is None:
        return at
    hit = at >= 0
    at[hit] = order[at[hit]]
    return at


def held(calls: Calls, order: Any, starts: Any, ends: Any, pushpop: Any) -> tuple[Any, Any]:
    """The (call, range position) pairs of ranges ``starts``/``ends`` (push/pop or start/end, per
    ``pushpop``) over the calls ``order`` (one thread's, sorted by start): see the module doc."""
    cs = calls.s[order]
    lo = search(cs, starts, "left")
    hi = _ends_at(cs, ends, pushpop)
    lengths = np.maximum(hi - lo, 0)
    position = np.repeat(np.arange(len(starts), dtype=np.int64), lengths)
    first = np.cumsum(lengths) - lengths
    at = order[lo[position] + np.arange(len(position), dtype=np.int64) - first[position]]
    inside = (calls.e[at] <= ends[position]) & calls.launched[at]
    return at[inside], position[inside]


def held_gpu(calls: Calls, order: Any, starts: Any, ends: Any) -> Any | None:
    """Per push/pop range of ``starts``/``ends``: the GPU time of the calls it holds (:func:`held`'s
    pairs summed), by prefix sums over the calls ``order`` (one thread's, sorted by start); None
    when the calls' ends are not sorted too (calls of one thread that overlap: use :func:`held`)."""
    ce = calls.e[order]
    if not ascending(ce):
        return None
    # held(): start <= call start < end and call end <= end; with the ends sorted, the calls ending
    # by ``end`` are a prefix, so a range holds the calls lo <= i < min(hi, by_end).
    cs = calls.s[order]
    lo = search(cs, starts, "left")
    hi = np.minimum(search(cs, ends, "left"), search(ce, ends, "right"))
    del cs, ce
    total = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(calls.gpu[order], out=total[1:])
    return np.where(hi > lo, total[np.maximum(hi, lo)] - total[lo], 0)


def _ends_at(cs: Any, ends: Any, pushpop: Any) -> Any:
    """Per range, the first call (of ``cs``, sorted starts) past its end: a push/pop range holds
    calls starting before its end, a start/end range those starting at it too."""
    if pushpop.all():
        return search(cs, ends, "left")
    if not pushpop.any():
        return search(cs, ends, "right")
    return np.where(pushpop, search(cs, ends, "left"), search(cs, ends, "right"))


def search(haystack: Any, needles: Any, side: Literal["left", "right"]) -> Any:
    """``np.searchsorted(haystack, needles, side=side)``, the needles sorted first when they are
    many: binary searches in sorted order walk the haystack's memory in order (the ranges come in
    runs sorted by start, one per group, so the sort is cheap; 5x faster on 262,500 ranges over
    750,000 calls)."""
    if len(needles) < 4096:
        return np.searchsorted(haystack, needles, side=side)
    order = np.argsort(needles, kind="stable")
    out = np.empty(len(needles), dtype=np.intp)
    out[order] = np.searchsorted(haystack, needles[order], side=side)
    return out


def gpu_of(calls: Calls, at: Any, group: Any, n: int, *, distinct: bool) -> Any:
    """Per group 0..n-1: the GPU time of the calls ``at`` paired with it (each call once per group;
    ``distinct`` False when no call can be paired twice with one group)."""
    if distinct and len(at):
        key = np.unique(group.astype(np.int64) * np.int64(len(calls.s)) + at)
        group, at = key // len(calls.s), key % len(calls.s)
    return sum_by(group, calls.gpu[at], n)


@dataclass(frozen=True)
class Kept:
    """The calls and which of them the iterations hold (``mask``); ``it``: per call the iteration
    that holds it (-1: none), None when one call is held by two (ranges of one name nested)."""

    calls: Calls
    mask: Any
    it: Any | None = None

    def ops(self, trace: Session) -> dict[str, Any] | None:
        """queries/iters/ops.sql's columns (it, kind, dev, s, e, sid, did; by iteration, then
        start) from the calls and the GPU ops' columns read as the calls were (None: by the query,
        when a call is held twice or the columns are not read as arrays). Every op of a held call
        with a start and an end, in its call's iteration: the query's join on the launch."""
        calls = self.calls
        tables = [t for t in _OP_TABLES if trace.schema.has(t)]
        if self.it is None or schema.GRAPH_TRACE in tables:
            return None
        found = [trace.decoded_arrays(t, _ITER_OP_COLUMNS) for t in tables]
        sizes = [f["start"][0].shape[0] if f is not None and "start" in f else -1 for f in found]
        if any(f is None for f in found) or sum(sizes) != len(calls.op_call):
            return None
        chosen = np.flatnonzero(self.mask[calls.op_call])  # an op_call of -1 reads the last call:
        chosen = chosen[(calls.op_call[chosen] >= 0) & calls.op_timed[chosen]]  # those are dropped here
        firsts = np.cumsum([0, *sizes])  # each table's first op
        bounds = np.searchsorted(chosen, firsts)  # chosen increases: a slice of it per table
        out = {c: np.empty(len(chosen), dtype=np.int64) for c in _OPS_COLUMNS}
        for k, (table, columns) in enumerate(zip(tables, found, strict=True)):
            assert columns is not None
            a, b = int(bounds[k]), int(bounds[k + 1])
            part = {c: values[a:b] for c, values in out.items()}
            part["it"][:] = self.it[calls.op_call[chosen[a:b]]]
            _op_part(part, columns, chosen[a:b] - firsts[k], sizes[k], _OP_TABLES.index(table))
        order = lexsorted((out["it"], out["s"]))
        return {c: values[order] for c, values in out.items()}

    def unattributed(self, starts: Any, ends: Any) -> dict[str, int]:
        """queries/iters/unattributed.sql's row: the GPU ops with a start and an end whose call is
        not kept, and of them those whose call started inside a window [starts[i], ends[i]]
        (ascending starts), on any thread."""
        calls = self.calls
        left = calls.op_timed & ~np.append(self.mask, False)[calls.op_call]  # op_call -1: no call
        inside = np.zeros(len(calls.s) + 1, dtype=bool)  # the last: no call
        if len(starts):
            _started_inside(calls.s, np.asarray(starts), np.asarray(ends), inside[:-1])
        during = left & inside[calls.op_call]
        return {
            "ops": int(np.count_nonzero(left)),
            "gpu_ns": int(calls.op_ns.sum(where=left)),
            "during_ops": int(np.count_nonzero(during)),
            "during_gpu_ns": int(calls.op_ns.sum(where=during)),
        }


def _started_inside(s: Any, starts: Any, ends: Any, out: Any) -> None:
    """``out[i]``: ``s[i]`` lies in the window of the last of ``starts`` (ascending) at or before it,
    ``starts[j] <= s[i] <= ends[j]``. Calls in start order (the usual) take a slice per window:
    window j holds the calls from its start up to the next window's start, those ending by its end.
    Otherwise a binary search per call, a run at a time (no temporary as long as the calls)."""
    if ascending(s):
        following = np.append(np.searchsorted(s, starts[1:], side="left"), len(s))
        lo = np.searchsorted(s, starts, side="left")
        hi = np.minimum(following, np.searchsorted(s, ends, side="right"))
        edges = np.zeros(len(s) + 1, dtype=np.int8)  # +1 where a window's calls begin, -1 past them
        held = hi > lo  # the windows' slices are disjoint: the running sum is 0 or 1
        np.add.at(edges, lo[held], 1)
        np.add.at(edges, hi[held], -1)
        np.cumsum(edges[:-1], dtype=np.int8, out=edges[:-1])
        np.not_equal(edges[:-1], 0, out=out)
        return
    for a in range(0, len(s), _RUN):
        part = s[a : a + _RUN]
        window = np.searchsorted(starts, part, side="right")
        window -= 1
        out[a : a + len(part)] = window >= 0
        np.maximum(window, 0, out=window)
        out[a : a + len(part)] &= part <= ends[window]
