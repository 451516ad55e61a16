"""Reading one trace for the diff: its kernel aggregates, copies, GPU span and identity (one pass),
as a :class:`~nsysq.diffing.side.Side`."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from nsysq import catalog
from nsysq.base.table import Table
from nsysq.diffing.lineage import lineage
from nsysq.diffing.side import GpuTotals, Side, SideInfo, Span
from nsysq.session.scope import OPS_TABLE, SCOPED

if TYPE_CHECKING:
    from nsysq.catalog.rules import Rule
    from nsysq.session import Session

_SCOPE_TABLES = (*SCOPED.values(), OPS_TABLE)
"""The tables a scope reads the trace through (nsysq.session.scope): a side's queries do not
follow them, so they are the same in every scope."""


def kernel_pass(trace: Session, rules: list[Rule] | None, source: str) -> Table:
    """The one pass over the kernel table: its groups, the kernel categories, and the GPU busy,
    idle and exposed communication time per device (nsysq.gputime.gpu_busy); then free the rows (all the
    diff reads). Returns the gpu_busy rows."""
    from nsysq.gputime.gpu_busy import gpu_busy
    from nsysq.gputime.overlap import COMM_CATEGORY

    trace.materialize("kernel_groups", "nsysq_kernel_groups")
    trace.materialize("launch_sm_counts", "nsysq_launch_sm_counts")  # the SMs, for fill changes
    _use_rules(trace, rules, source)
    busy = gpu_busy(trace, COMM_CATEGORY)
    trace.release_kernel_rows()
    return busy


def _use_rules(trace: Session, rules: list[Rule] | None, source: str) -> None:
    if rules is None:
        trace.use_rules()
    else:
        trace.use_rules(rules, source=source)


def read_side(trace: Session, rules: list[Rule] | None, source: str, busy: Table | None = None) -> Side:
    """Everything else of one side; ``busy``: what its kernel pass returned (run now when None)."""
    from nsysq.export import schema

    if busy is None:
        busy = kernel_pass(trace, rules, source)
    _use_rules(trace, rules, source)  # a no-op when loaded already
    whole_graphs = trace.whole_graphs  # CUDA graphs traced whole: not in the kernel rows compared
    nsys_version, gpus = _identity(trace)  # first: the script's last statement stays the span's
    kernels = _run(trace, "diff_side_kernels")
    copies = _run(trace, "copies")
    info = SideInfo(
        path=str(trace.path),
        name=trace.path.name,
        nsys_version=nsys_version,
        gpus=gpus,
        kernels=int(sum(r[kernels.columns.index("calls")] for r in kernels.rows)),
        has_kernel_table=trace.schema.has(schema.KERNEL),
        scope=trace.scope.describe() or None,  # the GPU work compared (nsysq.session.scope); None: all
        sms=trace.sql_table("SELECT sms FROM nsysq_launch_sm_counts").rows[0][0],
    )
    return Side(
        info=info,
        kernels=kernels,
        copies=copies,
        span=_gpu_span(trace, copies),
        busy=_gpu_totals(busy),
        whole_graphs=whole_graphs,
        kernel_types=_column_types(trace, "diff_side_kernels"),
        copy_types=_column_types(trace, "copies"),
    )


def _run(trace: Session, name: str) -> Table:
    """Packaged query ``name``'s rows on ``trace``, labelled with the query, then the lineage of the
    statement the trace recorded for it (the statements that built the helper tables it reads,
    such as nsysq_kernel_groups, in the order they ran)."""
    table = trace.run(name)
    built_from = lineage(trace.executed, len(trace.executed) - 1, base=_SCOPE_TABLES)
    return replace(table, queries=tuple(dict.fromkeys((*table.queries, *built_from))))


def _column_types(trace: Session, name: str) -> dict[str, str]:
    """Each result column of packaged query ``name`` with its SQL type, as DuckDB binds it on this
    trace (DESCRIBE plans the query without running it); the diff loads its rows with these types."""
    query = catalog.get(name)
    described = trace.sql_table(f"SELECT column_name, column_type FROM (DESCRIBE {query.sql})")
    return {str(column): str(sql_type) for column, sql_type in described.rows}


def _gpu_span(trace: Session, copies: Table) -> Span:
    """First GPU operation's start to the last one's end (kernels, memcpys, memsets), from rows
    already read: no extra pass over the trace (the CUDA API table alone is as large as the
    kernel table)."""
    kernel_span = _run(trace, "kernel_groups_span")
    ((first, last),) = kernel_span.rows
    starts = [first, *(r["first_start"] for r in copies.records())]
    ends = [last, *(r["last_end"] for r in copies.records())]
    lo = min((v for v in starts if v is not None), default=None)
    hi = max((v for v in ends if v is not None), default=None)
    return Span(t0=lo, t_end=hi, queries=tuple(dict.fromkeys((*kernel_span.queries, *copies.queries))))


def _gpu_totals(busy: Table) -> GpuTotals:
    """The gpu_busy rows summed over devices."""
    records = busy.records()

    def total(column: str) -> int | None:
        return sum(int(r[column]) for r in records) if records else None

    return GpuTotals(
        gpu_busy_ns=total("busy_ns"),
        gpu_idle_ns=total("idle_ns"),
        comm_exposed_ns=total("comm_exposed_ns") or 0,
        queries=busy.queries,
    )


def _identity(trace: Session) -> tuple[str, tuple[str, ...]]:
    """The nsys version and the CUDA GPUs' names, read cheaply (no full ``info``)."""
    from nsysq.analyses.info import identity

    found = identity(trace)
    return str(found["nsys_version"]), tuple(str(g) for g in found["gpus"])
