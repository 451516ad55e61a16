"""The ``nsysq`` program: the CLI of :mod:`nsysq.cli.root` plus ``nsysq mcp``, registered here.

The CLI may not import this layer (nsysq.agents reads the CLI's commands, so it sits above it), so
the ``mcp`` command is added to the root app from above: the ``nsysq`` script
(pyproject ``[project.scripts]``) and ``python -m nsysq`` call :func:`main`, which registers it and
runs the root's ``main``. The server itself (and the ``mcp`` SDK) loads only when the command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from nsysq.base.errors import UsageError

INSTALL_HINT = (
    "nsysq mcp needs the MCP SDK, which is not installed; install it with: pip install 'nsysq[mcp]'."
)
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_JOBS = 2


def mcp_command(
    root: Annotated[
        list[Path] | None,
        typer.Option(
            "--root",
            help="A folder whose files the tools may read (repeatable) [default: the current folder].",
            show_default=False,
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="The folder the report, export and plot tools write into; without it they are not offered.",
            show_default=False,
        ),
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds a tool call may run before it is stopped.")
    ] = DEFAULT_TIMEOUT_S,
    jobs: Annotated[
        int, typer.Option("--jobs", help="Tool calls that run at once (the rest wait).")
    ] = DEFAULT_JOBS,
) -> None:
    """Serve every analysis to a coding agent: a Model Context Protocol server on stdin/stdout,
    read-only, confined to the --root folders (docs/agents.md)."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    from nsysq.agents.server import Config, serve

    if timeout <= 0 or jobs < 1:
        raise UsageError("--timeout must be more than 0 seconds and --jobs at least 1.")
    serve(Config.make(root or [Path.cwd()], out, timeout, jobs))


def full_app() -> Any:
    """The root typer app, every command built, with ``mcp`` registered (once)."""
    from nsysq.cli import root

    root.add_command("mcp", mcp_command)
    return root.app


def main() -> NoReturn:
    """The ``nsysq`` script: the whole CLI, ``nsysq mcp`` included (the root imports the module of
    the command run, or all of them when it needs the whole app)."""
    from nsysq.cli import root

    root.add_command("mcp", mcp_command)
    root.main()
