"""GPU busy, idle and exposed communication time per device: nsysq diff's GPU totals.

The op intervals are the rows of ``queries/gpu_ops.sql`` (kernels, memcpys and memsets with a
start and an end, each kernel marked communication or compute by the lineup category of its name
pair); on a direct, unscoped read of the export's pages they are the decoded columns themselves,
marked with ``queries/kernel_comm_pairs.sql`` (one row per name pair, not per kernel). Per device:

* ``busy_ns``: the length of the union of every op; ``idle_ns`` = ``span_ns`` - ``busy_ns``;
  ``idle_gaps`` the maximal idle intervals (the device rows of ``nsysq gaps``);
* ``comm_exposed_ns``: communication time during which no compute kernel ran (``exposed_ns`` of
  ``nsysq overlap``), as |all kernels| - |compute kernels| (|comm \\ compute| = |comm U compute| -
  |compute|), 0 on a device without communication kernels.

Each union comes from its starts and ends sorted (nsysq.intervals): compute, communication and copy
intervals are sorted once each, and the two larger unions are merges of those sorted runs.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from nsysq import catalog, schema
from nsysq.intervals import Sorted, groups, union
from nsysq.table import Table

if TYPE_CHECKING:
    from nsysq.trace import Trace

COLUMNS = ("device_id", "ops", "span_ns", "busy_ns", "idle_ns", "idle_gaps", "comm_exposed_ns")
ANALYSIS = "gpu_busy/1"
"""This computation's name and version: part of the key its kept answers are stored under."""
COMPUTE, COMM, COPY = 0, 1, 2
"""The op kinds of queries/gpu_ops.sql."""
_KERNEL_COLUMNS = ("start", "end", "deviceId", "shortName", "demangledName")
_COPY_COLUMNS = ("start", "end", "deviceId")


@dataclass(frozen=True)
class _Ops:
    """Ops of one table: device (-1 for NULL), start, end (at least the start) and, for kernels,
    whether each is a communication kernel (None for memcpys and memsets)."""

    dev: Any
    s: Any
    e: Any
    comm: Any = None


def gpu_busy(trace: Trace, comm_category: str) -> Table:
    """One row per device with GPU ops (COLUMNS; device_id None for ops without a deviceId); kept
    like a query's answer, so asking again (the same trace and rules) reads it back."""
    columns, rows = trace.kept(
        "gpu_ops", ANALYSIS, {"comm_category": comm_category}, lambda: (COLUMNS, _rows(trace, comm_category))
    )
    labels = tuple(catalog.get(name).label for name in ("gpu_ops", "kernel_comm_pairs"))
    return Table(kind="gpu_busy", columns=columns, rows=rows, queries=labels)


def _rows(trace: Trace, comm_category: str) -> list[tuple[Any, ...]]:
    parts = _decoded_ops(trace, comm_category) or _query_ops(trace, comm_category)
    kernels, copies = parts
    devices = sorted({d for ops in (kernels, *copies) for d in groups(ops.dev)})
    # Devices are independent: two threads (numpy's sorts and ufuncs release the GIL).
    with ThreadPoolExecutor(2) as pool:
        rows = list(pool.map(lambda d: _device_row(d, kernels, copies), devices))
    rows.sort(key=lambda r: (r[0] is None, r[0] or 0))
    return rows


def _device_row(device: int, kernels: _Ops, copies: list[_Ops]) -> tuple[Any, ...]:
    on = kernels.dev == device
    comm_on = on & kernels.comm
    if comm_on.any():
        compute, comm = _sorted(kernels, on & ~kernels.comm), _sorted(kernels, comm_on)
    else:
        compute, comm = _sorted(kernels, on), Sorted.of(kernels.s[:0], kernels.e[:0])
    moved = [_sorted(c, c.dev == device) for c in copies]
    kernel_set = compute.merged(comm)
    every = kernel_set
    for part in moved:
        every = every.merged(part)
    whole = union(every)
    exposed = union(kernel_set).busy - union(compute).busy if len(comm) else 0
    device_id = None if device == -1 else device
    return (device_id, len(every), whole.span, whole.busy, whole.idle, whole.gaps, exposed)


def _sorted(ops: _Ops, chosen: Any) -> Sorted:
    """The ``chosen`` rows of ``ops`` as one interval set (sorted in place: the rows are copies)."""
    return Sorted.owned(ops.s[chosen], ops.e[chosen])


def _query_ops(trace: Trace, comm_category: str) -> tuple[_Ops, list[_Ops]]:
    """The rows of queries/gpu_ops.sql, run in DuckDB (scoped reads, cached copies, the scanner)."""
    rows = trace.run_arrays("gpu_ops", comm_category=comm_category)
    kind = rows["kind"]
    kernel, copy = kind != COPY, kind == COPY
    kernels = _Ops(rows["dev"][kernel], rows["s"][kernel], rows["e"][kernel], kind[kernel] == COMM)
    return kernels, [_Ops(rows["dev"][copy], rows["s"][copy], rows["e"][copy])]


def _decoded_ops(trace: Trace, comm_category: str) -> tuple[_Ops, list[_Ops]] | None:
    """The rows of queries/gpu_ops.sql from the decoded columns (None: not read from pages)."""
    kernels = trace.decoded_arrays(schema.KERNEL, _KERNEL_COLUMNS)
    memcpy = trace.decoded_arrays(schema.MEMCPY, _COPY_COLUMNS)
    memset = trace.decoded_arrays(schema.MEMSET, _COPY_COLUMNS)
    if kernels is None or memcpy is None or memset is None:
        return None
    pairs = trace.run("kernel_comm_pairs", comm_category=comm_category).rows
    kernel_ops = _ops(kernels)
    keep = _kept(kernels)
    kernel_ops = _Ops(kernel_ops.dev, kernel_ops.s, kernel_ops.e, _comm_rows(kernels, keep, pairs))
    trace.note_query("gpu_ops", "its rows read from the decoded columns", comm_category=comm_category)
    return kernel_ops, [_ops(memcpy), _ops(memset)]


def _kept(columns: dict[str, tuple[Any, Any]]) -> Any:
    """The rows with a start and an end (None: every row)."""
    masks = [m for m in (columns["start"][1], columns["end"][1]) if m is not None]
    if not masks:
        return None
    return ~np.logical_or.reduce(masks) if len(masks) > 1 else ~masks[0]


def _ops(columns: dict[str, tuple[Any, Any]]) -> _Ops:
    """One decoded table's ops with a start and an end."""
    keep = _kept(columns)
    start, end = columns["start"][0], columns["end"][0]
    starts = start if keep is None else start[keep]
    ends = end if keep is None else end[keep]
    if (ends < starts).any():  # an end before its start counts as zero-length
        ends = np.maximum(ends, starts)
    return _Ops(_filled(columns.get("deviceId"), keep, len(starts)), starts, ends)


def _filled(column: tuple[Any, Any] | None, keep: Any, n: int) -> Any:
    """A decoded integer column over the kept rows, -1 where NULL (all -1 when the table lacks it)."""
    if column is None:
        return np.full(n, -1, dtype=np.int32)
    values, nulls = column
    out = values if nulls is None else np.where(nulls, -1, values)
    return out if keep is None else out[keep]


def _comm_rows(kernels: dict[str, tuple[Any, Any]], keep: Any, pairs: list[tuple[Any, ...]]) -> Any:
    """Whether each kept kernel row's (shortName, demangledName) pair is a communication pair."""
    n = len(kernels["start"][0]) if keep is None else int(np.count_nonzero(keep))
    comm_pairs = {(int(s), int(d)) for s, d, is_comm in pairs if is_comm}
    if not comm_pairs:
        return np.zeros(n, dtype=bool)
    short = _filled(kernels.get("shortName"), keep, n)
    by_short: dict[int, set[int]] = {}
    for s, d, _ in pairs:
        by_short.setdefault(int(s), set()).add(int(d))
    # A short name all of whose pairs communicate decides alone; the others look at the demangled id.
    whole = sorted(s for s, ds in by_short.items() if {(s, d) for d in ds} <= comm_pairs)
    out = _member(short, whole)
    mixed = {s for s, _ in comm_pairs} - set(whole)
    if mixed:
        demangled = _filled(kernels.get("demangledName"), keep, n)
        for s in mixed:
            rows = short == s
            out[rows] = np.isin(demangled[rows], [d for cs, d in comm_pairs if cs == s])
    return out


def _member(ids: Any, chosen: list[int]) -> Any:
    """Whether each of ``ids`` (string ids, -1 for NULL) is one of ``chosen``: a lookup table
    (its last entry stands for -1, which numpy's indexing reads from the end)."""
    if not chosen or not len(ids):
        return np.zeros(len(ids), dtype=bool)
    low, high = int(ids.min()), int(ids.max())
    if low < -1 or high >= 1 << 26:
        return np.isin(ids, chosen)
    table = np.zeros(high + 2, dtype=bool)
    table[[c for c in chosen if -1 <= c <= high]] = True
    return table[ids]
