"""The ``nsysq`` command: the root app, which names every command module, and :func:`main`, the one
place where errors become messages and exit codes.

Command modules (every other module of nsysq.cli, see its docstring) never import this module; they share
:mod:`nsysq.cli.common`. A run imports only the module of the command it names (:func:`_command_asked`);
the whole app, every module imported, is built for ``--help``, an unknown name, shell completion and
whoever reads :data:`app` (``nsysq mcp`` makes a tool of every command). Heavy imports (duckdb, pandas,
matplotlib) happen inside the commands, so ``nsysq --help`` stays fast.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any, NoReturn

import typer
import typer.main

from nsysq.base.errors import NsysqError
from nsysq.base.version import __version__
from nsysq.cli.common import FAIL_EXIT_CODE, say, with_terminal_view
from nsysq.export import engine

__all__ = [
    "EXIT_CODES",
    "INTERNAL_ERROR_EXIT_CODE",
    "INTERRUPTED_EXIT_CODE",
    "add_command",
    "main",
]

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
    FAIL_EXIT_CODE: "`nsysq diff --fail-on`: a finding of the kinds asked for exists; `nsysq fleet "
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

COMMANDS: dict[str, tuple[str, str]] = {
    "info": ("analyses", "info_command"),
    "census": ("analyses", "census_command"),
    "lineup": ("analyses", "lineup_command"),
    "stakeout": ("analyses", "stakeout_command"),
    "timeline": ("analyses", "timeline_command"),
    "sql": ("sql", "sql_command"),
    "queries": ("sql", "queries_command"),
    "diff": ("diff", "diff_command"),
    "gaps": ("gaps", "gaps_command"),
    "overlap": ("gaps", "overlap_command"),
    "nvtx": ("nvtx", "nvtx_command"),
    "graphs": ("graphs", "graphs_command"),
    "iters": ("iters", "iters_command"),
    "explain": ("explain", "explain_command"),
    "stats": ("stats", "stats_command"),
    "check": ("check", "check_command"),
    "report": ("share", "report_command"),
    "export": ("share", "export_command"),
}
"""Every command of the root, in --help order: its name, then the module of nsysq.cli and the function."""
GROUPS: dict[str, tuple[str, str]] = {
    "cache": ("cache", "cache_app"),
    "plot": ("plot", "plot_app"),
    "fleet": ("fleet", "fleet_app"),
}
"""Every group of commands, after the commands: its name, then the module and its typer app."""
_PLOT_COMMANDS = (
    ("gaps", "gaps", "plot_gaps_command"),
    ("overlap", "gaps", "plot_overlap_command"),
    ("nvtx", "nvtx", "plot_nvtx_command"),
    ("iters", "iters", "plot_iters_command"),
)
"""The ``nsysq plot`` commands that live with their analysis' commands, added to plot's app."""
_added: dict[str, Callable[..., Any]] = {}
"""The commands registered from above (:func:`add_command`), after the groups."""
_groups: dict[str, typer.Typer] = {}
"""Each group's app once loaded (its plot commands added, its commands given the terminal view)."""
_whole: list[typer.Typer] = []
"""The whole app, once built."""


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"nsysq {__version__}")
        raise typer.Exit()


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


def _new_app() -> typer.Typer:
    """The root typer app with no command yet."""
    root = typer.Typer(
        name="nsysq",
        help="Make Nsight Systems SQLite exports answer questions: where GPU time goes, by kernel, "
        "by category, per launch, over time, and what changed between two traces.",
        add_completion=True,  # --install-completion / --show-completion (typer's; the shell is detected then)
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    root.callback()(_root)
    return root


def _loaded(module: str, name: str) -> Any:
    return getattr(importlib.import_module(f"nsysq.cli.{module}"), name)


def _add(root: typer.Typer, name: str) -> None:
    """Register the command or group ``name`` on ``root``, importing only the module it lives in."""
    if name in COMMANDS:
        root.command(name)(_loaded(*COMMANDS[name]))
        _add_terminal_view(root.registered_commands[-1:])
    elif name in GROUPS:
        root.add_typer(_group(name), name=name)
    else:
        root.command(name)(_added[name])
        _add_terminal_view(root.registered_commands[-1:])


def _group(name: str) -> typer.Typer:
    if name not in _groups:
        group: typer.Typer = _loaded(*GROUPS[name])
        if name == "plot":
            for command, module, function in _PLOT_COMMANDS:
                group.command(command)(_loaded(module, function))
        _add_terminal_view(group.registered_commands)
        _groups[name] = group
    return _groups[name]


def _add_terminal_view(commands: list[Any]) -> None:
    """``--wide`` and ``--columns`` on every command that prints tables (it takes ``--format``)."""
    for command in commands:
        if command.callback is not None and "fmt" in inspect.signature(command.callback).parameters:
            command.callback = with_terminal_view(command.callback)


def add_command(name: str, callback: Callable[..., Any]) -> None:
    """Register a command of a layer above the CLI (``nsysq mcp``), after the groups, once."""
    if name in _added:
        return
    _added[name] = callback
    if _whole:
        _add(_whole[0], name)


def whole_app() -> typer.Typer:
    """The root app with every command and group (built once)."""
    if not _whole:
        root = _new_app()
        for name in [*COMMANDS, *GROUPS, *_added]:
            _add(root, name)
        _whole.append(root)
    return _whole[0]


def __getattr__(name: str) -> Any:
    """``app``: the whole root app, built on first use."""
    if name == "app":
        return whole_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> NoReturn:
    """Run the app. An NsysqError becomes ``nsysq: error: <sentence>`` and its exit code; any other
    exception one line and INTERNAL_ERROR_EXIT_CODE (the traceback with NSYSQ_DEBUG=1).

    typer (standalone mode) reports usage errors itself, with exit code 2. The process then ends
    without the interpreter's teardown (:func:`_leave`).
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # nsysq never calls BLAS: no spinning idle threads
    engine.quick_duckdb_import()  # duckdb without importlib.metadata nor a default instance (0.04 s)
    try:
        _run(_command_asked(sys.argv))
    except SystemExit as exc:
        _leave(exc.code)
    _leave(0)


def _command_asked(argv: list[str]) -> Callable[[], object]:
    """The click command that runs ``argv``, with only the command (or group) it names imported and
    built: importing every command module and making a click command of each (some 40) costs more
    than a small trace's census. Anything else first (``--help``, ``--version``, an unknown name: its
    suggestions list them all) and shell completion build the whole app, as before."""
    name = argv[1] if len(argv) > 1 else ""
    if name not in {**COMMANDS, **GROUPS, **_added} or any(key.endswith("_COMPLETE") for key in os.environ):
        return whole_app()
    root = _new_app()
    _add(root, name)
    command: Callable[[], object] = typer.main.get_command(root)
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
