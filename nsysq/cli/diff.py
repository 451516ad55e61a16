"""``nsysq diff A B``: compare two traces. The rendering is the library's
(:func:`nsysq.diffing.report.render_diff`); this module parses options and sets the exit code.

Registered by :mod:`nsysq.cli.root`.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated

import typer

from nsysq.cli.common import (
    FAIL_EXIT_CODE,
    DangerRulesOpt,
    Format,
    FormatOpt,
    MinTimeOpt,
    RulesOpt,
    ThresholdOpt,
    TraceAArg,
    TraceBArg,
    TraceOptions,
    UnitOpt,
    diff_traces,
    say,
    trace_options,
    unit_for,
)
from nsysq.diffing.params import DEFAULT_MIN_TIME_MS, DEFAULT_THRESHOLD
from nsysq.diffing.report import DEFAULT_KERNEL_ROWS


class Section(StrEnum):
    """``--section``: the evidence board or one section (nsysq.diffing.report.SECTION_TITLES)."""

    board = "board"
    totals = "totals"
    categories = "categories"
    kernels = "kernels"
    variants = "variants"
    launch_config = "launch_config"
    danger = "danger"
    copies = "copies"


@trace_options()
def diff_command(
    a: TraceAArg,
    b: TraceBArg,
    fmt: FormatOpt = Format.table,
    unit: UnitOpt = None,
    min_time: MinTimeOpt = DEFAULT_MIN_TIME_MS,
    threshold: ThresholdOpt = DEFAULT_THRESHOLD,
    rules: RulesOpt = None,
    danger_rules: DangerRulesOpt = None,
    limit: Annotated[
        int, typer.Option("--limit", "-n", help="Kernel rows to show (outliers first); 0 = all.")
    ] = DEFAULT_KERNEL_ROWS,
    fail_on: Annotated[
        str | None,
        typer.Option(
            "--fail-on",
            help="Exit with code 3 when a finding of these kinds exists: a comma list of overall, outlier, "
            "danger, new_variants (new), removed_variants (removed), variants, copy_change (copy), "
            "launch_config (launch), idle_change (idle), exposed_comm (comm), per_call, any.",
        ),
    ] = None,
    section: Annotated[
        Section | None,
        typer.Option(
            "--section",
            help="Print only this section (csv prints the kernels section unless told otherwise).",
        ),
    ] = None,
    *,
    options: TraceOptions,
) -> None:
    """Compare two traces: totals, categories, kernels, variants, copies, and which change is out of line."""
    from nsysq.diffing import parse_fail_on
    from nsysq.diffing.report import check_options, render_diff

    kinds = parse_fail_on(fail_on) if fail_on else ()
    section_name = section.value if section else None
    check_options(section_name, limit)
    result = diff_traces(
        a, b, options, rules=rules, danger_rules=danger_rules, min_time_ms=min_time, threshold=threshold
    )
    render_diff(result, fmt.value, sys.stdout, unit=unit_for(fmt, unit), section=section_name, limit=limit)
    hits = result.fails_on(kinds) if kinds else []
    if hits:
        found = ", ".join(sorted({h.kind for h in hits}))
        say(f"--fail-on: {len(hits)} finding(s) of kind {found}; exiting with code {FAIL_EXIT_CODE}.")
        raise typer.Exit(FAIL_EXIT_CODE)
