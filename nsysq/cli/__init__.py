"""The ``nsysq`` command line, a package of command modules under one root.

- :mod:`nsysq.cli.root`: the typer app, which registers every command module, and ``main()``,
  the one place where errors become messages and exit codes (the ``nsysq`` script);
- :mod:`nsysq.cli.common`: the options and helpers the command modules share;
- command modules, one per family: :mod:`~nsysq.cli.analyses` (info, census, lineup, stakeout,
  timeline), :mod:`~nsysq.cli.graphs`, :mod:`~nsysq.cli.explain`, :mod:`~nsysq.cli.nvtx`,
  :mod:`~nsysq.cli.gaps` (gaps, overlap), :mod:`~nsysq.cli.diff`, :mod:`~nsysq.cli.fleet`,
  :mod:`~nsysq.cli.share` (report, export), :mod:`~nsysq.cli.plot`, :mod:`~nsysq.cli.sql` (sql,
  queries), :mod:`~nsysq.cli.cache`. They import ``common`` and the library, never the root
  (tests/test_layers.py imports each of them and checks).

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
