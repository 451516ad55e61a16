"""``nsysq nvtx`` (GPU work per NVTX range name) and ``nsysq plot nvtx`` (its picture).

Each parses its options, calls :func:`nsysq.analyses.nvtx.nvtx` and prints or draws the Table it returns.
Registered by :mod:`nsysq.cli.root` (``plot nvtx`` on the plot sub-app).
"""

from __future__ import annotations

from typing import Annotated

import typer

from nsysq.analyses.nvtx import DEFAULT_LIMIT
from nsysq.base.errors import UsageError
from nsysq.cli.common import (
    DEFAULT_DPI,
    DpiOpt,
    Format,
    FormatOpt,
    OutputOpt,
    ShowSqlOpt,
    SizeOpt,
    Takes,
    TitleOpt,
    TraceArg,
    TraceOptions,
    UnitOpt,
    open_trace,
    print_table,
    save_picture,
    sql_if,
    trace_options,
)

InnermostOpt = Annotated[
    bool,
    typer.Option(
        "--innermost",
        help="Give each GPU op only to the deepest range of each domain open during its launch, "
        "instead of to every enclosing range.",
    ),
]
WindowOpt = Annotated[
    bool,
    typer.Option(
        "--window",
        help="Time-window mode: a range gets every GPU op whose GPU interval lies inside it, "
        "launched from any thread or process (for work launched by other threads).",
    ),
]
DepthOpt = Annotated[
    int | None,
    typer.Option("--depth", help="Only ranges at this nesting level on their thread (0 = outermost)."),
]
RangeLikeOpt = Annotated[
    str | None,
    typer.Option(
        "--like", help="Only range names matching this case-insensitive LIKE pattern (% any run, _ any char)."
    ),
]
DomainOpt = Annotated[
    str | None,
    typer.Option("--domain", help="Only ranges of this NVTX domain ('' = the default domain)."),
]
ExtendUnendedOpt = Annotated[
    bool,
    typer.Option(
        "--extend-unended",
        help="Ranges that never ended run to the last NVTX timestamp of the trace, as nsys's reports "
        "treat them (footer: extended_ranges), instead of being ignored.",
    ),
]
GroupNamesOpt = Annotated[
    bool,
    typer.Option(
        "--group-names",
        help="Fold PyTorch emit_nvtx suffixes (', seq = N, op_id = N', ', sizes = [...]') so one op "
        "is one row.",
    ),
]


@trace_options(Takes.GPU_WORK)
def nvtx_command(
    trace: TraceArg,
    limit: Annotated[
        int, typer.Option("--limit", "-n", help="Show the top N range names by kernel time; 0 shows all.")
    ] = DEFAULT_LIMIT,
    innermost: InnermostOpt = False,
    window: WindowOpt = False,
    depth: DepthOpt = None,
    like: RangeLikeOpt = None,
    domain: DomainOpt = None,
    group_names: GroupNamesOpt = False,
    extend_unended: ExtendUnendedOpt = False,
    fmt: FormatOpt = Format.table,
    unit: UnitOpt = None,
    show_sql: ShowSqlOpt = False,
    *,
    options: TraceOptions,
) -> None:
    """Where in the program: per NVTX range name, instances, CPU time, and the GPU work its
    ranges launched (kernels, kernel time, projected span, busy time, memcpys, memsets)."""
    from nsysq.analyses.nvtx import nvtx

    with open_trace(trace, options, prefetch="nvtx_ops") as t:
        table = nvtx(
            t, innermost=innermost, window=window, depth=depth, like=like, domain=domain,
            group_names=group_names, limit=limit, extend_unended=extend_unended,
        )  # fmt: skip
        sql = sql_if(show_sql, t)
    print_table(table, sql, fmt, unit, title="nvtx")


@trace_options(Takes.GPU_WORK)
def plot_nvtx_command(
    trace: TraceArg,
    output: OutputOpt,
    limit: Annotated[int, typer.Option("--limit", "-n", help="Draw the top N range names by GPU time.")] = 15,
    innermost: InnermostOpt = False,
    window: WindowOpt = False,
    depth: DepthOpt = None,
    like: RangeLikeOpt = None,
    domain: DomainOpt = None,
    group_names: GroupNamesOpt = False,
    extend_unended: ExtendUnendedOpt = False,
    size: SizeOpt = None,
    dpi: DpiOpt = DEFAULT_DPI,
    title: TitleOpt = None,
    *,
    options: TraceOptions,
) -> None:
    """Range names by GPU time: per name, CPU time (total duration) beside GPU kernel and busy time."""
    from nsysq.plot import check_picture_path, plot_nvtx, sized_axes

    check_picture_path(output)
    if limit < 1:
        raise UsageError("--limit must be a positive number of range names.")
    with open_trace(trace, options, prefetch="nvtx_ops") as t:
        from nsysq.analyses.nvtx import nvtx as nvtx_of_trace

        df = nvtx_of_trace(
            t, innermost=innermost, window=window, depth=depth, like=like, domain=domain,
            group_names=group_names, limit=limit, extend_unended=extend_unended,
        ).to_pandas()  # fmt: skip
    save_picture(plot_nvtx(df, ax=sized_axes(size)), output, dpi, title)
