"""NVTX attribution as one sorted pass (numpy), for push/pop stacks that nest.

The packaged queries of nsysq.analyses.nvtx build the projection in SQL: the sweep of stack
boundaries (queries/nvtx/marks.sql), each range's level and parent (stack.sql), every launching
call's innermost range by an ASOF join (inner.sql), its ancestors (ancestors.sql, pairs.sql) and the
per-range sums (per_range.sql). This module gives the same rows with sorts and binary searches over
numpy arrays, in the same order of boundaries and with the same rules (ends before starts at equal
timestamps, outer starts first, the stack as a call's start sees it, a call that outlasts its
innermost range goes to the deepest enclosing range that outlasts it):

* the boundaries of every kept push/pop range, sorted per (thread, domain) as marks.sql sorts them;
  the depth is their running sum (each stack sums to zero, so one cumulative sum serves every
  stack);
* a range's parent: the last range pushed one level up before it on its stack (one sort of the
  pushes by (level, position) and a binary search per push), exactly stack.sql's ASOF join;
* per launching call and stack on its thread: the last boundary at or before the call's start (a
  binary search in that stack's boundaries), whose innermost range is the call's unless the call
  outlasts it;
* the (operation, range) pairs: that range and its ancestors, one level per step; the per-range
  sums from the pairs sorted by (range, GPU start, GPU end), the busy time by a running maximum of
  ends that each range's offset keeps from reaching into the next.

Start/end ranges sit on no stack: their pairs come from queries/nvtx/started.sql. When push/pop
ranges do not nest (``unnested`` > 0; never in a real NVTX stack) the caller keeps the SQL path.
The SQL each step replaces is recorded for ``--show-sql`` (``Session.keep_arrays`` /
``note_materialized``), so the script reproduces the same rows with DuckDB alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from nsysq.base.sorting import KeyIndex, coded, lexsorted, place_rows
from nsysq.base.threads import side_by_side

if TYPE_CHECKING:
    from nsysq.session import Session

NOTE = "computed by one sorted pass (nsysq.analyses.nvtx_sweep); this query gives the same rows"
OPS_NOTE = "joined from the decoded columns (nsysq.analyses.nvtx_sweep); this query gives the same rows"
_I64_SAFE = 1 << 62


@dataclass
class Stacks:
    """Every range row (index = rid - 1) and the push/pop stacks' boundaries, sorted."""

    tid: Any
    dom: Any
    start: Any
    end: Any
    kept: Any
    pushpop: Any
    lvl: Any  # nesting level of every kept range (-1 for a range not kept)
    prid: Any  # index of the parent range, -1 for none
    unnested: int
    ev_ts: Any  # boundaries, sorted per stack as marks.sql does
    ev_depth: Any  # None once the levels are set (build_stacks)
    ev_inner: Any  # the innermost open range after the boundary (index; -1 when the stack is empty)
    groups: list[tuple[int, int, int, int]]  # (tid, dom, first boundary, end) per stack


def build_stacks(trace: Session, arrays: dict[str, Any] | None = None) -> Stacks:
    """The stacks of nsysq_nvtx_ranges (built by nvtx.require_ranges), from queries/nvtx/range_arrays.sql's
    columns (read from the table unless given as ``arrays``)."""
    import numpy as np

    arr = range_arrays(trace, arrays)
    tid = np.asarray(arr["tid"], dtype=np.int64)
    dom = np.asarray(arr["dom"], dtype=np.int64)
    start = np.asarray(arr["start"], dtype=np.int64)
    end = np.asarray(arr["end"], dtype=np.int64)
    kept = np.asarray(arr["kept"], dtype=bool)
    pushpop = np.asarray(arr["pushpop"], dtype=bool)
    n = len(tid)
    pp = np.flatnonzero(kept & pushpop)
    # ranges are in rid order, which sorts by thread and domain first: each stack is contiguous
    change = np.ones(len(pp), dtype=bool)
    change[1:] = (tid[pp][1:] != tid[pp][:-1]) | (dom[pp][1:] != dom[pp][:-1])
    gid = np.cumsum(change) - 1
    zero = end[pp] == start[pp]
    m = n + 1
    small = np.int32 if m < (1 << 31) - 1 else np.int64  # range indexes and stack numbers (memory)
    ev_range = np.concatenate([pp, pp]).astype(small)
    ev_g = np.concatenate([gid, gid]).astype(small)
    del gid, change
    ev_ts = np.concatenate([start[pp], end[pp]])
    # marks.sql's (grp, sub): ends (0, -rid) before starts (1, 2 rid); a zero-length end (1, 2 rid + 1)
    sub = np.int32 if 6 * m < (1 << 31) else np.int64  # the keys lie in [1, 6 m) (memory)
    sub_start = (3 * m + 2 * pp + m).astype(sub)
    sub_end = np.where(zero, 3 * m + 2 * pp + 1 + m, -pp + m).astype(sub)
    ev_sub = np.concatenate([sub_start, sub_end])
    del sub_start, sub_end, zero
    ev_d = np.concatenate([np.ones(len(pp), np.int8), -np.ones(len(pp), np.int8)])
    order = lexsorted((ev_g, ev_ts, ev_sub))
    del ev_sub
    ev_range = ev_range[order]  # one at a time: each column's old order goes before the next (memory)
    ev_g = ev_g[order]
    ev_ts = ev_ts[order]
    ev_d = ev_d[order]
    del order
    depth = np.cumsum(ev_d, dtype=np.int64)
    lvl = np.full(n, -1, dtype=np.int64)
    prid = np.full(n, -1, dtype=small)  # as the boundaries' range indexes: their innermost ranges too
    pushes = np.flatnonzero(ev_d == 1)
    lvl[ev_range[pushes]] = depth[pushes] - 1
    _parents(pushes, depth[pushes] - 1, ev_g, ev_range, prid)
    ends = np.flatnonzero(ev_d == -1)
    unnested = int(np.count_nonzero(depth[ends] != lvl[ev_range[ends]]))
    ev_inner = np.where(ev_d == 1, ev_range, prid[ev_range])
    ev_inner[depth == 0] = -1
    bounds = np.flatnonzero(np.diff(ev_g)) + 1 if len(ev_g) else np.zeros(0, np.int64)
    firsts = np.concatenate([[0], bounds]).astype(np.int64) if len(ev_g) else np.zeros(0, np.int64)
    lasts = np.concatenate([bounds, [len(ev_g)]]).astype(np.int64) if len(ev_g) else np.zeros(0, np.int64)
    groups = stack_groups(tid, dom, ev_range[firsts], firsts, lasts)
    stacks = Stacks(tid, dom, start, end, kept, pushpop, lvl, prid, unnested, ev_ts, depth, ev_inner, groups)
    start_end_levels(stacks)
    return stacks


def stack_groups(
    tid: Any, dom: Any, first_range: Any, firsts: Any, lasts: Any
) -> list[tuple[int, int, int, int]]:
    """Stacks.groups: per stack (its first boundary's range, first boundary, end), its (thread,
    domain, first boundary, end)."""
    return [
        (int(tid[r]), int(dom[r]), int(a), int(b)) for r, a, b in zip(first_range, firsts, lasts, strict=True)
    ]


def range_arrays(trace: Session, arrays: dict[str, Any] | None) -> dict[str, Any]:
    """build_stacks' input: queries/nvtx/range_arrays.sql's columns (``arrays`` when given)."""
    return arrays if arrays is not None else trace.run_arrays("nvtx_range_arrays", record=False)


def _parents(pushes: Any, levels: Any, ev_g: Any, ev_range: Any, prid: Any) -> None:
    """stack.sql's parent: the last push one level up at or before each push, on the same stack.
    Each level's pushes (ascending positions) are taken by one pass over the levels, and a child's
    parent found by one binary search among the level above's (stacks up to _FEW_LEVELS deep;
    deeper ones by one sort of (level, position) keys)."""
    import numpy as np

    if not len(pushes):
        return
    top = int(levels.max())
    if top > _FEW_LEVELS:
        _parents_by_key(pushes, levels, ev_g, ev_range, prid)
        return
    above = pushes[levels == 0]
    for level in range(1, top + 1):
        child = pushes[levels == level]
        j = np.searchsorted(above, child, side="left")
        j -= 1
        ok = j >= 0
        np.maximum(j, 0, out=j)
        parent = above[j]
        ok &= ev_g[parent] == ev_g[child]
        prid[ev_range[child[ok]]] = ev_range[parent[ok]]
        above = child


_FEW_LEVELS = 64  # a pass over the pushes per level, up to this deep


def _parents_by_key(pushes: Any, levels: Any, ev_g: Any, ev_range: Any, prid: Any) -> None:
    """:func:`_parents` by one sort of (level, position) keys, for stacks deeper than _FEW_LEVELS."""
    import numpy as np

    span = int(len(ev_g)) + 1
    key = levels * span + pushes
    order = np.argsort(key, kind="stable")
    skey = key[order]
    del key  # memory: each temporary goes once used (millions of pushes)
    child = np.flatnonzero(levels > 0)
    needle = levels[child] - 1
    needle *= span
    needle += pushes[child]
    j = np.searchsorted(skey, needle, side="left")
    del skey, needle
    j -= 1
    ok = j >= 0
    np.maximum(j, 0, out=j)
    parent_at = order[j]
    del order, j
    parent_push = pushes[parent_at]
    ok &= levels[parent_at] == levels[child] - 1
    del parent_at
    ok &= ev_g[parent_push] == ev_g[pushes[child]]
    prid[ev_range[pushes[child[ok]]]] = ev_range[parent_push[ok]]


def start_end_levels(st: Stacks) -> None:
    """stack.sql's level of a start/end range: the push/pop ranges of its domain open on its thread
    when it starts (the stack as the last boundary at or before its start leaves it). The stacks'
    depths, read here alone, then go (memory)."""
    import numpy as np

    se = np.flatnonzero(st.kept & ~st.pushpop)
    where = {(t, d): (a, b) for t, d, a, b in st.groups}
    keys = np.stack([st.tid[se], st.dom[se]], axis=1)
    st.lvl[se] = 0
    for t, d in {(int(a), int(b)) for a, b in keys}:
        if (t, d) not in where:
            continue
        a, b = where[(t, d)]
        rows = se[(st.tid[se] == t) & (st.dom[se] == d)]
        pos = np.searchsorted(st.ev_ts[a:b], st.start[rows], side="right") - 1
        seen = pos >= 0
        st.lvl[rows[seen]] = st.ev_depth[a + pos[seen]]
    st.ev_depth = None


@dataclass
class Ops:
    oid: Any  # None when not kept: the op's index + 1
    kind: Any
    gs: Any
    ge: Any
    called: Any
    tid: Any  # the launching call's globalTid, start and end; None when ``calls`` stands for them
    s: Any
    e: Any
    calls: OpCalls | None = None  # per op its call, and the calls' columns (memory: no copy per op)


@dataclass
class OpCalls:
    """The launching calls of the ops (:class:`Ops` ``calls``): ``of`` per op its call (-1: none),
    per call its start ``s``, end ``e`` and thread as a code (``thread``) into ``threads`` (the
    distinct globalTids, sorted)."""

    of: Any
    s: Any
    e: Any
    thread: Any
    threads: Any


def call_starts(ops: Ops, at: Any) -> Any:
    """The launching calls' starts of ops ``at`` (ops with a call)."""
    return ops.s[at] if ops.calls is None else ops.calls.s[ops.calls.of[at]]


def call_ends(ops: Ops, at: Any) -> Any:
    """The launching calls' ends of ops ``at`` (ops with a call)."""
    return ops.e[at] if ops.calls is None else ops.calls.e[ops.calls.of[at]]


def read_ops(trace: Session) -> Ops | None:
    """nsysq_nvtx_ops as arrays (None when a GPU interval is NULL: the SQL path handles that)."""
    import numpy as np

    arr = trace.run_arrays("nvtx_op_arrays", record=False)
    if any(np.ma.isMaskedArray(v) for v in arr.values()):
        return None
    return Ops(
        np.asarray(arr["oid"], dtype=np.int64),
        np.asarray(arr["kind"], dtype=np.int8),
        np.asarray(arr["gs"], dtype=np.int64),
        np.asarray(arr["ge"], dtype=np.int64),
        np.asarray(arr["called"], dtype=bool),
        np.asarray(arr["tid"], dtype=np.int64),
        np.asarray(arr["s"], dtype=np.int64),
        np.asarray(arr["e"], dtype=np.int64),
    )


def attributed_pairs(st: Stacks, ops: Ops, *, innermost: bool) -> tuple[Any, Any, Any]:
    """inner.sql's push/pop rows, with every ancestor unless ``innermost`` (pairs.sql): (op index,
    range index) per operation and range, and the ops' rank in (GPU start, GPU end) order. Per stack
    the calls are taken in that order and the pairs written one level at a time, so that sorting
    them by (range, rank) meets long runs already in order (per_range)."""
    import numpy as np

    on_time = timed_ops(st, ops)
    tids, rank, index = on_time.tids, on_time.rank, on_time.timed.dtype
    grouped, edges = _by_thread(on_time.timed, on_time.code, len(tids))
    del on_time
    items = []  # (first boundary, end, first op, end op): a stack's calls, _OPS_RUN at a time
    for t, _d, a, b in st.groups:
        k = int(np.searchsorted(tids, t))
        first, end = int(edges[k]), int(edges[k + 1])
        items += [(a, b, lo, min(lo + _OPS_RUN, end)) for lo in range(first, end, _OPS_RUN)]

    def pairs_of(which: list[tuple[int, int, int, int]]) -> list[tuple[Any, Any]]:
        return [_stack_pairs(st, ops, grouped[lo:hi], (a, b), index, innermost) for a, b, lo, hi in which]

    if len(items) > 1:  # the runs shared between this thread and a second one
        mine, theirs = side_by_side(partial(pairs_of, items[0::2]), partial(pairs_of, items[1::2]))
        found: list[tuple[Any, Any]] = [None] * len(items)  # type: ignore[list-item]
        found[0::2], found[1::2] = mine, theirs
        del mine, theirs
    else:
        found = pairs_of(items)
    if not found:
        return np.zeros(0, index), np.zeros(0, index), rank
    op_parts, range_parts = [o for o, _ in found], [r for _, r in found]
    del found
    op_idx = np.concatenate(op_parts)
    op_parts.clear()  # memory: one column's parts and its whole at a time
    return op_idx, np.concatenate(range_parts), rank


@dataclass
class TimedOps:
    """The ops launched by a call on a thread that has a stack, in (GPU start, GPU end) order
    (:func:`timed_ops`)."""

    timed: Any  # op indexes (int32 when every index fits)
    code: Any  # per op of ``timed``, its thread's position in ``tids`` (uint16 when that fits)
    tids: Any  # the globalTids of the threads with stacks, sorted
    rank: Any  # per op, its rank in (GPU start, GPU end) order (None when not asked for)


def timed_ops(st: Stacks, ops: Ops, *, ranks: bool = True, ordered: bool = True) -> TimedOps:
    """The ops launched by a call on a thread that has a stack, in (GPU start, GPU end) order (in
    op order unless ``ordered``), with their threads, and (``ranks``) every op's rank in that order."""
    import numpy as np

    nops = len(ops.gs)
    by_time = lexsorted((ops.gs, ops.ge)) if ordered else np.arange(nops)
    rank = None
    if ranks:
        rank = np.empty(nops, dtype=np.int32 if nops < (1 << 31) - 1 else np.int64)  # memory
        place_rows(rank, by_time)
    tids = np.unique(np.array([t for t, _d, _a, _b in st.groups], dtype=np.int64))
    timed = by_time if ops.called.all() else by_time[ops.called[by_time]]  # all: the usual
    del by_time
    code, on_stack = _thread_codes(tids, ops, timed)
    if not on_stack.all():
        timed, code = timed[on_stack], code[on_stack]
    del on_stack
    index = np.int32 if max(nops, len(st.tid)) < (1 << 31) - 1 else np.int64
    return TimedOps(timed.astype(index), code, tids, rank)  # memory: narrow gathers after


def _by_thread(timed: Any, code: Any, threads: int) -> tuple[Any, Any]:
    """The ops ``timed`` grouped by their thread's ``code`` (0..threads-1), each thread's in the
    order they come (GPU time), and where each thread's run starts (``edges``, threads + 1 of them):
    a pass per thread when they are few, else numpy's stable (radix) sort of the codes."""
    import numpy as np

    if threads > _FEW_THREADS:
        grouped = timed[np.argsort(code, kind="stable")]
        return grouped, np.concatenate([[0], np.cumsum(np.bincount(code, minlength=threads))])
    parts = [timed[code == k] for k in range(threads)] if threads > 1 else [timed]
    edges = np.concatenate([[0], np.cumsum([len(p) for p in parts])])
    return (np.concatenate(parts) if len(parts) > 1 else parts[0]), edges


_FEW_THREADS = 8  # threads with stacks: a pass over the ops per thread, up to this many


#: Calls per run of attributed_pairs' lookups (their temporaries: ~40 bytes each).
_OPS_RUN = 1 << 20


def _stack_pairs(
    st: Stacks, ops: Ops, oi: Any, bounds: tuple[int, int], index: Any, innermost: bool
) -> tuple[Any, Any]:
    """The (op, range) pairs of ops ``oi`` (launched on the thread of the stack whose boundaries
    are ``bounds``) with that stack's ranges: the innermost range open at the call's start that
    outlasts the call, and its ancestors unless ``innermost``."""
    import numpy as np

    a, b = bounds
    pos = np.searchsorted(st.ev_ts[a:b], call_starts(ops, oi), side="right") - 1
    seen = pos >= 0
    oi, ev = oi[seen], a + pos[seen]
    del pos, seen
    inner = st.ev_inner[ev]
    open_ = inner >= 0
    oi, inner = oi[open_], inner[open_]
    inner = _outlasting(st, inner, call_ends(ops, oi))
    found = inner >= 0
    oi, inner = oi[found].astype(index), inner[found].astype(index)
    if not innermost:
        oi, inner = expand(st, oi, inner)
    return oi, inner


def _thread_codes(tids: Any, ops: Ops, timed: Any) -> tuple[Any, Any]:
    """Per op of ``timed`` (indexes into the ops): its launching thread's position in ``tids``
    (sorted), uint16 when that fits, and whether its thread is there at all; from the ops' thread
    codes by a table of their threads' positions, else by binary search in the ops' globalTids
    _MATCH_RUN ops at a time (no temporary as long as the ops: memory)."""
    import numpy as np

    n = len(timed)
    code = np.zeros(n, dtype=np.uint16 if len(tids) <= 65535 else np.int64)
    on_stack = np.zeros(n, dtype=bool)
    if not len(tids):
        return code, on_stack
    lut, calls = None, ops.calls
    if calls is not None:  # each of the calls' threads: its position in tids, len(tids) for none
        at = np.minimum(np.searchsorted(tids, calls.threads), len(tids) - 1)
        lut = np.where(tids[at] == calls.threads, at, len(tids)).astype(np.int64)
    for a in range(0, n, _MATCH_RUN):
        if lut is not None and calls is not None:
            pos = lut[calls.thread[calls.of[timed[a : a + _MATCH_RUN]]]]
            code[a : a + len(pos)] = np.minimum(pos, len(tids) - 1)
            on_stack[a : a + len(pos)] = pos < len(tids)
            continue
        mine = ops.tid[timed[a : a + _MATCH_RUN]]
        at = np.minimum(np.searchsorted(tids, mine), len(tids) - 1)
        code[a : a + len(at)] = at
        on_stack[a : a + len(at)] = tids[at] == mine
    return code, on_stack


def op_totals(ops: Ops, op_idx: Any = None, *, held: Any = None) -> dict[str, int] | None:
    """queries/nvtx/totals.sql's columns over the GPU ops, ``op_idx`` the ops of the pairs, or
    ``held`` per op whether a range holds it (None when the durations could overflow 64 bits: the
    SQL sums them). The durations are taken _MATCH_RUN ops at a time: no temporary as long as the
    ops (memory)."""
    import numpy as np

    n = len(ops.gs)
    if held is None:
        unattributed = np.ones(n, dtype=bool)
        unattributed[op_idx] = False
    else:
        unattributed = ~np.asarray(held, dtype=bool)
    longest, total, left = 0, 0, 0
    for a in range(0, n, _MATCH_RUN):
        dur = ops.ge[a : a + _MATCH_RUN] - ops.gs[a : a + _MATCH_RUN]
        longest = max(longest, int(dur.max()), -int(dur.min()))
        if longest >= _I64_SAFE // n:  # no |dur| array
            return None
        total += int(dur.sum())
        left += int(dur.sum(where=unattributed[a : a + _MATCH_RUN]))
    return {
        "gpu_ops": n,
        "gpu_ns": total,
        "graph_executions": int(np.count_nonzero(ops.kind == 3)),
        "ops_without_call": int(np.count_nonzero(~ops.called)),
        "unattributed_ops": int(np.count_nonzero(unattributed)),
        "unattributed_gpu_ns": left,
    }


def _outlasting(st: Stacks, inner: Any, call_end: Any) -> Any:
    """Per call: its innermost range when that range lasts past the call's end, else the deepest
    enclosing range that does (-1: none)."""
    import numpy as np

    cur = inner.copy()
    short = np.flatnonzero(st.end[cur] < call_end)
    while len(short):
        cur[short] = st.prid[cur[short]]
        short = short[cur[short] >= 0]
        short = short[st.end[cur[short]] < call_end[short]]
    return cur


def expand(st: Stacks, op_idx: Any, range_idx: Any) -> tuple[Any, Any]:
    """Every enclosing range of each pair's range (itself included): ancestors.sql joined."""
    import numpy as np

    ops_out, ranges_out = [op_idx], [range_idx]
    prid = st.prid.astype(range_idx.dtype) if st.prid.dtype != range_idx.dtype else st.prid
    cur_op, cur = op_idx, prid[range_idx]
    while True:
        up = cur >= 0
        if not up.any():
            break
        cur_op, cur = cur_op[up], cur[up]
        ops_out.append(cur_op)
        ranges_out.append(cur)
        cur = prid[cur]
    return np.concatenate(ops_out), np.concatenate(ranges_out)


def per_range(ops: Ops, op_idx: Any, range_idx: Any, rank: Any) -> dict[str, Any] | None:
    """per_range.sql's rows from the pairs (None when the busy offsets would not fit in 64 bits),
    computed over runs of ranges of at most CHUNK_PAIRS pairs each (memory), the runs shared
    between this thread and a second one (base.threads.side_by_side: two runs of half the size in
    flight, the memory of one)."""
    import numpy as np

    if not len(op_idx):
        empty = np.zeros(0, np.int64)
        return dict.fromkeys(PER_RANGE_COLUMNS, empty)
    nops = len(ops.gs)
    if (int(range_idx.max()) + 1) * (nops + 1) >= _I64_SAFE:
        return None
    by_time = np.empty(nops, dtype=rank.dtype)
    place_rows(by_time, rank)
    chunks = _range_chunks(range_idx, CHUNK_PAIRS // 2)
    if len(chunks) == 1:
        return _per_range_part(ops, op_idx, range_idx, rank, by_time)
    chunk_of = _chunk_of(range_idx, chunks)

    def parts(which: range) -> list[dict[str, Any] | None]:
        out = []
        for k in which:
            mine = np.flatnonzero(chunk_of == k)
            out.append(_per_range_part(ops, op_idx[mine], range_idx[mine], rank, by_time))
            del mine
        return out

    even, found = side_by_side(
        partial(parts, range(0, len(chunks), 2)), partial(parts, range(1, len(chunks), 2))
    )
    ordered: list[dict[str, Any] | None] = [None] * len(chunks)
    ordered[0::2], ordered[1::2] = even, found
    if any(p is None for p in ordered):
        return None
    return {c: np.concatenate([p.pop(c) for p in ordered if p is not None]) for c in PER_RANGE_COLUMNS}


#: Pairs per run of :func:`per_range` (its sort keys and gathered GPU intervals: ~50 bytes each).
CHUNK_PAIRS = 1 << 20


def _chunk_of(range_idx: Any, chunks: list[tuple[int, int]]) -> Any:
    """Per pair, the run of ranges (:func:`_range_chunks`) its range is in, as the narrowest
    unsigned integer (one byte per pair for up to 256 runs)."""
    import numpy as np

    code = np.uint8 if len(chunks) <= 256 else np.uint16 if len(chunks) <= 65536 else np.int64
    lengths = [hi - lo for lo, hi in chunks]
    lut = np.repeat(np.arange(len(chunks), dtype=code), lengths)
    return lut[range_idx]


def _range_chunks(range_idx: Any, size: int) -> list[tuple[int, int]]:
    """Runs [lo, hi) of range indexes holding about ``size`` pairs each (a range is never split)."""
    import numpy as np

    if len(range_idx) <= size:
        return [(0, int(range_idx.max()) + 1)]
    ends = np.cumsum(np.bincount(range_idx))
    cuts = np.unique(np.searchsorted(ends, np.arange(size, int(ends[-1]), size), side="left") + 1)
    edges = [0, *(int(c) for c in cuts if 0 < c < len(ends)), len(ends)]
    return list(zip(edges[:-1], edges[1:], strict=True))


def _per_range_part(ops: Ops, op_idx: Any, range_idx: Any, rank: Any, by_time: Any) -> dict[str, Any] | None:
    """per_range.sql's rows of the ranges of these pairs."""
    import numpy as np

    nops = len(ops.gs)
    rid, at = _sorted_pairs(op_idx, range_idx, rank, nops)
    op = by_time[at]
    del at
    gs, ge, kind = ops.gs[op], ops.ge[op], ops.kind[op]
    del op
    first = np.concatenate([[0], np.flatnonzero(rid[1:] != rid[:-1]) + 1])
    out: dict[str, Any] = {"rid": rid[first] + 1}
    low, last_end = np.minimum.reduceat(gs, first), np.maximum.reduceat(ge, first)
    widths = np.maximum(last_end, np.maximum.reduceat(gs, first)) - low + 1
    if int(widths.sum()) >= _I64_SAFE or int(np.abs(low).max()) >= _I64_SAFE:
        return None
    count = np.int32 if len(kind) < (1 << 31) else np.int64  # reduceat casts all its input (memory)
    for column, code in (("kernels", 0), ("memcpys", 1), ("memsets", 2), ("graph_executions", 3)):
        out[column] = np.add.reduceat(kind == code, first, dtype=count).astype(np.int64)
    out["kernel_ns"], out["graph_ns"] = _kind_sums(kind, gs, ge, first, rid)  # rid: read no more
    del kind
    out["gpu_span_ns"] = last_end - low
    out["gpu_busy_ns"] = _busy(gs, ge, first, rid, np.concatenate([[0], np.cumsum(widths)[:-1]]) - low)
    return {c: out[c] for c in PER_RANGE_COLUMNS}


def per_range_fits(ops: Ops, range_idx: Any) -> bool:
    """Whether :func:`per_range` gives its rows (its 64-bit keys and busy offsets cannot overflow)
    for pairs of these ranges, from bounds over every op."""
    if not len(range_idx) or not len(ops.gs):
        return True
    ranges = int(range_idx.max()) + 1
    if ranges * (len(ops.gs) + 1) >= _I64_SAFE:
        return False
    low, high = int(ops.gs.min()), max(int(ops.ge.max()), int(ops.gs.max()))
    if max(abs(low), abs(high)) >= _I64_SAFE:
        return False
    return ranges * (high - low + 1) < _I64_SAFE


def _sorted_pairs(op_idx: Any, range_idx: Any, rank: Any, nops: int) -> tuple[Any, Any]:
    """The pairs sorted by (range, op rank): each pair's range index and op rank, in that order."""
    import numpy as np

    key = range_idx.astype(np.int64)  # (range, rank) as one int64, built in place (memory)
    key *= nops
    key += rank[op_idx]
    key.sort(kind="stable")  # timsort: the pairs come in long runs already in order
    rid = np.empty_like(key)
    np.divmod(key, nops, out=(rid, key))
    return rid, key


def _busy(gs: Any, ge: Any, first: Any, scratch: Any, shift_of: Any) -> Any:
    """Per segment, the union of its [gs, ge) intervals (sorted by gs within it). Each segment's times
    are shifted past the previous one's (``shift_of``), so that one running maximum serves them all;
    ``gs``, ``ge`` and ``scratch`` (as long as them) are overwritten."""
    import numpy as np

    step = scratch  # the per-pair shift, as a running sum of each segment's change
    step[:] = 0
    step[first] = np.diff(np.concatenate([[0], shift_of]))
    np.cumsum(step, out=step)
    np.add(gs, step, out=gs)
    np.add(ge, step, out=ge)
    covered = np.maximum.accumulate(ge, out=step)
    np.maximum(gs[1:], covered[:-1], out=gs[1:])  # where each op's new busy time can start
    np.subtract(ge, gs, out=ge)
    np.maximum(ge, 0, out=ge)
    return np.add.reduceat(ge, first)


def _kind_sums(kind: Any, gs: Any, ge: Any, first: Any, scratch: Any) -> tuple[Any, Any]:
    """Per segment (starting at ``first``), the summed durations of its kernels and of its graphs
    (``scratch``, as long as ``gs``, is overwritten)."""
    import numpy as np

    dur = np.subtract(ge, gs, out=scratch)
    graphs = kind == 3
    graph_ns = (
        np.add.reduceat(np.where(graphs, dur, 0), first) if graphs.any() else np.zeros(len(first), np.int64)
    )
    dur[kind != 0] = 0
    return np.add.reduceat(dur, first), graph_ns


#: per_range.sql's columns, in its order (the sweep's per-range rows; nvtx sets them beside the ranges).
PER_RANGE_COLUMNS = (
    "rid", "kernels", "kernel_ns", "memcpys", "memsets", "graph_executions", "graph_ns", "gpu_span_ns",
    "gpu_busy_ns",
)  # fmt: skip


_OP_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
#: The decoded columns a GPU op is matched to its launching call by, and the call's (iters reads them too).
GPU_COLUMNS = ("start", "end", "correlationId", "globalPid")
CALL_COLUMNS = ("start", "end", "eventClass", "globalTid", "correlationId")
#: nsysq_nvtx_ops from the arrays of decoded_ops: the NULLs and the kind ENUM of queries/nvtx/ops.sql.
OPS_SELECT = (
    "oid, CAST(CASE kind WHEN 0 THEN 'kernel' WHEN 1 THEN 'memcpy' WHEN 2 THEN 'memset' ELSE 'graph' END "
    "AS ENUM('kernel', 'memcpy', 'memset', 'graph')) AS kind, gs, ge, "
    "CASE WHEN has_pid THEN pid END AS pid, CASE WHEN has_corr THEN corr END AS corr, "
    "CASE WHEN called THEN tid END AS tid, CASE WHEN called THEN s END AS s, CASE WHEN called THEN e END AS e"
)


def _as_int64(values: Any, n: int) -> Any:
    """A decoded column's values as ``n`` int64 (a copy only when it is narrower; one value in
    every row stays a read-only view of it)."""
    import numpy as np

    return np.broadcast_to(np.asarray(values, dtype=np.int64), (n,))


@dataclass
class Fetched:
    """The decoded columns decoded_ops builds the ops from (read on the main thread: the session
    and DuckDB are used there alone), and the one process id every op has (None: not one)."""

    found_of: dict[str, dict[str, tuple[Any, Any]]]
    calls: dict[str, tuple[Any, Any]] | None
    same_pid: int | None


def decoded_ops(
    trace: Session, *, release: bool = False, as_table: bool = True
) -> tuple[Ops, dict[str, Any]] | None:
    """queries/nvtx/ops.sql's rows from the columns of an unscoped read (decoded from the pages, or
    read from the cached copy: Session.decoded_arrays): the ops for the sweep and the columns of
    nsysq_nvtx_ops (read with OPS_SELECT). None when a table is not read as arrays, the export
    traced CUDA graphs whole, a GPU interval or a matched call's is
    NULL, or two calls share a launch (the join then repeats ops): the SQL path handles those.
    ``release``: free the tables' decoded columns once read (memory; a later query decodes
    them again). ``as_table`` False: the ops alone, not the columns of the table (no process or
    correlation id is kept; memory)."""
    fetched = fetch_ops(trace, release=release, one_pid=not as_table)
    return None if fetched is None else ops_from(fetched, as_table=as_table)


def fetch_ops(trace: Session, *, release: bool = False, one_pid: bool = False) -> Fetched | None:
    """The decoded columns :func:`ops_from` reads (None: take the SQL path, see decoded_ops); with
    ``release`` the session lets go of them at once (the arrays stay alive as long as the Fetched
    holds them, and go as ops_from copies them). ``one_pid``: look for the one process of every op."""
    if trace.schema.has("CUPTI_ACTIVITY_KIND_GRAPH_TRACE"):
        return None
    found_of = {}
    for table in _OP_TABLES:
        if trace.schema.has(table):
            found = trace.decoded_arrays(table, GPU_COLUMNS)
            if found is None or any(_has_null(found, c) for c in ("start", "end")):
                return None
            found_of[table] = found
    calls = trace.decoded_arrays("CUPTI_ACTIVITY_KIND_RUNTIME", CALL_COLUMNS) if found_of else None
    if found_of and calls is None:
        return None
    if release:
        for table in (*found_of, "CUPTI_ACTIVITY_KIND_RUNTIME"):
            trace.release_columns(table)
    return Fetched(found_of, calls, _one_value(found_of, "globalPid") if one_pid else None)


def ops_from(fetched: Fetched, *, as_table: bool = True) -> tuple[Ops, dict[str, Any]] | None:
    """decoded_ops' ops (and table columns) from the fetched columns, by numpy alone (no session:
    it may run on a thread of its own). The columns are let go of as they are copied (memory)."""
    import numpy as np

    found_of, calls, same = fetched.found_of, fetched.calls, fetched.same_pid
    fetched.found_of, fetched.calls = {}, None
    kind, gs, ge, corr, has_corr, pid, has_pid = _gathered(found_of, same if not as_table else None)
    del found_of
    n = len(kind)
    if not n or calls is None:
        called = np.zeros(n, dtype=bool)
        tid, s, e = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64)
    else:
        matched = _match_calls(calls, corr, has_corr, pid, has_pid)
        del calls
        if matched is None:
            return None
        if not as_table:
            corr = pid = has_corr = has_pid = None
        at, call_tid, call_s, call_e = matched
        del matched
        called = at >= 0
        if not as_table:  # the calls' columns, not a copy per op (memory): attributed_pairs reads them
            thread, threads = coded(call_tid)
            del call_tid
            of = OpCalls(at, call_s, call_e, thread, threads)
            return Ops(None, kind, gs, ge, called, None, None, None, of), {}
        np.maximum(at, 0, out=at)  # a gather per column, the unmatched ops' values zeroed after
        tid = call_tid[at]
        del call_tid
        s = call_s[at]
        del call_s
        e = call_e[at]
        del at, call_e
        if not called.all():
            tid[~called], s[~called], e[~called] = 0, 0, 0
    if not as_table:  # oid is the op's index + 1: not kept (memory)
        return Ops(None, kind, gs, ge, called, tid, s, e), {}
    oid = np.arange(1, n + 1, dtype=np.int64)
    ops = Ops(oid, kind, gs, ge, called, tid, s, e)
    columns = {
        "oid": oid, "kind": kind, "gs": gs, "ge": ge, "pid": pid, "has_pid": has_pid, "corr": corr,
        "has_corr": has_corr, "called": called, "tid": tid, "s": s, "e": e,
    }  # fmt: skip
    return ops, columns


def _has_null(found: dict[str, tuple[Any, Any]], name: str) -> bool:
    """Whether decoded column ``name`` holds a NULL."""
    import numpy as np

    nulls = found[name][1]
    return nulls is not None and bool(np.asarray(nulls, bool).any())


def _gathered(found_of: dict[str, dict[str, tuple[Any, Any]]], same: int | None) -> tuple[Any, ...]:
    """The GPU-op tables' columns one after the other (kind, start, end, correlation id and its
    validity, process id and its validity), written into arrays of every op, each table's columns
    let go of as they are written (memory). ``same``: the one process id of every op, whose
    process id and validity are then read-only views of one value (memory)."""
    import numpy as np

    sizes = {t: f["start"][0].shape[0] for t, f in found_of.items()}
    total = sum(sizes.values())
    kind = np.empty(total, np.int8)
    gs, ge = np.empty(total, np.int64), np.empty(total, np.int64)
    # with one process (no table kept), the correlation ids in their decoded type (memory)
    narrow = [np.asarray(f["correlationId"][0]).dtype for f in found_of.values()] if same is not None else []
    corr = np.empty(total, np.result_type(*narrow) if narrow else np.int64)
    has_corr = np.empty(total, bool)
    if same is None:
        pid, has_pid = np.empty(total, np.int64), np.empty(total, bool)
    else:
        pid, has_pid = np.broadcast_to(np.int64(same), (total,)), np.broadcast_to(True, (total,))
    at = 0
    for table in list(found_of):
        found, n = found_of.pop(table), sizes[table]
        kind[at : at + n] = _OP_TABLES.index(table)
        targets = (
            ("start", gs, None), ("end", ge, None), ("correlationId", corr, has_corr),
            *((("globalPid", pid, has_pid),) if same is None else ()),
        )  # fmt: skip
        for name, values, valid in targets:
            _write(found.pop(name), values, valid, at, n)
        del found
        at += n
    return kind, gs, ge, corr, has_corr, pid, has_pid


def _write(column: tuple[Any, Any], values: Any, valid: Any, at: int, n: int) -> None:
    """A decoded column (values, NULL mask or None) into ``values[at:at+n]`` (cast, broadcast: no
    temporary copy) and, when ``valid`` is given, its validity into ``valid[at:at+n]``."""
    import numpy as np

    decoded, nulls = column
    values[at : at + n] = decoded
    if valid is None:
        return
    if nulls is None:
        valid[at : at + n] = True
    else:
        np.logical_not(np.asarray(nulls, bool), out=valid[at : at + n])


def _one_value(found_of: dict[str, dict[str, tuple[Any, Any]]], name: str) -> int | None:
    """The one value column ``name`` holds in every table, without a NULL (None: not so)."""
    from nsysq.export import pages

    values = set()
    for found in found_of.values():
        if name not in found:
            return None
        column, nulls = found[name]
        if nulls is not None or not pages.is_constant(column):
            return None
        values.add(int(column[0]))
    return values.pop() if len(values) == 1 else None


def launch_rows(calls: dict[str, tuple[Any, Any]], m: int) -> Any:
    """Which of the ``m`` decoded CUDA API calls (values, NULL mask per column) can launch a GPU op:
    eventClass 0 or 1, with a thread and a correlation id. None for every call, else their rows."""
    import numpy as np

    klass = np.broadcast_to(np.asarray(calls["eventClass"][0]), (m,))  # its decoded type: no copy
    keep = (klass == 0) | (klass == 1)
    for name in ("eventClass", "correlationId", "globalTid"):
        if calls[name][1] is not None:
            keep &= ~np.broadcast_to(np.asarray(calls[name][1], bool), (m,))
    return None if keep.all() else np.flatnonzero(keep)


def _match_calls(
    calls: dict[str, tuple[Any, Any]], corr: Any, has_corr: Any, pid: Any, has_pid: Any
) -> tuple[Any, Any, Any, Any] | None:
    """Per GPU op, the row of its launching call (-1: none) among the calls (one of eventClass 0 or
    1, with a correlation id, in the same process), and every call's thread, start and end; None
    when two such calls share (process, correlation id) or one has no start or end. The ops are
    looked up in runs of _MATCH_RUN (memory)."""
    import numpy as np

    m = calls["start"][0].shape[0]
    start, end, gtid = (_as_int64(calls[c][0], m) for c in ("start", "end", "globalTid"))
    ccorr = np.broadcast_to(np.asarray(calls["correlationId"][0]), (m,))  # compared only: its own type
    rows = launch_rows(calls, m)  # None: every call
    for name in ("start", "end"):
        nulls = calls[name][1]
        if nulls is not None:
            null = np.broadcast_to(np.asarray(nulls, bool), (m,))
            if (null if rows is None else null[rows]).any():
                return None
    ckey = ccorr if rows is None else ccorr[rows]
    runs = _process_runs(gtid, ckey, rows)  # nsys writes them in order: no sort, no process column then
    if runs is None:
        cpid = gtid & ~np.int64(_THREAD_MASK) if rows is None else gtid[rows] & ~np.int64(_THREAD_MASK)
        order = lexsorted((cpid, ckey))
        rows = order if rows is None else rows[order]
        cpid, ckey = cpid[order], ckey[order]
        del order
        same = (cpid[1:] == cpid[:-1]) & (ckey[1:] == ckey[:-1])
        if same.any():
            return None
        edges = np.concatenate([[0], np.flatnonzero(cpid[1:] != cpid[:-1]) + 1, [len(cpid)]])
        runs = [
            (int(lo), int(hi), int(cpid[lo])) for lo, hi in zip(edges[:-1], edges[1:], strict=True) if lo < hi
        ]
        del cpid
    at: Any = np.full(len(corr), -1, dtype=np.int32 if m < (1 << 31) else np.int64)  # memory
    for lo, hi, process in runs:
        index = KeyIndex(ckey[lo:hi], dense=False)  # a table of every id would lift nvtx's peak
        for a in range(0, len(corr), _MATCH_RUN):
            b = min(a + _MATCH_RUN, len(corr))
            mine = np.flatnonzero(has_pid[a:b] & has_corr[a:b] & (pid[a:b] == process))
            pos = index.find(corr[a:b][mine])
            hit = pos >= 0
            at[a:b][mine[hit]] = pos[hit] + lo
    if rows is not None:
        found = at >= 0
        at[found] = rows[at[found]]  # the kept call's row among every call
    return at, gtid, start, end


_MATCH_RUN = 1 << 20
_THREAD_MASK = (1 << 24) - 1  # a globalTid's thread bits; the rest is its process (globalPid)


def _process_runs(gtid: Any, ckey: Any, rows: Any) -> list[tuple[int, int, int]] | None:
    """The runs [lo, hi) of the calls (``rows`` of ``gtid``, None: every one) in one process, with
    that process's globalPid, when the calls are strictly in (process, correlation id) order (the
    order nsys writes them in); None otherwise. Read _MATCH_RUN calls at a time: no column of every
    call's process (memory)."""
    import numpy as np

    n = len(ckey)
    starts = [0]
    for a in range(0, max(n - 1, 0), _MATCH_RUN):
        b = min(a + _MATCH_RUN, n - 1)  # the pairs (i, i + 1) for i in [a, b)
        g = gtid[a : b + 1] if rows is None else gtid[rows[a : b + 1]]
        p = g & ~np.int64(_THREAD_MASK)
        if not _strictly_sorted(p, ckey[a : b + 1]):
            return None
        starts.extend((np.flatnonzero(p[1:] != p[:-1]) + a + 1).tolist())
    if not n:
        return []
    first = gtid[np.asarray(starts)] if rows is None else gtid[rows[np.asarray(starts)]]
    pids = (first & ~np.int64(_THREAD_MASK)).tolist()
    return list(zip(starts, [*starts[1:], n], pids, strict=True))


def _strictly_sorted(major: Any, minor: Any) -> bool:
    """Whether the pairs (major, minor) increase strictly, row after row."""
    import numpy as np

    up = major[1:] > major[:-1]
    up |= (major[1:] == major[:-1]) & (minor[1:] > minor[:-1])
    return bool(np.all(up))
