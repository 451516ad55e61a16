"""Stakeout: every launch of one kernel, with its launch configuration and summary statistics."""

from __future__ import annotations

import difflib
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from nsysq.base.errors import UsageError
from nsysq.base.table import Table
from nsysq.session.scope import stamp

if TYPE_CHECKING:
    from nsysq.session import Session


def _suggest(trace: Session, kernel: str) -> str:
    """Up to three kernel names in the trace's scope that look like ``kernel``, as a sentence's end."""
    names = [str(r[0]) for r in trace.run("kernel_short_names").rows]
    close = difflib.get_close_matches(kernel, names, n=3, cutoff=0.5)
    if not close:
        close = [n for n in names if kernel.lower() in n.lower()][:3]
    if close:
        return "; did you mean " + ", ".join(close) + "?"
    return f"; try --like '%{kernel}%' or list names with nsysq census"


def stakeout(trace: Session, kernel: str, *, like: bool = False, limit: int = 0, unit: str = "ns") -> Table:
    """Launches whose short or demangled name equals ``kernel`` (or matches it with ``like``)."""
    if not kernel:
        raise UsageError("give a kernel name (or a LIKE pattern with --like).")
    if limit < 0:
        raise UsageError("--limit must be 0 (every launch) or a positive number of rows.")
    trace.require_kernels()
    match = "like" if like else "exact"
    summary = trace.run("stakeout_summary", kernel=kernel, match=match)
    if not summary.rows:
        raise UsageError(
            f"no kernel {'matches' if like else 'is named'} {kernel!r} in "
            f"{trace.path.name}{_suggest(trace, kernel)}"
        )
    launches = trace.run(
        "stakeout", kernel=kernel, match=match, t0=trace.t0, row_limit=limit if limit else 2**62
    )
    records = summary.records()
    footer = {
        "launches": int(sum(r["instances"] for r in records)),
        "shown_rows": len(launches.rows),
        "total_ns": int(sum(r["total_ns"] for r in records)),
        "summary": records,
    }
    table = replace(launches, footer=footer, queries=launches.queries + summary.queries)
    return stamp(table, trace.scope).in_unit(unit)


def stakeout_summary(trace: Session, kernel: str, *, like: bool = False) -> Table:
    """The census statistics of the launches ``stakeout`` selects, per demangled name."""
    trace.require_kernels()
    return trace.run("stakeout_summary", kernel=kernel, match="like" if like else "exact")


def summary_table(launches: Table) -> Table:
    """The per-name summary ``stakeout`` keeps in its footer, as its own Table (kind
    ``stakeout_summary``: one row per demangled name; times in nanoseconds, whatever the unit of
    ``launches``)."""
    records: list[dict[str, Any]] = launches.footer.get("summary") or []
    if not records:
        raise ValueError("summary_table() takes the Table nsysq.analyses.stakeout.stakeout() returned.")
    return Table(
        kind="stakeout_summary",
        columns=tuple(records[0]),
        rows=[tuple(r.values()) for r in records],
        queries=tuple(q for q in launches.queries if q.partition("@")[0] == "stakeout_summary"),
    )
