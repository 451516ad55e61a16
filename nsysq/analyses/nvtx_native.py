"""The per-range sums of `nsysq nvtx` in one native pass (``_sweep.c``), with no (op, range) pairs.

nsysq.analyses.nvtx_sweep attributes every GPU op to its innermost range and each ancestor as
(op, range) pairs, sorts them by range and reduces them (:func:`nvtx_sweep.per_range`). When no
step reads the pairs themselves (`nsysq nvtx`: the per-range rows and the totals alone), the
compiled ``_sweep.c`` walks each op's ancestor chain instead and adds the op to each range's running
sums, thread by thread, in GPU time order: the same rows, with nothing as long as the pairs
written. Built at install beside the page decoder (hatch_build.py); without it, or when an index
does not fit its 32 bits, the numpy path answers (the same rows: tests/test_sweep_native.py holds
the two to each other).
"""

from __future__ import annotations

import ctypes
import os
import threading
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from nsysq.analyses import nvtx_sweep
from nsysq.base import native
from nsysq.base.threads import side_by_side

ABI_VERSION = 6  # NSYSQ_SWEEP_ABI_VERSION in _sweep.h
_LIB_NAME = "_sweep.so"
_PTR, _I64, _I32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32
# The functions _sweep.h exports, as ctypes (restype, argtypes); tests/test_sweep_native.py checks
# them against its prototypes.
SIGNATURES: native.Signatures = {
    "nsysq_nvtx_sums": (
        _I64,
        [_PTR, _PTR, _I64, _PTR, _PTR, _I64]  # ev_ts, ev_inner, n_ev, range_end, prid, n_ranges
        + [_PTR, _I64, _PTR, _I32]  # ops, n_ops, op_thread, thread
        + [_PTR, _PTR, _PTR, _I64]  # call_of, call_s, call_e, n_calls
        + [_PTR, _PTR, _PTR, _I64, _I32, _PTR, _PTR],  # gs, ge, kind, n_all, innermost, sums, attributed
    ),
    "nsysq_nvtx_stacks": (
        _I64,
        [_PTR, _PTR, _I64, _PTR, _I64, _PTR, _I64]  # start, end, n_ranges, rows, n_rows, stack_first, n
        + [_PTR, _PTR, _PTR, _PTR, _PTR, _PTR],  # open, ev_ts, ev_inner, ev_depth, lvl, prid (n: n_stacks)
    ),
    "nsysq_nvtx_picked": (
        _I64,
        [_PTR, _PTR, _I64, _PTR, _PTR, _PTR, _I64]  # ev_ts, ev_inner, n_ev, range_end, prid, picked, n_ranges
        + [_PTR, _I64, _PTR, _I32, _PTR, _PTR, _PTR, _I64]  # ops .. thread, call_of .. n_calls
        + [_I64, _I32, _PTR],  # n_all, innermost, chosen
    ),
    "nsysq_call_keys": (_I64, [_PTR, _PTR, _I32, _I64, _PTR]),  # tid, corr, corr_bytes, n_calls, key
    "nsysq_launch_ops": (
        _I64,
        [_PTR, _I64, _PTR, _I64, _I64]  # key, n_calls, table, low, table_len
        + [_PTR, _I64, _PTR, _I32, _PTR, _PTR, _I64]  # pid, pid_step, corr, corr_bytes, s, e, n_ops
        + [_PTR, _PTR, _PTR, _PTR],  # op_call, op_ns, call_gpu, launched
    ),
    "nsysq_sweep_abi_version": (_I32, []),
}  # fmt: skip
SUMS = 9  # NSYSQ_SUMS: kernels, memcpys, memsets, graphs, kernel_ns, graph_ns, low, high, busy
ERRORS = {-1: "an index outside its array", -2: "a parent chain with a cycle", -3: "a 64-bit overflow"}
ERRORS |= {-4: "an op kind outside 0..3", -5: "a range's ops out of GPU start order", -6: "unnested ranges"}
_I32_MAX = (1 << 31) - 1

_lock = threading.Lock()
_lib: Any = None  # the loaded library; False once it was found missing or stale


def library() -> Any:
    """The compiled sums (loaded once), or None when not built, stale, or turned off with
    NSYSQ_NATIVE_SWEEP=0 (the numpy path then answers)."""
    global _lib
    if os.environ.get("NSYSQ_NATIVE_SWEEP", "1") == "0":
        return None
    with _lock:
        if _lib is None:
            path = Path(__file__).with_name(_LIB_NAME)
            _lib = native.load(path, SIGNATURES, "nsysq_sweep_abi_version", ABI_VERSION) or False
    return _lib or None


def build_stacks(arr: dict[str, Any]) -> nvtx_sweep.Stacks | None:
    """nvtx_sweep.build_stacks' stacks from queries/nvtx/range_arrays.sql's columns, by one native
    sweep per stack with a stack of open ranges (no sort of the boundaries); None when it is not
    built, an index does not fit 32 bits, or the push/pop ranges do not nest (the numpy sort then
    builds them, and counts the ranges that do not nest)."""
    import numpy as np

    lib = library()
    tid = np.asarray(arr["tid"], dtype=np.int64)
    if lib is None or len(tid) >= _I32_MAX // 2:
        return None
    dom = np.asarray(arr["dom"], dtype=np.int64)
    start, end = np.ascontiguousarray(arr["start"], np.int64), np.ascontiguousarray(arr["end"], np.int64)
    kept, pushpop = np.asarray(arr["kept"], dtype=bool), np.asarray(arr["pushpop"], dtype=bool)
    pp = np.flatnonzero(kept & pushpop).astype(np.int32)
    # ranges are in rid order, which sorts by thread and domain first: each stack is contiguous
    change = np.ones(len(pp), dtype=bool)
    change[1:] = (tid[pp][1:] != tid[pp][:-1]) | (dom[pp][1:] != dom[pp][:-1])
    firsts = np.flatnonzero(change)
    stack_first = np.append(firsts, len(pp)).astype(np.int64)
    del change
    ev_ts = np.empty(2 * len(pp), np.int64)
    ev_inner, ev_depth = np.empty(2 * len(pp), np.int32), np.empty(2 * len(pp), np.int32)
    lvl, prid = np.full(len(tid), -1, np.int64), np.full(len(tid), -1, np.int32)
    scratch = np.empty(len(pp), np.int32)  # held here: a pointer alone would not keep it alive
    got = lib.nsysq_nvtx_stacks(
        start.ctypes.data, end.ctypes.data, len(tid), pp.ctypes.data, len(pp), stack_first.ctypes.data,
        len(firsts), scratch.ctypes.data, ev_ts.ctypes.data, ev_inner.ctypes.data,
        ev_depth.ctypes.data, lvl.ctypes.data, prid.ctypes.data,
    )  # fmt: skip
    if got < 0:
        return None
    groups = nvtx_sweep.stack_groups(tid, dom, pp[firsts], 2 * stack_first[:-1], 2 * stack_first[1:])
    st = nvtx_sweep.Stacks(
        tid, dom, start, end, kept, pushpop, lvl, prid, 0, ev_ts, ev_depth, ev_inner, groups
    )
    nvtx_sweep.start_end_levels(st)
    return st


@dataclass
class Sums:
    """per_range.sql's rows of the push/pop ranges (nvtx_sweep.PER_RANGE_COLUMNS) and, per op,
    whether a range holds it."""

    rows: dict[str, Any]
    attributed: Any


class NativeSweepError(Exception):
    """The native pass refused its input (the message says why); the numpy path answers instead."""


def stack_sums(st: nvtx_sweep.Stacks, ops: nvtx_sweep.Ops, *, innermost: bool) -> Sums | None:
    """Each push/pop range's GPU work (its rows in rid order, as nvtx_sweep.per_range gives them
    from attributed_pairs' pairs), by the native pass; None when it is not built or an index does
    not fit 32 bits (take the numpy path). Raises NativeSweepError when the pass refuses its input.
    The threads are shared between this core and a second one."""
    import numpy as np

    pass_ = _prepared(st, ops, innermost, ordered=True)
    if pass_ is None:
        return None
    pass_.sums = np.zeros((SUMS, len(st.tid)), dtype=np.int64)  # column by column (_sweep.h)
    pass_.out = np.zeros(len(ops.gs), dtype=np.uint8)
    pass_.shared()
    return Sums(_rows(pass_.sums), pass_.out.view(bool))


def picked_ops(st: nvtx_sweep.Stacks, ops: nvtx_sweep.Ops, picked: Any, *, innermost: bool) -> Any:
    """Per op, whether a range of ``picked`` (a mask per range) holds it as attributed_pairs'
    pairs would (each op's range and, unless ``innermost``, its ancestors), by the native pass with
    no pair written and the ops in no particular order; None as for :func:`stack_sums`."""
    import numpy as np

    pass_ = _prepared(st, ops, innermost, ordered=False)
    if pass_ is None:
        return None
    pass_.picked = np.ascontiguousarray(picked, dtype=np.uint8)
    pass_.out = np.zeros(len(ops.gs), dtype=np.uint8)
    pass_.shared()
    return pass_.out.view(bool)


def _prepared(st: nvtx_sweep.Stacks, ops: nvtx_sweep.Ops, innermost: bool, *, ordered: bool) -> _Pass | None:
    """A pass over the ops of the threads with stacks (in GPU time order when ``ordered``), the
    threads shared out; None when the library is not built or its input does not fit."""
    import numpy as np

    lib = library()
    if lib is None or not _fits(st, ops):
        return None
    t = nvtx_sweep.timed_ops(st, ops, ranks=False, ordered=ordered)
    if t.code.dtype != np.uint16:  # more threads with stacks than 65535
        return None
    one = len(t.tids) == 1  # every op is the one thread's: no thread codes read
    counts = np.bincount(t.code, minlength=len(t.tids)) if not one else [len(t.timed)]
    work = []  # (ops, thread code, the boundaries of its stacks), the busiest thread first
    for k, tid in enumerate(t.tids):
        work.append((int(counts[k]), k, [(a, b) for g, _d, a, b in st.groups if g == int(tid)]))
    work.sort(key=lambda w: -w[0])
    return _Pass(lib, st, ops, t.timed.astype(np.int32, copy=False), None if one else t.code, innermost, work)


def _fits(st: nvtx_sweep.Stacks, ops: nvtx_sweep.Ops) -> bool:
    """Whether every index the pass reads fits its int32 argument."""
    import numpy as np

    calls = ops.calls
    if max(len(st.tid), len(ops.gs), 0 if calls is None else len(calls.s)) >= _I32_MAX:
        return False
    if st.ev_inner is None or st.prid is None or st.end is None or st.ev_ts is None:
        return False
    return all(a.dtype == np.int32 for a in (st.ev_inner, st.prid)) and (
        calls is None or calls.of.dtype == np.int32
    )


_Work = list[tuple[int, int, list[tuple[int, int]]]]


def _shares(work: _Work) -> tuple[_Work, _Work]:
    """The threads split between two cores, each to the less loaded (a thread's stacks stay on one
    core: they set the same ops' attributed flags)."""
    shares: tuple[_Work, _Work] = ([], [])
    load = [0, 0]
    for w in work:
        side = 0 if load[0] <= load[1] else 1
        shares[side].append(w)
        load[side] += w[0]
    return shares


@dataclass
class _Pass:
    """One run of the native pass: its input as contiguous arrays, and its output (``sums`` and
    ``out``, the attributed ops, for nsysq_nvtx_sums; ``picked`` and ``out``, the chosen ops, for
    nsysq_nvtx_picked)."""

    lib: Any
    st: nvtx_sweep.Stacks
    ops: nvtx_sweep.Ops
    timed: Any  # int32 op indexes (in GPU time order for the sums)
    code: Any  # their threads' codes (uint16), None with one thread
    innermost: bool
    work: _Work
    sums: Any = None
    picked: Any = None
    out: Any = None

    def shared(self) -> None:
        """The pass, the threads shared between this core and a second one; raises
        NativeSweepError with the first refusal."""
        codes = side_by_side(*(partial(self.run, share) for share in _shares(self.work)))
        failed = [c for c in codes if c < 0]
        if failed:
            raise NativeSweepError(ERRORS.get(failed[0], f"error {failed[0]}"))

    def run(self, work: _Work) -> int:
        """The pass over these threads' stacks: 0, or the first negative code."""
        import numpy as np

        st, ops, calls = self.st, self.ops, self.ops.calls
        flat = np.ascontiguousarray  # a copy only of a view with strides (one value broadcast)
        if calls is not None:
            call_of, call_s, call_e = flat(calls.of), flat(calls.s, np.int64), flat(calls.e, np.int64)
        else:
            call_of, call_s, call_e = None, flat(ops.s, np.int64), flat(ops.e, np.int64)
        ev_ts, ev_inner = flat(st.ev_ts, np.int64), flat(st.ev_inner)
        end, prid = flat(st.end, np.int64), flat(st.prid)
        code = None if self.code is None else self.code.ctypes.data
        calls_at = (None if call_of is None else call_of.ctypes.data, call_s.ctypes.data, call_e.ctypes.data)
        for _size, thread, stacks in work:
            for first, last in stacks:
                stack = (ev_ts[first:last].ctypes.data, ev_inner[first:last].ctypes.data, last - first)
                got = self._call(stack, end, prid, code, thread, calls_at, len(call_s))
                if got < 0:
                    return int(got)
        return 0

    def _call(
        self, stack: tuple[int, int, int], end: Any, prid: Any, code: Any, thread: int,
        calls_at: tuple[int | None, int, int], n_calls: int,
    ) -> int:  # fmt: skip
        import numpy as np

        ops, timed, innermost = self.ops, self.timed, int(self.innermost)
        ranges = (end.ctypes.data, prid.ctypes.data)
        of_ops = (timed.ctypes.data, len(timed), code, thread, *calls_at, n_calls)
        if self.picked is not None:
            picked = (self.picked.ctypes.data, len(end))
            got = self.lib.nsysq_nvtx_picked(
                *stack, *ranges, *picked, *of_ops, len(ops.gs), innermost, self.out.ctypes.data
            )
            return int(got)
        gs, ge = np.ascontiguousarray(ops.gs, np.int64), np.ascontiguousarray(ops.ge, np.int64)
        kind = np.ascontiguousarray(ops.kind, np.int8)
        intervals = (gs.ctypes.data, ge.ctypes.data, kind.ctypes.data, len(gs))
        got = self.lib.nsysq_nvtx_sums(
            *stack,
            *ranges,
            len(end),
            *of_ops,
            *intervals,
            innermost,
            self.sums.ctypes.data,
            self.out.ctypes.data,
        )
        return int(got)


def _rows(sums: Any) -> dict[str, Any]:
    """per_range's columns of the ranges holding an op: views of ``sums``' columns when every
    range holds one (the usual; no copy)."""
    import numpy as np

    count = sums[0] + sums[1] + sums[2] + sums[3]
    held: Any = slice(None) if bool(count.all()) else np.flatnonzero(count)
    del count
    rid = np.arange(1, sums.shape[1] + 1, dtype=np.int64)[held]
    return {
        "rid": rid, "kernels": sums[0, held], "kernel_ns": sums[4, held], "memcpys": sums[1, held],
        "memsets": sums[2, held], "graph_executions": sums[3, held], "graph_ns": sums[5, held],
        "gpu_span_ns": sums[7, held] - sums[6, held], "gpu_busy_ns": sums[8, held],
    }  # fmt: skip


@dataclass
class Launched:
    """The GPU ops joined to their launching calls (nsysq.iterations.launches' join): per op its
    call (-1: none) and max(end - start, 0); per call the summed end - start of its ops and whether
    it has one."""

    op_call: Any
    op_ns: Any
    call_gpu: Any
    launched: Any


def call_keys(tid: Any, corr: Any) -> Any | None:
    """The calls' launch keys ((tid >> 24) << 32 | corr, int64), in one native pass; None when the
    library is not built, a key does not fit or the keys do not increase (the numpy path then
    answers, and decides)."""
    import numpy as np

    lib = library()
    if lib is None:
        return None
    tid, corr = np.ascontiguousarray(tid, dtype=np.int64), _id_column(corr)
    key = np.empty(len(tid), dtype=np.int64)
    if len(corr) != len(tid) or lib.nsysq_call_keys(
        tid.ctypes.data, corr.ctypes.data, corr.itemsize, len(tid), key.ctypes.data
    ):
        return None
    return key


def launch_ops(keys: Any, table: Any, low: int, ops: list[tuple[Any, Any, Any, Any]]) -> Launched | None:
    """Each op's launching call among the calls' increasing ``keys`` (through ``table``, a
    KeyIndex's int32 table from ``low``, when not None) and GPU time, the ops being ``ops``' tables
    one after the other: (pid, corr, start, end) each, pid of one value or one per op. None when
    the library is not built or the pass refuses its input (the numpy path then answers)."""
    import numpy as np

    lib = library()
    if lib is None or (table is not None and table.dtype != np.int32):
        return None
    total = sum(len(start) for _, _, start, _ in ops)
    out = Launched(np.empty(total, np.int64), np.empty(total, np.int64), np.zeros(len(keys), np.int64),
                   np.zeros(len(keys), np.uint8))  # fmt: skip
    keys = np.ascontiguousarray(keys, dtype=np.int64)
    at_table = (None, 0, 0) if table is None else (table.ctypes.data, low, len(table))
    at = 0
    for pid, corr, start, end in ops:
        n = len(start)
        pid, corr = np.ascontiguousarray(pid, dtype=np.int64), _id_column(corr)
        start, end = np.ascontiguousarray(start, dtype=np.int64), np.ascontiguousarray(end, dtype=np.int64)
        if len(pid) not in (1, n) or len(corr) != n or len(end) != n:
            return None
        code = lib.nsysq_launch_ops(
            keys.ctypes.data, len(keys), *at_table, pid.ctypes.data, int(len(pid) == n), corr.ctypes.data,
            corr.itemsize, start.ctypes.data, end.ctypes.data, n, out.op_call[at:].ctypes.data,
            out.op_ns[at:].ctypes.data, out.call_gpu.ctypes.data, out.launched.ctypes.data,
        )  # fmt: skip
        if code < 0:
            return None
        at += n
    return out


def _id_column(values: Any) -> Any:
    """A column of ids as contiguous int32 or int64 (its decoded type when it is one of them)."""
    import numpy as np

    values = np.asarray(values)
    return np.ascontiguousarray(values, dtype=np.int32 if values.dtype == np.int32 else np.int64)
