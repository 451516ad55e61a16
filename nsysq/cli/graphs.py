"""``nsysq graphs``: per CUDA graph, launches, GPU time per launch, kernels per launch, NVTX range.

Registered by :mod:`nsysq.cli.root`.
"""

from __future__ import annotations

from nsysq.cli.common import (
    Format,
    FormatOpt,
    ShowSqlOpt,
    Takes,
    TraceArg,
    TraceOptions,
    UnitOpt,
    open_trace,
    print_table,
    sql_if,
    trace_options,
)


@trace_options(Takes.GPU_WORK)
def graphs_command(
    trace: TraceArg,
    fmt: FormatOpt = Format.table,
    unit: UnitOpt = None,
    show_sql: ShowSqlOpt = False,
    *,
    options: TraceOptions,
) -> None:
    """CUDA graphs: launches, GPU time per launch (median, min, max), kernels per launch, NVTX range."""
    from nsysq.analyses.graphs import graphs

    with open_trace(trace, options, prefetch="graphs") as t:
        table = graphs(t)
        sql = sql_if(show_sql, t)
    print_table(table, sql, fmt, unit, title="graphs")
