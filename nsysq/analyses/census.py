"""Census: where GPU time goes, per kernel name."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

from nsysq import catalog
from nsysq.base.errors import UsageError
from nsysq.base.table import Table
from nsysq.session.scope import stamp

if TYPE_CHECKING:
    from nsysq.session import Session

NameField = Literal["short", "demangled"]
UNKNOWN_SMS = "– (SM count unknown: the export records no GPU for these kernels)"
DEFAULT_LIMIT = 20  # rows before "other" in `nsysq census`; `nsysq cache build` pre-answers it


def census(trace: Session, *, limit: int = 0, names: NameField = "short", unit: str = "ns") -> Table:
    """Per-kernel statistics sorted by total time; ``limit`` > 0 keeps the top rows plus "other"."""
    if names not in ("short", "demangled"):
        raise UsageError(f"--names must be short or demangled, not {names!r}.")
    if limit < 0:
        raise UsageError("--limit must be 0 (every kernel) or a positive number of rows.")
    trace.require_kernels()
    graphs = trace.whole_graphs  # first: the result's own query runs last (see --show-sql)
    table = trace.run("census", names=names, limit=limit)
    records = table.records()
    shown = [r for r in records if r["rank"] is not None]
    gpu_ns = _sum(records, "total_ns")  # kernels and whole-graph executions
    kernel_ns = gpu_ns - graphs["graph_ns"]
    shown_ns = _sum(shown, "total_ns")
    footer = {
        "total_kernels": _sum(records, "instances") - graphs["executions"],
        "total_kernel_ns": kernel_ns,
        "distinct_names": _sum(records, "kernel_names"),
        "shown_rows": len(shown),
        "shown_kernel_ns": shown_ns,
        "shown_pct": 100.0 * shown_ns / gpu_ns if gpu_ns else None,
        "unresolved_names": _sum(records, "unresolved"),
        "zero_length_kernels": _sum(records, "zero_length"),
        "underfilled_kernel_ns": _maybe_sum(records, "underfilled_ns"),
        "underfilled_pct": _share(_maybe_sum(records, "underfilled_ns"), kernel_ns),
    }
    if graphs["executions"]:
        footer.update(graph_executions=graphs["executions"], graph_ns=graphs["graph_ns"], total_gpu_ns=gpu_ns)
    notes = [n for n in (trace.whole_graph_note(),) if n]
    if footer["underfilled_kernel_ns"] is None:
        notes.append(f"underfilled: {UNKNOWN_SMS}")
    label = catalog.get("graph_executions").label
    table = replace(table, notes=tuple(notes), queries=(*table.queries, label))
    return stamp(replace(table, footer=footer), trace.scope).in_unit(unit)


def _sum(records: list[dict[str, Any]], key: str) -> int:
    """The column's total over the rows; a NULL (a row with no complete kernel) adds nothing, as in SQL."""
    return int(sum(r[key] or 0 for r in records))


def _maybe_sum(records: list[dict[str, Any]], key: str) -> int | None:
    """The column's total, or None when no row knows it (an export without GPU info)."""
    known = [r[key] for r in records if r[key] is not None]
    return int(sum(known)) if known else None


def _share(part: int | None, whole: int) -> float | None:
    return 100.0 * part / whole if part is not None and whole else None


def underfilled(trace: Session, *, limit: int = 0, names: NameField = "short") -> Table:
    """Kernels by time in launches that keep fewer than half the GPU's SMs busy (sm_fill_pct < 50),
    one row per name and grid, each with what the grid means ("grid 1x1x1 on 132 SMs: 1 SM busy,
    131 idle")."""
    if names not in ("short", "demangled"):
        raise UsageError(f"--names must be short or demangled, not {names!r}.")
    if limit < 0:
        raise UsageError("--limit must be 0 (every row) or a positive number of rows.")
    trace.require_kernels()
    totals = trace.kernel_totals
    known = trace.run("launch_sm_counts").rows[0][0]
    every = trace.run("underfilled", names=names, limit=0)
    table = trace.run("underfilled", names=names, limit=limit) if limit else every  # last: --show-sql
    under_ns = int(sum(r["total_ns"] for r in every.records()))
    kernel_ns = int(totals["kernel_ns"] or 0)
    footer = {
        "total_kernel_ns": kernel_ns,
        "underfilled_kernel_ns": under_ns if known else None,
        "underfilled_pct": _share(under_ns, kernel_ns) if known else None,
        "underfilled_rows": len(every.rows),
        "shown_rows": len(table.rows),
    }
    notes = () if known else (f"underfilled: {UNKNOWN_SMS}",)
    return replace(table, kind="census_underfilled", footer=footer, notes=notes)
