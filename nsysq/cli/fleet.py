"""``nsysq fleet [traces|census|lineup|collectives] TRACES...``: many traces, one answer (see docs/fleet.md).

``nsysq fleet TRACES...`` is short for ``nsysq fleet traces TRACES...`` (the per-trace table and the
stragglers). The library does the work (:func:`nsysq.fleet_analysis.fleet`); this module parses options,
prints the tables and sets the exit code. The sub-app ``fleet_app`` is added by :mod:`nsysq.cli.root`.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer
from typer.core import TyperGroup

from nsysq.analyses.census import DEFAULT_LIMIT
from nsysq.base.errors import UsageError
from nsysq.cli.common import (
    FAIL_EXIT_CODE,
    CensusLimitOpt,
    Format,
    FormatOpt,
    MinTimeOpt,
    Names,
    NamesOpt,
    NoCacheOpt,
    NsysOpt,
    RulesOpt,
    ShowSqlOpt,
    ThresholdOpt,
    Unit,
    UnitOpt,
    emit,
    say,
    unit_for,
)
from nsysq.diffing.params import DEFAULT_MIN_TIME_MS, DEFAULT_THRESHOLD

if TYPE_CHECKING:
    from nsysq.base.table import Table
    from nsysq.export.reader import CacheMode
    from nsysq.fleet_analysis import FleetResult

DEFAULT_COMMAND = "traces"
TITLES = {"traces": "traces", "stragglers": "stragglers"}


class FleetGroup(TyperGroup):
    """A group whose first argument, when it names no subcommand, is a trace: it runs ``traces``."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = [DEFAULT_COMMAND, *args]
        parsed: list[str] = super().parse_args(ctx, args)
        return parsed


fleet_app = typer.Typer(
    name="fleet",
    cls=FleetGroup,
    help="Many traces (one per rank or run), one answer: per-trace table and stragglers "
    "(nsysq fleet TRACES... = nsysq fleet traces TRACES...), merged census, merged lineup, NCCL "
    "collectives matched across ranks.",
    no_args_is_help=True,
)


class EngineName(StrEnum):
    local = "local"
    ray = "ray"


TracesArg = Annotated[
    list[Path],
    typer.Argument(
        help="nsys SQLite exports or .nsys-rep reports: paths, quoted globs ('ranks/*.sqlite') or "
        "directories (every *.sqlite under them, and every *.nsys-rep without a .sqlite of its name).",
        show_default=False,
    ),
]
EngineOpt = Annotated[
    EngineName,
    typer.Option(
        "--engine", help="local: worker processes on this machine; ray: Ray tasks (pip install 'nsysq[ray]')."
    ),
]
AddressOpt = Annotated[
    str | None,
    typer.Option(
        "--address",
        help="Ray cluster to use with --engine ray: auto (the running cluster), ray://HOST:10001, "
        "or HOST:6379 [default: start a local Ray instance].",
    ),
]
WorkersOpt = Annotated[
    int | None,
    typer.Option(
        "--workers",
        help="Traces read at once by --engine local [default: one per core, fewer when the traces "
        "would not fit in half the available memory].",
    ),
]
FailOnOpt = Annotated[
    str,
    typer.Option(
        "--fail-on",
        help="Exit with code 3 when any of these happened (comma-separated): failed (a trace could "
        "not be read), straggler (a trace is out of line), none.",
    ),
]
BuildCacheOpt = Annotated[
    bool,
    typer.Option(
        "--build-cache",
        help="Build each trace's columnar copy while reading it (later fleet questions read only "
        "the copies) [default: use copies that exist, build none].",
    ),
]


def _fail_on(text: str) -> tuple[str, ...]:
    from nsysq.fleet_analysis import FAIL_ON

    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = [k for k in kinds if k not in (*FAIL_ON, "none")]
    if unknown:
        raise UsageError(f"--fail-on takes {', '.join((*FAIL_ON, 'none'))}, not {', '.join(unknown)}.")
    return tuple(k for k in kinds if k != "none")


def _cache(no_cache: bool, build_cache: bool) -> bool | str:
    if no_cache and build_cache:
        raise UsageError("--no-cache and --build-cache contradict each other; give one.")
    return False if no_cache else "build" if build_cache else "reuse"


def _text(path: Path | None) -> str | None:
    """``--nsys`` as given: the worker that opens a report finds it (a relative path from its cwd)."""
    return None if path is None else str(path)


def _ask(
    traces: list[Path], engine: EngineName, address: str | None, workers: int | None, **kw: Any
) -> FleetResult:
    from nsysq.fleet_analysis import fleet

    return fleet([str(t) for t in traces], engine=engine.value, address=address, workers=workers, **kw)


def _show_sql(traces: list[Path], **job: Any) -> None:
    """``--show-sql``: the per-trace SQL, as it runs on the first trace that answers."""
    from nsysq.base.errors import NsysqError
    from nsysq.cli.common import show_sql
    from nsysq.fleet_analysis import Job, TraceReport, expand
    from nsysq.fleet_analysis.partial import answer
    from nsysq.trace import Trace

    last: NsysqError | None = None
    for path in expand([str(t) for t in traces]):
        try:
            opts = {"cache": job.get("cache", "reuse"), "nsys": job.get("nsys")}
            with Trace(path, prefetch="fleet_kernel_buckets", **opts) as trace:
                answer(trace.session, Job(**job), TraceReport(path=path))
                show_sql([trace.session])
                return
        except NsysqError as exc:
            last = exc
    assert last is not None
    raise last


def _emit_merged(
    result: FleetResult,
    table: Table | None,
    title: str,
    fmt: Format,
    unit: Unit | None,
    kinds: tuple[str, ...],
) -> None:
    """A merged table (``fleet census`` / ``fleet lineup``), then the failures and the exit code."""
    assert table is not None
    emit(table, fmt, unit, title=title)
    _finish(result, kinds)


def _finish(result: FleetResult, fail_on: tuple[str, ...]) -> None:
    for path, reason in result.failed:
        say(f"failed: {reason}" if path in reason else f"failed: {path}: {reason}")
    happened = result.fails_on(fail_on)
    if happened:
        say(f"exit code {FAIL_EXIT_CODE}: --fail-on {','.join(happened)}.")
        raise typer.Exit(FAIL_EXIT_CODE)


@fleet_app.command("traces")
def traces_command(
    traces: TracesArg,
    engine: EngineOpt = EngineName.local,
    address: AddressOpt = None,
    workers: WorkersOpt = None,
    idle: Annotated[
        bool,
        typer.Option(
            "--idle/--no-idle", help="Measure busy and idle GPU time per trace (nsysq gaps; slower)."
        ),
    ] = True,
    rules: RulesOpt = None,
    threshold: ThresholdOpt = DEFAULT_THRESHOLD,
    min_time: MinTimeOpt = DEFAULT_MIN_TIME_MS,
    fail_on: FailOnOpt = "failed",
    fmt: FormatOpt = Format.table,
    unit: UnitOpt = None,
    show_sql: ShowSqlOpt = False,
    no_cache: NoCacheOpt = False,
    build_cache: BuildCacheOpt = False,
    nsys: NsysOpt = None,
) -> None:
    """One row per trace (status ok/failed with the reason, GPU, nsys version, kernels, kernel time,
    GPU span, busy/idle) and the stragglers: traces whose kernel time, time in one category or idle
    time is out of line with the rest (diff's robust method), each with a verdict naming the category."""
    from nsysq.base.sections import render_sections

    kinds = _fail_on(fail_on)
    cache = _cache(no_cache, build_cache)
    rules_arg = str(rules) if rules else None
    if show_sql:
        return _show_sql(traces, census=False, idle=idle, rules=rules_arg, cache=cache, nsys=_text(nsys))
    result = _ask(
        traces, engine, address, workers, census=False, idle=idle, rules=rules_arg, cache=cache,
        threshold=threshold, min_time_ms=min_time, nsys=_text(nsys),
    )  # fmt: skip
    time_unit = unit_for(fmt, unit)
    tables = {
        "traces": result.traces_table.in_unit(time_unit),
        "stragglers": result.stragglers_table.in_unit(time_unit),
    }
    render_sections("fleet", tables, TITLES, fmt.value, sys.stdout)
    _finish(result, kinds)


@fleet_app.command("census")
def census_command(
    traces: TracesArg,
    engine: EngineOpt = EngineName.local,
    address: AddressOpt = None,
    workers: WorkersOpt = None,
    limit: CensusLimitOpt = DEFAULT_LIMIT,
    names: NamesOpt = Names.short,
    fail_on: FailOnOpt = "failed",
    fmt: FormatOpt = Format.table,
    unit: UnitOpt = None,
    show_sql: ShowSqlOpt = False,
    no_cache: NoCacheOpt = False,
    build_cache: BuildCacheOpt = False,
    nsys: NsysOpt = None,
) -> None:
    """The census merged over every trace: per kernel name, instances, total/avg/min/max exact,
    stddev from exact integer sums, median from merged histograms (relative error <= 0.5 %)."""
    kinds = _fail_on(fail_on)
    job = {"lineup": False, "span": False, "names": names.value, "cache": _cache(no_cache, build_cache),
           "nsys": _text(nsys), "identity": False}  # fmt: skip
    if show_sql:
        return _show_sql(traces, **job)
    result = _ask(traces, engine, address, workers, limit=limit, **job)
    _emit_merged(result, result.census_table, "fleet census", fmt, unit, kinds)


@fleet_app.command("lineup")
def lineup_command(
    traces: TracesArg,
    engine: EngineOpt = EngineName.local,
    address: AddressOpt = None,
    workers: WorkersOpt = None,
    rules: RulesOpt = None,
    fail_on: FailOnOpt = "failed",
    fmt: FormatOpt = Format.table,
    unit: UnitOpt = None,
    show_sql: ShowSqlOpt = False,
    no_cache: NoCacheOpt = False,
    build_cache: BuildCacheOpt = False,
    nsys: NsysOpt = None,
) -> None:
    """The lineup merged over every trace: kernel time by category, exact counts and sums."""
    kinds = _fail_on(fail_on)
    rules_arg = str(rules) if rules else None
    job = {"census": False, "span": False, "rules": rules_arg, "cache": _cache(no_cache, build_cache),
           "nsys": _text(nsys), "identity": False}  # fmt: skip
    if show_sql:
        return _show_sql(traces, **job)
    result = _ask(traces, engine, address, workers, **job)
    _emit_merged(result, result.lineup_table, "fleet lineup", fmt, unit, kinds)


CollectivesLimitOpt = Annotated[
    int,
    typer.Option(
        "--limit",
        "-n",
        help="Keep the N collectives with the most wait (still in time order); 0 shows every collective.",
    ),
]
CollectivesFailOnOpt = Annotated[
    str,
    typer.Option(
        "--fail-on",
        help="Exit with code 3 when any of these happened (comma-separated): failed (a trace could "
        "not be read), none.",
    ),
]
COLLECTIVE_TITLES = {"collectives": "collectives", "ranks": "ranks"}


@fleet_app.command("collectives")
def collectives_command(
    traces: TracesArg,
    engine: EngineOpt = EngineName.local,
    address: AddressOpt = None,
    workers: WorkersOpt = None,
    rules: RulesOpt = None,
    limit: CollectivesLimitOpt = 0,
    fail_on: CollectivesFailOnOpt = "failed",
    fmt: FormatOpt = Format.table,
    unit: UnitOpt = None,
    show_sql: ShowSqlOpt = False,
    no_cache: NoCacheOpt = False,
    build_cache: BuildCacheOpt = False,
) -> None:
    """NCCL collectives matched across ranks (one export per rank, or one export holding several
    processes or devices, each a rank), aligned on one clock (utcEpochNs): per collective the skew,
    the wait it caused and the rank that arrived last; per rank the wait it caused and waited; the
    verdict names the rank that makes the others wait and the phase that grew before (docs/fleet.md)."""
    from nsysq.base import json_text
    from nsysq.base.sections import render_sections
    from nsysq.fleet_analysis import collectives

    kinds = tuple(k for k in _fail_on(fail_on) if k != "straggler")
    if "straggler" in _fail_on(fail_on):
        raise UsageError("--fail-on takes failed or none for fleet collectives.")
    cache = cast("CacheMode", _cache(no_cache, build_cache))
    rules_arg = str(rules) if rules else None
    if show_sql:
        return _collectives_sql(traces, rules_arg, cache)
    result = collectives(
        [str(t) for t in traces], engine=engine.value, address=address, workers=workers, rules=rules_arg,
        cache=cache, limit=limit,
    )  # fmt: skip
    time_unit = unit_for(fmt, unit)
    if fmt == Format.json:
        sys.stdout.write(json_text.dumps(result.document(time_unit)) + "\n")
    else:
        tables = {
            "collectives": result.collectives_table.in_unit(time_unit),
            "ranks": result.ranks_table.in_unit(time_unit),
        }
        render_sections("fleet_collectives", tables, COLLECTIVE_TITLES, fmt.value, sys.stdout, optional=())
    for note in result.collectives_table.notes:
        say(note)
    if "failed" in kinds and result.failed:
        say(f"exit code {FAIL_EXIT_CODE}: --fail-on failed.")
        raise typer.Exit(FAIL_EXIT_CODE)


def _collectives_sql(traces: list[Path], rules: str | None, cache: CacheMode) -> None:
    """``--show-sql``: the per-trace SQL, as it runs on the first trace that answers."""
    from nsysq.base.errors import NsysqError
    from nsysq.cli.common import show_sql
    from nsysq.fleet_analysis import expand
    from nsysq.fleet_analysis.collective_partial import CollectiveJob, CollectiveReport, answer
    from nsysq.trace import Trace

    last: NsysqError | None = None
    for path in expand([str(t) for t in traces]):
        try:
            with Trace(path, cache=cache, prefetch="fleet_collective_kernels") as trace:
                answer(trace.session, CollectiveJob(rules=rules, cache=cache), CollectiveReport(path=path))
                show_sql([trace.session])
                return
        except NsysqError as exc:
            last = exc
    assert last is not None
    raise last
