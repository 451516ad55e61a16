"""``nsysq iters`` (one row per iteration of the loop) and ``nsysq plot iters`` (its picture).

Each parses its options, calls :func:`nsysq.iterations.table.iters` and prints or draws it.
Registered by :mod:`nsysq.cli.root` (``plot iters`` on the plot sub-app).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

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
from nsysq.iterations.params import THRESHOLD


class Source(StrEnum):
    nvtx = "nvtx"
    period = "period"


IterNvtxOpt = Annotated[
    str | None,
    typer.Option(
        "--nvtx",
        metavar="NAME",
        help="The NVTX range whose instances are the iterations (exact name; default: detected, "
        "ProfilerStep#N first).",
        show_default=False,
    ),
]
SourceOpt = Annotated[
    Source | None,
    typer.Option(
        "--source",
        help="Where iterations come from: nvtx (step ranges) or period (the repeating kernel sequence "
        "on the busiest stream) [default: nvtx when a step range is found, else period].",
        show_default=False,
    ),
]
IterThresholdOpt = Annotated[
    float,
    typer.Option("--threshold", help="Robust score (spreads from the steady state) that makes an outlier."),
]
_TAKES = Takes.NO_CACHE | Takes.SCOPE


@trace_options(_TAKES)
def iters_command(
    trace: TraceArg,
    nvtx: IterNvtxOpt = None,
    source: SourceOpt = None,
    threshold: IterThresholdOpt = THRESHOLD,
    fmt: FormatOpt = Format.table,
    unit: UnitOpt = None,
    show_sql: ShowSqlOpt = False,
    *,
    options: TraceOptions,
) -> None:
    """One row per iteration of the loop: its time, GPU busy/idle, kernels, communication, and
    whether it is warm-up or an outlier (with the kernel that grew). See docs/iters.md."""
    from nsysq.iterations.table import iters

    with open_trace(trace, options, prefetch="iters_ops") as t:
        table = iters(t, nvtx=nvtx, source=None if source is None else source.value, threshold=threshold)
        sql = sql_if(show_sql, t)
    print_table(table, sql, fmt, unit, title="iters")


@trace_options(_TAKES)
def plot_iters_command(
    trace: TraceArg,
    output: OutputOpt,
    nvtx: IterNvtxOpt = None,
    source: SourceOpt = None,
    threshold: IterThresholdOpt = THRESHOLD,
    size: SizeOpt = None,
    dpi: DpiOpt = DEFAULT_DPI,
    title: TitleOpt = None,
    *,
    options: TraceOptions,
) -> None:
    """Duration per iteration, stacked (compute, exposed communication, GPU idle, CPU only), with
    warm-up and outliers marked."""
    from nsysq.iterations.table import iters
    from nsysq.plot import check_picture_path, sized_axes
    from nsysq.plot.iters import plot_iters

    check_picture_path(output)
    with open_trace(trace, options, prefetch="iters_ops") as t:
        frame = iters(t, nvtx=nvtx, source=None if source is None else source.value, threshold=threshold)
    save_picture(plot_iters(frame.to_pandas(), ax=sized_axes(size)), output, dpi, title)
