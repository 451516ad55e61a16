"""Graphs: per CUDA graph, its launches, GPU time per launch, kernels per launch and the NVTX range
it was launched in, whichever way nsys traced it (per node or whole; queries/graphs.sql)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from nsysq.base.errors import NoDataError
from nsysq.base.table import Table
from nsysq.session.scope import stamp

if TYPE_CHECKING:
    from nsysq.session import Session


def graphs(trace: Session, *, unit: str = "ns") -> Table:
    """One row per CUDA graph; raises NoDataError when the trace holds no graph work."""
    table = trace.run("graphs")
    records = table.records()
    if not records:
        raise NoDataError(
            f"{trace.path.name} holds no CUDA graph work: no kernel carries a graph id and no graph "
            "execution was traced (nsys traces graphs with --cuda-graph-trace=graph or node)."
        )
    modes = sorted({str(r["traced"]) for r in records})
    footer = {
        "graphs": len(records),
        "launches": int(sum(r["launches"] for r in records)),
        "total_ns": int(sum(r["total_ns"] or 0 for r in records)),
        "traced": ", ".join(modes),
    }
    notes: tuple[str, ...] = ()
    if "graph" in modes:
        notes = (
            "graphs traced whole: kernels per launch are unknown; profile with "
            "nsys profile --cuda-graph-trace=node to see inside them.",
        )
    return stamp(replace(table, footer=footer, notes=notes), trace.scope).in_unit(unit)
