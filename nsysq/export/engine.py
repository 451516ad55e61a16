"""DuckDB connections with the sqlite extension loaded from the installed package, never the network."""

from __future__ import annotations

import importlib.resources
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from importlib.abc import Loader
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nsysq.base.errors import ExtensionUnavailableError
from nsysq.export.schema import quote

if TYPE_CHECKING:
    import duckdb

_FIX = "install it with: pip install 'duckdb-extension-sqlite-scanner=={v}' (it must match duckdb {v})"


def extension_path() -> Path:
    """Return the sqlite_scanner binary shipped by the duckdb-extension-sqlite-scanner package."""
    import duckdb

    version = duckdb.__version__
    try:
        root = importlib.resources.files("duckdb_extension_sqlite_scanner")
    except ModuleNotFoundError:
        raise ExtensionUnavailableError(
            "DuckDB's sqlite extension is not installed; " + _FIX.format(v=version)
        ) from None
    path = Path(str(root)) / "extensions" / f"v{version}" / "sqlite_scanner.duckdb_extension"
    if not path.is_file():
        raise ExtensionUnavailableError(
            f"DuckDB's sqlite extension for duckdb {version} is missing from the installed "
            "package; " + _FIX.format(v=version)
        )
    return path


_PER_THREAD = threading.local()


@contextmanager
def one_instance_per_thread() -> Iterator[None]:
    """Within this block, ``connect()`` (in-memory, with the sqlite extension) in this thread
    returns a new connection to one DuckDB instance kept for the thread, which loaded the extension
    once: a new instance and its extension load would otherwise be paid per trace when one thread
    reads trace after trace (nsysq fleet). The connections share the instance's catalog, so use it
    for one open trace at a time per thread (the reader detaches the previous export before
    attaching the next)."""
    before = getattr(_PER_THREAD, "enabled", False)
    _PER_THREAD.enabled = True
    try:
        yield
    finally:
        _PER_THREAD.enabled = before


def share_cores(threads: int) -> None:
    """In this thread, the instance :func:`one_instance_per_thread` keeps runs its queries on
    ``threads`` threads: a pool of N workers on C cores gives each C // N, so DuckDB's own threads
    do not compete with the other workers' (the local fleet engine calls it in each of its threads;
    elsewhere DuckDB uses every core)."""
    _PER_THREAD.threads = threads


def _thread_connection() -> duckdb.DuckDBPyConnection | None:
    """A new connection to this thread's kept instance, or None when not asked for."""
    if not getattr(_PER_THREAD, "enabled", False):
        return None
    instance = getattr(_PER_THREAD, "instance", None)
    if instance is None:
        instance = _PER_THREAD.instance = connect(sqlite=True, _share=False)
        threads = getattr(_PER_THREAD, "threads", None)
        if threads is not None:
            instance.execute(f"SET threads = {int(threads)}")
    import duckdb

    con: duckdb.DuckDBPyConnection = instance.cursor()
    try:  # as in connect(): under Jupyter without ipywidgets DuckDB refuses the change
        con.execute("SET enable_progress_bar = false")
    except duckdb.Error:
        pass
    return con


def _config(*, sqlite: bool) -> dict[str, str | bool | int | float | list[str]]:
    """Every connection's settings; ``sqlite``: it will load the sqlite extension."""
    return {
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "allow_community_extensions": False,
        # The one extension nsysq loads is a file of an installed package (extension_path), trusted
        # as duckdb's own library and nsysq's modules beside it are: whoever can rewrite it can
        # rewrite those. DuckDB's signature check hashes its 35 MB on every load (0.045 s wall,
        # 0.085 s CPU of every direct read); nothing else is loaded (autoload is off, and nsysq sql
        # runs one SELECT, never a LOAD).
        "allow_unsigned_extensions": sqlite,
    }


def connect(
    database: str = ":memory:", *, read_only: bool = False, sqlite: bool = True, _share: bool = True
) -> duckdb.DuckDBPyConnection:
    """Open DuckDB with autoinstall/autoload off and the sqlite extension loaded from disk.

    ``sqlite=False`` skips loading the extension (about 0.1 s): for reading nsysq's own cache.
    Inside :func:`one_instance_per_thread`, an in-memory connection with the extension is a new
    connection to the thread's kept instance.
    """
    import duckdb

    if sqlite and database == ":memory:" and _share:
        shared = _thread_connection()
        if shared is not None:
            return shared

    spare = _SPARE.pop(sqlite, None) if database == ":memory:" and not read_only else None
    con = spare or duckdb.connect(database, read_only=read_only, config=_config(sqlite=sqlite))
    try:  # DuckDB's own bar would write to stdout on queries over 2 s
        con.execute("SET enable_progress_bar = false")
    except duckdb.Error:  # under Jupyter DuckDB refuses any change without ipywidgets (a widget, not stdout)
        pass
    if not sqlite:
        return con
    try:
        con.execute(f"LOAD '{extension_path().as_posix()}'")
    except duckdb.Error as exc:
        con.close()
        raise ExtensionUnavailableError(
            f"DuckDB could not load its sqlite extension ({str(exc).splitlines()[0]}); "
            + _FIX.format(v=duckdb.__version__)
        ) from None
    return con


_REFUSALS_LOCK = threading.Lock()
_refusals = 0  # pandas_free_binding blocks open, in any thread (sys.modules is the process's)


@contextmanager
def pandas_free_binding() -> Iterator[None]:
    """Bind Python parameters without DuckDB importing pandas (0.5 s on every CLI call).

    DuckDB's Python binding imports pandas the first time it converts a parameter, only to check
    for pandas types. When pandas is not loaded yet, mark it unimportable for the duration of the
    call (DuckDB then skips those checks) and restore the module table afterwards, so a later
    ``import pandas`` (``Table.to_pandas``, plots) works as usual. Measured: the census CLI drops
    from 0.95 s to 0.45 s whole process. Blocks open on several threads at once (the fleet's thread
    engine) share the mark: the last one out removes it, never one while another still binds.
    """
    global _refusals
    with _REFUSALS_LOCK:
        if not _refusals and "pandas" in sys.modules:  # loaded for real: nothing to do
            refused = False
        else:
            refused = True
            _refusals += 1
            sys.modules["pandas"] = None  # type: ignore[assignment]
    if not refused:
        yield
        return
    try:
        yield
    finally:
        with _REFUSALS_LOCK:
            _refusals -= 1
            if not _refusals and sys.modules.get("pandas", 0) is None:
                del sys.modules["pandas"]


def table_from_rows(
    con: duckdb.DuckDBPyConnection,
    name: str,
    columns: Sequence[tuple[str, str]],
    rows: Sequence[Sequence[Any]],
) -> None:
    """Create (or replace) temp table ``name`` from Python rows in one statement: one typed list
    parameter per column, unnested side by side. ``columns``: (name, SQL type) pairs. Much faster
    than one INSERT per row (executemany: ~1 ms a row)."""
    values = list(zip(*rows, strict=True)) if rows else [() for _ in columns]
    select = ", ".join(f"unnest($c{i}::{ctype}[]) AS {col}" for i, (col, ctype) in enumerate(columns))
    params = {f"c{i}": list(col) for i, col in enumerate(values)}
    with pandas_free_binding():
        con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT {select}", params)


def table_from_arrays(
    con: duckdb.DuckDBPyConnection,
    name: str,
    arrays: Mapping[str, Any],
    *,
    strings: Mapping[str, Sequence[str]] | None = None,
) -> None:
    """Create (or replace) temp table ``name`` from numpy columns of one length (their types:
    int64 BIGINT, float64 DOUBLE, an object array of str VARCHAR), read in place by one statement:
    thousands of rows in a millisecond, where :func:`table_from_rows`' list parameters take 0.2 s
    for 12,500 rows. ``strings``: as :func:`decoded_source` reads them (an object column costs
    DuckDB a look at every value: 40 ms for 12,500 rows)."""
    scratch = f"nsysq_arrays_of_{name}"
    with pandas_free_binding():
        con.register(scratch, dict(arrays))
        held: list[str] = []
        try:
            source, held = decoded_source(con, scratch, strings or {})
            con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT * FROM {source}")
        finally:
            con.unregister(scratch)
            for table in held:
                con.execute(f"DROP TABLE IF EXISTS {table}")


def decoded_source(
    con: duckdb.DuckDBPyConnection, scratch: str, strings: Mapping[str, Sequence[str]]
) -> tuple[str, list[str]]:
    """A FROM clause over the registered relation ``scratch`` in which each column named in
    ``strings`` (codes, 0-based ints) reads as the string its code stands for (VARCHAR), with no
    Python string per row handed to DuckDB; and the one-row temp tables it made to hold each
    column's strings as a list (``<scratch>_<column>``), which the caller drops once the clause is
    no longer read (a view over it reads them for as long as it lives)."""
    if not strings:
        return scratch, []
    import numpy as np

    lookups, replaced, held = [], [], []
    for i, (column, values) in enumerate(strings.items()):
        table, alias = f"{scratch}_{column}", f"_nsysq_s{i}"
        column_in = {"i": np.arange(len(values), dtype=np.int64), "v": np.asarray(values, dtype=object)}
        con.register(f"{table}_in", column_in)
        try:
            con.execute(
                f"CREATE OR REPLACE TEMP TABLE {table} AS SELECT list(v ORDER BY i) AS s FROM {table}_in"
            )
        finally:
            con.unregister(f"{table}_in")
        held.append(table)
        lookups.append(f"{table} AS {alias}")
        replaced.append(f"{alias}.s[{quote(column)} + 1] AS {quote(column)}")
    return f"(SELECT * REPLACE ({', '.join(replaced)}) FROM {scratch}, {', '.join(lookups)})", held


@contextmanager
def bounded_memory(con: duckdb.DuckDBPyConnection, limit: str, spill: Path) -> Iterator[None]:
    """Hold DuckDB's working memory (sorts, windows, hash tables) on ``con`` to ``limit`` (e.g.
    ``"300MB"``) for the duration: past it DuckDB spills into the directory ``spill``, which the
    caller owns and removes once the connection is closed (DuckDB may keep a spilled block there
    as long as a temp table holds it). The previous limit comes back on exit. DuckDB cannot move a
    temporary directory it has used: when the connection spilled elsewhere before, the block runs
    without a bound rather than spill into the working directory (DuckDB's default)."""
    import duckdb

    limit_before, spill_before = con.execute(
        "SELECT current_setting('memory_limit'), current_setting('temp_directory')"
    ).fetchone() or ("", "")
    if Path(str(spill_before)) != spill:
        try:
            con.execute(f"SET temp_directory = '{spill.as_posix()}'")
        except duckdb.Error:
            yield
            return
    con.execute(f"SET memory_limit = '{limit}'")
    try:
        yield
    finally:  # back to the default when it was the default (a SET of its text would round it)
        con.execute("RESET memory_limit")
        if con.execute("SELECT current_setting('memory_limit')").fetchone() != (limit_before,):
            con.execute(f"SET memory_limit = '{limit_before}'")


# -- the first import of duckdb -------------------------------------------------------------------
_SPARE: dict[bool, duckdb.DuckDBPyConnection] = {}
"""The in-memory connection made for ``import duckdb`` (:func:`quick_duckdb_import`), by the
``sqlite`` argument of the :func:`connect` call it is for, until that call takes it."""
_first_reads_export = True  # the sqlite argument of the first connect() (first_connection_reads)


def first_connection_reads(*, export: bool) -> None:
    """Say, before duckdb's first import, whether the first connection will read an export (with
    the sqlite extension) or a cached copy (without): the connection :func:`quick_duckdb_import`
    opens is made with that one's settings (another connect() opens its own, as without it)."""
    global _first_reads_export
    _first_reads_export = export


def quick_duckdb_import() -> None:
    """Make this process's first ``import duckdb`` cheaper by two things it does for nothing.

    - Its version: duckdb's ``_version`` module asks ``importlib.metadata.version("duckdb")``:
      importing importlib.metadata (email, zipfile, csv, ...) and scanning ``sys.path`` costs 0.02 s
      of CPU on every command that opens a trace, more on a loaded machine. A stand-in for
      importlib.metadata, there while ``duckdb._version`` runs, reads the ``Version:`` line of the
      ``name-*.dist-info/METADATA`` beside the package, the file importlib.metadata reads; any other
      name, or an install without exactly one such folder, goes to the real module.
    - Its default connection: ``duckdb._dbapi_type_object`` builds type objects from type names
      (``DuckDBPyType("DECIMAL")``), and parsing a name needs a connection: DuckDB opens its default
      one, a whole in-memory instance (0.02-0.03 s of the main thread), which nsysq never uses.
      Instead the connection :func:`connect` would open first is opened here, with the same settings
      (for an export, or for a cached copy: :func:`first_connection_reads`), made the default while
      the module runs and kept in :data:`_SPARE` for :func:`connect` to take. It stays duckdb's
      default connection (DuckDB has no way to unset it), which nothing in nsysq uses.

    The ``nsysq`` program (``nsysq.cli.root.main``) calls this before any command; nothing of it is
    left in ``sys.meta_path`` once duckdb has imported both modules."""
    if "duckdb" not in sys.modules and not any(isinstance(f, _DuckDBFirstImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _DuckDBFirstImport())


class _DuckDBFirstImport:
    """The meta path finder of :func:`quick_duckdb_import`: for duckdb's two modules, once each."""

    def __init__(self) -> None:
        self._pending = {
            "duckdb._dbapi_type_object": _WithSpareConnection,
            "duckdb._version": _WithDistVersion,
        }

    def find_spec(self, name: str, path: Sequence[str] | None, target: object = None) -> Any:
        wrapper = self._pending.pop(name, None)
        if wrapper is None:
            return None
        if not self._pending:
            sys.meta_path.remove(self)
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec(name, path)
        if wrapper is _WithDistVersion and "importlib.metadata" in sys.modules:
            return spec  # the real module is there already: nothing to save
        if spec is not None and spec.loader is not None:
            spec.loader = wrapper(spec.loader, Path(spec.origin or ".").parent.parent)
        return spec


class _WithSpareConnection(Loader):
    """A loader that runs the real one with nsysq's next connection as duckdb's default."""

    def __init__(self, loader: Any, site: Path) -> None:
        self._loader = loader

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        import _duckdb  # duckdb's compiled core, which duckdb/__init__.py imported before this module

        sqlite = _first_reads_export
        if hasattr(_duckdb, "set_default_connection"):  # else duckdb's own default, as without nsysq
            try:
                con = _duckdb.connect(":memory:", config=_config(sqlite=sqlite))
            except _duckdb.Error:
                pass  # connect() meets the same error, where nsysq reports it
            else:
                _duckdb.set_default_connection(con)
                _SPARE[sqlite] = con
        self._loader.exec_module(module)


class _WithDistVersion(Loader):
    """A loader that runs the real one with the stand-in importlib.metadata in sys.modules."""

    def __init__(self, loader: Any, site: Path) -> None:
        self._loader = loader
        self._site = site
        self._stand_in: object = None

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        import types

        stand_in = self._stand_in = types.ModuleType("importlib.metadata")
        stand_in.version = self.version  # type: ignore[attr-defined]
        sys.modules["importlib.metadata"] = stand_in
        try:
            self._loader.exec_module(module)
        finally:
            self._real_metadata()

    def _real_metadata(self) -> None:
        if self._stand_in is not None and sys.modules.get("importlib.metadata") is self._stand_in:
            del sys.modules["importlib.metadata"]

    def version(self, name: str) -> str:
        """``name``'s version from its one dist-info folder beside the package, else importlib.metadata's."""
        found = list(self._site.glob(f"{name}-*.dist-info"))
        if len(found) == 1:
            try:
                for line in (found[0] / "METADATA").read_text(encoding="utf-8").splitlines():
                    if line.startswith("Version:"):
                        return line.split(":", 1)[1].strip()
                    if not line:
                        break
            except OSError:
                pass
        self._real_metadata()
        from importlib.metadata import version

        return version(name)

    def __getattr__(self, attr: str) -> Any:  # get_source, is_package, ...: the real loader's
        return getattr(self._loader, attr)
