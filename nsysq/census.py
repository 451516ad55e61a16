"""Census: where GPU time goes, per kernel name."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Literal

from nsysq import catalog
from nsysq.errors import UsageError
from nsysq.table import Table

if TYPE_CHECKING:
    from nsysq.trace import Trace

NameField = Literal["short", "demangled"]


def census(trace: Trace, *, limit: int = 0, names: NameField = "short") -> Table:
    """Per-kernel statistics sorted by total time; ``limit`` > 0 keeps the top rows plus "other"."""
    if names not in ("short", "demangled"):
        raise UsageError(f"--names must be short or demangled, not {names!r}.")
    if limit < 0:
        raise UsageError("--limit must be 0 (every kernel) or a positive number of rows.")
    trace.require_kernels()
    table = trace.run("census", names=names, limit=limit)
    totals = trace.kernel_totals
    records = table.records()
    shown = [r for r in records if r["rank"] is not None]
    shown_ns = int(sum(r["total_ns"] for r in shown))
    footer = {
        "total_kernels": int(totals["kernels"]),
        "total_kernel_ns": int(totals["kernel_ns"]),
        "distinct_names": int(sum(r["kernel_names"] for r in records)),
        "shown_rows": len(shown),
        "shown_kernel_ns": shown_ns,
        "shown_pct": 100.0 * shown_ns / totals["kernel_ns"] if totals["kernel_ns"] else None,
        "unresolved_names": int(totals["unresolved_names"]),
        "zero_length_kernels": int(totals["zero_length"]),
    }
    totals_query = catalog.get("kernel_totals")
    return replace(
        table,
        footer=footer,
        queries=table.queries + (f"{totals_query.name}@{totals_query.version}",),
    )
