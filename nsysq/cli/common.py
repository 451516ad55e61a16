"""What every command module shares: the option types, opening a trace, writing a result.

Nothing here imports a command module or the root (:mod:`nsysq.cli.root`). Heavy modules (duckdb,
pandas, rich) load inside the helpers, so importing this module stays as cheap as typer itself.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from nsysq.base.table import Table
    from nsysq.diffing import DiffResult
    from nsysq.session import Session
    from nsysq.session.scope import NvtxSelection, Scope

__all__ = [
    "Format",
    "Names",
    "NvtxMode",
    "Unit",
    "diff_traces",
    "emit",
    "open_trace",
    "run_table",
    "save_picture",
    "say",
    "nvtx_of",
    "scope_of",
    "show_sql",
    "unit_for",
]


class Format(StrEnum):
    table = "table"
    csv = "csv"
    json = "json"
    markdown = "markdown"


class Unit(StrEnum):
    ns = "ns"
    us = "us"
    ms = "ms"
    s = "s"


class NvtxMode(StrEnum):
    launch = "launch"
    innermost = "innermost"
    window = "window"


class Names(StrEnum):
    short = "short"
    demangled = "demangled"


TraceArg = Annotated[
    Path,
    typer.Argument(help="An nsys SQLite export (nsys export --type=sqlite).", show_default=False),
]
KernelArg = Annotated[
    str,
    typer.Argument(
        help="Kernel short or demangled name (exact), or a LIKE pattern with --like.", show_default=False
    ),
]
LikeOpt = Annotated[
    bool,
    typer.Option(
        "--like", help="Treat KERNEL as a case-insensitive SQL LIKE pattern (% any run, _ any char)."
    ),
]
NamesOpt = Annotated[Names, typer.Option(help="Group by the short kernel name or the full demangled name.")]
CensusLimitOpt = Annotated[
    int,
    typer.Option(
        "--limit", "-n", help="Keep the top N kernels and add one 'other' row; 0 shows every kernel."
    ),
]
TraceAArg = Annotated[
    Path, typer.Argument(help="Trace A, the baseline (nsys SQLite export).", show_default=False)
]
TraceBArg = Annotated[Path, typer.Argument(help="Trace B, the changed run.", show_default=False)]
RulesOpt = Annotated[
    Path | None, typer.Option("--rules", help="Your own lineup rules file (TOML); see docs/rules.md.")
]
DangerRulesOpt = Annotated[
    Path | None, typer.Option("--danger-rules", help="Your own danger rules (TOML); see docs/rules.md.")
]
MinTimeOpt = Annotated[
    float,
    typer.Option(
        "--min-time",
        help="Noise floor in ms: rows below it on both sides are never outliers and do not "
        "set the typical change.",
    ),
]
ThresholdOpt = Annotated[
    float,
    typer.Option(
        "--threshold", help="Outlier cut-off in robust spreads from the typical change (see docs/diff.md)."
    ),
]
FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]
UnitOpt = Annotated[
    Unit | None,
    typer.Option(
        "--time-unit",
        "-u",
        help="Unit of every time column [default: ms for table/markdown, ns for csv/json].",
    ),
]
ShowSqlOpt = Annotated[
    bool,
    typer.Option(
        "--show-sql",
        help="Print the SQL the command runs as a script for the duckdb CLI (sqlite extension, views, "
        "helper tables, parameters as literals), instead of its result.",
    ),
]
NoCacheOpt = Annotated[
    bool,
    typer.Option("--no-cache", help="Read the trace directly; don't use or build the columnar cache."),
]
DeviceOpt = Annotated[
    int | None,
    typer.Option(
        "--device",
        help="Only GPU work on this CUDA device (deviceId; nsysq info lists them).",
        show_default=False,
    ),
]
StreamOpt = Annotated[
    int | None,
    typer.Option(
        "--stream",
        help="Only GPU work on this stream (streamId, numbered per process: add --pid when several).",
        show_default=False,
    ),
]
PidOpt = Annotated[
    int | None,
    typer.Option(
        "--pid",
        help="Only the GPU work, CUDA calls and NVTX ranges of this process (nsysq info lists them).",
        show_default=False,
    ),
]
NvtxOpt = Annotated[
    str | None,
    typer.Option(
        "--nvtx",
        metavar="NAME[@DOMAIN][/INDEX]",
        help="Only the GPU work attributed to NVTX ranges of this exact name (by default launched "
        "inside them, every enclosing range counting: see --nvtx-mode; @DOMAIN one domain, '@' the "
        "default one; /INDEX the INDEX-th instance, from 0). See docs/nvtx.md.",
        show_default=False,
    ),
]
NvtxLikeOpt = Annotated[
    str | None,
    typer.Option(
        "--nvtx-like",
        metavar="PATTERN[@DOMAIN][/INDEX]",
        help="As --nvtx, with a case-insensitive LIKE pattern for the range name (% any run, _ any char).",
        show_default=False,
    ),
]
NvtxModeOpt = Annotated[
    NvtxMode,
    typer.Option(
        "--nvtx-mode",
        help="How --nvtx/--nvtx-like give GPU work to the ranges, as nsysq nvtx does: launch (every "
        "range enclosing the launching call), innermost (only the deepest range of each domain, "
        "nvtx --innermost), window (every op whose GPU interval lies inside the range, launched from "
        "any thread, nvtx --window).",
    ),
]
NvtxLanesOpt = Annotated[
    bool,
    typer.Option(
        "--nvtx-lanes/--no-nvtx-lanes",
        help="Include the NVTX ranges and marks of the window (host events, not GPU work).",
    ),
]
TimelineStartOpt = Annotated[
    float | None, typer.Option("--from", help="Window start, ms from the trace start.")
]
TimelineEndOpt = Annotated[float | None, typer.Option("--to", help="Window end, ms from the trace start.")]

# The options of every command that draws a picture (nsysq plot ..., nsysq gaps/overlap/nvtx plots).
DEFAULT_DPI = 150
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


def say(message: str) -> None:
    """One line on stderr, prefixed ``nsysq:`` (stdout carries data only)."""
    sys.stderr.write(f"nsysq: {message}\n")


def unit_for(fmt: Format, unit: Unit | None) -> str:
    """The time unit asked for, else ms for people (table, markdown) and ns for programs."""
    if unit is not None:
        return unit.value
    return "ms" if fmt in (Format.table, Format.markdown) else "ns"


def scope_of(device: int | None = None, stream: int | None = None, pid: int | None = None) -> Scope:
    """The scope ``--device``, ``--stream`` and ``--pid`` ask for (nsysq.session.scope)."""
    from nsysq.session.scope import Scope

    return Scope(device=device, stream=stream, pid=pid)


def nvtx_of(
    name: str | None = None, like: str | None = None, mode: NvtxMode = NvtxMode.launch
) -> NvtxSelection | None:
    """The NVTX scope ``--nvtx`` / ``--nvtx-like`` and ``--nvtx-mode`` ask for (None: no scope)."""
    from nsysq.base.errors import UsageError
    from nsysq.session.scope import NvtxSelection

    if name is not None and like is not None:
        raise UsageError("give --nvtx NAME or --nvtx-like PATTERN, not both.")
    if name is None and like is None:
        if mode != NvtxMode.launch:
            raise UsageError(f"--nvtx-mode {mode.value} needs --nvtx NAME or --nvtx-like PATTERN.")
        return None
    if like is not None:
        return NvtxSelection(like, like=True, mode=mode.value)
    return NvtxSelection(str(name), like=False, mode=mode.value)


@contextmanager
def open_trace(
    path: Path,
    *,
    no_cache: bool = False,
    prefetch: str | tuple[str, ...] | None = "census",
    scope: Scope | None = None,
    nvtx: NvtxSelection | None = None,
) -> Iterator[Session]:
    """Open a trace for one command (``nsysq.open``) and give its session to the analyses;
    ``prefetch``: the packaged query whose kernel columns the command needs first (they start
    decoding while DuckDB loads). ``scope``: the GPU work every query reads (nsysq.session.scope);
    ``nvtx``: what ``--nvtx``/``--nvtx-like``/``--nvtx-mode`` ask for, part of that scope."""
    from nsysq.trace import Trace

    with Trace(path, scope=scope, nvtx=nvtx, cache=not no_cache, prefetch=prefetch) as trace:
        yield trace.session


def diff_traces(
    a: Path,
    b: Path,
    *,
    scope: Scope,
    nvtx: NvtxSelection | None,
    no_cache: bool,
    rules: Path | None,
    danger_rules: Path | None,
    min_time_ms: float,
    threshold: float,
) -> DiffResult:
    """Compare trace ``b`` with ``a``, both in one scope (:func:`nsysq.diffing.diff`), and say the
    comparison's warnings on stderr."""
    from nsysq.diffing import diff

    result = diff(
        a, b, rules=rules, danger_rules=danger_rules, min_time_ms=min_time_ms, threshold=threshold,
        scope=scope, nvtx=nvtx, cache=not no_cache,
    )  # fmt: skip
    for warning in result.warnings:
        say("warning: " + warning)
    return result


def show_sql(traces: list[Session]) -> None:
    """``--show-sql``: print what each trace ran, instead of the result."""
    sys.stdout.write("\n".join(trace.script() for trace in traces))


def emit(table: Table, fmt: Format, unit: Unit | None, *, title: str | None = None) -> None:
    """Render a table to stdout; its notes go to stderr."""
    from nsysq.base.render import render

    render(table.in_unit(unit_for(fmt, unit)), fmt.value, sys.stdout, title=title)
    for note in table.notes:
        say(note)


def run_table(
    path: Path,
    compute: Callable[[Session], Table],
    fmt: Format,
    unit: Unit | None,
    *,
    sql: bool,
    no_cache: bool,
    title: str | None = None,
    prefetch: str = "census",
    scope: Scope | None = None,
    nvtx: NvtxSelection | None = None,
) -> Table | None:
    """Open ``path``, compute one table and print it (or, with ``sql``, the SQL that made it).

    Returns the table that was printed, None when the SQL was printed instead."""
    with open_trace(path, no_cache=no_cache, prefetch=prefetch, scope=scope, nvtx=nvtx) as trace:
        table = compute(trace)
        if sql:
            show_sql([trace])
            return None
    emit(table, fmt, unit, title=title)
    return table


def save_picture(ax: Axes, output: Path, dpi: int, title: str | None) -> None:
    """Write a plot's figure to ``output`` (:func:`nsysq.plot.write_picture`) and say where."""
    from nsysq.plot import write_picture

    write_picture(ax, output, dpi=dpi, title=title)
    say(f"wrote {output}")
