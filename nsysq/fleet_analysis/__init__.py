"""Many traces, one answer: per-trace tables, merged census and lineup, and stragglers.

``nsysq.fleet(paths, engine="local")`` maps one pure per-trace function
(:func:`nsysq.fleet_analysis.partial.read_trace`) over the inputs with an engine
(:mod:`nsysq.fleet_analysis.engines`: local worker processes, or Ray tasks), folds the small reports on the
driver as they arrive (:mod:`nsysq.fleet_analysis.merge`, exact and order-free statistics from
:mod:`nsysq.fleet_analysis.stats`), and scores the traces against each other with diff's robust method
(:mod:`nsysq.fleet_analysis.stragglers`). :func:`collectives` matches NCCL collectives across
ranks (:mod:`nsysq.fleet_analysis.collectives`) with the same engines. Every input is accounted
for: a trace that fails is listed with its one-sentence reason and the others still answer.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nsysq.base.errors import UsageError
from nsysq.base.table import Table
from nsysq.diffing.params import DEFAULT_MIN_TIME_MS, DEFAULT_THRESHOLD
from nsysq.fleet_analysis.collectives import CollectivesResult, collectives
from nsysq.fleet_analysis.engines import ENGINES, Engine, LocalEngine, RayEngine, held, make_engine
from nsysq.fleet_analysis.inputs import expand
from nsysq.fleet_analysis.merge import FleetFold, census_table, lineup_table
from nsysq.fleet_analysis.partial import Job, TraceReport, read_trace
from nsysq.fleet_analysis.result import FAIL_ON, TRACE_COLUMNS, FleetResult
from nsysq.fleet_analysis.stats import MEDIAN_METHOD
from nsysq.fleet_analysis.stragglers import measures, stragglers

if TYPE_CHECKING:
    from nsysq.export.reader import CacheMode

__all__ = [
    "ENGINES",
    "CollectivesResult",
    "FAIL_ON",
    "MEDIAN_METHOD",
    "Engine",
    "FleetResult",
    "Job",
    "LocalEngine",
    "RayEngine",
    "TraceReport",
    "collectives",
    "expand",
    "fleet",
    "read_trace",
]


def fleet(
    paths: Iterable[str | Path] | str | Path,
    *,
    engine: str | Engine = "local",
    address: str | None = None,
    workers: int | None = None,
    census: bool = True,
    lineup: bool = True,
    idle: bool = False,
    span: bool = True,
    names: str = "short",
    rules: str | Path | None = None,
    cache: CacheMode = "reuse",
    limit: int = 0,
    threshold: float = DEFAULT_THRESHOLD,
    min_time_ms: float = DEFAULT_MIN_TIME_MS,
    nsys: str | Path | None = None,
    identity: bool = True,
) -> FleetResult:
    """Answer one question over many traces; see :class:`FleetResult` for the tables.

    ``engine``: "local" (a thread and worker processes sized to this machine), "ray" (Ray tasks;
    ``address`` None starts a local Ray instance, "auto" or "ray://host:10001" joins a cluster) or
    an Engine.
    ``idle``: also measure busy and idle time per trace (nsysq gaps; slower); ``span``: the GPU
    span per trace (one more pass over the GPU tables). ``cache``: "reuse"
    (use cached copies when complete, build none), True, False or "build". ``nsys``: the nsys that
    exports a ``.nsys-rep`` input, found on the worker that opens it (else its NSYSQ_NSYS, PATH,
    install folders). ``identity=False`` skips each trace's GPU and nsys version (the per-trace
    table's ``gpu`` and ``nsys_version`` are then empty; the merged tables do not show them).
    """
    if names not in ("short", "demangled"):
        raise UsageError(f"--names must be short or demangled, not {names!r}.")
    if limit < 0:
        raise UsageError("--limit must be 0 (every kernel) or a positive number of rows.")
    inputs = expand([paths] if isinstance(paths, (str, Path)) else paths)
    job = Job(
        census=census, lineup=lineup, idle=idle, span=span, names=names, rules=_rules(rules), cache=cache,
        nsys=None if nsys is None else str(nsys), identity=identity,
    )  # fmt: skip
    runner = engine if not isinstance(engine, str) else _engine(engine, address, workers, inputs)
    fold = FleetFold()
    with held(runner):
        for index, report in runner.map(functools.partial(read_trace, job=job), inputs):
            _check_version(report)
            fold.add(index, report)
    missing = set(range(len(inputs))) - set(fold.reports)
    if missing:  # an engine that lost an input must not give a quiet partial answer
        raise UsageError(f"the {runner.name} engine returned no answer for {len(missing)} trace(s).")
    return _result(fold, runner.name, limit=limit, census=census, lineup=lineup, threshold=threshold,
                   min_time_ms=min_time_ms)  # fmt: skip


def _rules(rules: str | Path | None) -> str | None:
    if rules is None:
        return None
    from nsysq.catalog.rules import load_lineup_rules

    load_lineup_rules(rules)  # a bad rules file fails once, here, not once per trace
    return str(Path(rules).resolve())


def _engine(name: str, address: str | None, workers: int | None, inputs: list[str]) -> Engine:
    largest = max((_size(p) for p in inputs), default=0)
    return make_engine(name, address=address, workers=workers, largest_trace_bytes=largest)


def _size(path: str) -> int:
    try:
        return Path(path).stat().st_size
    except OSError:
        return 0


def _check_version(report: TraceReport) -> None:
    from nsysq.base.version import __version__

    if report.nsysq_version != __version__:
        raise UsageError(
            f"a worker ran nsysq {report.nsysq_version} but this is nsysq {__version__}; "
            "install the same version where the engine's workers run."
        )


def _result(
    fold: FleetFold,
    engine: str,
    *,
    limit: int,
    census: bool,
    lineup: bool,
    threshold: float,
    min_time_ms: float,
) -> FleetResult:
    reports = [fold.reports[i] for i in sorted(fold.reports)]
    ok = [i for i in sorted(fold.reports) if fold.reports[i].status == "ok"]
    footer = {"traces": len(reports), "traces_ok": len(ok), "traces_failed": len(reports) - len(ok),
              "engine": engine}  # fmt: skip
    values = measures(
        [fold.reports[i].path for i in ok],
        [fold.reports[i].kernel_ns or 0 for i in ok],
        [fold.category_ns.get(i, {}) for i in ok],
        [fold.reports[i].idle_ns for i in ok],
    )
    slow = stragglers(
        [fold.reports[i].path for i in ok], values, threshold=threshold, min_time_ms=min_time_ms
    )
    return FleetResult(
        traces_table=_traces_table(reports, slow, footer, tuple(fold.queries)),
        stragglers_table=slow,
        census_table=census_table(fold, limit=limit, footer=footer) if census else None,
        lineup_table=lineup_table(fold, footer=footer) if lineup else None,
    )


def _traces_table(
    reports: list[TraceReport], slow: Table, footer: dict[str, Any], queries: tuple[str, ...]
) -> Table:
    straggler = {r["path"]: r["category"] for r in slow.records()}
    rows = [
        (
            r.path,
            r.status,
            r.reason,
            r.gpu,
            r.nsys_version,
            r.kernels,
            r.kernel_ns,
            r.span_ns,
            r.busy_ns,
            r.idle_ns,
            _busy_pct(r),
            r.reader,
            straggler.get(r.path),
        )  # fmt: skip
        for r in reports
    ]
    ok = [r for r in reports if r.status == "ok"]
    full = {
        **footer,
        "total_kernels": sum(r.kernels or 0 for r in ok),
        "total_kernel_ns": sum(r.kernel_ns or 0 for r in ok),
        "stragglers": len(slow.rows),
    }
    notes = tuple(f"{r.path}: {r.reason}" for r in reports if r.status == "failed")
    return Table(kind="fleet", columns=TRACE_COLUMNS, rows=rows, queries=queries, footer=full, notes=notes)


def _busy_pct(report: TraceReport) -> float | None:
    """Busy time over the devices' spans (busy + idle, summed over the trace's devices)."""
    if report.busy_ns is None or report.idle_ns is None or not report.busy_ns + report.idle_ns:
        return None
    return 100.0 * report.busy_ns / (report.busy_ns + report.idle_ns)
