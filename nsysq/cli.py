"""The ``nsysq`` command: a thin typer shell. Errors become one stderr sentence and an exit code here.

Heavy imports (duckdb, pandas, matplotlib) happen inside commands so ``nsysq --help`` stays fast.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from nsysq.census import DEFAULT_LIMIT
from nsysq.errors import NsysqError

if TYPE_CHECKING:
    from nsysq.table import Table
    from nsysq.trace import Trace

app = typer.Typer(
    name="nsysq",
    help="Make Nsight Systems SQLite exports answer questions: where GPU time goes, by kernel, "
    "by category, per launch, over time, and what changed between two traces.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


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
        help="Print the SQL the command runs as a script for the duckdb CLI (sqlite extension, "
        "views, helper tables, parameters as literals), instead of its result.",
    ),
]
NoCacheOpt = Annotated[
    bool,
    typer.Option("--no-cache", help="Read the trace directly; don't use or build the columnar cache."),
]


def _err(message: str) -> None:
    sys.stderr.write(f"nsysq: {message}\n")


def _unit(fmt: Format, unit: Unit | None) -> str:
    if unit is not None:
        return unit.value
    return "ms" if fmt in (Format.table, Format.markdown) else "ns"


@contextmanager
def _open(path: Path, *, no_cache: bool = False, prefetch: str | None = "census") -> Iterator[Trace]:
    """Open a trace for one command; ``prefetch``: the packaged query whose kernel columns the
    command needs first (they start decoding while DuckDB loads; see Trace)."""
    from nsysq.trace import Trace

    kwargs: dict[str, Any] = {"prefetch": prefetch}
    if no_cache:
        kwargs["cache"] = False
    trace = Trace(path, **kwargs)
    try:
        yield trace
    finally:
        trace.close()


def _show_sql(traces: list[Trace]) -> None:
    """Print, per trace, the script that reproduces the result in the duckdb CLI (nsysq.sqlscript)."""
    from nsysq import sqlscript

    sys.stdout.write("\n".join(sqlscript.script(trace) for trace in traces))


def emit(table: Table, fmt: Format, unit: Unit | None, *, title: str | None = None) -> None:
    """Render a table to stdout; notes go to stderr."""
    from nsysq.render import render

    render(table.in_unit(_unit(fmt, unit)), fmt.value, sys.stdout, title=title)
    for note in table.notes:
        _err(note)


def _run(
    path: Path,
    compute: Callable[[Trace], Table],
    fmt: Format,
    unit: Unit | None,
    show_sql: bool,
    no_cache: bool,
    title: str | None = None,
    prefetch: str = "census",
) -> None:
    with _open(path, no_cache=no_cache, prefetch=prefetch) as trace:
        table = compute(trace)
        if show_sql:
            _show_sql([trace])
            return
    emit(table, fmt, unit, title=title)


@app.command()
def info(trace: TraceArg, fmt: FormatOpt = Format.table, no_cache: NoCacheOpt = False) -> None:
    """What is in a trace: nsys version, GPUs, time span, row counts, tables, and warnings."""
    import json

    from nsysq.info import info as compute
    from nsysq.info import info_table

    with _open(trace, no_cache=no_cache) as t:
        data = compute(t)
    if fmt == Format.json:
        sys.stdout.write(json.dumps(data, indent=2, default=str, ensure_ascii=False) + "\n")
    else:
        emit(info_table(data), fmt, Unit.ns, title=f"{Path(data['path']).name}")
    for warning in data["warnings"]:
        _err("warning: " + warning)


@app.command()
def census(
    trace: TraceArg,
    limit: Annotated[
        int,
        typer.Option(
            "--limit",
            "-n",
            help="Keep the top N kernels and add one 'other' row; 0 shows every kernel.",
        ),
    ] = DEFAULT_LIMIT,
    names: NamesOpt = Names.short,
    fmt: FormatOpt = Format.table,
    unit: UnitOpt = None,
    show_sql: ShowSqlOpt = False,
    no_cache: NoCacheOpt = False,
) -> None:
    """Where GPU time goes: per kernel name, instances, total/avg/median/min/max/stddev, share."""
    from nsysq.census import census as compute

    _run(
        trace,
        lambda t: compute(t, limit=limit, names=names.value),
        fmt,
        unit,
        show_sql,
        no_cache,
        title="census",
    )


@app.command()
def lineup(
    trace: TraceArg,
    rules: RulesOpt = None,
    fmt: FormatOpt = Format.table,
    unit: UnitOpt = None,
    show_sql: ShowSqlOpt = False,
    no_cache: NoCacheOpt = False,
) -> None:
    """Kernel time by category (GEMM, attention, normalization, ...), from ordered rules."""
    from nsysq.lineup import lineup as compute

    _run(trace, lambda t: compute(t, rules=rules), fmt, unit, show_sql, no_cache, "lineup", prefetch="lineup")


@app.command()
def stakeout(
    trace: TraceArg,
    kernel: KernelArg,
    like: LikeOpt = False,
    limit: Annotated[int, typer.Option("--limit", "-n", help="Show at most N launches (0 = all).")] = 0,
    fmt: FormatOpt = Format.table,
    unit: UnitOpt = None,
    show_sql: ShowSqlOpt = False,
    no_cache: NoCacheOpt = False,
) -> None:
    """Every launch of one kernel: start, duration, grid, block, registers, shared memory."""
    from nsysq.stakeout import stakeout as compute
    from nsysq.table import Table

    def both(t: Trace) -> Table:
        launches = compute(t, kernel, like=like, limit=limit)
        summary = launches.footer["summary"]
        tables.append(
            Table(
                kind="stakeout_summary",
                columns=tuple(summary[0]),
                rows=[tuple(r.values()) for r in summary],
                queries=launches.queries[1:],
            )
        )
        return launches

    tables: list[Table] = []
    _run(trace, both, fmt, unit, show_sql, no_cache, f"stakeout {kernel}", prefetch="stakeout")
    if not show_sql and fmt in (Format.table, Format.markdown):
        sys.stdout.write("\n")
        emit(tables[0], fmt, unit, title="summary")


@app.command()
def timeline(
    trace: TraceArg,
    start: Annotated[
        float | None, typer.Option("--from", help="Window start, ms from the trace start.")
    ] = None,
    end: Annotated[float | None, typer.Option("--to", help="Window end, ms from the trace start.")] = None,
    nvtx: Annotated[bool, typer.Option("--nvtx", help="Include NVTX ranges and marks.")] = False,
    limit: Annotated[int, typer.Option("--limit", "-n", help="At most N events (0 = all).")] = 200,
    fmt: FormatOpt = Format.table,
    unit: UnitOpt = None,
    show_sql: ShowSqlOpt = False,
    no_cache: NoCacheOpt = False,
) -> None:
    """Kernels, memcpys (by copy kind), memsets and NVTX on one clock, ordered by start."""
    from nsysq.timeline import timeline as compute

    _run(
        trace,
        lambda t: compute(t, start_ms=start, end_ms=end, nvtx=nvtx, limit=limit),
        fmt,
        unit,
        show_sql,
        no_cache,
        title="timeline",
        prefetch="timeline",
    )


@app.command()
def sql(
    trace: TraceArg,
    query: Annotated[
        str,
        typer.Argument(
            help="One read-only SELECT over the canonical tables "
            "(CUPTI_ACTIVITY_KIND_KERNEL, StringIds, ...).",
            show_default=False,
        ),
    ],
    fmt: FormatOpt = Format.table,
    no_cache: NoCacheOpt = False,
) -> None:
    """Run your own read-only SQL against a trace (DuckDB dialect)."""
    with _open(trace, no_cache=no_cache, prefetch=None) as t:
        table = t.sql_table(query)
    emit(table, fmt, Unit.ns)


@app.command()
def queries(fmt: FormatOpt = Format.table) -> None:
    """List the versioned SQL files nsysq runs, with what each returns."""
    from nsysq import catalog
    from nsysq.table import Table

    rows = [
        (
            q.name,
            q.version,
            q.dialect,
            q.params and ", ".join(q.params) or "",
            q.filename,
            q.returns,
        )
        for q in catalog.all_queries().values()
    ]
    emit(
        Table(
            kind="queries",
            columns=("name", "version", "dialect", "params", "file", "returns"),
            rows=rows,
        ),
        fmt,
        Unit.ns,
    )


def main() -> None:
    """Entry point: run the app; turn NsysqError into one sentence on stderr and its exit code.

    typer (standalone mode) already reports usage errors with exit code 2.
    """
    try:
        app()
    except NsysqError as exc:
        _err(f"error: {exc}")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        _err("interrupted.")
        sys.exit(130)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(1)


if __name__ == "__main__":
    # ``python -m nsysq.cli`` runs this file as __main__; the command modules register on the
    # importable ``nsysq.cli.app``, so run that one.
    from nsysq.cli import main as _main

    _main()

# Commands kept in their own modules register themselves on ``app`` when imported.
from nsysq import cli_cache, cli_diff, cli_plot  # noqa: E402, F401

if __name__ == "__main__":
    # ``python -m nsysq.cli`` runs this file as __main__; the command modules register on the
    # importable ``nsysq.cli.app``, so run that one.
    from nsysq.cli import main as _main

    _main()
