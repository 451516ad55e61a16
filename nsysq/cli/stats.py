"""``nsysq stats``: NVIDIA's ``nsys stats`` reports, number for number, without nsys.

Registered by :mod:`nsysq.cli.root`. The reports are computed by :mod:`nsysq.stats.reports`;
``--format csv`` and ``column`` are nsys's own layouts (:mod:`nsysq.stats.layout`), ``table``,
``json`` and ``markdown`` nsysq's.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from nsysq.base import json_text
from nsysq.cli.common import (
    ShowSqlOpt,
    Takes,
    TimelineEndOpt,
    TimelineStartOpt,
    TraceArg,
    TraceOptions,
    Unit,
    open_trace,
    say,
    sql_if,
    trace_options,
)

if TYPE_CHECKING:
    from nsysq.stats.model import StatsReport


class StatsFormat(StrEnum):
    column = "column"
    table = "table"
    csv = "csv"
    json = "json"
    markdown = "markdown"


_SUFFIX = {"column": ".txt", "table": ".txt", "csv": ".csv", "json": ".json", "markdown": ".md"}

ReportOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--report",
        "-r",
        metavar="NAME[,NAME...]",
        help="Reports to run, in order (NVIDIA's names or their old aliases; cuda_gpu_kern_sum takes "
        ":base or :mangled). Default: nvtx_sum, osrt_sum, cuda_api_sum, cuda_gpu_kern_sum, "
        "cuda_gpu_mem_time_sum, cuda_gpu_mem_size_sum (what nsys profile --stats=true prints). "
        "Also: nvtx_pushpop_sum, cuda_gpu_sum, cuda_gpu_trace, cuda_api_trace.",
        show_default=False,
    ),
]
StatsFormatOpt = Annotated[
    StatsFormat,
    typer.Option(
        "--format",
        "-f",
        help="column: nsys's console layout; csv: nsys's CSV (one block per report, each after its "
        "name line when there are several); table, json, markdown: nsysq's.",
    ),
]
PrefixOpt = Annotated[
    str | None,
    typer.Option(
        "--output",
        "-o",
        metavar="PREFIX",
        help="Write each report to PREFIX_<report>.csv (.txt, .json, .md by --format), as nsys stats "
        "-o does, instead of stdout.",
        show_default=False,
    ),
]
StatsUnitOpt = Annotated[
    Unit | None,
    typer.Option(
        "--time-unit",
        "-u",
        help="Unit of every time column and its header, as nsys's --timeunit [default: ns, as nsys].",
    ),
]
ForceOpt = Annotated[
    bool, typer.Option("--force-overwrite", help="With --output, replace files that already exist.")
]


@trace_options(Takes.ALL)
def stats_command(
    trace: TraceArg,
    report: ReportOpt = None,
    fmt: StatsFormatOpt = StatsFormat.column,
    unit: StatsUnitOpt = None,
    start: TimelineStartOpt = None,
    end: TimelineEndOpt = None,
    output: PrefixOpt = None,
    force_overwrite: ForceOpt = False,
    show_sql: ShowSqlOpt = False,
    *,
    options: TraceOptions,
) -> None:
    """NVIDIA's nsys stats reports, number for number: the CUDA API, kernel, memory, OS runtime and
    NVTX summaries and the GPU and API traces (docs/stats.md)."""
    from nsysq.base.errors import NoDataError
    from nsysq.stats.reports import parse_reports, stats

    parse_reports(report)  # a bad name fails before the trace opens
    if output is not None:
        _check_prefix(output, fmt)
    time_unit = unit.value if unit is not None else "ns"
    with open_trace(trace, options, prefetch="stats_kernels") as t:
        reports = stats(t, report, unit=time_unit, start_ms=start, end_ms=end)
        sql = sql_if(show_sql, t)
    if sql is not None:
        sys.stdout.write(sql)
        return
    ran = [r for r in reports if r.table is not None]
    if output is not None:
        _write_files(ran, output, fmt, force_overwrite)
    _print(reports, str(trace), fmt, time_unit, to_stdout=output is None)
    if not ran:
        raise NoDataError(
            f"{trace.name} holds none of the tables these reports read; profile with the matching "
            "nsys --trace options (cuda, nvtx, osrt) and export again."
        )


def _print(reports: list[StatsReport], trace: str, fmt: StatsFormat, unit: str, *, to_stdout: bool) -> None:
    """Each report on stdout (unless written to files) and each SKIPPED line on stderr, in the
    reports' order; the scope on stderr for csv and json (their stdout is data only)."""
    for r in reports:
        if r.skipped is not None:
            sys.stdout.flush()
            sys.stderr.write(f"SKIPPED: {trace} does not contain {r.skipped}.\n")
        elif to_stdout and fmt is not StatsFormat.json:
            sys.stdout.write(_text(r, fmt, several=len(reports) > 1))
    if to_stdout and fmt is StatsFormat.json:
        sys.stdout.write(json_text.dumps(_document(trace, reports, unit)) + "\n")
    footer = next((r.table.footer for r in reports if r.table is not None), {})
    if fmt in (StatsFormat.csv, StatsFormat.json) and {"scope", "window"} & set(footer):
        say(_scope_line(footer))


def _text(report: StatsReport, fmt: StatsFormat, *, several: bool) -> str:
    """One report as ``fmt`` prints it (not json)."""
    import io

    from nsysq.base.render import render
    from nsysq.stats.layout import column_text, csv_text

    table = report.table
    assert table is not None
    if fmt is StatsFormat.csv:
        return (f"{report.name}\n" if several else "") + csv_text(report) + ("\n" if several else "")
    if fmt is StatsFormat.column:
        scope = _scope_line(table.footer) if {"scope", "window"} & set(table.footer) else ""
        tail = f" {scope}\n" if scope else ""
        return f"\n{report.heading}\n\n{column_text(report)}{tail}\n"
    if fmt is StatsFormat.table:  # straight to stdout: at a terminal the table fits it
        render(table, fmt.value, sys.stdout, title=f"{report.name}: {report.title}")
        return ""
    out = io.StringIO()
    render(table, fmt.value, out, title=f"{report.name}: {report.title}")
    if fmt is StatsFormat.markdown:
        out.write("\n")
    return out.getvalue()


def _scope_line(footer: dict[str, Any]) -> str:
    parts = [f"scope: {footer['scope']}"] if "scope" in footer else []
    if "window" in footer:
        parts.append(f"window: {footer['window']}")
    return "; ".join(parts)


def _document(trace: str, reports: list[StatsReport], unit: str) -> dict[str, Any]:
    """The JSON of nsysq stats (docs/json.md, section stats)."""
    from nsysq.base.render import to_json

    done = [r for r in reports if r.table is not None]
    return {
        "kind": "stats",
        "trace": trace,
        "nsys_version": done[0].table.footer["nsys_version"] if done and done[0].table else None,
        "unit": unit,
        "reports": [
            {"report": r.name, "title": r.title, "headers": r.headers, **to_json(r.table)}
            for r in done
            if r.table is not None
        ],
        "skipped": [
            {
                "report": r.name,
                "missing": r.skipped,
                "message": f"SKIPPED: {trace} does not contain {r.skipped}.",
            }
            for r in reports
            if r.skipped is not None
        ],
    }


def _check_prefix(prefix: str, fmt: StatsFormat) -> None:
    from nsysq.base.output_path import check_output_path

    check_output_path(prefix + "_report" + _SUFFIX[fmt.value], (_SUFFIX[fmt.value],))


def _write_files(reports: list[StatsReport], prefix: str, fmt: StatsFormat, force: bool) -> None:
    """``PREFIX_<report>.<suffix>`` per report; refuse to replace a file unless --force-overwrite."""
    from nsysq.base.errors import UsageError

    paths = [Path(f"{prefix}_{r.name.replace(':', '_')}{_SUFFIX[fmt.value]}") for r in reports]
    existing = [p for p in paths if p.exists()]
    if existing and not force:
        raise UsageError(f"{existing[0]} exists; remove it or add --force-overwrite to replace it.")
    for report, path in zip(reports, paths, strict=True):
        if fmt is StatsFormat.json:
            text = json_text.dumps(_document("", [report], report.unit)["reports"][0]) + "\n"
        else:
            text = _text(report, fmt, several=False)
        path.write_text(text, encoding="utf-8")
        say(f"wrote {path}")
