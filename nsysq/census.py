"""Census: where GPU time goes, per kernel name."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Literal

from nsysq.errors import UsageError
from nsysq.table import Table

if TYPE_CHECKING:
    from nsysq.trace import Trace

NameField = Literal["short", "demangled"]
DEFAULT_LIMIT = 20  # rows before "other" in `nsysq census`; `nsysq cache build` pre-answers it


def census(trace: Trace, *, limit: int = 0, names: NameField = "short") -> Table:
    """Per-kernel statistics sorted by total time; ``limit`` > 0 keeps the top rows plus "other"."""
    if names not in ("short", "demangled"):
        raise UsageError(f"--names must be short or demangled, not {names!r}.")
    if limit < 0:
        raise UsageError("--limit must be 0 (every kernel) or a positive number of rows.")
    trace.require_kernels()
    table = trace.run("census", names=names, limit=limit)
    records = table.records()
    shown = [r for r in records if r["rank"] is not None]
    total_ns = int(sum(r["total_ns"] for r in records))
    shown_ns = int(sum(r["total_ns"] for r in shown))
    footer = {
        "total_kernels": int(sum(r["instances"] for r in records)),
        "total_kernel_ns": total_ns,
        "distinct_names": int(sum(r["kernel_names"] for r in records)),
        "shown_rows": len(shown),
        "shown_kernel_ns": shown_ns,
        "shown_pct": 100.0 * shown_ns / total_ns if total_ns else None,
        "unresolved_names": int(sum(r["unresolved"] for r in records)),
        "zero_length_kernels": int(sum(r["zero_length"] for r in records)),
    }
    return replace(table, footer=footer)
