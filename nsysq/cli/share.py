"""``nsysq report`` (a self-contained HTML report of one trace or a pair) and ``nsysq export`` (a
Chrome Trace Event Format file for Perfetto and chrome://tracing): the two artifacts to share.

The report is built by :mod:`nsysq.output.report`, the export by :mod:`nsysq.output.chrome_trace`; this module
parses options and writes files. Registered by :mod:`nsysq.cli.root`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from nsysq.base.errors import UsageError
from nsysq.base.output_path import check_output_path
from nsysq.cli.common import (
    Format,
    FormatOpt,
    ShowSqlOpt,
    Takes,
    TimelineEndOpt,
    TimelineStartOpt,
    TraceArg,
    TraceOptions,
    UnitOpt,
    emit,
    open_trace,
    say,
    show_sql,
    trace_options,
)

ReportOutputOpt = Annotated[
    Path,
    typer.Option("--output", "-o", help="Where to write the report (.html).", show_default=False),
]
ExportOutputOpt = Annotated[
    Path,
    typer.Option(
        "--output", "-o", help="Where to write the trace: .json, or .json.gz (gzip).", show_default=False
    ),
]


@trace_options(Takes.NO_CACHE | Takes.ITERATION)
def report_command(
    traces: Annotated[
        list[Path],
        typer.Argument(
            help="One nsys SQLite export (a report of it), or two, A then B (a report of what changed).",
            show_default=False,
        ),
    ],
    output: ReportOutputOpt,
    *,
    options: TraceOptions,
) -> None:
    """One self-contained HTML file to share: tables (sortable) and plots of one trace, or of a diff."""
    from nsysq.output.report import diff_report, trace_report, write_report

    if len(traces) not in (1, 2):
        raise UsageError("give one trace (a report of it) or two, A then B (a report of what changed).")
    check_output_path(output, (".html", ".htm"))
    if len(traces) == 1:
        with open_trace(traces[0], options) as t:
            page = trace_report(t)
    else:
        page = diff_report(
            traces[0], traces[1], cache=not options.no_cache, nsys=options.nsys, scope=options.scope
        )
    size = write_report(page, output)
    for warning in page.warnings:
        say("warning: " + warning)
    say(f"wrote {output} ({size:,} bytes)")


@trace_options(Takes.GPU_WORK | Takes.NVTX)
def export_command(
    trace: TraceArg,
    output: ExportOutputOpt,
    start: TimelineStartOpt = None,
    end: TimelineEndOpt = None,
    fmt: FormatOpt = Format.table,
    unit: UnitOpt = None,
    show_sql_: ShowSqlOpt = False,
    *,
    options: TraceOptions,
) -> None:
    """Write a Chrome Trace Event Format file (Perfetto, chrome://tracing): GPU streams, CPU threads
    with CUDA API calls and NVTX ranges, launch arrows; prints what it wrote per kind of event.
    With --device, --stream, --nvtx or --nvtx-like: the GPU ops in scope, the calls that launched
    them and the NVTX ranges around those calls (docs/export.md)."""
    from nsysq import __version__
    from nsysq.output.chrome_trace import EVENT_GUARD, check_output, collect, suggested_window, summary, write

    check_output(output)
    with open_trace(trace, options, prefetch="timeline") as t:
        rows = collect(t, start_ms=start, end_ms=end)
        span_ns = int(t.span["span_ns"] or 0)
        if show_sql_:
            show_sql([t])
            return
    table = summary(rows, output=str(output))
    events = int(table.footer["trace_events"])
    if events > EVENT_GUARD:
        lo, hi = suggested_window(rows, span_ns, events)
        say(
            f"warning: {events:,} trace events; viewers slow down or fail above about {EVENT_GUARD:,}. "
            f"Export a window, e.g. --from {lo:.3f} --to {hi:.3f} (ms from the trace start)."
        )
    size = write(rows, output, about={"source": trace.name, "exporter": f"nsysq {__version__}"})
    emit(table, fmt, unit, title="export")
    say(f"wrote {output} ({events:,} events, {size:,} bytes)")
