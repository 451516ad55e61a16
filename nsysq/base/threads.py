"""What a process must do before nsysq starts a thread of its own."""

from __future__ import annotations

import os

# numpy's first import sets this with putenv and removes it with unsetenv unless it is already set.
_NUMPY_IMPORT_WRITES = "OPENBLAS_MAIN_FREE"


def before_threads() -> None:
    """Leave numpy's first import nothing to write to the process environment.

    glibc's environment is not safe to change while another thread reads it (``getenv``), and
    numpy's first import changes it (``OPENBLAS_MAIN_FREE``, set for the import, then removed): a
    page-decoding thread importing numpy while the main thread's DuckDB called ``getenv`` ended
    ``nsysq export`` with SIGSEGV. Called by the thread that starts nsysq's threads, before it
    starts them (the CLI, a trace's first open, the fleet's pool, the MCP server): with the variable
    already set, to the value numpy gives it, the import writes nothing. Only the first call
    writes; later calls change nothing.
    """
    if _NUMPY_IMPORT_WRITES not in os.environ:
        os.environ[_NUMPY_IMPORT_WRITES] = "1"
