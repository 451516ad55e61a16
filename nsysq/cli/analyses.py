"""The commands that answer one question about one trace: info, census, lineup, stakeout, timeline.

Each parses its options, calls the library function of the same name and prints the Table it
returns through :func:`nsysq.cli.common.emit`. Registered by :mod:`nsysq.cli.root`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from nsysq.analyses.census import DEFAULT_LIMIT
from nsysq.analyses.timeline import ROWS_TO_READ
from nsysq.cli.common import (
    CensusLimitOpt,
    DeviceOpt,
    Format,
    FormatOpt,
    KernelArg,
    LikeOpt,
    Names,
    NamesOpt,
    NoCacheOpt,
    NvtxLanesOpt,
    NvtxLikeOpt,
    NvtxMode,
    NvtxModeOpt,
    NvtxOpt,
    PidOpt,
    RulesOpt,
    ShowSqlOpt,
    StreamOpt,
    TimelineEndOpt,
    TimelineStartOpt,
    TraceArg,
    Unit,
    UnitOpt,
    emit,
    nvtx_of,
    open_trace,
    run_table,
    say,
    scope_of,
)

if TYPE_CHECKING:
    from nsysq.base.table import Table
    from nsysq.session import Session


def info_command(trace: TraceArg, fmt: FormatOpt = Format.table, no_cache: NoCacheOpt = False) -> None:
    """What is in a trace: nsys version, GPUs, time span, row counts, tables, and warnings."""
    import json

    from nsysq.analyses.info import info, info_table

    with open_trace(trace, no_cache=no_cache) as t:
        data = info(t)
    if fmt == Format.json:
        sys.stdout.write(json.dumps(data, indent=2, default=str, ensure_ascii=False) + "\n")
    else:
        emit(info_table(data), fmt, Unit.ns, title=f"{Path(data['path']).name}")
    for warning in data["warnings"]:
        say("warning: " + warning)


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
    device: DeviceOpt = None,
    stream: StreamOpt = None,
    pid: PidOpt = None,
    nvtx: NvtxOpt = None,
    nvtx_like: NvtxLikeOpt = None,
    nvtx_mode: NvtxModeOpt = NvtxMode.launch,
    no_cache: NoCacheOpt = False,
) -> None:
    """Where GPU time goes: per kernel name, instances, total/avg/median/min/max/stddev, share."""
    from nsysq.analyses import census as census_mod

    def compute(t: Session) -> Table:
        if underfilled:
            return census_mod.underfilled(t, limit=limit, names=names.value)
        return census_mod.census(t, limit=limit, names=names.value)

    run_table(
        trace,
        compute,
        fmt,
        unit,
        sql=show_sql,
        no_cache=no_cache,
        scope=scope_of(device, stream, pid),
        nvtx=nvtx_of(nvtx, nvtx_like, nvtx_mode),
        title="under-filled launches" if underfilled else "census",
    )


def lineup_command(
    trace: TraceArg,
    rules: RulesOpt = None,
    fmt: FormatOpt = Format.table,
    unit: UnitOpt = None,
    show_sql: ShowSqlOpt = False,
    device: DeviceOpt = None,
    stream: StreamOpt = None,
    pid: PidOpt = None,
    nvtx: NvtxOpt = None,
    nvtx_like: NvtxLikeOpt = None,
    nvtx_mode: NvtxModeOpt = NvtxMode.launch,
    no_cache: NoCacheOpt = False,
) -> None:
    """Kernel time by category (GEMM, attention, normalization, ...), from ordered rules."""
    from nsysq.analyses.lineup import lineup

    def compute(t: Session) -> Table:
        return lineup(t, rules=rules)

    run_table(
        trace,
        compute,
        fmt,
        unit,
        sql=show_sql,
        no_cache=no_cache,
        scope=scope_of(device, stream, pid),
        nvtx=nvtx_of(nvtx, nvtx_like, nvtx_mode),
        title="lineup",
        prefetch="lineup",
    )


def stakeout_command(
    trace: TraceArg,
    kernel: KernelArg,
    like: LikeOpt = False,
    limit: Annotated[int, typer.Option("--limit", "-n", help="Show at most N launches (0 = all).")] = 0,
    fmt: FormatOpt = Format.table,
    unit: UnitOpt = None,
    show_sql: ShowSqlOpt = False,
    device: DeviceOpt = None,
    stream: StreamOpt = None,
    pid: PidOpt = None,
    nvtx: NvtxOpt = None,
    nvtx_like: NvtxLikeOpt = None,
    nvtx_mode: NvtxModeOpt = NvtxMode.launch,
    no_cache: NoCacheOpt = False,
) -> None:
    """Every launch of one kernel: start, duration, grid, block, registers, shared memory."""
    from nsysq.analyses.stakeout import stakeout, summary_table

    def compute(t: Session) -> Table:
        return stakeout(t, kernel, like=like, limit=limit)

    title = f"stakeout {kernel}"
    launches = run_table(
        trace,
        compute,
        fmt,
        unit,
        sql=show_sql,
        no_cache=no_cache,
        scope=scope_of(device, stream, pid),
        nvtx=nvtx_of(nvtx, nvtx_like, nvtx_mode),
        title=title,
        prefetch="stakeout",
    )
    if launches is not None and fmt in (Format.table, Format.markdown):
        sys.stdout.write("\n")
        emit(summary_table(launches), fmt, unit, title="summary")


def timeline_command(
    trace: TraceArg,
    start: TimelineStartOpt = None,
    end: TimelineEndOpt = None,
    nvtx_lanes: NvtxLanesOpt = False,
    limit: Annotated[int, typer.Option("--limit", "-n", help="At most N events (0 = all).")] = ROWS_TO_READ,
    fmt: FormatOpt = Format.table,
    unit: UnitOpt = None,
    show_sql: ShowSqlOpt = False,
    device: DeviceOpt = None,
    stream: StreamOpt = None,
    pid: PidOpt = None,
    nvtx: NvtxOpt = None,
    nvtx_like: NvtxLikeOpt = None,
    nvtx_mode: NvtxModeOpt = NvtxMode.launch,
    no_cache: NoCacheOpt = False,
) -> None:
    """Kernels, memcpys (by copy kind), memsets, CUDA graph executions and (--nvtx-lanes) NVTX
    ranges on one clock, ordered by start."""
    from nsysq.analyses.timeline import timeline

    def compute(t: Session) -> Table:
        return timeline(t, start_ms=start, end_ms=end, nvtx_lanes=nvtx_lanes, limit=limit)

    run_table(
        trace,
        compute,
        fmt,
        unit,
        sql=show_sql,
        no_cache=no_cache,
        scope=scope_of(device, stream, pid),
        nvtx=nvtx_of(nvtx, nvtx_like, nvtx_mode),
        title="timeline",
        prefetch="timeline",
    )
