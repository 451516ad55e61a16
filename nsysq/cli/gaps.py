"""``nsysq gaps`` (why the GPU waited) and ``nsysq overlap`` (is communication hidden behind compute).

Each parses its options, calls the library function of the same name (:mod:`nsysq.gaps`,
:mod:`nsysq.overlap`) and prints its sections through :func:`nsysq.sections.render_sections`.
Registered by :mod:`nsysq.cli.root`.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated

import typer

from nsysq.cli.common import (
    Format,
    FormatOpt,
    NoCacheOpt,
    RulesOpt,
    ShowSqlOpt,
    TraceArg,
    UnitOpt,
    open_trace,
    say,
    show_sql,
    unit_for,
)
from nsysq.errors import UsageError

MS = 1_000_000
GAPS_TITLES = {
    "devices": "GPU busy and idle per device",
    "streams": "busy per stream",
    "gaps": "longest idle gaps",
}
OVERLAP_TITLES = {
    "devices": "communication and memcpy overlap with compute, per device",
    "collectives": "communication per collective kind",
}


class GapsSection(StrEnum):
    devices = "devices"
    streams = "streams"
    gaps = "gaps"


class OverlapSection(StrEnum):
    devices = "devices"
    collectives = "collectives"


def gaps_command(
    trace: TraceArg,
    top: Annotated[int, typer.Option("--top", "-n", help="List the N longest idle gaps (0 = none).")] = 10,
    min_gap: Annotated[
        float, typer.Option("--min-gap", help="List only gaps at least this long, in ms.")
    ] = 0.0,
    section: Annotated[
        GapsSection | None,
        typer.Option("--section", help="Print only this section (csv prints devices unless told otherwise)."),
    ] = None,
    fmt: FormatOpt = Format.table,
    unit: UnitOpt = None,
    show_sql_: ShowSqlOpt = False,
    no_cache: NoCacheOpt = False,
) -> None:
    """Why the GPU waited: busy and idle time per device and stream, the longest idle gaps, and
    idle time by cause (host waiting on the GPU, launch-bound, host busy elsewhere, unknown)."""
    from nsysq.gaps import CAUSES, gaps
    from nsysq.sections import render_sections

    if min_gap < 0:
        raise UsageError("--min-gap must be 0 or more (ms).")
    with open_trace(trace, no_cache=no_cache, prefetch="gaps") as t:
        result = gaps(t, top=top, min_gap_ns=round(min_gap * MS))
        if show_sql_:
            show_sql([t])
            return
    tables = result.in_unit(unit_for(fmt, unit)).tables()
    render_sections("gaps", tables, GAPS_TITLES, fmt.value, sys.stdout, section=_value(section))
    for note in result.devices.notes:
        say(note)
    if fmt in (Format.table, Format.markdown) and section in (None, GapsSection.gaps):
        say("causes: " + "; ".join(f"{code} = {text}" for code, text in CAUSES.items()) + " (docs/gaps.md).")


def overlap_command(
    trace: TraceArg,
    rules: RulesOpt = None,
    section: Annotated[
        OverlapSection | None,
        typer.Option("--section", help="Print only this section (csv prints devices unless told otherwise)."),
    ] = None,
    fmt: FormatOpt = Format.table,
    unit: UnitOpt = None,
    show_sql_: ShowSqlOpt = False,
    no_cache: NoCacheOpt = False,
) -> None:
    """Is communication hidden behind compute: per device, NCCL/communication kernel time that ran
    while compute kernels ran (overlap) or alone (exposed), per collective kind, and memcpy overlap."""
    from nsysq.overlap import overlap
    from nsysq.sections import render_sections

    with open_trace(trace, no_cache=no_cache, prefetch="overlap") as t:
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
