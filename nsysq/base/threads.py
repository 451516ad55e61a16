"""What a process must do before nsysq starts a thread of its own."""

from __future__ import annotations

import contextlib
import importlib
import os
import threading
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar, cast

from nsysq.base import collector

T = TypeVar("T")
U = TypeVar("U")

# numpy's first import sets this with putenv and removes it with unsetenv unless it is already set.
_NUMPY_IMPORT_WRITES = "OPENBLAS_MAIN_FREE"


def quiet_numpy_import() -> None:
    """Make numpy's first import write nothing to the environment (see :func:`before_threads`):
    called before threads that may read it start (DuckDB's), where numpy itself may not be needed."""
    if _NUMPY_IMPORT_WRITES not in os.environ:
        os.environ[_NUMPY_IMPORT_WRITES] = "1"


def before_threads(imports: Iterable[str] = ()) -> None:
    """Leave nsysq's threads no module to import and numpy's import nothing to write.

    Python's imports are not safe to run in two threads at once: on Python 3.11, the page-decoding
    thread importing numpy while the main thread imported DuckDB failed, once in a CI run, with
    numpy's "Importing the numpy C-extensions failed" (an import in the other thread seen partially
    initialized). numpy, and ``imports`` (what the threads about to start import: the fleet's and
    the MCP server's name theirs), are imported here, by the thread that starts nsysq's threads,
    before it starts them; tests/test_reader.py fails any import on another thread. And glibc's
    environment is not safe to change while another thread reads it (``getenv``), which numpy's
    first import does (``OPENBLAS_MAIN_FREE``, set for the import, then removed): with the variable
    already set, to the value numpy gives it, the import writes nothing. Called before nsysq starts
    a thread: a trace's first open, the fleet's pool and thread engine, the MCP server. Modules
    already imported cost a dictionary lookup.
    """
    quiet_numpy_import()
    import numpy  # noqa: F401  (imported for the threads started next)

    for name in imports:
        importlib.import_module(name)
    collector.resume()  # a command's start-up is over once its threads start (collector.py)


class Background(Generic[T]):
    """``compute()`` on a thread of its own, started at once (after :func:`before_threads`), for
    numpy work beside the main thread's (numpy lets go of the GIL in its loops: the two cores share
    them). ``compute`` must touch no session or DuckDB connection (the main thread's alone) and
    import nothing. :meth:`result` waits for it and returns its value or raises its exception. The
    thread is a daemon: a process that ends without asking leaves it behind."""

    def __init__(self, compute: Callable[[], T]) -> None:
        before_threads()
        self._compute = compute
        self._value: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="nsysq-background", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._compute()
        except BaseException as exc:  # handed to the thread that asks for the result
            self._error = exc
        finally:
            del self._compute  # what it held goes with it (memory)

    def done(self) -> bool:
        """Whether ``compute()`` has returned (or raised): :meth:`result` would not wait."""
        return not self._thread.is_alive()

    def result(self) -> T:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return cast(T, self._value)  # set when no error was


def side_by_side(here: Callable[[], T], there: Callable[[], U]) -> tuple[T, U]:
    """``here()`` on this thread while ``there()`` runs in the :class:`Background` (the rules are
    its); waits for ``there`` whatever ``here`` does, so that nothing outlives the call, and
    returns both results (the first exception, when one raises)."""
    other = Background(there)
    try:
        mine = here()
    except BaseException:
        with contextlib.suppress(BaseException):
            other.result()
        raise
    return mine, other.result()
