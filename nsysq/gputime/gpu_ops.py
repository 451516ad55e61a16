"""The GPU op rows behind nsysq diff's GPU totals (nsysq.gputime.gpu_busy) and nsysq overlap, as arrays.

The rows are those of ``queries/gpu_ops.sql``: kernels, memcpys, memsets and executions of CUDA
graphs traced whole, each with a start and an end (an end before its start counts as zero-length),
the device as -1 when NULL. On a direct, unscoped read of the export's pages they are the decoded
columns themselves (graph executions from ``queries/gap/graph_ops.sql``); otherwise (a scope, the
cached copy, the sqlite scanner) the query runs in DuckDB. Each kernel gets a class from its
(shortName, demangledName) pair's row of ``queries/kernel/comm_pairs.sql``, one row per name pair,
never per launch: 0 compute, k > 0 communication of collective kind ``kinds[k - 1]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from nsysq.export import schema

if TYPE_CHECKING:
    from nsysq.session import Session

COMPUTE = 0
"""The class of a kernel outside the communication category."""
KERNEL, MEMCPY, MEMSET, GRAPH = 0, 1, 2, 3
"""The op kinds of queries/gpu_ops.sql (those of queries/gap/ops.sql)."""
_KERNEL_COLUMNS = ("start", "end", "deviceId", "shortName", "demangledName")
_COPY_COLUMNS = ("start", "end", "deviceId")
_LABELS = ("gpu_ops", "kernel_comm_pairs")


@dataclass(frozen=True)
class Ops:
    """Ops of one kind: device (-1 for NULL), start, end (at least the start); for kernels, each
    one's class (``COMPUTE``, or k > 0: communication of kind ``GpuOps.kinds[k - 1]``)."""

    dev: Any
    s: Any
    e: Any
    cls: Any = None

    def __len__(self) -> int:
        return len(self.s)


@dataclass(frozen=True)
class GpuOps:
    """Every GPU op with a start and an end, by kind, and the collective kinds the classes name."""

    kernels: Ops
    memcpys: Ops
    memsets: Ops
    graphs: Ops
    kinds: tuple[str, ...]

    def devices(self) -> list[int]:
        """The devices with any op (-1 stands for a NULL deviceId)."""
        from nsysq.gputime.intervals import groups

        every = (self.kernels, self.memcpys, self.memsets, self.graphs)
        return sorted({d for ops in every for d in groups(ops.dev)})


def labels() -> tuple[str, ...]:
    """The labels of the queries behind these rows."""
    from nsysq import catalog

    return tuple(catalog.get(name).label for name in _LABELS)


def read(trace: Session, comm_category: str, kind_names: list[str], kind_patterns: list[str]) -> GpuOps:
    """The rows of queries/gpu_ops.sql, each kernel classed by queries/kernel/comm_pairs.sql (its
    lineup category and collective kind; the lineup rules must be loaded: Session.use_rules)."""
    pairs = trace.run(
        "kernel_comm_pairs", comm_category=comm_category, kind_names=kind_names, kind_patterns=kind_patterns
    ).rows
    kinds = tuple(sorted({str(kind) for _, _, is_comm, kind in pairs if is_comm}))
    code = {kind: k + 1 for k, kind in enumerate(kinds)}
    classes = {(int(s), int(d)): code[str(kind)] if is_comm else COMPUTE for s, d, is_comm, kind in pairs}
    found = _decoded(trace, classes) or _queried(trace, classes)
    return GpuOps(*found, kinds=kinds)


def _queried(trace: Session, classes: dict[tuple[int, int], int]) -> tuple[Ops, Ops, Ops, Ops]:
    """The rows of queries/gpu_ops.sql, run in DuckDB (scoped reads, cached copies, the scanner)."""
    rows = {key: np.ma.getdata(column) for key, column in trace.run_arrays("gpu_ops").items()}
    kind = rows["kind"]

    def of(chosen: int) -> Ops:
        rows_of = kind == chosen
        return Ops(rows["dev"][rows_of], rows["s"][rows_of], rows["e"][rows_of])

    kernels = of(KERNEL)
    on = kind == KERNEL
    cls = pair_classes(rows["sid"][on], rows["did"][on], classes)
    return Ops(kernels.dev, kernels.s, kernels.e, cls), of(MEMCPY), of(MEMSET), of(GRAPH)


def _decoded(trace: Session, classes: dict[tuple[int, int], int]) -> tuple[Ops, Ops, Ops, Ops] | None:
    """The rows of queries/gpu_ops.sql from the decoded columns (None: not read from pages)."""
    kernels = trace.decoded_arrays(schema.KERNEL, _KERNEL_COLUMNS)
    if kernels is None:
        return None
    memcpy, memset = (_copies(trace, table) for table in (schema.MEMCPY, schema.MEMSET))
    if memcpy is None or memset is None:
        return None
    keep = _kept(kernels)
    n = len(kernels["start"][0]) if keep is None else int(np.count_nonzero(keep))
    short, demangled = (_filled(kernels.get(c), keep, n) for c in ("shortName", "demangledName"))
    kernel_ops = _ops(kernels)
    kernel_ops = Ops(kernel_ops.dev, kernel_ops.s, kernel_ops.e, pair_classes(short, demangled, classes))
    graphs = _graph_ops(trace.run_arrays("gap_graph_ops"))
    trace.note_query("gpu_ops", "its rows read from the decoded columns (graph executions: gap_graph_ops)")
    return kernel_ops, _ops(memcpy), _ops(memset), graphs


def _copies(trace: Session, table: str) -> dict[str, tuple[Any, Any]] | None:
    """A copy table's decoded columns; no rows when the export lacks the table (nsys leaves out
    empty tables); None when it has the table but its pages are not decoded."""
    if not trace.schema.has(table):
        empty = np.zeros(0, dtype=np.int64)
        return dict.fromkeys(_COPY_COLUMNS, (empty, None))
    return trace.decoded_arrays(table, _COPY_COLUMNS)


def _graph_ops(rows: dict[str, Any]) -> Ops:
    """queries/gap/graph_ops.sql's rows (masked where NULL) with a start and an end."""
    s, e, dev = rows["s"], rows["e"], rows["dev"]
    timed = ~(np.ma.getmaskarray(s) | np.ma.getmaskarray(e))
    starts = np.ma.getdata(s)[timed].astype(np.int64)
    ends = np.maximum(np.ma.getdata(e)[timed].astype(np.int64), starts)
    devices = np.where(np.ma.getmaskarray(dev), -1, np.ma.getdata(dev))[timed].astype(np.int64)
    return Ops(devices, starts, ends)


def _kept(columns: dict[str, tuple[Any, Any]]) -> Any:
    """The rows with a start and an end (None: every row)."""
    masks = [m for m in (columns["start"][1], columns["end"][1]) if m is not None]
    if not masks:
        return None
    return ~np.logical_or.reduce(masks) if len(masks) > 1 else ~masks[0]


def _ops(columns: dict[str, tuple[Any, Any]]) -> Ops:
    """One decoded table's ops with a start and an end."""
    keep = _kept(columns)
    start, end = columns["start"][0], columns["end"][0]
    starts = start if keep is None else start[keep]
    ends = end if keep is None else end[keep]
    if (ends < starts).any():  # an end before its start counts as zero-length
        ends = np.maximum(ends, starts)
    return Ops(_filled(columns.get("deviceId"), keep, len(starts)), starts, ends)


def _filled(column: tuple[Any, Any] | None, keep: Any, n: int) -> Any:
    """A decoded integer column over the kept rows, -1 where NULL (all -1 when the table lacks it)."""
    if column is None:
        return np.full(n, -1, dtype=np.int32)
    values, nulls = column
    out = values if nulls is None else np.where(nulls, -1, values)
    return out if keep is None else out[keep]


def pair_classes(short: Any, demangled: Any, classes: dict[tuple[int, int], int]) -> Any:
    """Each kernel row's class by its (short, demangled) id pair (-1 for NULL; a pair ``classes``
    lacks is compute). A short name all of whose pairs share one class decides alone (a lookup
    table over the short ids); the rows of the other short names look at the demangled id."""
    out = np.zeros(len(short), dtype=np.int16)
    if not any(classes.values()) or not len(short):
        return out
    by_short: dict[int, set[int]] = {}
    for (s, _), cls in classes.items():
        by_short.setdefault(s, set()).add(cls)
    uniform = {s: next(iter(c)) for s, c in by_short.items() if len(c) == 1}
    out = _lookup(short, {s: c for s, c in uniform.items() if c != COMPUTE})
    for s in (s for s in by_short if s not in uniform):
        rows = np.flatnonzero(short == s)
        mine = {d: cls for (cs, d), cls in classes.items() if cs == s and cls != COMPUTE}
        out[rows] = _lookup(demangled[rows], mine)
    return out


def _lookup(ids: Any, chosen: dict[int, int]) -> Any:
    """``chosen[id]`` for each of ``ids`` (string ids, -1 for NULL), 0 for the others: a lookup
    table (its last entry stands for -1, which numpy's indexing reads from the end)."""
    out = np.zeros(len(ids), dtype=np.int16)
    if not chosen or not len(ids):
        return out
    low, high = int(ids.min()), int(ids.max())
    if low < -1 or high >= 1 << 26:
        for key, cls in chosen.items():
            out[ids == key] = cls
        return out
    table = np.zeros(high + 2, dtype=np.int16)
    for key, cls in chosen.items():
        if -1 <= key <= high:
            table[key] = cls
    return table[ids]
