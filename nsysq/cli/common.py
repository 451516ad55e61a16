"""What every command module shares: the option types, the trace options (declared once, in
:class:`TraceOptions`, and put on a command by :func:`trace_options`), opening a trace, writing a
result.

Nothing here imports a command module or the root (:mod:`nsysq.cli.root`). Heavy modules (duckdb,
pandas, rich) load inside the helpers, so importing this module stays as cheap as typer itself.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import Field, dataclass, field, fields
from enum import Flag, StrEnum, auto
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, get_type_hints

import typer

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from nsysq.base.table import Table
    from nsysq.diffing import DiffResult
    from nsysq.session import Session
    from nsysq.session.scope import NvtxSelection, Scope

__all__ = [
    "FAIL_EXIT_CODE",
    "Format",
    "Names",
    "NvtxMode",
    "Takes",
    "TraceOptions",
    "Unit",
    "diff_traces",
    "emit",
    "open_trace",
    "print_table",
    "save_picture",
    "say",
    "nvtx_of",
    "show_sql",
    "sql_if",
    "trace_options",
    "unit_for",
    "with_terminal_view",
]


FAIL_EXIT_CODE = 3
"""The exit code of a ``--fail-on`` that tripped: ``nsysq diff`` (a finding of the kinds asked for),
``nsysq fleet`` (a trace failed or is a straggler, as asked), ``nsysq check`` (a rule named there
found something)."""


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
    typer.Argument(
        help="An nsys SQLite export (nsys export --type=sqlite), or a .nsys-rep report (exported once "
        "with nsys: see --nsys).",
        show_default=False,
    ),
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
    Path,
    typer.Argument(help="Trace A, the baseline (nsys SQLite export or .nsys-rep).", show_default=False),
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
NsysOpt = Annotated[
    Path | None,
    typer.Option(
        "--nsys",
        metavar="PATH",
        help="The nsys that exports a .nsys-rep given as a trace (once, into the cache folder) "
        "[default: NSYSQ_NSYS, nsys on PATH, the usual install folders; see docs/nsys-rep.md].",
        show_default=False,
    ),
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
IterationOpt = Annotated[
    str | None,
    typer.Option(
        "--iteration",
        metavar="N|A:B",
        help="Only the GPU work of iteration N (or A to B, inclusive) of the loop, numbered as "
        "nsysq iters numbers them (N of ProfilerStep#N, else from 0). See docs/iters.md.",
        show_default=False,
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
    """One message on stderr, prefixed ``nsysq:`` (stdout carries data only): one line, wrapped
    at the terminal's width when stderr is one (a person reads it; a log keeps whole lines)."""
    text = f"nsysq: {message}"
    width = _terminal_width(sys.stderr)
    if width and len(text) >= width:
        import textwrap

        text = "\n".join(textwrap.wrap(text, width - 1, subsequent_indent="  ", break_on_hyphens=False))
    sys.stderr.write(text + "\n")


def _terminal_width(stream: Any) -> int | None:
    """The width of the terminal ``stream`` writes to, None when it is not a terminal."""
    import os

    try:
        return os.get_terminal_size(stream.fileno()).columns if stream.isatty() else None
    except (OSError, ValueError, AttributeError):
        return None


def unit_for(fmt: Format, unit: Unit | None) -> str:
    """The time unit asked for, else ms for people (table, markdown) and ns for programs."""
    if unit is not None:
        return unit.value
    return "ms" if fmt in (Format.table, Format.markdown) else "ns"


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


class Takes(Flag):
    """Which of the trace options a command takes (:func:`trace_options`)."""

    NO_CACHE = auto()  # --no-cache
    SCOPE = auto()  # --device, --stream, --pid
    NVTX = auto()  # --nvtx, --nvtx-like
    NVTX_MODE = auto()  # --nvtx-mode
    NSYS = auto()  # --nsys: every command that takes a trace has it, whatever it is given
    ITERATION = auto()  # --iteration
    GPU_WORK = NO_CACHE | SCOPE | ITERATION
    ALL = NO_CACHE | SCOPE | NVTX | NVTX_MODE | ITERATION


_TAKES = "takes"  # a TraceOptions field's metadata key: the Takes member that brings its option


@dataclass(frozen=True)
class TraceOptions:
    """A command's trace options as parsed: which GPU work it reads (``scope``, ``nvtx``) and
    whether it reads the trace directly (``no_cache``), and which nsys exports a ``.nsys-rep``
    (``nsys``, offered to every command). Each field is one option, declared here and
    nowhere else: its annotation is the typer option, its metadata the :class:`Takes` member that
    brings it; :func:`trace_options` puts the fields on a command. A command that does not take an
    option gets its default.

    ``scope`` and ``nvtx`` are built where they are read (:func:`open_trace`), so a command's own
    checks of its other options come first, as they did before the options were shared."""

    device: DeviceOpt = field(default=None, metadata={_TAKES: Takes.SCOPE})
    stream: StreamOpt = field(default=None, metadata={_TAKES: Takes.SCOPE})
    pid: PidOpt = field(default=None, metadata={_TAKES: Takes.SCOPE})
    nvtx_name: NvtxOpt = field(default=None, metadata={_TAKES: Takes.NVTX})
    nvtx_like: NvtxLikeOpt = field(default=None, metadata={_TAKES: Takes.NVTX})
    nvtx_mode: NvtxModeOpt = field(default=NvtxMode.launch, metadata={_TAKES: Takes.NVTX_MODE})
    iteration: IterationOpt = field(default=None, metadata={_TAKES: Takes.ITERATION})
    no_cache: NoCacheOpt = field(default=False, metadata={_TAKES: Takes.NO_CACHE})
    nsys: NsysOpt = field(default=None, metadata={_TAKES: Takes.NSYS})

    @property
    def scope(self) -> Scope:
        """The scope ``--device``, ``--stream``, ``--pid`` and ``--iteration`` ask for (session.scope)."""
        from nsysq.session.scope import IterationSelection, Scope

        iterations = None if self.iteration is None else IterationSelection.parse(self.iteration)
        return Scope(device=self.device, stream=self.stream, pid=self.pid, iterations=iterations)

    @property
    def nvtx(self) -> NvtxSelection | None:
        """The NVTX scope ``--nvtx`` / ``--nvtx-like`` and ``--nvtx-mode`` ask for (:func:`nvtx_of`)."""
        return nvtx_of(self.nvtx_name, self.nvtx_like, self.nvtx_mode)


Command = Callable[..., None]
"""A typer command: typer calls it with one keyword argument per parameter of its signature."""

OPTIONS = "options"
"""The parameter of a command that receives its :class:`TraceOptions`."""


def trace_options(takes: Takes = Takes.ALL) -> Callable[[Command], Command]:
    """Give a command the trace options ``takes`` names (the fields of :class:`TraceOptions`).

    The command declares a keyword-only parameter ``options: TraceOptions``. In the signature
    typer reads (``__signature__``) it becomes the options' parameters: ``--no-cache`` and ``--nsys``
    (always offered) last, as every command lists them, the others where ``options`` stands. typer's
    values for them reach the command as one TraceOptions."""
    offered = [f for f in fields(TraceOptions) if f.metadata[_TAKES] in takes | Takes.NSYS]
    tail = Takes.NO_CACHE | Takes.NSYS
    here = _parameters(f for f in offered if f.metadata[_TAKES] not in tail)
    last = _parameters(f for f in offered if f.metadata[_TAKES] in tail)

    def decorate(command: Command) -> Command:
        signature = inspect.signature(command, eval_str=True)
        params = list(signature.parameters.values())
        at = list(signature.parameters).index(OPTIONS)
        if params[at].kind is not inspect.Parameter.KEYWORD_ONLY:
            raise TypeError(f"{command.__name__}: make {OPTIONS} keyword-only (after *).")
        params[at : at + 1] = here

        @functools.wraps(command)
        def run(**values: Any) -> None:
            parsed = {p.name: values.pop(p.name) for p in (*here, *last)}
            command(**values, options=TraceOptions(**parsed))

        run.__signature__ = signature.replace(parameters=[*params, *last])  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in (*params, *last)} | {"return": None}
        return run

    return decorate


WideOpt = Annotated[
    bool,
    typer.Option(
        "--wide",
        help="At a terminal, print every column (by default a compact set that fits the terminal; a "
        "pipe or a file gets every column).",
    ),
]
ColumnsOpt = Annotated[
    str | None,
    typer.Option(
        "--columns",
        metavar="A,B,...",
        help="Print these columns, in this order, in table, markdown and CSV output (names as in the "
        "JSON, the unit suffix optional: total or total_ns; grid and block join their x, y, z).",
        show_default=False,
    ),
]
_VIEW_OPTIONS = (
    inspect.Parameter("wide", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=WideOpt),
    inspect.Parameter("columns", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=ColumnsOpt),
)


def with_terminal_view(command: Command) -> Command:
    """Give a command that prints tables ``--wide`` and ``--columns`` (declared here once; the root
    puts them on every command with ``--format``): its tables are rendered as they ask
    (:mod:`nsysq.base.terminal`)."""
    signature = inspect.signature(command, eval_str=True)

    @functools.wraps(command)
    def run(**values: Any) -> None:
        from nsysq.base.terminal import TerminalView, terminal_view

        wide, columns = values.pop("wide"), values.pop("columns")
        picked = tuple(c.strip() for c in (columns or "").split(",") if c.strip())
        with terminal_view(TerminalView(wide=wide, columns=picked)):
            command(**values)

    params = [*signature.parameters.values(), *_VIEW_OPTIONS]
    run.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
    return run


def _parameters(options: Iterable[Field[Any]]) -> list[inspect.Parameter]:
    """TraceOptions fields as keyword-only parameters, annotated with their typer options."""
    hints = get_type_hints(TraceOptions, include_extras=True)
    keyword = inspect.Parameter.KEYWORD_ONLY
    return [inspect.Parameter(f.name, keyword, default=f.default, annotation=hints[f.name]) for f in options]


@contextmanager
def open_trace(
    path: Path,
    options: TraceOptions,
    *,
    prefetch: str | tuple[str, ...] | None = "census",
) -> Iterator[Session]:
    """Open a trace for one command (``nsysq.open``) and give its session to the analyses;
    ``prefetch``: the packaged query whose kernel columns the command needs first (they start
    decoding while DuckDB loads). From ``options``: ``scope``, the GPU work every query reads
    (nsysq.session.scope), with ``nvtx``, what ``--nvtx``/``--nvtx-like``/``--nvtx-mode`` ask for,
    part of it; ``no_cache``; ``nsys``, which nsys exports a ``.nsys-rep``."""
    from nsysq.trace import Trace

    scope, nvtx, cache = options.scope, options.nvtx, not options.no_cache
    with Trace(path, scope=scope, nvtx=nvtx, cache=cache, prefetch=prefetch, nsys=options.nsys) as trace:
        yield trace.session


def diff_traces(
    a: Path,
    b: Path,
    options: TraceOptions,
    *,
    rules: Path | None,
    danger_rules: Path | None,
    min_time_ms: float,
    threshold: float,
) -> DiffResult:
    """Compare trace ``b`` with ``a``, both opened with ``options`` (one scope), with
    :func:`nsysq.diffing.diff`, and say the comparison's warnings on stderr."""
    from nsysq.diffing import diff

    result = diff(
        a, b, rules=rules, danger_rules=danger_rules, min_time_ms=min_time_ms, threshold=threshold,
        scope=options.scope, nvtx=options.nvtx, cache=not options.no_cache, nsys=options.nsys,
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


def sql_if(asked: bool, trace: Session) -> str | None:
    """``--show-sql``: when ``asked``, the script of what ``trace`` ran so far; else None."""
    return trace.script() if asked else None


def print_table(table: Table, sql: str | None, fmt: Format, unit: Unit | None, *, title: str | None) -> None:
    """A command's one output: ``sql`` when there is some (``--show-sql``, :func:`sql_if`), else
    ``table`` (:func:`emit`)."""
    if sql is not None:
        sys.stdout.write(sql)
    else:
        emit(table, fmt, unit, title=title)


def save_picture(ax: Axes, output: Path, dpi: int, title: str | None) -> None:
    """Write a plot's figure to ``output`` (:func:`nsysq.plot.write_picture`) and say where."""
    from nsysq.plot import write_picture

    write_picture(ax, output, dpi=dpi, title=title)
    say(f"wrote {output}")
