"""NVTX: where in the program the GPU work happens, per range name.

Attribution follows NVIDIA's projection (nsys's ``nvtx_gpu_proj_*`` / ``nvtx_kern_sum``): a GPU
operation belongs to every range on the same thread whose interval holds its launching CUDA runtime
or driver call (``eventClass IN (0, 1)``, joined by correlation id within the process). The packaged
queries build it in steps, each kept as a temp table (docs/nvtx.md explains each one):

    nvtx_ranges     every range row: name (text or textId), domain name, kept or why dropped
    nvtx_marks      the push/pop stacks as a sweep of +1/-1 boundaries per thread and domain
    nvtx_stack      each kept range's nesting level and parent
    nvtx_unnested   how many push/pop ranges leave their stack out of order (0 in real traces)
    nvtx_ops        every kernel, memcpy, memset and whole-graph execution with its launching call
    nvtx_ancestors  each range and the ranges enclosing it (recursive, over ranges only)
    nvtx_inner      per operation and domain, the innermost range open during its call (ASOF join)
    nvtx_pairs      (operation, range) attributions: every enclosing range, or the innermost only;
                    nvtx_window_pairs instead: ranges whose interval holds the GPU interval
    nvtx_rows       one row per (domain, range name); nvtx the top rows, nvtx_totals the footer

The sweep is dropped once the stacks and innermost ranges exist, the innermost ranges and
ancestors once the pairs exist (memory; built again when asked for), and the steps run under
WORK_MEMORY of DuckDB memory.

:func:`selection_filter` gives the other commands the GPU work of the ranges a selector names (the
session calls it when it opens with ``nvtx=``).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from nsysq import catalog
from nsysq.analyses import nvtx_native, nvtx_ranges, nvtx_sweep
from nsysq.base.errors import NoDataError, UsageError
from nsysq.base.sorting import lexsorted, place_rows
from nsysq.base.table import Table
from nsysq.base.threads import side_by_side
from nsysq.export import schema
from nsysq.session.scope import OP_KEYS, NvtxSelection, OpFilter, stamp

if TYPE_CHECKING:
    from nsysq.session import Session


@dataclass
class _Swept:
    """What the sweep (nsysq.analyses.nvtx_sweep) computed for one session's ranges: the stacks,
    and once pairs are built the GPU ops and their (op, range) pairs, until the per-range sums use
    them."""

    key: str
    stacks: nvtx_sweep.Stacks
    ops: nvtx_sweep.Ops | None = None
    pairs: tuple[Any, Any, Any] | None = None  # op index, range index, op rank by GPU time
    op_totals: dict[str, int] | None = None  # queries/nvtx/totals.sql's GPU-op columns, with the pairs
    #: Tables recorded for --show-sql but not kept (`nsysq nvtx` reads them from the arrays): kept
    #: when a step reads them (_ensure_ops, _ensure_pairs).
    pending: tuple[str, ...] = ()
    pairs_innermost: bool = False
    #: The per-range rows summed by the native pass (nvtx_native), when it stood in for the pairs.
    sums: dict[str, Any] | None = None
    #: The columns nsysq_nvtx_ops is kept as (from decoded_ops; None when built otherwise or let go).
    op_columns: dict[str, Any] | None = None


_SWEPT: weakref.WeakKeyDictionary[Session, _Swept] = weakref.WeakKeyDictionary()

#: DuckDB's working memory for the attribution steps (nsysq.session.Session.bounded_memory): past it
#: DuckDB spills its temp tables and sorts into a private temporary directory.
WORK_MEMORY = "2GB"
DEFAULT_LIMIT = 20
"""Rows `nsysq nvtx` shows unless --limit says otherwise (0 = every range name)."""
COLUMNS = (
    "rank", "domain", "name", "instances", "total_ns", "avg_ns", "med_ns", "min_ns", "max_ns",
    "kernels", "kernel_ns", "gpu_span_ns", "gpu_busy_ns", "memcpys", "memsets", "graph_executions",
    "graph_ns",
)  # fmt: skip
_BASE_TABLES = (
    ("nvtx_ranges", "nsysq_nvtx_ranges"),
    ("nvtx_marks", "nsysq_nvtx_marks"),
    ("nvtx_stack", "nsysq_nvtx_stack"),
    ("nvtx_unnested", "nsysq_nvtx_unnested"),
    ("nvtx_ops", "nsysq_nvtx_ops"),
    ("nvtx_ancestors", "nsysq_nvtx_ancestors"),
    ("nvtx_inner", "nsysq_nvtx_inner"),
)
#: The ranges in rid order (nvtx_ranges numbers them; dropped then).
_SORTED_RANGES = "nsysq_nvtx_ranges_sorted"
#: Steps only the next steps read: dropped once used (memory), built again when asked for.
_SWEEP = "nsysq_nvtx_marks"
_LOOKUPS = ("nsysq_nvtx_inner", "nsysq_nvtx_ancestors")
#: The event tables nvtx_ops reads (their decoded columns are freed once it is built).
_EVENT_TABLES = (schema.KERNEL, schema.MEMCPY, schema.MEMSET, schema.GRAPH_TRACE, schema.RUNTIME)
_NO_NVTX = (
    "{name} recorded no NVTX ranges; annotate the program with NVTX (torch.cuda.nvtx.range, "
    "nvtx.annotate, nvtxRangePush) and profile with nsys profile --trace=cuda,nvtx."
)


def require_ranges(trace: Session, *, extend_unended: bool = False) -> None:
    """Raise NoDataError when the export holds no NVTX range rows (push/pop or start/end)."""
    if not trace.schema.has(schema.NVTX):
        raise NoDataError(_NO_NVTX.format(name=trace.path.name))
    if not trace.is_materialized("nsysq_nvtx_ranges", extend_unended=extend_unended):
        _build_ranges(trace, extend_unended)
    if not _range_rows(trace):
        raise NoDataError(_NO_NVTX.format(name=trace.path.name))


def _build_ranges(trace: Session, extend_unended: bool) -> None:
    """nsysq_nvtx_ranges: from the export's pages when this read allows it (nvtx_ranges), else by
    queries/nvtx/ranges_sorted.sql and ranges.sql."""
    if not nvtx_ranges.keep_decoded(
        trace, "nsysq_nvtx_ranges", _SORTED_RANGES, extend_unended=extend_unended
    ):
        trace.materialize("nvtx_ranges_sorted", _SORTED_RANGES, extend_unended=extend_unended)
        trace.materialize("nvtx_ranges", "nsysq_nvtx_ranges", rebuild=True, extend_unended=extend_unended)
    trace.drop_materialized(_SORTED_RANGES)


def _range_rows(trace: Session) -> int:
    """The rows of nsysq_nvtx_ranges (built by :func:`require_ranges`)."""
    return int(trace.sql_table("SELECT count(*) FROM nsysq_nvtx_ranges").rows[0][0])


def build_attribution(
    trace: Session, *, release_events: bool = False, extend_unended: bool | None = None, lean: bool = False
) -> None:
    """Build (once per Session) the temp tables every NVTX question reads: ranges, stacks, GPU
    operations with their launching calls, innermost ranges and ancestors. The sweep of stack
    boundaries is dropped once the stacks and innermost ranges are built (memory); with
    ``release_events`` the decoded GPU-op and CUDA API columns are freed once nvtx_ops holds what
    the attribution needs (for ``nsysq nvtx``, which reads nothing else; a --nvtx scope keeps them
    for the command that follows; ``lean``, with it, also keeps no table of the GPU ops until a
    step reads one, see _ensure_ops). ``extend_unended``: ranges that never ended run to the last NVTX
    timestamp (every step is built again when the other choice was built before; None: as built,
    else not). When the push/pop stacks nest, the stacks are computed by one sorted pass
    (nsysq.analyses.nvtx_sweep) and the innermost ranges and ancestors only when pairs are asked
    for, by the same pass (the SQL of each step is recorded for --show-sql)."""
    ranges = "nsysq_nvtx_ranges"
    if extend_unended is None:
        extend_unended = trace.is_materialized(ranges, extend_unended=True)
    elif trace.is_materialized(ranges) and not trace.is_materialized(ranges, extend_unended=extend_unended):
        trace.drop_materialized(*(table for _, table in _BASE_TABLES))
    require_ranges(trace, extend_unended=extend_unended)
    if _swept(trace, extend_unended) is not None and _sweep_built(trace):
        return
    if all(trace.is_materialized(table) for _, table in _BASE_TABLES if table != _SWEEP):
        return
    if _build_by_sweep(trace, release_events, extend_unended, lean):  # after stack_check too
        return
    _build_by_sql(trace, release_events, extend_unended)


def _build_by_sql(trace: Session, release_events: bool, extend_unended: bool) -> None:
    ranges = "nsysq_nvtx_ranges"
    for name, table in _BASE_TABLES:
        trace.materialize(name, table, **({"extend_unended": extend_unended} if table == ranges else {}))
        if release_events and table == "nsysq_nvtx_ops":
            for events in _EVENT_TABLES:
                trace.release_columns(events)
    trace.drop_materialized(_SWEEP)


def _sweep_key(trace: Session, extend_unended: bool) -> str:
    return f"{trace.scope.key()}|{extend_unended}"


def _swept(trace: Session, extend_unended: bool | None = None) -> _Swept | None:
    """The sweep's state for the ranges as built now (None: the SQL path holds them)."""
    if extend_unended is None:
        extend_unended = trace.is_materialized("nsysq_nvtx_ranges", extend_unended=True)
    state = _SWEPT.get(trace)
    if state is None or state.key != _sweep_key(trace, extend_unended):
        return None
    if not trace.is_materialized("nsysq_nvtx_stack") or state.stacks.unnested:
        return None
    return state


def _sweep_built(trace: Session) -> bool:
    state = _SWEPT.get(trace)
    pending = state.pending if state is not None else ()
    return all(
        trace.is_materialized(t) or t in pending
        for t in ("nsysq_nvtx_stack", "nsysq_nvtx_unnested", "nsysq_nvtx_ops")
    )


def _ensure_ops(trace: Session) -> None:
    """Keep nsysq_nvtx_ops when it was only recorded (lean): decoded again (or by its query)."""
    state = _SWEPT.get(trace)
    if state is None or "nsysq_nvtx_ops" not in state.pending:
        return
    state.pending = tuple(t for t in state.pending if t != "nsysq_nvtx_ops")
    decoded = nvtx_sweep.decoded_ops(trace)
    if decoded is None:
        trace.materialize("nvtx_ops", "nsysq_nvtx_ops", rebuild=True)
        return
    trace.keep_arrays(
        "nvtx_ops", "nsysq_nvtx_ops", decoded[1], select=nvtx_sweep.OPS_SELECT, note=nvtx_sweep.OPS_NOTE,
        record=False,
    )  # fmt: skip
    state.op_columns = decoded[1]


def _ensure_pairs(trace: Session, state: _Swept | None) -> None:
    """Keep nsysq_nvtx_pairs (and the GPU ops) when they were only recorded (lean)."""
    _ensure_ops(trace)
    if state is None or "nsysq_nvtx_pairs" not in state.pending or state.pairs is None:
        return
    import numpy as np

    state.pending = tuple(t for t in state.pending if t != "nsysq_nvtx_pairs")
    op_idx, range_idx, _ = state.pairs
    columns = {"oid": op_idx.astype(np.int64) + 1, "rid": range_idx + 1}
    trace.keep_arrays(
        "nvtx_pairs", "nsysq_nvtx_pairs", columns, note=nvtx_sweep.NOTE, record=False,
        innermost=state.pairs_innermost,
    )  # fmt: skip


def swept_stacks(trace: Session) -> nvtx_sweep.Stacks | None:
    """The ranges' stacks by the sweep (from the kept range arrays when the ranges came from the
    pages), kept as nsysq_nvtx_stack and nsysq_nvtx_unnested; None when the push/pop ranges do
    not nest (nothing kept: the SQL steps build the stack)."""
    import numpy as np

    decoded_ranges = nvtx_ranges.kept(trace, "nsysq_nvtx_ranges")
    arrays = nvtx_ranges.stack_arrays(decoded_ranges.columns) if decoded_ranges is not None else None
    stacks = _build_stacks(trace, arrays)
    if stacks.unnested:
        return None
    note = nvtx_sweep.NOTE
    trace.note_materialized("nvtx_marks", _SWEEP, note)
    kept = np.flatnonzero(stacks.kept)
    columns = {"rid": kept + 1, "lvl": stacks.lvl[kept], "prid": stacks.prid[kept].astype(np.int64) + 1}
    trace.keep_arrays(
        "nvtx_stack", "nsysq_nvtx_stack", columns, select="rid, lvl, NULLIF(prid, 0) AS prid", note=note
    )
    trace.keep_arrays("nvtx_unnested", "nsysq_nvtx_unnested", {"unnested": np.zeros(1, np.int64)}, note=note)
    return stacks


def _build_by_sweep(trace: Session, release_events: bool, extend_unended: bool, lean: bool = False) -> bool:
    """The stacks by the sweep, then the GPU ops; False (nothing built) when the push/pop ranges do
    not nest: the SQL path then builds every step. ``lean`` (with ``release_events``, and no
    start/end range): the GPU ops' table is recorded, not kept (pending)."""
    import numpy as np

    decoded_ranges = nvtx_ranges.kept(trace, "nsysq_nvtx_ranges")
    if decoded_ranges is None:  # ranges by SQL: the stacks first, then the ops, one after the other
        stacks = swept_stacks(trace)
        if stacks is None:
            return False
        lean = lean and release_events and not bool(np.any(stacks.kept & ~stacks.pushpop))
        decoded = nvtx_sweep.decoded_ops(trace, release=release_events, as_table=not lean)
    else:
        columns = decoded_ranges.columns  # a kept start/end range needs the ops' table (lean: not kept)
        lean = lean and release_events and not bool(np.any((columns["dropped"] == 0) & ~columns["pushpop"]))
        stacks, decoded = _stacks_beside_ops(trace, release_events, lean)
        if stacks is None:
            return False
    note = nvtx_sweep.NOTE
    if decoded is None:
        trace.materialize("nvtx_ops", "nsysq_nvtx_ops")
    if release_events:  # before the ops' table is made from the arrays: memory
        for events in _EVENT_TABLES:
            trace.release_columns(events)
    lean = lean and decoded is not None
    if decoded is not None and lean:
        trace.note_materialized("nvtx_ops", "nsysq_nvtx_ops", nvtx_sweep.OPS_NOTE)
    elif decoded is not None:
        trace.keep_arrays(
            "nvtx_ops", "nsysq_nvtx_ops", decoded[1], select=nvtx_sweep.OPS_SELECT, note=nvtx_sweep.OPS_NOTE
        )
    pending = ("nsysq_nvtx_ops",) if lean else ()
    ops = decoded[0] if decoded else None
    op_columns = decoded[1] if decoded is not None and not lean else None
    if lean and ops is not None:  # oid is the op's index + 1 (decoded_ops): not kept (memory)
        ops = replace(ops, oid=None)
    del decoded  # memory: without the table, the ops' process and correlation ids go
    _SWEPT[trace] = _Swept(
        _sweep_key(trace, extend_unended), stacks, ops, pending=pending, op_columns=op_columns
    )
    for name, table in _BASE_TABLES[5:]:  # ancestors, inner: their rows come with the pairs
        trace.note_materialized(name, table, note)
    trace.drop_materialized(_SWEEP)
    return True


def _stacks_beside_ops(
    trace: Session, release: bool, lean: bool
) -> tuple[nvtx_sweep.Stacks | None, tuple[nvtx_sweep.Ops, dict[str, Any]] | None]:
    """The stacks (swept_stacks, this thread) and the GPU ops (nvtx_sweep.decoded_ops, numpy alone
    on a second thread, from columns this thread reads first): neither reads the other, and the two
    cores then share them. None for the stacks when the ranges do not nest."""
    fetched = nvtx_sweep.fetch_ops(trace, release=release, one_pid=lean)
    if fetched is None:
        return swept_stacks(trace), None
    ops = partial(nvtx_sweep.ops_from, fetched, as_table=not lean)
    del fetched
    return side_by_side(partial(swept_stacks, trace), ops)


def build_pairs(
    trace: Session,
    *,
    innermost: bool = False,
    window: bool = False,
    extend_unended: bool | None = None,
    lean: bool = False,
) -> str:
    """(Re)build ``nsysq_nvtx_pairs``: (oid, rid) for every attribution in the mode asked for, over
    the ranges as built (``extend_unended`` None) or as asked. Returns the packaged query. ``lean``
    (`nsysq nvtx`): pairs from the sweep are recorded, not kept as a table, until a step reads
    them (_ensure_pairs)."""
    if innermost and window:
        raise UsageError(
            "--innermost and --window do not combine: the time window gives an operation to every "
            "range whose interval holds it; choose one."
        )
    build_attribution(trace, extend_unended=extend_unended)
    state = _swept(trace)
    if state is not None:
        state.pairs = state.op_totals = state.sums = None
        state.pending = tuple(t for t in state.pending if t != "nsysq_nvtx_pairs")
    if window or not lean or state is None or state.ops is None:
        _ensure_ops(trace)
    if window:
        query = "nvtx_window_pairs"
        trace.materialize(query, "nsysq_nvtx_pairs", rebuild=True)
    elif state is not None and _pairs_by_sweep(trace, state, innermost, lean):
        query = "nvtx_pairs"
    else:
        _ensure_ops(trace)
        query = "nvtx_interval_pairs" if unnested_ranges(trace) else "nvtx_pairs"
        if query == "nvtx_pairs" and state is not None:  # the sweep built no lookup tables
            trace.materialize("nvtx_marks", _SWEEP)
            for name, table in _BASE_TABLES[5:]:
                trace.materialize(name, table, rebuild=True)
            trace.drop_materialized(_SWEEP)
        trace.materialize(query, "nsysq_nvtx_pairs", rebuild=True, innermost=innermost)
    trace.drop_materialized(*_LOOKUPS)  # only pairs read them; built again for another mode
    return query


def _pairs_by_sweep(trace: Session, state: _Swept, innermost: bool, lean: bool = False) -> bool:
    """nsysq_nvtx_pairs from the sweep (False: a GPU interval is NULL; the SQL path builds them);
    ``lean``, when the GPU ops' table is pending too: recorded, not kept."""
    import numpy as np

    ops = state.ops or nvtx_sweep.read_ops(trace)
    if ops is None:
        return False
    stacks = _whole_stacks(trace, state)
    if lean and _sums_natively(trace, state, stacks, ops, innermost):
        return True
    op_idx, range_idx, rank = nvtx_sweep.attributed_pairs(stacks, ops, innermost=innermost)
    if np.any(stacks.kept & ~stacks.pushpop):  # start/end ranges: on no stack, only themselves
        found_op, found_range = _started_pairs(trace, ops)
        op_idx = np.concatenate([op_idx, found_op.astype(op_idx.dtype)])
        range_idx = np.concatenate([range_idx, found_range.astype(range_idx.dtype)])
    if lean and "nsysq_nvtx_ops" in state.pending:
        trace.note_materialized("nvtx_pairs", "nsysq_nvtx_pairs", nvtx_sweep.NOTE, innermost=innermost)
        state.pending = (*state.pending, "nsysq_nvtx_pairs")
    else:
        oids = ops.oid[op_idx] if ops.oid is not None else op_idx.astype(np.int64) + 1
        columns = {"oid": oids, "rid": range_idx + 1}
        trace.keep_arrays(
            "nvtx_pairs", "nsysq_nvtx_pairs", columns, note=nvtx_sweep.NOTE, innermost=innermost
        )
    state.ops, state.pairs, state.pairs_innermost = ops, (op_idx, range_idx, rank), innermost
    state.op_totals = nvtx_sweep.op_totals(ops, op_idx)
    return True


def _sums_natively(
    trace: Session, state: _Swept, stacks: nvtx_sweep.Stacks, ops: nvtx_sweep.Ops, innermost: bool
) -> bool:
    """The per-range rows and the totals by the native pass (nvtx_native), no pairs written, when no
    step will read the pairs' table (`nsysq nvtx`, lean) and the ranges came from the pages; False
    (nothing set) when it is not built or its input does not fit: the pairs then."""
    import numpy as np

    last = np.array([len(stacks.tid) - 1] if len(stacks.tid) else [], dtype=np.int64)  # any range's sums
    if nvtx_ranges.kept(trace, "nsysq_nvtx_ranges") is None or not nvtx_sweep.per_range_fits(ops, last):
        return False
    try:
        found = nvtx_native.stack_sums(stacks, ops, innermost=innermost)
    except nvtx_native.NativeSweepError:
        return False
    if found is None:
        return False
    rows: dict[str, Any] | None = found.rows
    held = found.attributed
    if np.any(stacks.kept & ~stacks.pushpop):  # start/end ranges: their pairs, summed by numpy
        rows, held = _with_started(trace, ops, found.rows, held)
    if rows is None:
        return False
    trace.note_materialized("nvtx_pairs", "nsysq_nvtx_pairs", nvtx_sweep.NOTE, innermost=innermost)
    state.pending = (*state.pending, "nsysq_nvtx_pairs")
    state.ops, state.pairs, state.pairs_innermost, state.sums = ops, None, innermost, rows
    state.op_totals = nvtx_sweep.op_totals(ops, held=held)
    return True


def _with_started(
    trace: Session, ops: nvtx_sweep.Ops, rows: dict[str, Any], held: Any
) -> tuple[dict[str, Any] | None, Any]:
    """The native rows with those of the start/end ranges (their pairs from queries/nvtx/started.sql,
    summed by nvtx_sweep.per_range), in rid order; and the ops either holds."""
    import numpy as np

    op_idx, range_idx = _started_pairs(trace, ops)
    if not len(op_idx):
        return rows, held
    rank = np.empty(len(ops.gs), dtype=np.int64)
    place_rows(rank, lexsorted((ops.gs, ops.ge)))
    extra = nvtx_sweep.per_range(ops, op_idx, range_idx, rank)
    if extra is None:
        return None, held
    held = held.copy()
    held[op_idx] = True
    order = np.argsort(np.concatenate([rows["rid"], extra["rid"]]), kind="stable")
    return {c: np.concatenate([rows[c], extra[c]])[order] for c in nvtx_sweep.PER_RANGE_COLUMNS}, held


def _started_pairs(trace: Session, ops: nvtx_sweep.Ops) -> tuple[Any, Any]:
    """The start/end ranges' pairs (queries/nvtx/started.sql: they sit on no stack, and hold only
    themselves) as (op index, range index) arrays."""
    import numpy as np

    started = trace.run_arrays("nvtx_started", record=False)
    oid = ops.oid if ops.oid is not None else np.arange(1, len(ops.gs) + 1, dtype=np.int64)
    op_idx = np.searchsorted(oid, np.asarray(started["oid"], np.int64))
    return op_idx, np.asarray(started["rid"], np.int64) - 1


def _build_stacks(trace: Session, arrays: dict[str, Any] | None) -> nvtx_sweep.Stacks:
    """The stacks of nsysq_nvtx_ranges (from ``arrays``, its range_arrays.sql columns, when given):
    by the native sweep, else (not built, or ranges that do not nest) by numpy's sort."""
    arr = nvtx_sweep.range_arrays(trace, arrays)
    return nvtx_native.build_stacks(arr) or nvtx_sweep.build_stacks(trace, arr)


def _whole_stacks(trace: Session, state: _Swept) -> nvtx_sweep.Stacks:
    """The sweep's stacks, built again when build_per_range let go of what only pairs read."""
    if state.stacks.ev_ts is None:
        decoded_ranges = nvtx_ranges.kept(trace, "nsysq_nvtx_ranges")
        arrays = nvtx_ranges.stack_arrays(decoded_ranges.columns) if decoded_ranges is not None else None
        state.stacks = _build_stacks(trace, arrays)
    return state.stacks


def build_per_range(trace: Session, *, lean: bool = False) -> dict[str, Any] | None:
    """(Re)build ``nsysq_nvtx_per_range`` (each range's GPU work) from the pairs built last: from the
    sweep's pairs when it built them, else by queries/nvtx/per_range.sql. ``lean`` (`nsysq nvtx`,
    which reads no other step): when the sweep's sums need no SQL, the GPU ops' and the pairs'
    tables and the stacks' boundaries are let go first (memory; a later step builds them again).
    Returns the rows as the arrays the table is kept from (None when the query built it)."""
    state = _swept(trace)
    rows = None
    if state is not None and state.sums is not None:  # summed by the native pass: nothing to keep
        rows, state.sums = state.sums, None
        state.ops = None
        state.stacks = replace(state.stacks, end=None, prid=None, ev_ts=None, ev_inner=None)
    elif state is not None and state.pairs is not None and state.ops is not None:
        if lean and _sums_by_sweep(trace, state):
            trace.free_arrays("nsysq_nvtx_ops", "nsysq_nvtx_pairs")
            state.op_columns = None
            ops = state.ops  # the sums read the GPU intervals and kinds alone
            state.ops = replace(ops, oid=None, called=None, tid=None, s=None, e=None, calls=None)
            del ops  # and what only pairs read of the stacks (_whole_stacks builds them again)
            state.stacks = replace(state.stacks, end=None, prid=None, ev_ts=None, ev_inner=None)
        else:  # a query may read them (per_range.sql, totals.sql)
            _ensure_pairs(trace, state)
        rows = nvtx_sweep.per_range(state.ops, *state.pairs)
        state.ops = state.pairs = None  # memory: the next pairs read the ops again
    if rows is None:
        trace.materialize("nvtx_per_range", "nsysq_nvtx_per_range", rebuild=True)
    else:
        trace.keep_arrays("nvtx_per_range", "nsysq_nvtx_per_range", rows, note=nvtx_sweep.NOTE)
    return rows


def _sums_by_sweep(trace: Session, state: _Swept) -> bool:
    """Whether the per-range sums and the totals come from the sweep's arrays (no query reads the
    GPU ops' or the pairs' table)."""
    ops, pairs = state.ops, state.pairs
    if ops is None or pairs is None or state.op_totals is None:
        return False
    if nvtx_ranges.kept(trace, "nsysq_nvtx_ranges") is None:
        return False
    return nvtx_sweep.per_range_fits(ops, pairs[1])


def unnested_ranges(trace: Session) -> int:
    """Push/pop ranges that leave their stack out of order (never with a real NVTX stack): when
    there are any, attribution takes the plain interval join instead of the stack lookup."""
    build_attribution(trace)
    return int(trace.sql_table("SELECT unnested FROM nsysq_nvtx_unnested").rows[0][0])


def stack_check(trace: Session) -> tuple[int, int]:
    """(push/pop ranges that leave their stack out of order, range rows), from the NVTX tables
    alone (ranges, marks, stack; no GPU op is read), so a caller can tell before the attribution
    joins every GPU op whether it would take the interval-join fallback (see :func:`nvtx`). Raises
    NoDataError when the export holds no NVTX ranges."""
    require_ranges(trace)  # the ranges, as they ended (never extended)
    for name, table in _BASE_TABLES[1:3]:  # marks, stack
        trace.materialize(name, table)
    unnested = int(trace.run("nvtx_unnested").rows[0][0])
    return unnested, _range_rows(trace)


def nvtx(
    trace: Session,
    *,
    innermost: bool = False,
    window: bool = False,
    depth: int | None = None,
    like: str | None = None,
    domain: str | None = None,
    group_names: bool = False,
    limit: int = 0,
    extend_unended: bool = False,
    unit: str = "ns",
) -> Table:
    """One row per (domain, range name): CPU-side durations and the GPU work attributed to it.

    ``innermost``: only the deepest range of each domain gets an operation; ``window``: every
    operation whose GPU interval lies inside a range, whatever thread launched it; ``depth``: only
    ranges at that nesting level (0 = outermost); ``like``: names matching a case-insensitive LIKE
    pattern; ``domain``: only that domain ('' = the default one); ``group_names``: fold PyTorch
    emit_nvtx suffixes; ``limit`` > 0: the top rows only (by GPU time); ``extend_unended``: ranges
    that never ended run to the last NVTX timestamp of the trace (as nsys's reports treat them)
    instead of being ignored."""
    if limit < 0:
        raise UsageError("--limit must be 0 (every range name) or a positive number of rows.")
    if depth is not None and depth < 0:
        raise UsageError("--depth must be 0 (outermost ranges) or more.")
    with trace.bounded_memory(WORK_MEMORY):
        build_attribution(trace, release_events=True, extend_unended=extend_unended, lean=not window)
        unnested = unnested_ranges(trace)
        pairs = build_pairs(trace, innermost=innermost, window=window, lean=not window)
        per_range = build_per_range(trace, lean=True)
        _build_rows(trace, per_range, depth=depth, like=like, domain=domain, group_names=group_names)
        del per_range
        totals = _totals(trace)
        table = trace.run("nvtx", limit=limit)
    mode = "window" if window else ("innermost" if innermost else "launch")
    footer = {**_footer(totals, mode, len(table.rows)), "unnested_ranges": unnested}
    notes = _notes(totals, group_names)
    if unnested and not window:
        notes += (
            f"{unnested} push/pop ranges overlap without nesting on their thread (a real NVTX stack "
            "cannot); GPU work was attributed by the plain interval join.",
        )
    labelled = replace(table, footer=footer, notes=notes, queries=(*table.queries, *_pipeline_labels(pairs)))
    return stamp(labelled, trace.scope).in_unit(unit)


def _build_rows(trace: Session, per_range: dict[str, Any] | None, **params: Any) -> None:
    """(Re)build ``nsysq_nvtx_rows`` (queries/nvtx/rows.sql): from the kept range arrays with their
    names and domains as codes and their GPU work beside them (queries/nvtx/rows_coded.sql: no
    string read per range, no join) when the ranges came from the pages and the stacks from the
    sweep, else by the query. ``per_range``: build_per_range's arrays (None: read from its table)."""
    state = _swept(trace)
    ranges = nvtx_ranges.kept(trace, "nsysq_nvtx_ranges")
    codes = ranges.codes if ranges is not None else None
    if state is None or ranges is None or codes is None or len(state.stacks.lvl) != len(codes.name_code):
        trace.materialize("nvtx_rows", "nsysq_nvtx_rows", rebuild=True, **params)
        return
    if per_range is None:
        per_range = trace.run_arrays("nvtx_per_range_arrays", record=False)
    scratch = _coded_tables(ranges.columns, codes, state.stacks.lvl, per_range)
    del per_range
    trace.materialize_via(
        "nvtx_rows", "nsysq_nvtx_rows", "nvtx_rows_coded", scratch, note=_ROWS_NOTE, **params
    )


def _coded_tables(
    columns: dict[str, Any], codes: nvtx_ranges.Coded, lvl: Any, per_range: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """The tables queries/nvtx/rows_coded.sql reads: the kept ranges (each with its row of
    ``per_range``, the per-range sums), the names, the domains."""
    import numpy as np

    dropped = columns["dropped"] != 0
    kept: Any = np.flatnonzero(~dropped) if dropped.any() else slice(None)  # a slice: views, no copies
    small = np.int32 if max(len(codes.names), len(codes.domains)) < (1 << 31) else np.int64
    rid = columns["rid"][kept]
    coded = {
        "rid": rid, "lvl": lvl[kept],
        "name_code": codes.name_code[kept].astype(small, copy=False),
        "domain_code": codes.domain_code[kept].astype(small, copy=False),
        "cpu_ns": columns["end"][kept] - columns["start"][kept],
        **_beside(rid, per_range),
    }  # fmt: skip
    names = {"code": np.arange(len(codes.names), dtype=small), "name": np.asarray(codes.names, object)}
    domains = {
        "code": np.arange(len(codes.domains), dtype=small),
        "domain": np.asarray(codes.domains, object),
    }
    return {"nsysq_nvtx_coded": coded, "nsysq_nvtx_coded_names": names, "nsysq_nvtx_coded_domains": domains}


def _beside(rid: Any, per_range: dict[str, Any]) -> dict[str, Any]:
    """per_range's columns as one value per range of ``rid``, 0 where a range has no row or a NULL
    (rows_coded.sql's sums then equal rows.sql's over its LEFT JOIN); a row of a range not in
    ``rid`` is left out, as by the join. The arrays themselves when their rids are ``rid`` (the
    usual: every kept range has GPU work; no copy)."""
    import numpy as np

    got = np.asarray(np.ma.getdata(per_range["rid"]), dtype=np.int64)
    names = [c for c in nvtx_sweep.PER_RANGE_COLUMNS if c != "rid"]
    if len(got) == len(rid) and np.array_equal(got, rid):
        return {c: np.asarray(np.ma.filled(per_range[c], 0), dtype=np.int64) for c in names}
    sorter = None if bool(np.all(rid[1:] > rid[:-1])) else np.argsort(rid, kind="stable")
    at = np.searchsorted(rid, got, sorter=sorter)
    inside = at < len(rid)
    at, found = at[inside], np.flatnonzero(inside)
    if sorter is not None:
        at = sorter[at]
    same = rid[at] == got[found]
    at, found = at[same], found[same]
    out = {}
    for c in names:
        column = np.zeros(len(rid), dtype=np.int64)
        column[at] = np.ma.filled(per_range[c], 0)[found]
        out[c] = column
    return out


_ROWS_NOTE = (
    "computed from the kept range arrays, names and domains as codes (queries/nvtx/rows_coded.sql); "
    "this query gives the same rows"
)


def _totals(trace: Session) -> dict[str, Any]:
    """queries/nvtx/totals.sql's row: from the arrays the ranges and the sweep's pairs were kept from
    when both were (recorded for --show-sql), else by the query."""
    state = _swept(trace)
    ranges = nvtx_ranges.kept(trace, "nsysq_nvtx_ranges")
    if state is None or state.op_totals is None or ranges is None:
        return trace.run("nvtx_totals").records()[0]
    trace.note_query("nvtx_totals", nvtx_sweep.NOTE)
    names = int(trace.sql_table("SELECT count(*) FROM nsysq_nvtx_rows").rows[0][0])
    return {**nvtx_ranges.range_totals(ranges), "range_names": names, **state.op_totals}


def _footer(totals: dict[str, Any], mode: str, shown: int) -> dict[str, Any]:
    gpu_ns = int(totals["gpu_ns"] or 0)
    unattributed_ns = int(totals["unattributed_gpu_ns"] or 0)
    return {
        "attribution": mode,
        "range_names": int(totals["range_names"]),
        "shown_rows": shown,
        "ranges": int(totals["ranges"]),
        "ignored_ranges": int(totals["ignored_other_thread"]) + int(totals["ignored_never_ended"]),
        "ignored_other_thread": int(totals["ignored_other_thread"]),
        "ignored_never_ended": int(totals["ignored_never_ended"]),
        "extended_ranges": int(totals["extended_ranges"]),
        "gpu_ops": int(totals["gpu_ops"]),
        "gpu_ns": gpu_ns,
        "graph_executions": int(totals["graph_executions"]),
        "unattributed_ops": int(totals["unattributed_ops"]),
        "unattributed_gpu_ns": unattributed_ns,
        "unattributed_pct": 100.0 * unattributed_ns / gpu_ns if gpu_ns else None,
        "ops_without_call": int(totals["ops_without_call"]),
        "emit_nvtx_names": int(totals["emit_nvtx_names"]),
    }


def _notes(totals: dict[str, Any], group_names: bool) -> tuple[str, ...]:
    notes = []
    if totals["emit_nvtx_names"] and not group_names:
        notes.append(
            f"{totals['emit_nvtx_names']} range names carry PyTorch emit_nvtx suffixes "
            "(', seq = N, op_id = N'); --group-names folds them into one row per op."
        )
    ignored = int(totals["ignored_other_thread"]) + int(totals["ignored_never_ended"])
    if ignored:
        hint = (
            " (--extend-unended runs those to the end of the trace)" if totals["ignored_never_ended"] else ""
        )
        notes.append(
            f"{ignored} ranges get no GPU work and no row: {totals['ignored_other_thread']} ended on "
            f"another thread, {totals['ignored_never_ended']} never ended{hint}."
        )
    if totals["extended_ranges"]:
        notes.append(
            f"{totals['extended_ranges']} ranges never ended: they run to the last NVTX timestamp of "
            "the trace, as nsys's reports treat them."
        )
    return tuple(notes)


def _pipeline_labels(pairs: str) -> tuple[str, ...]:
    from nsysq import catalog

    names = ["nvtx_ranges_sorted", *(name for name, _ in _BASE_TABLES)]
    names += [pairs, "nvtx_per_range", "nvtx_rows", "nvtx_totals"]
    return tuple(catalog.get(n).label for n in names)


def parse_selector(selector: str) -> tuple[str, str | None, int | None]:
    """``name[@domain][/index]`` (the nsys recipes' --filter-nvtx grammar) as (name, domain or None
    for any domain, zero-based index or None for every instance). ``@*`` is any domain, ``name@``
    the default one. The index is the text after the last ``/`` when it is a number, the domain the
    text after the last ``@`` before it; ``\\@`` and ``\\/`` are a literal @ and / (other slashes,
    as in TensorRT's "/conv1/Conv", need no escape)."""
    chars: list[tuple[str, bool]] = []  # (character, escaped)
    escaped = False
    for ch in selector:
        if escaped or ch != "\\":
            chars.append((ch, escaped))
            escaped = False
        else:
            escaped = True
    index = None
    slash = max((i for i, (ch, esc) in enumerate(chars) if ch == "/" and not esc), default=-1)
    tail = "".join(ch for ch, _ in chars[slash + 1 :])
    if slash >= 0 and tail.isdigit():
        index, chars = int(tail), chars[:slash]
    at = max((i for i, (ch, esc) in enumerate(chars) if ch == "@" and not esc), default=-1)
    domain = "".join(ch for ch, _ in chars[at + 1 :]) if at >= 0 else None
    name = "".join(ch for ch, _ in (chars[:at] if at >= 0 else chars))
    if not name:
        raise UsageError(f"--nvtx {selector!r} names no range; give NAME[@DOMAIN][/INDEX].")
    return name, None if domain == "*" else domain, index


def selection_filter(trace: Session, selection: NvtxSelection) -> OpFilter:
    """The launches of the GPU work attributed to the ranges ``selection`` names, in its mode:
    ``launch`` (every range enclosing the launching call, as ``nsysq nvtx``), ``innermost`` (the
    deepest range of each domain, as ``nsysq nvtx --innermost``) or ``window`` (ops whose GPU
    interval lies inside a range, any thread, as ``nsysq nvtx --window``), read in ``trace``'s
    scope. The session calls it when it opens with an NVTX selection in its scope
    (``nsysq.open(path, nvtx=...)``); raises UsageError naming the closest range names when nothing
    matches."""
    name, domain, index = parse_selector(selection.selector)
    mode = selection.mode
    with trace.bounded_memory(WORK_MEMORY):
        # --nvtx scopes never extend unended ranges, whatever this session built before
        native = mode != "window" and _picks_natively(trace)
        if not native:
            build_pairs(trace, innermost=mode == "innermost", window=mode == "window", extend_unended=False)
    trace.materialize(
        "nvtx_select", "nsysq_nvtx_selected", rebuild=True, range_name=name,
        match="like" if selection.like else "exact", domain=domain, instance=index,
    )  # fmt: skip
    if not trace.sql_table("SELECT count(*) FROM nsysq_nvtx_selected").rows[0][0]:
        raise UsageError(_no_match(trace, selection.selector, name, selection.like, index))
    if mode == "window":  # per op: the ops of one launch may lie inside and outside a range
        return OpFilter(selection.label, catalog.get("nvtx_scope_window").sql, keys=OP_KEYS)
    launches = _picked_launches(trace, innermost=mode == "innermost") if native else None
    if launches is None and native:  # the native pass refused: the pairs, as without it
        with trace.bounded_memory(WORK_MEMORY):
            build_pairs(trace, innermost=mode == "innermost", extend_unended=False)
    _keep_launches(trace, launches)
    return OpFilter(selection.label, f"SELECT globalPid, correlationId FROM {_LAUNCHES}")


def _picks_natively(trace: Session) -> bool:
    """Build the stacks and GPU ops a --nvtx scope's launches are picked from by the native pass
    (nvtx_native.picked_ops: no pairs); False when that pass cannot run (not built, the ranges by
    SQL or not nesting, the ops not read as arrays): build_pairs then."""
    if nvtx_native.library() is None:
        return False
    build_attribution(trace, extend_unended=False)
    state = _swept(trace)
    return state is not None and state.ops is not None and state.op_columns is not None


def _picked_launches(trace: Session, *, innermost: bool) -> dict[str, Any] | None:
    """nsysq_nvtx_launches' columns (as _launches_by_sweep gives them from the pairs): the ops a
    selected range holds, by the native pass, start/end ranges' from queries/nvtx/started.sql;
    None when the pass refuses its input. The pairs are recorded for --show-sql, not built."""
    import numpy as np

    state = _swept(trace)
    if state is None or state.ops is None or state.op_columns is None:
        return None
    stacks = _whole_stacks(trace, state)
    rid = np.asarray(trace.run_arrays("nvtx_selected_arrays", record=False)["rid"], dtype=np.int64)
    picked = np.zeros(len(stacks.kept), dtype=bool)
    picked[rid - 1] = True
    try:
        chosen = nvtx_native.picked_ops(stacks, state.ops, picked, innermost=innermost)
    except nvtx_native.NativeSweepError:
        return None
    if chosen is None:
        return None
    columns = state.op_columns
    if np.any(stacks.kept & ~stacks.pushpop):  # start/end ranges: on no stack, only themselves
        op_idx, range_idx = _started_pairs(trace, state.ops)
        chosen[op_idx[picked[range_idx]]] = True
    trace.note_materialized("nvtx_pairs", "nsysq_nvtx_pairs", nvtx_sweep.NOTE, innermost=innermost)
    return {name: columns[name][chosen] for name in ("pid", "has_pid", "corr", "has_corr")}


#: The launches a --nvtx scope keeps (queries/nvtx/scope_launches.sql), read by its OpFilter.
_LAUNCHES = "nsysq_nvtx_launches"
_LAUNCHES_SELECT = (
    "CASE WHEN has_pid THEN pid END AS globalPid, CASE WHEN has_corr THEN corr END AS correlationId"
)


def _keep_launches(trace: Session, launches: dict[str, Any] | None = None) -> None:
    """nsysq_nvtx_launches: ``launches`` (its columns, from the native pass) when given, else from the
    sweep's pairs and the GPU ops' columns when the sweep kept them, else by
    queries/nvtx/scope_launches.sql; then the attribution's tables and arrays go (memory: the scope
    that follows builds its own, and reads only the launches)."""
    state = _swept(trace)
    if launches is None and state is not None:
        launches = _launches_by_sweep(trace, state)
    if launches is None:
        trace.materialize("nvtx_scope_launches", _LAUNCHES, rebuild=True)
    else:
        trace.keep_arrays(
            "nvtx_scope_launches", _LAUNCHES, launches, select=_LAUNCHES_SELECT, note=nvtx_sweep.NOTE
        )
    helpers = [table for _, table in _BASE_TABLES] + ["nsysq_nvtx_pairs", "nsysq_nvtx_per_range"]
    trace.drop_materialized(*(table for table in helpers if trace.is_materialized(table)))
    _SWEPT.pop(trace, None)
    nvtx_ranges.forget(trace)


def _launches_by_sweep(trace: Session, state: _Swept) -> dict[str, Any] | None:
    """The columns of nsysq_nvtx_launches (read with _LAUNCHES_SELECT): the process and correlation
    ids of every op a selected range holds in the pairs built last, in op order; None when the
    sweep did not keep the ops' columns (the query finds them)."""
    import numpy as np

    columns, pairs = state.op_columns, state.pairs
    if columns is None or pairs is None:
        return None
    op_idx, range_idx, _ = pairs
    rid = np.asarray(trace.run_arrays("nvtx_selected_arrays", record=False)["rid"], dtype=np.int64)
    picked = np.zeros(len(state.stacks.kept), dtype=bool)
    picked[rid - 1] = True
    chosen = np.zeros(len(columns["oid"]), dtype=bool)
    chosen[op_idx[picked[range_idx]]] = True
    return {name: columns[name][chosen] for name in ("pid", "has_pid", "corr", "has_corr")}


def _no_match(trace: Session, selector: str, name: str, like: bool, index: int | None) -> str:
    import difflib

    rows = trace.sql_table(
        "SELECT name, count(*) FROM nsysq_nvtx_ranges WHERE dropped IS NULL GROUP BY name ORDER BY 2 DESC"
    ).rows
    counts = {str(n): int(c) for n, c in rows}
    if index is not None and (name in counts or like):
        return (
            f"no range instance {index} matches {selector!r} in {trace.path.name} (instances count from 0)."
        )
    close = difflib.get_close_matches(name, list(counts), n=3, cutoff=0.5)
    close = close or [n for n in counts if name.lower().strip("%") in n.lower()][:3]
    hint = "; closest range names: " + ", ".join(repr(c) for c in close) if close else ""
    return (
        f"no NVTX range {'matches' if like else 'is named'} {selector!r} in {trace.path.name}{hint} "
        "(nsysq nvtx lists them)."
    )
