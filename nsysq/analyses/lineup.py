"""Lineup: kernel time grouped into categories by ordered rules kept as data in queries/."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from nsysq import catalog
from nsysq.base.table import Table
from nsysq.session.scope import stamp

if TYPE_CHECKING:
    from nsysq.session import Session


def lineup(trace: Session, *, rules: str | Path | None = None, unit: str = "ns") -> Table:
    """One row per category; ``rules`` is a user rules file (TOML) replacing the packaged rules."""
    trace.require_kernels()
    if rules is None:
        trace.use_rules()
        source = "packaged lineup_rules.toml"
    else:
        from nsysq.catalog.rules import load_lineup_rules

        trace.use_rules(load_lineup_rules(rules), source=str(rules))
        source = str(rules)
    totals = trace.kernel_totals  # first: the result's own query runs last (see --show-sql)
    graphs = trace.whole_graphs
    table = trace.run("lineup")
    footer: dict[str, object] = {
        "total_kernels": int(totals["kernels"]),
        "total_kernel_ns": int(totals["kernel_ns"]),
        "categories": len(table.rows),
        "rules": source,
    }
    if graphs["executions"]:
        footer.update(graph_executions=graphs["executions"], graph_ns=graphs["graph_ns"])
        footer["total_gpu_ns"] = int(totals["kernel_ns"]) + graphs["graph_ns"]
    note = trace.whole_graph_note()
    labels = (catalog.get("kernel_category").label, catalog.get("graph_executions").label)
    table = replace(table, footer=footer, queries=(*table.queries, *labels), notes=(note,) if note else ())
    return stamp(table, trace.scope).in_unit(unit)


def kernel_categories(trace: Session, *, rules: str | Path | None = None) -> Table:
    """Every distinct (short name, demangled name) pair with its category and the rule that won."""
    trace.require_kernels()
    if rules is None:
        trace.use_rules()
    else:
        from nsysq.catalog.rules import load_lineup_rules

        trace.use_rules(load_lineup_rules(rules), source=str(rules))
    return trace.run("categorized_kernels")
