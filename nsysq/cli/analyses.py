"""The commands that answer one question about one trace: info, census, lineup, stakeout, timeline.

Each takes its trace options from :func:`nsysq.cli.common.trace_options`, opens the trace
(:func:`~nsysq.cli.common.open_trace`), calls the library function of the same name and prints
the Table it returns, or with --show-sql the SQL that made it (:func:`~nsysq.cli.common.print_table`).
Registered by :mod:`nsysq.cli.root`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from nsysq.analyses.census import DEFAULT_LIMIT
from nsysq.analyses.timeline import ROWS_TO_READ
from nsysq.cli.common import (
    CensusLimitOpt,
    Format,
    FormatOpt,
    KernelArg,
    LikeOpt,
    Names,
    NamesOpt,
    NvtxLanesOpt,
    RulesOpt,
    ShowSqlOpt,
    Takes,
    TimelineEndOpt,
    TimelineStartOpt,
    TraceArg,
    TraceOptions,
    Unit,
    UnitOpt,
    emit,
    open_trace,
    print_table,
    say,
    sql_if,
    trace_options,
)


@trace_options(Takes.NO_CACHE)
def info_command(trace: TraceArg, fmt: FormatOpt = Format.table, *, options: TraceOptions) -> None:
    """What is in a trace: nsys version, GPUs, time span, row counts, tables, and warnings."""
    from nsysq.analyses.info import info, info_table
    from nsysq.base import json_text

    with open_trace(trace, options) as t:
        data = info(t)
    if fmt == Format.json:
        sys.stdout.write(json_text.dumps(data) + "\n")
    else:
        emit(info_table(data), fmt, Unit.ns, title=f"{Path(data['path']).name}")
    for warning in data["warnings"]:
        say("warning: " + warning)


@trace_options()
def census_command(
    trace: TraceArg,
    limit: CensusLimitOpt = DEFAULT_LIMIT,
    names: NamesOpt = Names.short,
    underfilled: Annotated[
        bool,
        typer.Option(
            "--underfilled",
            help="List the launches that keep fewer than half the GPU's SMs busy (sm_fill_pct < 50), "
            "by time, per kernel and grid, with what the grid means.",
        ),
    ] = False,
    fmt: FormatOpt = Format.table,
    unit: UnitOpt = None,
    show_sql: ShowSqlOpt = False,
    *,
    options: TraceOptions,
) -> None:
    """Where GPU time goes: per kernel name, instances, total/avg/median/min/max/stddev, share."""
    from nsysq.analyses import census as census_mod

    with open_trace(trace, options) as t:
        if underfilled:
            table = census_mod.underfilled(t, limit=limit, names=names.value)
        else:
            table = census_mod.census(t, limit=limit, names=names.value)
        sql = sql_if(show_sql, t)
    print_table(table, sql, fmt, unit, title="under-filled launches" if underfilled else "census")


@trace_options()
def lineup_command(
    trace: TraceArg,
    rules: RulesOpt = None,
    fmt: FormatOpt = Format.table,
    unit: UnitOpt = None,
    show_sql: ShowSqlOpt = False,
    *,
    options: TraceOptions,
) -> None:
    """Kernel time by category (GEMM, attention, normalization, ...), from ordered rules."""
    from nsysq.analyses.lineup import lineup

    with open_trace(trace, options, prefetch="lineup") as t:
        table = lineup(t, rules=rules)
        sql = sql_if(show_sql, t)
    print_table(table, sql, fmt, unit, title="lineup")


@trace_options()
def stakeout_command(
    trace: TraceArg,
    kernel: KernelArg,
    like: LikeOpt = False,
    limit: Annotated[int, typer.Option("--limit", "-n", help="Show at most N launches (0 = all).")] = 0,
    fmt: FormatOpt = Format.table,
    unit: UnitOpt = None,
    show_sql: ShowSqlOpt = False,
    *,
    options: TraceOptions,
) -> None:
    """Every launch of one kernel: start, duration, grid, block, registers, shared memory."""
    from nsysq.analyses.stakeout import stakeout, summary_table

    with open_trace(trace, options, prefetch="stakeout") as t:
        launches = stakeout(t, kernel, like=like, limit=limit)
        sql = sql_if(show_sql, t)
    print_table(launches, sql, fmt, unit, title=f"stakeout {kernel}")
    if sql is None and fmt in (Format.table, Format.markdown):
        sys.stdout.write("\n")
        emit(summary_table(launches), fmt, unit, title="summary")


@trace_options()
def timeline_command(
    trace: TraceArg,
    start: TimelineStartOpt = None,
    end: TimelineEndOpt = None,
    nvtx_lanes: NvtxLanesOpt = False,
    limit: Annotated[int, typer.Option("--limit", "-n", help="At most N events (0 = all).")] = ROWS_TO_READ,
    fmt: FormatOpt = Format.table,
    unit: UnitOpt = None,
    show_sql: ShowSqlOpt = False,
    *,
    options: TraceOptions,
) -> None:
    """Kernels, memcpys (by copy kind), memsets, CUDA graph executions and (--nvtx-lanes) NVTX
    ranges on one clock, ordered by start."""
    from nsysq.analyses.timeline import timeline

    with open_trace(trace, options, prefetch="timeline") as t:
        table = timeline(t, start_ms=start, end_ms=end, nvtx_lanes=nvtx_lanes, limit=limit)
        sql = sql_if(show_sql, t)
    print_table(table, sql, fmt, unit, title="timeline")
