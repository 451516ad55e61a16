"""How a Trace reads its file: chosen once, when it opens, behind one small interface.

Three readers, tried in this order::

    cached copy        a complete DuckDB copy of the canonical tables (nsysq.export.cache): no SQLite at all
    pages + scanner    event tables decoded from the file's pages (nsysq.export.decoded); every other table,
                       or one the decoder does not handle, through DuckDB's sqlite scanner
    scanner only       the same, when the page decoder is off (NSYSQ_PAGE_READER=0) or not built

Every table whose rows come through DuckDB's sqlite scanner is checked before DuckDB reads it
(:class:`ScannerGuard`, once per table a query declares or, for ad-hoc SQL, names): the scanner
splits a table into rowid ranges read in parallel and, on a malformed b-tree, quietly skips rows;
DuckDB cuts or trips on text that is not valid UTF-8. The table's b-tree must pass the page
decoder's structural checks (interior keys in order, every leaf's rowids in order and within the
range its parent's keys give, which SQLite's rowid seeks trust and its count does not look at),
its text must be valid UTF-8, and its row count must equal the scanner's (``pages.verified_rows``:
one pass of the compiled decoder over the leaves; where it cannot, SQLite reads the table whole and
``pages.verify_tree`` checks the b-tree); otherwise the file is damaged
(:class:`~nsysq.base.errors.DamagedTraceError`).
Tables decoded from pages are not checked this way: the decoder itself refuses pages that
contradict the format (``pages.PagesDamaged``), with the same checks of the b-tree.
Damage found anywhere (pages, scanner, SQLite) ends the read with that error, never a fallback, and
the damaged file never gets a cached copy.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from nsysq import catalog
from nsysq.base.errors import CorruptTraceError, DamagedTraceError
from nsysq.base.threads import before_threads, quiet_numpy_import
from nsysq.export import cache as cache_mod
from nsysq.export import engine, pages, schema
from nsysq.export.check import SourceSchema, checked_count, connect_readonly, damage_message
from nsysq.export.decoded import DecodedTables

if TYPE_CHECKING:
    import duckdb

T = TypeVar("T")
Declared = Mapping[str, Iterable[str]]


CacheMode = bool | Literal["build", "reuse"]
"""How a trace uses its cached copy: True (use it, or start building one for a large trace), False
(read the file only; write nothing to the cache), "build" (build the copy now), "reuse" (use a
complete copy when there is one; never start building one)."""


def open_reader(
    path: Path, source: SourceSchema, *, cache: CacheMode, prefetch: str | tuple[str, ...] | None
) -> Reader:
    """The reader for ``path``: its cached copy when complete, else the file itself.

    ``cache``: True (use the copy, or have one built after a direct read of a large trace), False
    (write nothing to the cache), "build" (build the copy now) or "reuse" (use a complete copy, keep
    answers, never start a build). ``prefetch``: the packaged query (or queries)
    whose columns start decoding at once on a direct read (None: decode on demand).
    """
    # Decode first when no copy can answer: neither this module nor nsysq.export.decoded imports DuckDB,
    # so the pages decode while DuckDB, the cache lookup and the sqlite extension load.
    quiet_numpy_import()  # DuckDB's threads start below: numpy's import, whenever it comes, writes nothing
    early = cache is False or (cache in (True, "reuse") and not cache_mod.may_have_copy(path))
    engine.first_connection_reads(export=early)  # else the cached copy's, when DuckDB is not loaded yet
    decoded = _start_decoding(path, source, prefetch) if early else None
    copy, state = cache_mod.open_copy(path, source, cache)
    if copy is not None:  # a complete cached copy: no SQLite, not even its extension
        if decoded is not None:
            decoded.cancel()
        return Reader(path, copy, state, decoded=None)
    decoded = decoded or _start_decoding(path, source, prefetch)
    con = _attach(path, source)
    decoded.attach(con)
    return Reader(path, con, state, decoded=decoded)


def _start_decoding(
    path: Path, source: SourceSchema, prefetch: str | tuple[str, ...] | None
) -> DecodedTables:
    before_threads()  # the decode starts the first thread (numpy's import in it); a cached copy needs neither
    decoded = DecodedTables(path, source)
    if prefetch is not None:
        decoded.prefetch(catalog.declared(prefetch))
    return decoded


def _attach(path: Path, source: SourceSchema) -> duckdb.DuckDBPyConnection:
    """DuckDB with the export attached read-only and every canonical view over the scanner."""
    import duckdb

    con = engine.connect()
    try:
        con.execute("DETACH DATABASE IF EXISTS src")  # a kept instance's previous export (engine.py)
        con.execute(f"ATTACH '{_sql_str(str(path))}' AS src (TYPE sqlite, READ_ONLY)")
        con.execute("BEGIN")  # one commit for the views and macros, not one each (5 ms of a census)
        schema.create_views(con, source, "src")
        for macro in catalog.macros():  # the derived views call them
            con.execute(macro.sql)
        for view, query in schema.DERIVED.items():
            con.execute(f"CREATE OR REPLACE VIEW main.{view} AS {catalog.get(query).sql}")
        con.execute("COMMIT")
    except (duckdb.ParserException, duckdb.BinderException):
        con.close()
        raise  # nsysq's own SQL is wrong: an internal error, not a reason to export the trace again
    except duckdb.Error as exc:
        con.close()
        first = str(exc).splitlines()[0]
        if damage_message(first):
            raise DamagedTraceError(path, None, None, first) from None
        raise CorruptTraceError(
            f"{path} could not be read ({first}); copy or export the trace again."
        ) from None
    return con


def _sql_str(text: str) -> str:
    return text.replace("'", "''")


class Reader:
    """One open trace's connection and how its rows are read. ``decoded`` is None on a cached copy."""

    def __init__(
        self,
        path: Path,
        con: duckdb.DuckDBPyConnection,
        state: cache_mod.CacheState,
        *,
        decoded: DecodedTables | None,
    ) -> None:
        self.path = path
        self.con = con
        self.cache = state
        self.decoded = decoded
        self.damaged = False
        self.guard = ScannerGuard(path, con, decoded.source) if decoded is not None else None

    def fetch(self, call: Callable[[], T], declared: Declared | None = None, sql: str = "") -> T:
        """Run ``call`` (one DuckDB execution of ``sql``) once the tables it reads can be trusted:
        the ``declared`` columns decoded, every table read through the scanner checked."""
        try:
            if self.decoded is None:
                return call()
            return self.decoded.run(call, declared, before=lambda: self._verify(sql, declared))
        except DamagedTraceError:
            self.damaged = True
            raise
        except UnicodeDecodeError as exc:
            self.damaged = True
            raise self._damage(f"a text value is not valid UTF-8 ({exc.reason})", declared, sql) from None
        except Exception as exc:
            if not _is_duckdb_error(exc):
                raise
            first = str(exc).splitlines()[0]
            if damage_message(first) or (_odd_value(first) and not quick_check_ok(self.path)):
                self.damaged = True
                raise self._damage(first, declared, sql) from None
            raise

    def _verify(self, sql: str, declared: Declared | None) -> None:
        if self.guard is None or self.decoded is None:
            return
        scanned = [t for t in read_tables(sql, declared) if not self.decoded.from_pages(t)]
        self.guard.verify(scanned)

    def _damage(self, detail: str, declared: Declared | None, sql: str) -> DamagedTraceError:
        table = locate_damage(self.path, read_tables(sql, declared))
        return DamagedTraceError(self.path, table, None, detail)

    # -- kept answers: the rows of queries already answered, when the cache keeps them ----------
    def answer_digest(self, sql: str, params: dict[str, Any], salt: str) -> str | None:
        """The name a query's answer is kept under (None when this read keeps no answers)."""
        return None if self.cache.key is None else cache_mod.answer_digest(sql, params, salt)

    def recall(self, digest: str | None) -> tuple[tuple[str, ...], list[tuple[Any, ...]]] | None:
        if digest is None or self.cache.key is None:
            return None
        return cache_mod.recall(self.cache.key, digest)

    def remember(self, digest: str | None, columns: tuple[str, ...], rows: list[tuple[Any, ...]]) -> None:
        if digest is not None and self.cache.key is not None and not self.damaged:
            cache_mod.remember(self.cache.key, digest, columns, rows)

    @property
    def kernel_reader(self) -> str:
        """How kernel rows are read: "cached copy", "pages" or "sqlite (<why not pages>)"."""
        return "cached copy" if self.decoded is None else self.decoded.tables[schema.KERNEL].mode

    def describe(self) -> str:
        """How this trace is read, for ``nsysq info``: the copy, or directly (and why)."""
        if self.cache.mode == "cached":
            return f"{self.cache.note} ({self.cache.file})"
        return self.cache.note

    def close(self) -> None:
        """Close the connection; after a direct read of a large, undamaged trace, start its copy."""
        if self.decoded is not None:
            self.decoded.cancel()  # a background decode nobody asked for yet stops at once
        self.con.close()
        if not self.damaged:
            cache_mod.after_direct_read(self.path, self.cache)


def _is_duckdb_error(exc: Exception) -> bool:
    import duckdb

    return isinstance(exc, duckdb.Error)


def _odd_value(message: str) -> bool:
    """A value of another type than its column holds: damage, or a file nsys did not write."""
    return "mismatch type" in message.lower()


def quick_check_ok(path: Path) -> bool:
    """SQLite's ``PRAGMA quick_check`` (an error path only: it reads every page)."""
    con = connect_readonly(path)
    try:
        rows = con.execute("PRAGMA quick_check").fetchall()
    except sqlite3.DatabaseError:
        return False
    finally:
        con.close()
    return rows == [("ok",)]


def read_tables(sql: str, declared: Declared | None) -> list[str]:
    """The canonical tables a statement reads: those its header declares (a packaged query's
    ``tables:`` line), else those its text names (ad-hoc SQL; every table when it cannot tell),
    with the tables behind a derived view it names."""
    import duckdb

    names = set(declared or ())
    if declared is None and sql:
        try:
            names = set(duckdb.get_table_names(sql))
        except duckdb.Error:
            names = set(schema.CANONICAL)
    for view, query in schema.DERIVED.items():
        if view in names:
            names |= set(catalog.get(query).table_names)
    return sorted(n for n in names if n in schema.CANONICAL)


class ScannerGuard:
    """Checks each table read through DuckDB's sqlite scanner once, before DuckDB reads its rows:
    its b-tree is well formed, its text is valid UTF-8 and the scanner counts its rows
    (``pages.verified_rows``: the page decoder's pass, or SQLite's reading and ``pages.verify_tree``)."""

    def __init__(self, path: Path, con: duckdb.DuckDBPyConnection, source: SourceSchema) -> None:
        self.path = path
        self.con = con
        self.source = source
        self.verified: set[str] = set()

    def verify(self, tables: Iterable[str]) -> None:
        import duckdb

        present = schema.present_tables(self.source)
        todo = [t for t in dict.fromkeys(tables) if t not in self.verified and t in present]
        if not todo:
            return
        # The pages' check runs in a thread (ctypes and sqlite3 release the GIL) while DuckDB counts
        # the same table through the scanner: a count(*) reads no text, so the order does not matter.
        with ThreadPoolExecutor(1, thread_name_prefix="nsysq-guard") as pool:
            texts = {t: schema.text_columns(t, self.source) for t in todo}
            readings = [pool.submit(pages.verified_rows, self.path, t, c) for t, c in texts.items()]
            for table, reading in zip(todo, readings, strict=True):
                try:
                    row = self.con.execute(f"SELECT count(*) FROM src.{schema.quote(table)}").fetchone()
                except duckdb.Error as exc:
                    reading.result()  # SQLite's own verdict on the table first, when it has one
                    raise DamagedTraceError(self.path, table, None, str(exc).splitlines()[0]) from None
                scanned = int(row[0]) if row else 0
                checked_count(self.path, table, reading.result(), scanned, "DuckDB's sqlite scanner")
                self.verified.add(table)


def locate_damage(path: Path, tables: Iterable[str]) -> str | None:
    """The first of ``tables`` SQLite cannot read whole or holds invalid UTF-8 (an error path only:
    reads every row)."""
    for table in tables:
        if not _reads_clean(path, table):
            return table
    return None


def _reads_clean(path: Path, table: str) -> bool:
    con = connect_readonly(path)
    con.text_factory = bytes
    try:
        for row in con.execute(f"SELECT * FROM {schema.quote(table)}"):
            for value in row:
                if isinstance(value, bytes):
                    value.decode("utf-8")
    except sqlite3.OperationalError as exc:
        return "no such table" in str(exc)
    except (sqlite3.DatabaseError, UnicodeDecodeError):
        return False
    finally:
        con.close()
    return True
