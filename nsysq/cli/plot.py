"""``nsysq plot census|lineup|stakeout|timeline|diff ... -o out.png|svg|pdf``.

Each subcommand takes the same filters as the command it draws, computes that result through the
Python API and hands the DataFrame to the matching function in :mod:`nsysq.plot`, which also
makes and saves the figure. matplotlib loads only when a plot runs. The sub-app ``plot_app`` is
added to the root by :mod:`nsysq.cli.root`.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from nsysq.census import DEFAULT_LIMIT
from nsysq.cli.common import (
    DangerRulesOpt,
    DeviceOpt,
    KernelArg,
    LikeOpt,
    MinTimeOpt,
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
    StreamOpt,
    ThresholdOpt,
    TimelineEndOpt,
    TimelineStartOpt,
    TraceAArg,
    TraceArg,
    TraceBArg,
    nvtx_of,
    open_trace,
    say,
    scope_of,
)
from nsysq.diffing.params import DEFAULT_MIN_TIME_MS, DEFAULT_THRESHOLD
from nsysq.errors import UsageError
from nsysq.timeline import EVENTS_TO_DRAW

if TYPE_CHECKING:
    from matplotlib.axes import Axes

plot_app = typer.Typer(
    name="plot",
    help="Draw a command's result as a picture (PNG, SVG or PDF): census, lineup, stakeout, timeline, diff.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

SUFFIXES = (".png", ".svg", ".pdf")

OutputOpt = Annotated[
    Path,
    typer.Option(
        "--output",
        "-o",
        help="Where to write the picture; the suffix picks the format: .png, .svg or .pdf.",
        show_default=False,
    ),
]
DpiOpt = Annotated[int, typer.Option("--dpi", help="Resolution of PNG output.")]
SizeOpt = Annotated[
    str | None,
    typer.Option("--size", help="Figure size in inches as WIDTHxHEIGHT, e.g. 12x6 [default: fits the data]."),
]
TitleOpt = Annotated[str | None, typer.Option("--title", help="Replace the plot's title.")]
LogOpt = Annotated[
    bool | None,
    typer.Option("--log/--linear", help="Time axis scale [default: log when bars span >300x]."),
]


def _check_output(output: Path) -> None:
    if output.suffix.lower() not in SUFFIXES:
        raise UsageError(
            f"cannot tell the format of {output.name!r}; end the --output name with .png, .svg or .pdf."
        )
    if not output.parent.exists():
        raise UsageError(f"the folder {str(output.parent)!r} does not exist; create it first.")


def _figsize(size: str | None) -> tuple[float, float] | None:
    if size is None:
        return None
    try:
        w, h = (float(p) for p in size.lower().split("x"))
    except ValueError:
        raise UsageError(f"--size must look like 12x6 (inches), not {size!r}.") from None
    if not (0 < w <= 100 and 0 < h <= 100):
        raise UsageError("--size must be between 0 and 100 inches each way.")
    return (w, h)


def _axes(size: str | None) -> Axes | None:
    """An Axes of the asked size, or None to let the plot size itself."""
    figsize = _figsize(size)
    if figsize is None:
        return None
    from nsysq.plot import figure_axes

    return figure_axes(figsize)


def _save(ax: Axes, output: Path, dpi: int, title: str | None) -> None:
    from nsysq.plot import save_figure

    try:
        save_figure(ax, output, dpi=dpi, title=title)
    except OSError as exc:
        raise UsageError(f"could not write {output}: {exc.strerror or exc}.") from None
    say(f"wrote {output}")


@plot_app.command("census")
def plot_census_cmd(
    trace: TraceArg,
    output: OutputOpt,
    limit: Annotated[
        int, typer.Option("--limit", "-n", help="Draw the top N kernels plus one 'other' bar.")
    ] = DEFAULT_LIMIT,
    names: NamesOpt = Names.short,
    log: LogOpt = None,
    size: SizeOpt = None,
    dpi: DpiOpt = 150,
    title: TitleOpt = None,
    device: DeviceOpt = None,
    stream: StreamOpt = None,
    pid: PidOpt = None,
    nvtx: NvtxOpt = None,
    nvtx_like: NvtxLikeOpt = None,
    nvtx_mode: NvtxModeOpt = NvtxMode.launch,
    fill: Annotated[
        bool,
        typer.Option("--fill", help="Hatch the part of each bar spent in launches filling < 50% of the SMs."),
    ] = False,
    no_cache: NoCacheOpt = False,
) -> None:
    """Horizontal bars of the top kernels by total time, labelled with time, share and calls."""
    from nsysq.plot import plot_census

    _check_output(output)
    if limit < 1:
        raise UsageError("--limit must be a positive number of bars.")
    selector = nvtx_of(nvtx, nvtx_like, nvtx_mode)
    with open_trace(
        trace, no_cache=no_cache, scope=scope_of(device, stream, pid), nvtx=selector, prefetch="census"
    ) as t:
        df = t.census(limit=limit, names=names.value)
    _save(plot_census(df, ax=_axes(size), top=limit, log=log, fill=fill), output, dpi, title)


@plot_app.command("lineup")
def plot_lineup_cmd(
    trace: TraceArg,
    output: OutputOpt,
    rules: RulesOpt = None,
    log: LogOpt = None,
    size: SizeOpt = None,
    dpi: DpiOpt = 150,
    title: TitleOpt = None,
    device: DeviceOpt = None,
    stream: StreamOpt = None,
    pid: PidOpt = None,
    nvtx: NvtxOpt = None,
    nvtx_like: NvtxLikeOpt = None,
    nvtx_mode: NvtxModeOpt = NvtxMode.launch,
    no_cache: NoCacheOpt = False,
) -> None:
    """One bar per kernel category, coloured by category, with time, share, calls, top kernel."""
    from nsysq.plot import plot_lineup

    _check_output(output)
    selector = nvtx_of(nvtx, nvtx_like, nvtx_mode)
    with open_trace(
        trace, no_cache=no_cache, scope=scope_of(device, stream, pid), nvtx=selector, prefetch="lineup"
    ) as t:
        df = t.lineup(rules=rules)
    _save(plot_lineup(df, ax=_axes(size), log=log), output, dpi, title)


@plot_app.command("stakeout")
def plot_stakeout_cmd(
    trace: TraceArg,
    kernel: KernelArg,
    output: OutputOpt,
    like: LikeOpt = False,
    limit: Annotated[
        int, typer.Option("--limit", "-n", help="Draw at most the first N launches (0 = all).")
    ] = 0,
    size: SizeOpt = None,
    dpi: DpiOpt = 150,
    title: TitleOpt = None,
    device: DeviceOpt = None,
    stream: StreamOpt = None,
    pid: PidOpt = None,
    nvtx: NvtxOpt = None,
    nvtx_like: NvtxLikeOpt = None,
    nvtx_mode: NvtxModeOpt = NvtxMode.launch,
    no_cache: NoCacheOpt = False,
) -> None:
    """Duration of every launch of one kernel in launch order, with a histogram beside it."""
    from nsysq.plot import plot_stakeout

    _check_output(output)
    selector = nvtx_of(nvtx, nvtx_like, nvtx_mode)
    with open_trace(
        trace, no_cache=no_cache, scope=scope_of(device, stream, pid), nvtx=selector, prefetch="stakeout"
    ) as t:
        df = t.stakeout(kernel, like=like, limit=limit)
    _save(plot_stakeout(df, ax=_axes(size)), output, dpi, title)


@plot_app.command("timeline")
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
    dpi: DpiOpt = 150,
    title: TitleOpt = None,
    device: DeviceOpt = None,
    stream: StreamOpt = None,
    pid: PidOpt = None,
    nvtx: NvtxOpt = None,
    nvtx_like: NvtxLikeOpt = None,
    nvtx_mode: NvtxModeOpt = NvtxMode.launch,
    no_cache: NoCacheOpt = False,
) -> None:
    """A Gantt chart: one lane per GPU stream, kernels coloured by category, memcpy by copy kind."""
    from nsysq.notebook import timeline_frame
    from nsysq.plot import plot_timeline

    _check_output(output)
    selector = nvtx_of(nvtx, nvtx_like, nvtx_mode)
    with open_trace(
        trace, no_cache=no_cache, scope=scope_of(device, stream, pid), nvtx=selector, prefetch="timeline"
    ) as t:
        df = timeline_frame(t, rules=rules, start_ms=start, end_ms=end, nvtx_lanes=nvtx_lanes, limit=limit)
    if df.attrs.get("footer", {}).get("truncated"):
        say(f"only the first {len(df):,} events are drawn; narrow --from/--to or raise --limit.")
    _save(plot_timeline(df, ax=_axes(size), nvtx=nvtx_lanes), output, dpi, title)


class DiffSection(StrEnum):
    categories = "categories"
    kernels = "kernels"


@plot_app.command("diff")
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
    dpi: DpiOpt = 150,
    title: TitleOpt = None,
    device: DeviceOpt = None,
    stream: StreamOpt = None,
    pid: PidOpt = None,
    nvtx: NvtxOpt = None,
    nvtx_like: NvtxLikeOpt = None,
    nvtx_mode: NvtxModeOpt = NvtxMode.launch,
    no_cache: NoCacheOpt = False,
) -> None:
    """Paired A/B bars per category (or kernel) with the B/A ratio on each; outliers in red."""
    from nsysq.diffing import diff
    from nsysq.plot import plot_diff

    _check_output(output)
    if limit < 1:
        raise UsageError("--limit must be a positive number of rows.")
    selector = nvtx_of(nvtx, nvtx_like, nvtx_mode)
    with (
        open_trace(
            a, no_cache=no_cache, scope=scope_of(device, stream, pid), nvtx=selector, prefetch="kernel_groups"
        ) as ta,
        open_trace(
            b, no_cache=no_cache, scope=scope_of(device, stream, pid), nvtx=selector, prefetch=None
        ) as tb,
    ):
        result = diff(
            ta, tb, rules=rules, danger_rules=danger_rules, min_time_ms=min_time, threshold=threshold
        )
    for warning in result.warnings:
        say("warning: " + warning)
    ax = plot_diff(result, ax=_axes(size), section=section.value, top=limit, log=not linear)
    _save(ax, output, dpi, title)
