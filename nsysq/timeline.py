"""Timeline: kernels, memcpys, memsets and NVTX ranges on one clock, in a window."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from nsysq.errors import UsageError
from nsysq.table import Table

if TYPE_CHECKING:
    from nsysq.trace import Trace

MS = 1_000_000


def timeline(
    trace: Trace,
    *,
    start_ms: float | None = None,
    end_ms: float | None = None,
    nvtx: bool = False,
    limit: int = 1000,
) -> Table:
    """Events overlapping [start_ms, end_ms) (ms from the trace start), ordered by start."""
    if start_ms is not None and end_ms is not None and end_ms <= start_ms:
        raise UsageError(f"--to ({end_ms} ms) must be after --from ({start_ms} ms).")
    if limit < 0:
        raise UsageError("--limit must be 0 (every event) or a positive number of rows.")
    from_ns = None if start_ms is None else round(start_ms * MS)
    to_ns = None if end_ms is None else round(end_ms * MS)
    table = trace.run(
        "timeline",
        t0=trace.t0,
        from_ns=from_ns,
        to_ns=to_ns,
        nvtx=nvtx,
        row_limit=limit if limit else 2**62,
    )
    footer = {
        "t0_ns": trace.t0,
        "span_ns": trace.span["span_ns"],
        "from_ns": from_ns,
        "to_ns": to_ns,
        "shown_rows": len(table.rows),
        "limit": limit,
        "truncated": bool(limit) and len(table.rows) == limit,
    }
    return replace(table, footer=footer)
