"""Event tables of a first (direct) read, decoded from the file's pages a column at a time.

On the direct path each canonical view normally reads through DuckDB's sqlite scanner. For the big
integer-only event tables (kernels, memcpys, memsets, CUDA API calls) the view reads numpy arrays
instead when the page decoder (:mod:`nsysq.export.pages`) is available, registered in DuckDB as
``nsysq_rows_<table>``. Columns are decoded on first use: the view lists every canonical column,
and one not decoded yet is ``error('nsysq-unloaded:<table>:<column>')``, which DuckDB only evaluates
when a query really reads it (before a table's first decode, any scan of its view raises).
:meth:`DecodedTables.run` decodes the columns a query's header declares up front and, should the
query read another, decodes that one and runs it again. A table the decoder cannot handle goes
back to the sqlite scanner for good (same rows, same answers).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from nsysq.base.errors import DamagedTraceError
from nsysq.export import engine, pages, schema
from nsysq.export.check import SourceSchema
from nsysq.export.schema import quote

if TYPE_CHECKING:
    import duckdb

T = TypeVar("T")
_PREFETCH = ThreadPoolExecutor(1, thread_name_prefix="nsysq-prefetch")
_SENTINEL = "nsysq-unloaded:"
_UNLOADED = re.compile(re.escape(_SENTINEL) + r"([A-Za-z_][A-Za-z0-9_]*):([A-Za-z_][A-Za-z0-9_]*)")
# The tables decoded from pages, with the columns read together on a table's first use (what
# census, lineup, copies and most questions need, in one pass).
CORE: Mapping[str, tuple[str, ...]] = {
    schema.KERNEL: ("start", "end", "shortName", "demangledName"),
    schema.MEMCPY: ("start", "end", "bytes", "copyKind"),
    schema.MEMSET: ("start", "end", "bytes"),
    schema.RUNTIME: ("start", "end"),
}


class DecodedTable:
    """One table's decoded columns; ``mode`` is "pages" or "sqlite (<reason>)"."""

    def __init__(self, path: Path, source: SourceSchema, table: str) -> None:
        self._con: duckdb.DuckDBPyConnection | None = None
        self._path = path
        self._source = source
        self.table = table
        self._arrays = "nsysq_rows_" + table.lower()
        self._present = set(source.columns.get(table, ()))
        self._values: dict[str, Any] = {}
        self._nulls: dict[str, Any] = {}
        self._pending: Future[pages.Columns] | None = None
        self._pending_columns: tuple[str, ...] = ()  # what the pending decode reads
        self._cancel = threading.Event()
        self.mode = "pages"
        if not source.has(table):
            self.mode = "sqlite (no such table)"
        elif not pages.available():
            self.mode = "sqlite (page decoder not available)"

    def attach(self, con: duckdb.DuckDBPyConnection) -> None:
        """Put this table's view on ``con`` over the decoded arrays (when decoding from pages)."""
        self._con = con
        if self.active:
            self._create_view()

    @property
    def active(self) -> bool:
        return self.mode == "pages"

    @property
    def loaded(self) -> tuple[str, ...]:
        return tuple(self._values)

    def _create_view(self) -> None:
        items = []
        for column, ctype in schema.CANONICAL[self.table]:
            if column not in self._present:
                items.append(f"CAST(NULL AS {ctype}) AS {quote(column)}")
            elif column in self._values:
                items.append(f"{self._value_sql(column, ctype)} AS {quote(column)}")
            else:
                items.append(f"CAST(error('{_SENTINEL}{self.table}:{column}') AS {ctype}) AS {quote(column)}")
        gate = f"(SELECT CAST(error('{_SENTINEL}{self.table}:start') AS BIGINT) AS g) WHERE g = 0"
        self._set_view(f"SELECT {', '.join(items)} FROM {self._arrays if self._values else gate}")

    def _value_sql(self, column: str, ctype: str) -> str:
        """A decoded column in the view: its array, or the one value it holds (never registered)."""
        values, mask = self._values[column], self._nulls.get(column)
        value = f"CAST({int(values[0])} AS {ctype})" if pages.is_constant(values) else quote(column)
        if mask is None:
            return value
        if pages.is_constant(mask):  # every row NULL (a mask without a NULL is dropped)
            return f"CAST(NULL AS {ctype})"
        return f"CASE WHEN {quote(column + '__null')} THEN NULL ELSE {value} END"

    def _register(self) -> None:
        """Register the decoded arrays DuckDB reads (a column holding one value is in the view's SQL
        instead); when every column holds one value, the first is registered for the row count."""
        frame = {c: v for c, v in self._values.items() if not pages.is_constant(v)}
        frame.update({f"{c}__null": m for c, m in self._nulls.items() if not pages.is_constant(m)})
        if not frame:
            import numpy as np

            first = next(iter(self._values))
            frame[first] = np.ascontiguousarray(self._values[first])
        with engine.pandas_free_binding():
            self._connection.register(self._arrays, frame)
        self._create_view()

    @property
    def _connection(self) -> duckdb.DuckDBPyConnection:
        if self._con is None:
            raise RuntimeError("DecodedTable used before attach()")
        return self._con

    def _set_view(self, select: str) -> None:
        self._connection.execute(f"CREATE OR REPLACE VIEW main.{quote(self.table)} AS {select}")

    def _fall_back(self, reason: str) -> None:
        self.release()
        self.mode = f"sqlite ({reason})"
        self._set_view(schema.view_sql(self.table, self._source))

    def _wanted(self, columns: Iterable[str]) -> list[str]:
        need = [c for c in dict.fromkeys(columns) if c in self._present and c not in self._values]
        if self._values and not need:
            return []
        first = () if self._values else CORE[self.table]
        return [c for c in dict.fromkeys((*first, *need)) if c in self._present and c not in self._values]

    def prefetch(self, columns: Iterable[str]) -> None:
        """Start decoding ``columns`` in a background thread; the next load() collects them."""
        if not self.active or self._pending is not None:
            return
        wanted = self._wanted(columns)
        if wanted:
            self._pending_columns = tuple(wanted)
            self._pending = _PREFETCH.submit(
                pages.read_columns, self._path, self.table, wanted, cancel=self._cancel
            )

    def decoding(self, columns: Iterable[str]) -> Callable[[], dict[str, tuple[Any, Any]] | None] | None:
        """A wait for ``columns`` (those the table has), decoded already or by the background decode
        :meth:`prefetch` started, that any thread may call: it returns their values and NULL masks
        as :meth:`arrays` does, or None when the decode failed (the next :meth:`load` says why). None
        when some of them are neither (then :meth:`arrays`, on the connection's thread)."""
        wanted = [c for c in dict.fromkeys(columns) if c in self._present]
        pending = self._pending
        ready = {c: (self._values[c], self._nulls.get(c)) for c in wanted if c in self._values}
        later = [c for c in wanted if c not in ready]
        if not self.active or (later and (pending is None or not set(later) <= set(self._pending_columns))):
            return None

        def wait() -> dict[str, tuple[Any, Any]] | None:
            if not later or pending is None:
                return ready
            try:
                decoded = pending.result()
            except Exception:  # noqa: BLE001 (the main thread's load names it)
                return None
            return {**ready, **{c: (decoded.values[c], decoded.nulls.get(c)) for c in later}}

        return wait

    def cancel(self) -> None:
        """Stop a background decode nobody will collect (the trace is being closed)."""
        self._cancel.set()

    def load(self, columns: Iterable[str]) -> None:
        """Decode ``columns`` not decoded yet (on the first load, the core ones as well)."""
        if not self.active:
            return
        if self._pending is not None:
            pending, self._pending, self._pending_columns = self._pending, None, ()
            try:
                self._add(pending.result())
            except pages.PagesUnsupported as exc:
                self._fall_back(str(exc))
                return
            except pages.PagesDamaged as exc:
                raise self._damaged(exc) from None
        wanted = self._wanted(columns)
        if not wanted:
            if not self._values:  # nothing decodable: an empty view would hide the table's rows
                self._fall_back("none of its columns can be decoded")
            return
        try:
            self._add(pages.read_columns(self._path, self.table, wanted))
        except pages.PagesUnsupported as exc:
            self._fall_back(str(exc))
        except pages.PagesDamaged as exc:
            raise self._damaged(exc) from None

    def arrays(self, columns: Iterable[str]) -> dict[str, tuple[Any, Any]] | None:
        """The decoded values of ``columns`` with their NULL masks (None: no NULL), decoding any not
        decoded yet; a column the table lacks is left out. None when the table is read through
        the scanner (then read its rows with SQL)."""
        wanted = tuple(columns)
        self.load(wanted)
        if not self.active:
            return None
        return {c: (self._values[c], self._nulls.get(c)) for c in wanted if c in self._values}

    def _damaged(self, exc: pages.PagesDamaged) -> DamagedTraceError:
        """Damage is never a reason to fall back: the scanner may answer it with a quiet part."""
        self.release()
        return DamagedTraceError(self._path, exc.table or self.table, exc.page, exc.detail)

    def _add(self, decoded: pages.Columns) -> None:
        self._values.update(decoded.values)
        self._nulls.update(decoded.nulls)
        self._register()

    def release_columns(self, columns: Iterable[str]) -> None:
        """Drop the decoded arrays of ``columns`` (the core ones stay): a later query that reads one
        decodes it again."""
        drop = [c for c in columns if c in self._values and c not in CORE[self.table]]
        if not drop:
            return
        for column in drop:
            del self._values[column]
            self._nulls.pop(column, None)
        self._register()

    def release(self) -> None:
        """Drop the decoded arrays (memory); the next query that needs them decodes them again."""
        if self._values:
            self._connection.unregister(self._arrays)
        self._values.clear()
        self._nulls.clear()
        if self.active:
            self._create_view()


class DecodedTables:
    """The decoded event tables of one direct-read connection."""

    def __init__(self, path: Path, source: SourceSchema) -> None:
        self.tables = {table: DecodedTable(path, source, table) for table in CORE}
        self.source = source

    def from_pages(self, table: str) -> bool:
        """Whether ``table``'s rows are read from decoded pages (not through the sqlite scanner)."""
        return table in self.tables and self.tables[table].active

    def attach(self, con: duckdb.DuckDBPyConnection) -> None:
        for table in self.tables.values():
            table.attach(con)

    def prefetch(self, declared: Mapping[str, Iterable[str]]) -> None:
        for table, columns in declared.items():
            if table in self.tables:
                self.tables[table].prefetch(columns)

    def cancel(self) -> None:
        for table in self.tables.values():
            table.cancel()

    def run(
        self,
        call: Callable[[], T],
        declared: Mapping[str, Iterable[str]] | None = None,
        before: Callable[[], None] | None = None,
    ) -> T:
        """Run ``call`` (a DuckDB execution) with the ``declared`` columns of each table decoded;
        decode and retry any other column it turns out to read. ``before`` runs before each try,
        once the tables are decoded or fallen back (the scanner guard)."""
        import duckdb

        for table, columns in (declared or {}).items():
            if table in self.tables:
                self.tables[table].load(columns)
        while True:
            if before is not None:
                before()
            try:
                return call()
            except duckdb.Error as exc:
                match = _UNLOADED.search(str(exc))
                decoded = self.tables.get(match.group(1)) if match else None
                if match is None or decoded is None or not decoded.active or match.group(2) in decoded.loaded:
                    raise
                decoded.load([match.group(2)])
