"""``nsysq gaps`` (why the GPU waited), ``nsysq overlap`` (is communication hidden behind compute)
and ``nsysq plot gaps`` (the picture of the first).

Each parses its options, calls the library function of the same name (:mod:`nsysq.gputime.gaps`,
:mod:`nsysq.gputime.overlap`) and prints its sections through :func:`nsysq.base.sections.render_sections`.
Registered by :mod:`nsysq.cli.root` (``plot gaps`` on the plot sub-app, sharing the output options
of :mod:`nsysq.cli.plot`).
"""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated

import typer

from nsysq.base.errors import UsageError
from nsysq.base.units import ms_to_ns
from nsysq.cli.common import (
    DEFAULT_DPI,
    DpiOpt,
    Format,
    FormatOpt,
    OutputOpt,
    RulesOpt,
    ShowSqlOpt,
    SizeOpt,
    Takes,
    TitleOpt,
    TraceArg,
    TraceOptions,
    UnitOpt,
    open_trace,
    save_picture,
    say,
    show_sql,
    trace_options,
    unit_for,
)

GAPS_TITLES = {
    "devices": "GPU busy and idle per device",
    "streams": "busy per stream",
    "gaps": "longest idle gaps",
}
OVERLAP_TITLES = {
    "devices": "communication and memcpy overlap with compute, per device",
    "collectives": "communication per collective kind",
}

SECTION_HELP = "Print only this section (csv prints devices unless told otherwise)."


class GapsSection(StrEnum):
    devices = "devices"
    streams = "streams"
    gaps = "gaps"


class OverlapSection(StrEnum):
    devices = "devices"
    collectives = "collectives"


@trace_options(Takes.GPU_WORK)
def gaps_command(
    trace: TraceArg,
    top: Annotated[int, typer.Option("--top", "-n", help="List the N longest idle gaps (0 = none).")] = 10,
    min_gap: Annotated[
        float, typer.Option("--min-gap", help="List only gaps at least this long, in ms.")
    ] = 0.0,
    section: Annotated[
        GapsSection | None,
        typer.Option("--section", help=SECTION_HELP),
    ] = None,
    fmt: FormatOpt = Format.table,
    unit: UnitOpt = None,
    show_sql_: ShowSqlOpt = False,
    *,
    options: TraceOptions,
) -> None:
    """Why the GPU waited: busy and idle time per device and stream, the longest idle gaps, and
    idle time by cause (host waiting on the GPU, launch-bound, host busy elsewhere, unknown)."""
    from nsysq.base.sections import render_sections
    from nsysq.gputime.gaps import CAUSES, PREFETCH, gaps

    if min_gap < 0:
        raise UsageError("--min-gap must be 0 or more (ms).")
    with open_trace(trace, options, prefetch=PREFETCH) as t:
        result = gaps(t, top=top, min_gap_ns=ms_to_ns(min_gap))
        if show_sql_:
            show_sql([t])
            return
    tables = result.in_unit(unit_for(fmt, unit)).tables()
    render_sections("gaps", tables, GAPS_TITLES, fmt.value, sys.stdout, section=_value(section))
    for note in result.devices.notes:
        say(note)
    if fmt in (Format.table, Format.markdown) and section in (None, GapsSection.gaps):
        say("causes: " + "; ".join(f"{code} = {text}" for code, text in CAUSES.items()) + " (docs/gaps.md).")


@trace_options(Takes.GPU_WORK)
def overlap_command(
    trace: TraceArg,
    rules: RulesOpt = None,
    section: Annotated[
        OverlapSection | None,
        typer.Option("--section", help=SECTION_HELP),
    ] = None,
    fmt: FormatOpt = Format.table,
    unit: UnitOpt = None,
    show_sql_: ShowSqlOpt = False,
    *,
    options: TraceOptions,
) -> None:
    """Is communication hidden behind compute: per device, NCCL/communication kernel time that ran
    while compute kernels ran (overlap) or alone (exposed), per collective kind, and memcpy overlap."""
    from nsysq.base.sections import render_sections
    from nsysq.gputime.overlap import overlap

    with open_trace(trace, options, prefetch="gpu_ops") as t:
        result = overlap(t, rules=rules)
        if show_sql_:
            show_sql([t])
            return
    tables = result.in_unit(unit_for(fmt, unit)).tables()
    render_sections("overlap", tables, OVERLAP_TITLES, fmt.value, sys.stdout, section=_value(section))
    for note in result.devices.notes:
        say(note)


def _value(section: StrEnum | None) -> str | None:
    return None if section is None else section.value


@trace_options(Takes.GPU_WORK)
def plot_gaps_command(
    trace: TraceArg,
    output: OutputOpt,
    bins: Annotated[int, typer.Option("--bins", help="Slices of time per device lane.")] = 800,
    size: SizeOpt = None,
    dpi: DpiOpt = DEFAULT_DPI,
    title: TitleOpt = None,
    *,
    options: TraceOptions,
) -> None:
    """Per GPU a utilization strip over time: busy share and idle share by cause in each slice of time."""
    from nsysq.gputime.gaps import PREFETCH
    from nsysq.plot import check_picture_path, sized_axes
    from nsysq.plot.gaps import gaps_frame, plot_gaps

    if not 1 <= bins <= 100_000:
        raise UsageError("--bins must be between 1 and 100000.")
    check_picture_path(output)
    with open_trace(trace, options, prefetch=PREFETCH) as t:
        df = gaps_frame(t)
    save_picture(plot_gaps(df, ax=sized_axes(size), bins=bins), output, dpi, title)


@trace_options(Takes.GPU_WORK)
def plot_overlap_command(
    trace: TraceArg,
    output: OutputOpt,
    rules: RulesOpt = None,
    size: SizeOpt = None,
    dpi: DpiOpt = DEFAULT_DPI,
    title: TitleOpt = None,
    *,
    options: TraceOptions,
) -> None:
    """Per GPU, communication (each collective kind) and memcpy time: hidden behind compute or exposed."""
    from nsysq.plot import check_picture_path, sized_axes
    from nsysq.plot.gaps import overlap_frame, plot_overlap

    check_picture_path(output)
    with open_trace(trace, options, prefetch="gpu_ops") as t:
        df = overlap_frame(t, rules=None if rules is None else str(rules))
    save_picture(plot_overlap(df, ax=sized_axes(size)), output, dpi, title)
