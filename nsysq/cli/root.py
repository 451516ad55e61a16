"""The ``nsysq`` command: the root app registers every command module, and :func:`main` is the one
place where errors become messages and exit codes.

Command modules (every other module of nsysq.cli, see its docstring) never import this module; they share
:mod:`nsysq.cli.common`. Heavy imports (duckdb, pandas, matplotlib) happen inside the commands,
so ``nsysq --help`` stays fast.
"""

from __future__ import annotations

import inspect
import os
import sys
import traceback
from collections.abc import Callable
from typing import NoReturn

import typer
import typer.main

from nsysq.base.errors import NsysqError
from nsysq.base.threads import before_threads
from nsysq.base.version import __version__
from nsysq.cli import analyses, cache, diff, fleet, plot, share, sql
from nsysq.cli import check as check_cli
from nsysq.cli import explain as explain_cli
from nsysq.cli import gaps as gaps_cli
from nsysq.cli import graphs as graphs_cli
from nsysq.cli import iters as iters_cli
from nsysq.cli import nvtx as nvtx_cli
from nsysq.cli import stats as stats_cli
from nsysq.cli.common import say, with_terminal_view
from nsysq.export import engine

__all__ = ["EXIT_CODES", "INTERNAL_ERROR_EXIT_CODE", "INTERRUPTED_EXIT_CODE", "app", "main"]

INTERNAL_ERROR_EXIT_CODE = 70
"""An unexpected exception, i.e. a bug in nsysq (70 is EX_SOFTWARE in sysexits.h)."""
INTERRUPTED_EXIT_CODE = 130
"""Interrupted with Ctrl-C (128 + SIGINT)."""
DEBUG_VARIABLE = "NSYSQ_DEBUG"
"""Set to 1 to see the Python traceback of any error."""
_FIRST_LINE_CHARS = 300

EXIT_CODES: dict[int, str] = {
    0: "Success.",
    1: "A query, the cache or a fleet worker process failed, or stdout was closed early (a broken pipe).",
    2: "Bad usage or input: an unknown option or bad value, a missing or unreadable file, a file that "
    "is not an nsys SQLite export, or a damaged one.",
    diff.FAIL_EXIT_CODE: "`nsysq diff --fail-on`: a finding of the kinds asked for exists; `nsysq fleet "
    "--fail-on`: a trace failed (the default) or is a straggler, as asked; `nsysq check --fail-on`: a rule "
    "named there found something.",
    4: "DuckDB's sqlite extension could not be loaded from the installed package.",
    5: "The trace holds no events of the kind the command needs (for example no CUDA kernels).",
    INTERNAL_ERROR_EXIT_CODE: "Internal error: an unexpected exception (a bug in nsysq). One line names "
    f"it; rerun with {DEBUG_VARIABLE}=1 to see the traceback, and report it.",
    INTERRUPTED_EXIT_CODE: "Interrupted (Ctrl-C).",
}
"""Every exit code ``nsysq`` uses and what it means (docs/cli.md lists them; a test keeps every
NsysqError's code in here)."""

app = typer.Typer(
    name="nsysq",
    help="Make Nsight Systems SQLite exports answer questions: where GPU time goes, by kernel, "
    "by category, per launch, over time, and what changed between two traces.",
    add_completion=True,  # --install-completion / --show-completion (typer's; the shell is detected then)
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"nsysq {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        "-V",
        help="Print the version and exit.",
        callback=_print_version,
        is_eager=True,
    ),
) -> None:
    """The options before any command (the app's help text is the Typer's ``help``)."""


app.command("info")(analyses.info_command)
app.command("census")(analyses.census_command)
app.command("lineup")(analyses.lineup_command)
app.command("stakeout")(analyses.stakeout_command)
app.command("timeline")(analyses.timeline_command)
app.command("sql")(sql.sql_command)
app.command("queries")(sql.queries_command)
app.command("diff")(diff.diff_command)
app.command("gaps")(gaps_cli.gaps_command)
app.command("overlap")(gaps_cli.overlap_command)
app.command("nvtx")(nvtx_cli.nvtx_command)
app.command("graphs")(graphs_cli.graphs_command)
app.command("iters")(iters_cli.iters_command)
app.command("explain")(explain_cli.explain_command)
app.command("stats")(stats_cli.stats_command)
app.command("check")(check_cli.check_command)
app.command("report")(share.report_command)
app.command("export")(share.export_command)
app.add_typer(cache.cache_app, name="cache")
plot.plot_app.command("gaps")(gaps_cli.plot_gaps_command)
plot.plot_app.command("overlap")(gaps_cli.plot_overlap_command)
plot.plot_app.command("nvtx")(nvtx_cli.plot_nvtx_command)
plot.plot_app.command("iters")(iters_cli.plot_iters_command)
app.add_typer(plot.plot_app, name="plot")
app.add_typer(fleet.fleet_app, name="fleet")


def _add_terminal_view(typers: list[typer.Typer]) -> None:
    """``--wide`` and ``--columns`` on every command that prints tables (it takes ``--format``)."""
    for group in typers:
        for command in group.registered_commands:
            if command.callback is not None and "fmt" in inspect.signature(command.callback).parameters:
                command.callback = with_terminal_view(command.callback)
        _add_terminal_view([sub.typer_instance for sub in group.registered_groups if sub.typer_instance])


_add_terminal_view([app])


def main() -> NoReturn:
    """Run the app. An NsysqError becomes ``nsysq: error: <sentence>`` and its exit code; any other
    exception one line and INTERNAL_ERROR_EXIT_CODE (the traceback with NSYSQ_DEBUG=1).

    typer (standalone mode) reports usage errors itself, with exit code 2. The process then ends
    without the interpreter's teardown (:func:`_leave`).
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # nsysq never calls BLAS: no spinning idle threads
    before_threads()  # numpy's import in a thread must not write the environment
    engine.quick_duckdb_version()  # duckdb's version without importlib.metadata (0.02 s of every read)
    try:
        _run(_command_asked(sys.argv))
    except SystemExit as exc:
        _leave(exc.code)
    _leave(0)


def _command_asked(argv: list[str]) -> Callable[[], object]:
    """The click command that runs ``argv``, with only the command (or group) it names first built:
    typer makes a click command of every registered command on each run (0.015-0.03 s for the ~40
    of them), of which click runs the one named. Anything else first (``--help``, an unknown name:
    its suggestions list them all) and shell completion build them all, as before. ``app`` itself
    is left whole (``nsysq mcp`` lists every command as a tool)."""
    name = argv[1] if len(argv) > 1 else ""
    commands = [c for c in app.registered_commands if c.name == name]
    groups = [g for g in app.registered_groups if g.name == name]
    if len(commands) + len(groups) != 1 or any(key.endswith("_COMPLETE") for key in os.environ):
        return app
    every = app.registered_commands, app.registered_groups
    app.registered_commands, app.registered_groups = commands, groups
    try:
        command: Callable[[], object] = typer.main.get_command(app)
    finally:
        app.registered_commands, app.registered_groups = every
    return command


def _leave(code: object) -> NoReturn:
    """Flush stdout and stderr and end the process with ``code`` (a SystemExit code), skipping the
    interpreter's teardown: freeing some 360 modules and the numpy and DuckDB memory costs 0.035 s of
    every command (measured on a first census) and has nothing left to do. Every file nsysq writes
    is closed by then, a trace's spill folder is removed when the trace closes, and the cache is
    built by a process of its own. A reader that closed the pipe makes the code 1, as during the
    command."""
    if code is not None and not isinstance(code, int):
        say(str(code))
        code = 1
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):  # the reader went away; ValueError: stdout was closed
        code = code or 1
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(code or 0)


def _run(command: Callable[[], object]) -> None:
    try:
        command()
    except NsysqError as exc:
        _traceback_when_debugging()
        say(f"error: {exc}")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        say("interrupted.")
        sys.exit(INTERRUPTED_EXIT_CODE)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(1)
    except Exception as exc:  # anything else is a bug: one line, never a traceback (unless asked)
        _traceback_when_debugging()
        say(internal_error_message(exc))
        sys.exit(INTERNAL_ERROR_EXIT_CODE)


def internal_error_message(exc: BaseException) -> str:
    """``internal error (KeyError: 'x'); rerun with NSYSQ_DEBUG=1 ...``: one line whatever ``exc`` holds."""
    lines = str(exc).strip().splitlines()
    what = f"{type(exc).__name__}: {lines[0][:_FIRST_LINE_CHARS]}" if lines else type(exc).__name__
    return f"internal error ({what}); rerun with {DEBUG_VARIABLE}=1 to see the traceback."


def _traceback_when_debugging() -> None:
    if os.environ.get(DEBUG_VARIABLE, "") not in ("", "0"):
        traceback.print_exc()
