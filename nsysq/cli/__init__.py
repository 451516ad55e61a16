"""The ``nsysq`` command line, a package of command modules under one root.

- :mod:`nsysq.cli.root`: the typer app, which registers every command module, and ``main()``,
  the one place where errors become messages and exit codes (the ``nsysq`` script);
- :mod:`nsysq.cli.common`: the options and helpers the command modules share;
- command modules: :mod:`~nsysq.cli.analyses` (info, census, lineup, stakeout, timeline),
  :mod:`~nsysq.cli.sql` (sql, queries), :mod:`~nsysq.cli.diff`, :mod:`~nsysq.cli.cache`,
  :mod:`~nsysq.cli.plot`. They import ``common`` and the library, never the root.

This file imports nothing when loaded, so importing a command module never runs the root.
``from nsysq.cli import app, main`` still works: both load the root on first use.
"""

from __future__ import annotations

from typing import Any

__all__ = ["app", "main"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from nsysq.cli import root

        return getattr(root, name)
    raise AttributeError(f"module 'nsysq.cli' has no attribute {name!r}")
