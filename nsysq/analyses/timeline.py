"""Timeline: kernels, memcpys, memsets and NVTX ranges on one clock, in a window.

A window can hold millions of events, so every caller caps the rows (0 = no cap) with one of two
defaults: ``ROWS_TO_READ`` where rows are read, ``EVENTS_TO_DRAW`` where they are drawn.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from nsysq.base.errors import UsageError
from nsysq.base.table import Table
from nsysq.base.units import ms_to_ns
from nsysq.session.scope import stamp

if TYPE_CHECKING:
    from nsysq.session import Session

#: Rows returned or printed (``nsysq timeline``, ``Trace.timeline``): a window a person reads.
ROWS_TO_READ = 200
#: Events drawn (``nsysq plot timeline``, ``notebook.timeline_frame``): a Gantt chart is read as a
#: whole and draws one bar collection per lane and colour, so this many stay fast.
EVENTS_TO_DRAW = 20_000


def timeline(
    trace: Session,
    *,
    start_ms: float | None = None,
    end_ms: float | None = None,
    nvtx_lanes: bool = False,
    limit: int = ROWS_TO_READ,
    nvtx: bool | str | None = None,
    unit: str = "ns",
) -> Table:
    """Events overlapping [start_ms, end_ms) (ms from the trace start), ordered by start;
    ``nvtx_lanes``: NVTX ranges and marks too (``nvtx=True/False``, the name before, still works).
    To keep only the GPU work of NVTX ranges, open the trace so: ``nsysq.open(path, nvtx=NAME)`` (the
    CLI's ``--nvtx NAME``)."""
    if nvtx is not None:
        if not isinstance(nvtx, bool):
            raise UsageError(
                "timeline(nvtx=...) is the NVTX-lanes switch (now nvtx_lanes=True); to keep only the "
                "GPU work of NVTX ranges, open the trace so: nsysq.open(path, nvtx=NAME)."
            )
        nvtx_lanes = nvtx
    if start_ms is not None and end_ms is not None and end_ms <= start_ms:
        raise UsageError(f"--to ({end_ms} ms) must be after --from ({start_ms} ms).")
    if limit < 0:
        raise UsageError("--limit must be 0 (every event) or a positive number of rows.")
    from_ns = None if start_ms is None else ms_to_ns(start_ms)
    to_ns = None if end_ms is None else ms_to_ns(end_ms)
    note = trace.whole_graph_note()  # first: the result's own query runs last (see --show-sql)
    table = trace.run(
        "timeline",
        t0=trace.t0,
        from_ns=from_ns,
        to_ns=to_ns,
        nvtx_lanes=nvtx_lanes,
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
    table = replace(table, footer=footer, notes=(note,) if note else ())
    return stamp(table, trace.scope).in_unit(unit)
