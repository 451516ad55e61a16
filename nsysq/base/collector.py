"""Python's cyclic garbage collector while a command starts: paused, then the start-up's objects frozen.

A first census imports some 400 modules (numpy, DuckDB, typer, nsysq's own) before it reads a row.
Each import makes thousands of objects, and the collector, run every 700 allocations, walks the
young ones and now and then all of them: about 10 ms of a 2 MB census (0.34 s), measured by
``gc.callbacks``. The command pauses it (:func:`pause`), and :func:`resume` moves every object made
so far into the permanent generation (``gc.freeze``: modules, functions, classes, which live as
long as the process) and restarts it, so later collections walk only what the analysis makes. A
library user's process is left alone: only a paused collector is resumed.
"""

from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    """Stop automatic collection until :func:`resume` (the ``nsysq`` command's first step)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """Freeze what exists and collect automatically again, when :func:`pause` stopped it: where the
    start-up's imports are over (a trace opened, nsysq's threads about to start)."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
