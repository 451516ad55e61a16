"""The rules over single events (nsys analyze's cuda_memcpy_async, cuda_memcpy_sync,
cuda_memset_sync, cuda_api_sync): each a packaged query (queries/check/copies.sql, api_sync.sql)
that returns the longest matches per rule with the counts before the cut."""

from __future__ import annotations

from typing import Any

from nsysq.stats.rules.base import CALL, Context, Outcome, finding

COPY_RULES = ("cuda_memcpy_async", "cuda_memcpy_sync", "cuda_memset_sync")
_COPY_COLUMNS = (
    "start_ns", "duration_ns", "pid", "tid", "device_id", "stream_id", "api_name", "bytes", "src_kind",
    "dst_kind", "mem_kind",
)  # fmt: skip


def _copies(ctx: Context) -> dict[str, list[dict[str, Any]]]:
    """The rows of queries/check/copies.sql per rule (one query for the three rules)."""
    if "copies" not in ctx.memo:
        rows = ctx.trace.run("check_copies", **ctx.window(), row_limit=ctx.options.row_limit).records()
        ctx.memo["copies"] = {rule: [r for r in rows if r["rule"] == rule] for rule in COPY_RULES}
    copies: dict[str, list[dict[str, Any]]] = ctx.memo["copies"]
    return copies


def _outcome(rule: str, rows: list[dict[str, Any]], columns: tuple[str, ...]) -> Outcome:
    """The outcome of a query's rows (each carrying matched and matched_ns, the counts before the cut)."""
    if not rows:
        return Outcome("clean")
    found = [
        finding(rule, **{c: r[c] for c in columns}, **{CALL: (r["call_tid"], r["call_start"], r["call_end"])})
        for r in rows
    ]
    return Outcome("found", int(rows[0]["matched"]), int(rows[0]["matched_ns"] or 0), found)


def memcpy_async(ctx: Context) -> Outcome:
    return _outcome("cuda_memcpy_async", _copies(ctx)["cuda_memcpy_async"], _COPY_COLUMNS)


def memcpy_sync(ctx: Context) -> Outcome:
    return _outcome("cuda_memcpy_sync", _copies(ctx)["cuda_memcpy_sync"], _COPY_COLUMNS)


def memset_sync(ctx: Context) -> Outcome:
    return _outcome("cuda_memset_sync", _copies(ctx)["cuda_memset_sync"], _COPY_COLUMNS)


def api_sync(ctx: Context) -> Outcome:
    rows = ctx.trace.run("check_api_sync", **ctx.window(), row_limit=ctx.options.row_limit).records()
    return _outcome("cuda_api_sync", rows, ("start_ns", "duration_ns", "pid", "tid", "api_name"))
