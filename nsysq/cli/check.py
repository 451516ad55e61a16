"""``nsysq check TRACE``: nsys analyze's expert rules and nsysq's own (:mod:`nsysq.stats.rules`);
this module parses the options, prints the rules and findings tables and sets the exit code of
``--fail-on``. Registered by :mod:`nsysq.cli.root`."""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated, Any

import typer

from nsysq.cli.common import (
    FAIL_EXIT_CODE,
    DangerRulesOpt,
    Format,
    FormatOpt,
    ShowSqlOpt,
    TimelineEndOpt,
    TimelineStartOpt,
    TraceArg,
    TraceOptions,
    UnitOpt,
    open_trace,
    say,
    show_sql,
    trace_options,
    unit_for,
)

TITLES = {"rules": "rules", "findings": "findings (the longest --rows of each rule)"}
PREFETCH = ("check_underfilled", "check_danger", "check_copies")
"""The queries whose columns a check starts decoding at once, kernels first (the launch grids, the
kernel names, the copies with their calls; the GPU ops' times, devices and processes among them):
one pass over each table's pages for every rule, the GPU ops' lanes gathered while the CUDA API
calls decode."""


class CheckSection(StrEnum):
    rules = "rules"
    findings = "findings"


def _opt(flag: str, text: str) -> Any:
    """A typer option ``flag`` with its help ``text``."""
    return typer.Option(flag, help=text)


@trace_options()
def check_command(
    trace: TraceArg,
    rule: Annotated[
        str | None,
        typer.Option(
            "--rule",
            "-r",
            metavar="NAME[,NAME...]",
            help="Run only these rules: cuda_memcpy_async, cuda_memcpy_sync, cuda_memset_sync, "
            "cuda_api_sync, gpu_gaps, gpu_time_util (nsys analyze's), underfilled, launch_bound, "
            "danger (nsysq's) [default: all].",
            show_default=False,
        ),
    ] = None,
    rows: Annotated[int, _opt("--rows", "Findings shown per rule, longest first (0 or -1: all).")] = 50,
    gap: Annotated[float, _opt("--gap", "gpu_gaps: report idle gaps longer than this, in ms.")] = 500.0,
    threshold: Annotated[
        float, _opt("--threshold", "gpu_time_util: report chunks under this utilization, in %.")
    ] = 50.0,
    chunks: Annotated[int, _opt("--chunks", "gpu_time_util: chunks per process and device span.")] = 30,
    fill: Annotated[
        float, _opt("--fill", "underfilled: a launch is under-filled below this share of the SMs, in %.")
    ] = 50.0,
    min_share: Annotated[
        float, _opt("--min-share", "underfilled: report launch groups from this share of kernel time, in %.")
    ] = 1.0,
    launch_bound: Annotated[
        float,
        _opt(
            "--launch-bound",
            "launch_bound: report devices from this share of their span idle while launching, in %.",
        ),
    ] = 10.0,
    danger_share: Annotated[
        float, _opt("--danger-share", "danger: report kernels from this share of kernel time, in % (0: any).")
    ] = 0.0,
    danger_rules: DangerRulesOpt = None,
    start: TimelineStartOpt = None,
    end: TimelineEndOpt = None,
    fail_on: Annotated[
        str | None,
        typer.Option(
            "--fail-on",
            metavar="RULE[,RULE...]|any",
            help="Exit with code 3 when one of these rules finds something (any: every rule run).",
            show_default=False,
        ),
    ] = None,
    section: Annotated[
        CheckSection | None,
        typer.Option("--section", help="Print only this table (csv prints rules unless told)."),
    ] = None,
    fmt: FormatOpt = Format.table,
    unit: UnitOpt = None,
    show_sql_: ShowSqlOpt = False,
    *,
    options: TraceOptions,
) -> None:
    """Expert rules, as nsys analyze's and nsysq's own: what each finds, how much time it costs and
    what to change (docs/stats.md)."""
    from nsysq.base.errors import UsageError
    from nsysq.base.sections import render_sections
    from nsysq.stats.rules import CheckOptions, check, parse_rules

    chosen = parse_rules(rule)
    named = [] if fail_on is None else [n.strip() for n in fail_on.split(",")]
    failing = parse_rules(fail_on, allow_any=True) if fail_on else []
    left_out = [] if "any" in named else [name for name in failing if name not in chosen]
    if left_out:
        raise UsageError(
            f"--fail-on names {left_out[0]}, which --rule leaves out; add it to --rule or drop it."
        )
    opts = CheckOptions(
        rows=rows, gap_ms=gap, threshold_pct=threshold, chunks=chunks, fill_pct=fill, min_share_pct=min_share,
        launch_bound_pct=launch_bound, danger_min_share_pct=danger_share, danger_rules=danger_rules,
        from_ms=start, to_ms=end,
    )  # fmt: skip
    with open_trace(trace, options, prefetch=PREFETCH) as t:
        result = check(t, rules=chosen, options=opts)
        if show_sql_:
            show_sql([t])
            return
    tables = result.in_unit(unit_for(fmt, unit)).tables()
    shown = None if section is None else section.value
    render_sections("check", tables, TITLES, fmt.value, sys.stdout, section=shown, optional=("findings",))
    for note in result.rules.notes:
        say(note)
    hits = [name for name in result.found() if name in failing]
    if hits:
        say(f"--fail-on: rule(s) {', '.join(hits)} found something; exiting with code {FAIL_EXIT_CODE}.")
        raise typer.Exit(FAIL_EXIT_CODE)
