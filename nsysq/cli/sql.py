"""The SQL-facing commands: ``nsysq sql`` (your own query) and ``nsysq queries`` (the catalogue).

Registered by :mod:`nsysq.cli.root`.
"""

from __future__ import annotations

from typing import Annotated

import typer

from nsysq.cli.common import (
    Format,
    FormatOpt,
    Takes,
    TraceArg,
    TraceOptions,
    Unit,
    emit,
    open_trace,
    trace_options,
)


@trace_options(Takes.NO_CACHE)
def sql_command(
    trace: TraceArg,
    query: Annotated[
        str,
        typer.Argument(
            help="One read-only SELECT over the canonical tables "
            "(CUPTI_ACTIVITY_KIND_KERNEL, StringIds, ...).",
            show_default=False,
        ),
    ],
    fmt: FormatOpt = Format.table,
    *,
    options: TraceOptions,
) -> None:
    """Run your own read-only SQL against a trace (DuckDB dialect): one SELECT over the trace's tables
    and views, with DuckDB's external access off (no other file, no ATTACH, COPY, INSTALL or LOAD)."""
    with open_trace(trace, options, prefetch=None) as t:
        table = t.sql_table(query, sealed=True)
    emit(table, fmt, Unit.ns)


def queries_command(fmt: FormatOpt = Format.table) -> None:
    """List the versioned SQL files nsysq runs, with what each returns."""
    from nsysq import catalog
    from nsysq.base.table import Table

    rows = [
        (
            q.name,
            q.version,
            q.dialect,
            q.params and ", ".join(q.params) or "",
            q.filename,
            q.returns,
        )
        for q in catalog.all_queries().values()
    ]
    emit(
        Table(
            kind="queries",
            columns=("name", "version", "dialect", "params", "file", "returns"),
            rows=rows,
        ),
        fmt,
        Unit.ns,
    )
