"""The numbers of ``nsysq gaps``, from the rows of its GPU ops and CUDA API calls.

The rows come from SQL (``queries/gap/ops.sql``, ``queries/gap/calls.sql``) or, on a direct,
unscoped read of the export's pages, from the decoded columns (CUDA graph executions always from
``queries/gap/graph_ops.sql``). Everything else is interval arithmetic on sorted arrays
(nsysq.gputime.intervals): per device and per stream the union of the ops and the idle gaps between them;
the threads feeding each device (the calls whose correlationId is one of the device's ops', within
the same process: ``queries/gap/feeders.sql``, which also runs when correlation ids repeat); and
per gap the time some feeding thread was in a launch call (|launch calls ∩ gap|) or, launching
not, in a sync call (|(launch ∪ sync calls) ∩ gap| - |launch calls ∩ gap|). Call names are
classified once per name id by the rules of ``queries/rules/gap_cause_rules.toml``
(``queries/gap/call_classes.sql``). docs/gaps.md gives each rule.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from nsysq.export import schema
from nsysq.gputime.intervals import Coverage, Sorted, groups

if TYPE_CHECKING:
    from nsysq.session import Session

NULL = -1
"""Stands for NULL in the id columns (device, stream, correlation, thread, name): ids are never negative."""
_OP_COLUMNS = ("start", "end", "deviceId", "streamId", "correlationId", "globalPid")
_CALL_COLUMNS = ("start", "end", "globalTid", "correlationId", "nameId")
# Ops are matched to their calls a slice at a time: the slice's arrays are small and their memory is
# reused, where whole-column temporaries would each be fresh memory (page faults) at 5M ops.
_FEED_CHUNK = 1 << 18
LAUNCH, WAIT = 1, 2
"""Call classes: a launch call ('launch_bound') and a sync call ('host_wait')."""
_CLASS_OF = {"launch_bound": LAUNCH, "host_wait": WAIT}


@dataclass(frozen=True)
class Part:
    """Rows of one table: id columns with NULL as -1; ``valid`` (None: every row) marks the rows with
    a start and an end, ``e`` at least ``s`` on them."""

    dev: Any
    stream: Any
    s: Any
    e: Any
    corr: Any
    pid: Any
    valid: Any = None


@dataclass(frozen=True)
class Calls:
    """CUDA API calls with a thread: tid, corr, name (-1 for NULL), s, e; ``timed``: start and end known."""

    tid: Any
    corr: Any
    name: Any
    s: Any
    e: Any
    timed: Any


def read_ops(trace: Session, *, ids: bool = True) -> list[Part]:
    """Every GPU op row (kernels, memcpys, memsets, graph executions), one Part per source. ``ids``
    False: the decoded columns are read without the stream and correlation ids (None in the parts;
    memory, and two columns of every op not decoded)."""
    tables = (schema.KERNEL, schema.MEMCPY, schema.MEMSET)
    columns = _OP_COLUMNS if ids else tuple(c for c in _OP_COLUMNS if c not in ("streamId", "correlationId"))
    decoded = [trace.decoded_arrays(t, columns) for t in tables]
    if any(d is None for d in decoded):
        return [_part(_from_query(trace.run_arrays("gap_ops")))]
    trace.note_query("gap_ops", "kernels, memcpys and memsets read from the decoded columns")
    parts = [_part(_renamed(d, _OP_COLUMNS, _PART_KEYS)) for d in decoded if d is not None]
    graphs = _from_query(trace.run_arrays("gap_graph_ops"))
    return [*parts, _part(graphs)] if len(graphs["s"][0]) else parts


def read_calls(trace: Session) -> Calls:
    """The CUDA API calls that have a thread."""
    decoded = trace.decoded_arrays(schema.RUNTIME, _CALL_COLUMNS)
    if decoded is None:
        columns = _from_query(trace.run_arrays("gap_calls"))
    else:
        trace.note_query("gap_calls", "read from the decoded columns")
        columns = _renamed(decoded, _CALL_COLUMNS, _CALL_KEYS)
    tid = _ids(columns.get("tid"))
    s, e = columns["s"][0], columns["e"][0]
    timed = _present(columns["s"], columns["e"])
    if len(e) and (e < s).any():
        e = np.maximum(e, s)
    calls = Calls(
        tid=tid, corr=_ids(columns.get("corr")), name=_ids(columns.get("name_id")), s=s, e=e, timed=timed
    )
    if tid is None:
        return _subset(calls, np.zeros(len(s), dtype=bool))
    threadless = tid == NULL
    return _subset(calls, ~threadless) if threadless.any() else calls


def _subset(calls: Calls, keep: Any) -> Calls:
    def kept(values: Any) -> Any:
        return None if values is None else values[keep]

    tid = kept(calls.tid)
    return Calls(tid, kept(calls.corr), kept(calls.name), calls.s[keep], calls.e[keep], kept(calls.timed))


_PART_KEYS = ("s", "e", "dev", "stream", "corr", "pid")
_CALL_KEYS = ("s", "e", "tid", "corr", "name_id")


def _renamed(columns: dict[str, Any], names: tuple[str, ...], keys: tuple[str, ...]) -> dict[str, Any]:
    return {key: columns[name] for name, key in zip(names, keys, strict=True) if name in columns}


def _from_query(rows: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """fetchnumpy's columns (masked where NULL) as (values, NULL mask or None)."""
    out = {}
    for key, column in rows.items():
        mask = np.ma.getmaskarray(column)
        out[key] = (np.ma.getdata(column), mask if mask.any() else None)
    return out


def _part(columns: dict[str, Any]) -> Part:
    (s, _), (e, _) = columns["s"], columns["e"]
    if len(e) and (e < s).any():  # an end before its start counts as zero-length
        e = np.maximum(e, s)
    return Part(
        dev=_ids(columns.get("dev")),
        stream=_ids(columns.get("stream")),
        s=s,
        e=e,
        corr=_ids(columns.get("corr")),
        pid=_ids(columns.get("pid")),
        valid=_present(columns["s"], columns["e"]),
    )


def _present(*columns: Any) -> Any:
    """The rows where none of ``columns`` is NULL (None: every row)."""
    masks = [c[1] for c in columns if c is not None and c[1] is not None]
    if not masks:
        return None
    return ~np.logical_or.reduce(masks) if len(masks) > 1 else ~masks[0]


def _ids(column: tuple[Any, Any] | None) -> Any:
    """An id column with NULL as -1 (None when the table lacks it: every row NULL)."""
    if column is None:
        return None
    values, mask = column
    return values if mask is None else np.where(mask, NULL, values)


def _or_null(values: Any, n: int) -> Any:
    return np.full(n, NULL, dtype=np.int64) if values is None else values


# -- unions ---------------------------------------------------------------------------------------
def _valid(part: Part, chosen: Any) -> Any:
    """``chosen`` (a mask) restricted to the rows with a start and an end."""
    return chosen if part.valid is None else chosen & part.valid


def lanes(parts: list[Part]) -> dict[int, list[int]]:
    """The devices with timed ops (-1: no deviceId), each with its streams, NULLs last."""
    found: dict[int, set[int]] = {}
    for part in parts:
        n = len(part.s)
        dev, stream = _or_null(part.dev, n), _or_null(part.stream, n)
        if part.valid is not None:
            dev, stream = dev[part.valid], stream[part.valid]
        for device, streams in _pairs(dev, stream).items():
            found.setdefault(device, set()).update(streams)
    return {d: sorted(found[d], key=_nulls_last) for d in sorted(found, key=_nulls_last)}


def _pairs(first: Any, second: Any) -> dict[int, set[int]]:
    """The distinct (first, second) pairs: one count over a small grid, else per first value."""
    if not len(first):
        return {}
    lows = (int(first.min()), int(second.min()))
    sizes = (int(first.max()) - lows[0] + 1, int(second.max()) - lows[1] + 1)
    if sizes[0] == 1:  # one device: its streams
        return {lows[0]: set(groups(second))}
    if sizes[0] * sizes[1] > 1 << 22:
        return {int(f): set(groups(second[first == f])) for f in groups(first)}
    grid = (first.astype(np.int64) - lows[0]) * sizes[1] + (second - lows[1])
    out: dict[int, set[int]] = {}
    for cell in np.flatnonzero(np.bincount(grid, minlength=sizes[0] * sizes[1])):
        out.setdefault(int(cell // sizes[1]) + lows[0], set()).add(int(cell % sizes[1]) + lows[1])
    return out


def intervals_of(parts: list[Part], select: Callable[[Part], Any]) -> Sorted:
    """The ops ``select`` picks (a mask per part, restricted to the timed rows), sorted."""
    masks = [_valid(p, select(p)) for p in parts]
    return Sorted.owned(
        np.concatenate([p.s[m] for p, m in zip(parts, masks, strict=True)]),
        np.concatenate([p.e[m] for p, m in zip(parts, masks, strict=True)]),
    )


def on_device(device: int) -> Callable[[Part], Any]:
    return lambda p: _or_null(p.dev, len(p.s)) == device


def skipped(parts: list[Part], device: int) -> int:
    """Ops on ``device`` with a NULL start or end."""
    return sum(
        int(np.count_nonzero(~p.valid & (_or_null(p.dev, len(p.s)) == device)))
        for p in parts
        if p.valid is not None
    )


def _nulls_last(key: int) -> tuple[bool, int]:
    return key == NULL, key


def on_stream(device: int, stream: int) -> Callable[[Part], Any]:
    return lambda p: (_or_null(p.dev, len(p.s)) == device) & (_or_null(p.stream, len(p.s)) == stream)


# -- feeding threads ------------------------------------------------------------------------------
def feeders(parts: list[Part], calls: Calls, devices: list[int]) -> dict[int, list[int]] | None:
    """Per device, the threads whose calls share a correlationId with its ops in the same process
    (None when correlation ids repeat among the calls: then ask queries/gap/feeders.sql). The ops
    are matched a slice of _FEED_CHUNK rows at a time, so no temporary is as large as a column."""
    if calls.corr is None or calls.tid is None or not len(calls.tid):
        return {}
    call_of = _calls_by_correlation(calls.corr)
    if call_of is None:
        return None
    found: dict[int, set[int]] = {}
    for part in parts:
        if part.corr is None or not len(part.corr):
            continue
        dev = _or_null(part.dev, len(part.s))
        for lo in range(0, len(part.corr), _FEED_CHUNK):
            rows = slice(lo, lo + _FEED_CHUNK)
            pid = None if part.pid is None else part.pid[rows]
            _add_feeders(found, part.corr[rows], dev[rows], pid, devices, call_of, calls.tid)
    return {device: sorted(threads) for device, threads in found.items()}


def _calls_by_correlation(corr: Any) -> Any:
    """Each correlation id's call (its row; NULL: none), with one NULL entry past the largest id for
    ops that match nothing; None when an id repeats, or ids are too large for a table."""
    usable = corr >= 0
    count = int(np.count_nonzero(usable))
    top = int(corr.max()) if len(corr) else -1
    if top >= 1 << 28:
        return None
    call_of = np.full(max(top, 0) + 2, NULL, dtype=np.int32 if len(corr) < 1 << 31 else np.int64)
    for lo in range(0, len(corr), _FEED_CHUNK):
        ids, keep = corr[lo : lo + _FEED_CHUNK], usable[lo : lo + _FEED_CHUNK]
        at = np.arange(lo, lo + len(ids), dtype=call_of.dtype)
        call_of[ids[keep]] = at[keep]
    if int(np.count_nonzero(call_of != NULL)) != count:  # a correlation id repeats
        return None
    return call_of


def _add_feeders(
    found: dict[int, set[int]], corr: Any, dev: Any, pid: Any, devices: list[int], call_of: Any, tids: Any
) -> None:
    """Add to ``found`` the threads of the calls that launched these ops, per device: the call with
    the op's correlation id, in the op's process (or any process when the op's is unknown)."""
    top = len(call_of) - 2
    if int(corr.min()) < 0 or int(corr.max()) > top:
        corr = np.where((corr >= 0) & (corr <= top), corr, top + 1)
    at = call_of[corr]
    hit = at != NULL
    tid = tids[at]  # where at is NULL this reads the last call: hit masks it out
    if pid is not None:
        hit &= (pid == NULL) | ((pid >> 24) == (tid >> 24))
    for device in devices:
        chosen = hit & (dev == device)
        if chosen.any():
            found.setdefault(device, set()).update(_few_distinct(tid[chosen]))


def _few_distinct(values: Any, few: int = 16) -> list[int]:
    """The distinct ``values`` (a device's feeding threads: a few, each repeated millions of times):
    peeled one at a time while there are few (each pass keeps only the others), else sorted."""
    found: list[int] = []
    while len(values) and len(found) < few:
        found.append(int(values[0]))
        values = values[values != values[0]]
    return found + [int(v) for v in np.unique(values)] if len(values) else found


def without_correlation(parts: list[Part]) -> list[Part]:
    """The ops without the columns only the feeding threads need (their memory can go with them)."""
    return [Part(p.dev, p.stream, p.s, p.e, None, None, p.valid) for p in parts]


# -- causes ---------------------------------------------------------------------------------------
def call_names(calls: Calls) -> list[int]:
    """The distinct name ids of the calls (every thread's: classifying a name no feeding thread
    calls changes nothing, since each device's call sets keep only its feeding threads' calls, and
    a count over the ids is cheaper than picking the feeding threads' calls out first)."""
    if calls.name is None or not len(calls.name):
        return []
    return [n for n in groups(calls.name) if n != NULL]


def classified(calls: Calls, classes: dict[int, str]) -> Any:
    """Each call's class by the rules: LAUNCH, WAIT, or 0 (no rule, or no start before its end).
    A class per call rather than a copy of the classified calls: at 5M calls every fresh array
    costs page faults, and each device's sets below copy only the calls they keep."""
    if calls.name is None or not classes or not len(calls.s):
        return np.zeros(len(calls.s), dtype=np.int8)
    cls = _classes(calls.name, classes)
    cls[calls.e <= calls.s] = 0
    if calls.timed is not None:
        cls[~calls.timed] = 0
    return cls


def call_sets(calls: Calls, cls: Any, threads: list[int]) -> tuple[Sorted, Sorted]:
    """The launch calls and the launch-or-sync calls of ``threads`` (``cls``: :func:`classified`)."""
    if not threads or not len(calls.s):
        empty = Sorted(np.zeros(0, np.int64), np.zeros(0, np.int64))
        return empty, empty
    mine = _member(calls.tid, threads)
    launch = mine & (cls == LAUNCH)
    busy = mine & (cls > 0)
    launch_set = Sorted.owned(calls.s[launch], calls.e[launch])
    if np.array_equal(launch, busy):  # every classified call of these threads is a launch: one set
        return launch_set, launch_set
    return launch_set, Sorted.owned(calls.s[busy], calls.e[busy])


def _classes(names: Any, classes: dict[int, str]) -> Any:
    """Each call's class (0: neither) by its name id: a lookup table when the ids are small."""
    high = max(int(names.max()) if len(names) else 0, max(classes))
    if int(names.min() if len(names) else 0) < NULL or high >= 1 << 26:
        cls = np.zeros(len(names), dtype=np.int8)
        for name, cause in classes.items():
            cls[names == name] = _CLASS_OF[cause]
        return cls
    table = np.zeros(high + 2, dtype=np.int8)  # the last entry stands for NULL (-1)
    for name, cause in classes.items():
        table[name] = _CLASS_OF[cause]
    return table[names]


def call_coverage(calls: Calls, cls: Any, threads: list[int]) -> tuple[Coverage, Coverage]:
    """How long the launch calls, and the launch-or-sync calls, of ``threads`` cover any window
    (built once per set of feeding threads: devices fed by the same threads share it)."""
    launch, busy = call_sets(calls, cls, threads)
    covering = Coverage.of(launch)
    return covering, covering if busy is launch else Coverage.of(busy)


def causes(gap_starts: Any, gap_ends: Any, launch: Coverage, busy_calls: Coverage) -> tuple[Any, Any]:
    """Per gap: (time in a launch call, time in a sync call but no launch call)."""
    launching = launch.between(gap_starts, gap_ends)
    return launching, busy_calls.between(gap_starts, gap_ends) - launching


def _member(values: Any, chosen: list[int]) -> Any:
    """Whether each of ``values`` is one of the few ``chosen``."""
    if len(chosen) <= 8:
        return np.logical_or.reduce([values == c for c in chosen]) if len(chosen) > 1 else values == chosen[0]
    table = np.array(sorted(chosen), dtype=np.int64)
    at = np.minimum(np.searchsorted(table, values), len(table) - 1)
    return table[at] == values
