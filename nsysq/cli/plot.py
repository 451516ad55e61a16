"""``nsysq plot census|lineup|stakeout|timeline|diff ... -o out.png|svg|pdf``.

Each subcommand takes the same filters as the command it draws, computes that result through the
Python API and hands the DataFrame to the matching function in :mod:`nsysq.plot`, which also
makes and saves the figure. matplotlib loads only when a plot runs. The sub-app ``plot_app`` is
added to the root by :mod:`nsysq.cli.root`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from nsysq.analyses.census import DEFAULT_LIMIT
from nsysq.analyses.timeline import EVENTS_TO_DRAW
from nsysq.base.errors import UsageError
from nsysq.cli.common import (
    DEFAULT_DPI,
    DangerRulesOpt,
    DpiOpt,
    KernelArg,
    LikeOpt,
    LogOpt,
    MinTimeOpt,
    Names,
    NamesOpt,
    NvtxLanesOpt,
    OutputOpt,
    RulesOpt,
    SizeOpt,
    ThresholdOpt,
    TimelineEndOpt,
    TimelineStartOpt,
    TitleOpt,
    TraceAArg,
    TraceArg,
    TraceBArg,
    TraceOptions,
    diff_traces,
    open_trace,
    save_picture,
    say,
    trace_options,
)
from nsysq.diffing.params import DEFAULT_MIN_TIME_MS, DEFAULT_THRESHOLD

plot_app = typer.Typer(
    name="plot",
    help="Draw a command's result as a picture (PNG, SVG or PDF): census, lineup, stakeout, timeline, diff.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@plot_app.command("census")
@trace_options()
def plot_census_cmd(
    trace: TraceArg,
    output: OutputOpt,
    limit: Annotated[
        int, typer.Option("--limit", "-n", help="Draw the top N kernels plus one 'other' bar.")
    ] = DEFAULT_LIMIT,
    names: NamesOpt = Names.short,
    log: LogOpt = None,
    size: SizeOpt = None,
    dpi: DpiOpt = DEFAULT_DPI,
    title: TitleOpt = None,
    *,
    options: TraceOptions,
    fill: Annotated[
        bool,
        typer.Option("--fill", help="Hatch the part of each bar spent in launches filling < 50% of the SMs."),
    ] = False,
) -> None:
    """Horizontal bars of the top kernels by total time, labelled with time, share and calls."""
    from nsysq.plot import check_picture_path, plot_census, sized_axes

    check_picture_path(output)
    if limit < 1:
        raise UsageError("--limit must be a positive number of bars.")
    with open_trace(trace, options, prefetch="census") as t:
        from nsysq.analyses.census import census

        df = census(t, limit=limit, names=names.value).to_pandas()
    save_picture(plot_census(df, ax=sized_axes(size), top=limit, log=log, fill=fill), output, dpi, title)


@plot_app.command("lineup")
@trace_options()
def plot_lineup_cmd(
    trace: TraceArg,
    output: OutputOpt,
    rules: RulesOpt = None,
    log: LogOpt = None,
    size: SizeOpt = None,
    dpi: DpiOpt = DEFAULT_DPI,
    title: TitleOpt = None,
    *,
    options: TraceOptions,
) -> None:
    """One bar per kernel category, coloured by category, with time, share, calls, top kernel."""
    from nsysq.plot import check_picture_path, plot_lineup, sized_axes

    check_picture_path(output)
    with open_trace(trace, options, prefetch="lineup") as t:
        from nsysq.analyses.lineup import lineup

        df = lineup(t, rules=rules).to_pandas()
    save_picture(plot_lineup(df, ax=sized_axes(size), log=log), output, dpi, title)


@plot_app.command("stakeout")
@trace_options()
def plot_stakeout_cmd(
    trace: TraceArg,
    kernel: KernelArg,
    output: OutputOpt,
    like: LikeOpt = False,
    limit: Annotated[
        int, typer.Option("--limit", "-n", help="Draw at most the first N launches (0 = all).")
    ] = 0,
    size: SizeOpt = None,
    dpi: DpiOpt = DEFAULT_DPI,
    title: TitleOpt = None,
    *,
    options: TraceOptions,
) -> None:
    """Duration of every launch of one kernel in launch order, with a histogram beside it."""
    from nsysq.plot import check_picture_path, plot_stakeout, sized_axes

    check_picture_path(output)
    with open_trace(trace, options, prefetch="stakeout") as t:
        from nsysq.analyses.stakeout import stakeout

        df = stakeout(t, kernel, like=like, limit=limit).to_pandas()
    save_picture(plot_stakeout(df, ax=sized_axes(size)), output, dpi, title)


@plot_app.command("timeline")
@trace_options()
def plot_timeline_cmd(
    trace: TraceArg,
    output: OutputOpt,
    start: TimelineStartOpt = None,
    end: TimelineEndOpt = None,
    nvtx_lanes: NvtxLanesOpt = True,
    limit: Annotated[
        int, typer.Option("--limit", "-n", help="At most N events (0 = all); the title says when cut.")
    ] = EVENTS_TO_DRAW,
    rules: RulesOpt = None,
    size: SizeOpt = None,
    dpi: DpiOpt = DEFAULT_DPI,
    title: TitleOpt = None,
    *,
    options: TraceOptions,
) -> None:
    """A Gantt chart: one lane per GPU stream, kernels coloured by category, memcpy by copy kind."""
    from nsysq.plot import check_picture_path, plot_timeline, sized_axes
    from nsysq.trace.notebook import timeline_frame

    check_picture_path(output)
    with open_trace(trace, options, prefetch="timeline") as t:
        df = timeline_frame(t, rules=rules, start_ms=start, end_ms=end, nvtx_lanes=nvtx_lanes, limit=limit)
    if df.attrs.get("footer", {}).get("truncated"):
        say(f"only the first {len(df):,} events are drawn; narrow --from/--to or raise --limit.")
    save_picture(plot_timeline(df, ax=sized_axes(size), nvtx=nvtx_lanes), output, dpi, title)


class DiffSection(StrEnum):
    categories = "categories"
    kernels = "kernels"


@plot_app.command("diff")
@trace_options()
def plot_diff_cmd(
    a: TraceAArg,
    b: TraceBArg,
    output: OutputOpt,
    section: Annotated[
        DiffSection, typer.Option("--section", help="Pair the bars per category or per kernel.")
    ] = DiffSection.categories,
    min_time: MinTimeOpt = DEFAULT_MIN_TIME_MS,
    threshold: ThresholdOpt = DEFAULT_THRESHOLD,
    rules: RulesOpt = None,
    danger_rules: DangerRulesOpt = None,
    limit: Annotated[
        int, typer.Option("--limit", "-n", help="Draw the N largest rows, plus every outlier.")
    ] = 20,
    linear: Annotated[bool, typer.Option("--linear", help="Linear time axis instead of log.")] = False,
    size: SizeOpt = None,
    dpi: DpiOpt = DEFAULT_DPI,
    title: TitleOpt = None,
    *,
    options: TraceOptions,
) -> None:
    """Paired A/B bars per category (or kernel) with the B/A ratio on each; outliers in red."""
    from nsysq.plot import check_picture_path, plot_diff, sized_axes

    check_picture_path(output)
    if limit < 1:
        raise UsageError("--limit must be a positive number of rows.")
    result = diff_traces(
        a, b, options, rules=rules, danger_rules=danger_rules, min_time_ms=min_time, threshold=threshold
    )
    ax = plot_diff(result, ax=sized_axes(size), section=section.value, top=limit, log=not linear)
    save_picture(ax, output, dpi, title)
