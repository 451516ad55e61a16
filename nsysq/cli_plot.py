"""``nsysq plot census|lineup|stakeout|timeline|diff ... -o out.png|svg|pdf``.

Registered on the shared app (imported at the end of nsysq.cli). Each subcommand takes the same
filters as the command it draws, computes that result through the Python API and hands the
DataFrame to the matching function in :mod:`nsysq.plot`. matplotlib loads only when a plot runs.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from nsysq.census import DEFAULT_LIMIT
from nsysq.cli import (
    DangerRulesOpt,
    KernelArg,
    LikeOpt,
    MinTimeOpt,
    Names,
    NamesOpt,
    NoCacheOpt,
    RulesOpt,
    ThresholdOpt,
    TraceAArg,
    TraceArg,
    TraceBArg,
    _open,
    app,
)
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
app.add_typer(plot_app, name="plot")

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
    from nsysq.plot import _mpl

    plt = _mpl()
    _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def _save(ax: Axes, output: Path, dpi: int, title: str | None) -> None:
    from nsysq.plot import _mpl

    plt = _mpl()
    if title is not None:
        ax.set_title(title, loc="left", fontsize=11)
    fig = ax.figure
    try:
        fig.savefig(output, dpi=dpi, format=output.suffix.lower().lstrip("."), bbox_inches="tight")
    except OSError as exc:
        raise UsageError(f"could not write {output}: {exc.strerror or exc}.") from None
    finally:
        plt.close(fig)  # type: ignore[arg-type]
    sys.stderr.write(f"nsysq: wrote {output}\n")


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
    no_cache: NoCacheOpt = False,
) -> None:
    """Horizontal bars of the top kernels by total time, labelled with time, share and calls."""
    from nsysq.plot import plot_census

    _check_output(output)
    if limit < 1:
        raise UsageError("--limit must be a positive number of bars.")
    with _open(trace, no_cache=no_cache, prefetch="census") as t:
        df = t.census(limit=limit, names=names.value)
    _save(plot_census(df, ax=_axes(size), top=limit, log=log), output, dpi, title)


@plot_app.command("lineup")
def plot_lineup_cmd(
    trace: TraceArg,
    output: OutputOpt,
    rules: RulesOpt = None,
    log: LogOpt = None,
    size: SizeOpt = None,
    dpi: DpiOpt = 150,
    title: TitleOpt = None,
    no_cache: NoCacheOpt = False,
) -> None:
    """One bar per kernel category, coloured by category, with time, share, calls, top kernel."""
    from nsysq.plot import plot_lineup

    _check_output(output)
    with _open(trace, no_cache=no_cache, prefetch="lineup") as t:
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
    no_cache: NoCacheOpt = False,
) -> None:
    """Duration of every launch of one kernel in launch order, with a histogram beside it."""
    from nsysq.plot import plot_stakeout

    _check_output(output)
    with _open(trace, no_cache=no_cache, prefetch="stakeout") as t:
        df = t.stakeout(kernel, like=like, limit=limit)
    _save(plot_stakeout(df, ax=_axes(size)), output, dpi, title)


@plot_app.command("timeline")
def plot_timeline_cmd(
    trace: TraceArg,
    output: OutputOpt,
    start: Annotated[
        float | None, typer.Option("--from", help="Window start, ms from the trace start.")
    ] = None,
    end: Annotated[float | None, typer.Option("--to", help="Window end, ms from the trace start.")] = None,
    nvtx: Annotated[bool, typer.Option("--nvtx", help="Add NVTX ranges as lanes on top.")] = False,
    limit: Annotated[
        int, typer.Option("--limit", "-n", help="At most N events (0 = all); the title says when cut.")
    ] = EVENTS_TO_DRAW,
    rules: RulesOpt = None,
    size: SizeOpt = None,
    dpi: DpiOpt = 150,
    title: TitleOpt = None,
    no_cache: NoCacheOpt = False,
) -> None:
    """A Gantt chart: one lane per GPU stream, kernels coloured by category, memcpy by copy kind."""
    from nsysq.notebook import timeline_frame
    from nsysq.plot import plot_timeline

    _check_output(output)
    with _open(trace, no_cache=no_cache, prefetch="timeline") as t:
        df = timeline_frame(t, rules=rules, start_ms=start, end_ms=end, nvtx=nvtx, limit=limit)
    if df.attrs.get("footer", {}).get("truncated"):
        sys.stderr.write(
            f"nsysq: only the first {len(df):,} events are drawn; narrow --from/--to or raise --limit.\n"
        )
    _save(plot_timeline(df, ax=_axes(size), nvtx=nvtx), output, dpi, title)


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
    min_time: MinTimeOpt = 0.5,
    threshold: ThresholdOpt = 3.0,
    rules: RulesOpt = None,
    danger_rules: DangerRulesOpt = None,
    limit: Annotated[
        int, typer.Option("--limit", "-n", help="Draw the N largest rows, plus every outlier.")
    ] = 20,
    linear: Annotated[bool, typer.Option("--linear", help="Linear time axis instead of log.")] = False,
    size: SizeOpt = None,
    dpi: DpiOpt = 150,
    title: TitleOpt = None,
    no_cache: NoCacheOpt = False,
) -> None:
    """Paired A/B bars per category (or kernel) with the B/A ratio on each; outliers in red."""
    from nsysq.diffing import diff as compute
    from nsysq.plot import plot_diff

    _check_output(output)
    if limit < 1:
        raise UsageError("--limit must be a positive number of rows.")
    with (
        _open(a, no_cache=no_cache, prefetch="kernel_groups") as ta,
        _open(b, no_cache=no_cache, prefetch=None) as tb,
    ):
        result = compute(
            ta, tb, rules=rules, danger_rules=danger_rules, min_time_ms=min_time, threshold=threshold
        )
    for warning in result.warnings:
        sys.stderr.write(f"nsysq: warning: {warning}\n")
    ax = plot_diff(result, ax=_axes(size), section=section.value, top=limit, log=not linear)
    _save(ax, output, dpi, title)
