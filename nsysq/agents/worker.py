"""One tool call, run as the CLI runs it, in a process of its own.

:func:`run_cli` parses the command line with the CLI's own click tree (``standalone_mode=False``) and
runs the command with stdout and stderr captured: the same code path as ``nsysq ...`` in a shell.
:func:`call` runs it in a child process (forked from a server of preloaded ones, so a call starts
in milliseconds), which is what makes a call stoppable: at its time limit the child is killed, and
nothing it did (a crash, DuckDB's memory, a stray thread) reaches the server.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import sys
import threading
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from nsysq.base.errors import NsysqError

PRELOAD = [
    "nsysq.agents.worker",
    "nsysq.agents.tools",
    "duckdb",
    "numpy",
    "nsysq.trace",
    "nsysq.session.session",
    "nsysq.export.reader",
]
"""Loaded once by the fork server, so a call does not pay for them (pandas is left out: most
commands never load it)."""


@dataclass(frozen=True)
class Outcome:
    """What a command did: its exit code, its stdout, its stderr lines, and the one sentence of its
    error (None: it succeeded)."""

    code: int
    stdout: str
    stderr: list[str]
    error: str | None


def run_cli(argv: list[str]) -> Outcome:
    """Run ``nsysq ARGV`` in this process, as the ``nsysq`` script does, capturing its output."""
    import typer

    from nsysq.agents.tools import root_command
    from nsysq.cli.root import internal_error_message

    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    code, error = 0, None
    try:
        returned = root_command().main(args=argv, prog_name="nsysq", standalone_mode=False)
        code = returned if isinstance(returned, int) else 0
    except NsysqError as exc:
        code, error = exc.exit_code, str(exc)
    except typer.Exit as exc:
        code = exc.exit_code
    except typer.Abort:
        code, error = 1, "the command was stopped."
    except Exception as exc:
        if _is_usage_error(exc):  # click's: a bad option or value, as the CLI reports it (exit code 2)
            code, error = int(getattr(exc, "exit_code", 2)), str(exc.format_message())  # type: ignore[attr-defined]
        else:  # a bug in nsysq: one line, as the CLI says it
            code, error = 70, internal_error_message(exc)
    finally:
        sys.stdout, sys.stderr = saved
    lines = [line.removeprefix("nsysq: ") for line in err.getvalue().splitlines() if line.strip()]
    return Outcome(code, out.getvalue(), lines, error)


def _is_usage_error(exc: Exception) -> bool:
    """A click ClickException (typer carries its own click from 0.26 on, so matched by its face)."""
    return hasattr(exc, "format_message") and hasattr(exc, "exit_code")


def _child(argv: list[str], conn: Connection) -> None:
    os.dup2(2, 1)  # whatever a library writes to fd 1 goes to stderr, never onto the server's wire
    try:
        conn.send(run_cli(argv))
    finally:
        conn.close()


_CONTEXT: Any = None
_CONTEXT_LOCK = threading.Lock()


def _context() -> Any:
    """The forkserver context, its server preloaded with the CLI and DuckDB (spawn where there is
    no forkserver). Start it only once stdout is diverted (mcp's stdio_server does): it inherits fd 1."""
    global _CONTEXT
    with _CONTEXT_LOCK:
        if _CONTEXT is None:
            method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
            _CONTEXT = multiprocessing.get_context(method)
            if method == "forkserver":
                _CONTEXT.set_forkserver_preload(PRELOAD)
        return _CONTEXT


def warm_up() -> None:
    """Start the server of preloaded processes now (the first call would otherwise wait for it)."""
    Running(["--version"]).run(60.0)


class Running:
    """One call in a child process: :meth:`run` (blocking, in a thread) starts it and waits for its
    outcome; :meth:`kill` (from any thread) stops it."""

    def __init__(self, argv: list[str]) -> None:
        self._argv = argv
        self._proc: Any = None
        self._killed = False

    def run(self, timeout: float) -> Outcome | None:
        """The outcome, or None when the call did not end within ``timeout`` seconds (then killed)."""
        ctx = _context()
        recv, send = ctx.Pipe(duplex=False)
        self._proc = ctx.Process(target=_child, args=(self._argv, send), daemon=True)
        self._proc.start()
        send.close()
        try:
            if self._killed or not recv.poll(timeout):
                self.kill()
                return None
            outcome: Outcome = recv.recv()
        except EOFError:  # the child died without an answer
            self._proc.join()
            code = self._proc.exitcode
            return Outcome(70, "", [], f"the worker process ended without an answer (exit code {code}).")
        finally:
            recv.close()
        self._proc.join()
        return outcome

    def kill(self) -> None:
        self._killed = True
        if self._proc is not None and self._proc.is_alive():
            self._proc.kill()
            self._proc.join()
