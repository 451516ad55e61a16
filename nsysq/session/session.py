"""The :class:`Session`: see the package docstring (:mod:`nsysq.session`)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nsysq import catalog
from nsysq.base import collector
from nsysq.base.errors import NoDataError, QueryError, UsageError
from nsysq.base.table import Table
from nsysq.export import engine, nsys_rep, schema
from nsysq.export.cache import CacheState
from nsysq.export.check import SourceSchema, connect_readonly, read_schema
from nsysq.export.decoded import CORE as DECODED_TABLES
from nsysq.export.decoded import DecodedTables
from nsysq.export.nsys_rep import ReportExport
from nsysq.export.reader import CacheMode, Reader, open_reader
from nsysq.session import scope as scope_mod
from nsysq.session.scope import IterationSelection, NvtxSelection, OpFilter, Scope
from nsysq.session.sqlscript import Statement, rows_table, script_for

PRESENCE_NOTE = "read from the export's first kernel row through SQLite; this query gives the same row"


def _first_row(path: Path, table: str) -> bool | None:
    """Whether ``table`` of the export holds a row, read through SQLite (None: SQLite refused; the
    query then says why, naming any damage)."""
    try:
        con = connect_readonly(path)
        try:
            row = con.execute(f"SELECT EXISTS (SELECT 1 FROM {schema.quote(table)})").fetchone()
            return bool(row[0])
        finally:
            con.close()
    except sqlite3.Error:
        return None


if TYPE_CHECKING:
    from nsysq.catalog.rules import Rule

_KERNEL_HINT = (
    "profile with nsys profile --trace=cuda (the default) and export again with nsys export --type=sqlite"
)


#: Turns an NVTX selection into the launches it keeps, reading the session (in the scope without
#: the selection); raises UsageError when it selects nothing.
Resolver = Callable[["Session", NvtxSelection], OpFilter]
#: Turns an iteration selection into the launches of those iterations, the same way.
IterationResolver = Callable[["Session", IterationSelection], OpFilter]


class Session:
    """An nsys SQLite export, opened read-only, read in one scope. Opened by ``nsysq.open`` (through
    :class:`nsysq.trace.Trace`); closed with it."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        cache: CacheMode = True,
        prefetch: str | tuple[str, ...] | None = "census",
        scope: Scope | None = None,
        resolve: Resolver | None = None,
        nsys: str | os.PathLike[str] | None = None,
        resolve_iterations: IterationResolver | None = None,
    ) -> None:
        """``cache``: True (use a cached copy, or start building one for a large trace), False
        (read the file only; write nothing to the cache), "build" (build the copy now), or "reuse"
        (use a complete copy when there is one; never start building one).
        ``prefetch``: on a direct read, the packaged query (or queries) whose columns start decoding from the
        file's pages at once, while DuckDB and its sqlite extension load (None: decode on demand).
        ``scope``: the GPU work every analysis reads (nsysq.session.scope; default the whole trace);
        ``resolve``: what turns the scope's NVTX selection, if any, into the launches it keeps;
        ``nsys``: the nsys that exports a ``.nsys-rep`` ``path`` (nsysq.export.nsys_rep: else
        NSYSQ_NSYS, PATH, the install folders); ``resolve_iterations``: what turns the scope's
        iteration selection, if any, into the launches it keeps."""
        source = nsys_rep.resolve(path, nsys=nsys)  # the one way a path becomes an export
        self.path: Path = source.path
        #: The report this export was made from (a ``.nsys-rep`` given), or None.
        self.exported: ReportExport | None = source.exported
        self.schema: SourceSchema = read_schema(self.path)
        self._reader: Reader = open_reader(self.path, self.schema, cache=cache, prefetch=prefetch)
        collector.resume()  # numpy and DuckDB are imported: what the command loaded stays unwalked
        self._con = self._reader.con
        self._rules_digest = ""
        self._materialized: set[str] = set()
        self._rules_loaded: str | None = None
        # Every statement run after opening, in order: nsysq.session.sqlscript turns them into --show-sql.
        self.executed: list[Statement] = []
        self._macros_defined = False
        self.scope: Scope = scope or Scope()
        self._scope_ready = False
        self._spill: Path | None = None  # DuckDB's spill directory, made on first use (bounded_memory)
        self._array_views: dict[str, str] = {}  # helper tables kept as views over arrays (keep_arrays)
        self._string_tables: dict[str, list[str]] = {}  # per scratch of keep_arrays, its string lookups
        # Per helper table, how it was built (its query's parameters, and the lineage of the helper
        # tables that query reads): a kept answer over it is salted with this (_answer_key).
        self._lineage: dict[str, str] = {}
        if self.scope.nvtx is not None and self.scope.iterations is not None:
            raise UsageError("--iteration does not combine with --nvtx or --nvtx-like; give one.")
        if self.scope.nvtx is not None:
            self._select_nvtx(self.scope, resolve)
        elif self.scope.iterations is not None:
            self._select_iterations(self.scope, resolve_iterations)

    def _select_nvtx(self, scope: Scope, resolve: Resolver | None) -> None:
        """Narrow ``scope``'s NVTX selection to the launches it keeps: resolved in the scope without it
        (device, stream, pid still apply), then every helper table is built again in the new scope."""
        selection = scope.nvtx
        if selection is None or resolve is None:
            raise UsageError("an NVTX selection needs nsysq.open(path, nvtx=...) to open the trace.")
        if scope.ops is not None:
            raise UsageError("a scope takes an NVTX selection or an OpFilter of launches, not both.")
        self.scope = replace(scope, nvtx=None)
        ops = resolve(self, selection)
        self._change_scope(
            Scope(device=scope.device, stream=scope.stream, pid=scope.pid, ops=ops, nvtx=selection)
        )

    def _select_iterations(self, scope: Scope, resolve: IterationResolver | None) -> None:
        """Narrow ``scope``'s iteration selection to the launches of those iterations, found in the
        scope without it (device, stream, pid still apply), as :meth:`_select_nvtx` does."""
        selection = scope.iterations
        if selection is None or resolve is None:
            raise UsageError(
                "an iteration selection needs nsysq.open(path, iteration=...) to open the trace."
            )
        if scope.ops is not None:
            raise UsageError("a scope takes an iteration selection or an OpFilter of launches, not both.")
        self.scope = replace(scope, iterations=None)
        ops = resolve(self, selection)
        self._change_scope(replace(scope, ops=ops))

    @property
    def _decoded(self) -> DecodedTables | None:
        return self._reader.decoded

    @property
    def _cache(self) -> CacheState:
        return self._reader.cache

    def cache_status(self) -> str:
        """How this session reads the file: from its cached copy, or directly (and why)."""
        return self._reader.describe()

    def close(self) -> None:
        """Close the connection; after a direct read of a large export, start building its copy."""
        self._reader.close()
        if self._spill is not None:
            shutil.rmtree(self._spill, ignore_errors=True)
            self._spill = None

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"nsysq.session.Session({str(self.path)!r})"

    def script(self) -> str:
        """The script that reproduces everything this session ran so far, against its export."""
        return script_for(self.path, self.schema, self.executed)

    # -- running queries ------------------------------------------------------------------------
    def _define_macros(self) -> None:
        """Define the packaged macros (queries/ files that create one) once, before any query."""
        if not self._macros_defined:
            for macro in catalog.macros():
                self._fetch(macro.sql)
            self._macros_defined = True

    def run(self, name: str, **params: Any) -> Table:
        """Run the packaged query ``name`` with bound parameters, in this session's scope; return its
        rows as a Table."""
        return self._run(name, params, scoped=True)

    def _run(self, name: str, params: dict[str, Any], *, scoped: bool) -> Table:
        import duckdb

        query = catalog.get(name)
        if query.macro is not None:
            raise QueryError(f"queries/{query.filename} defines the macro {query.macro}; it is not a query.")
        missing = set(query.params) - set(params)
        if missing:
            raise QueryError(f"query {name} needs parameters {sorted(missing)}.")
        bound = {p: params[p] for p in query.params}
        self._define_macros()
        sql, declared, salt = self._in_scope(query.sql, query.declared_columns, scoped=scoped)
        self.executed.append(Statement(sql, bound, query.label))
        digest = self._answer_key(query, sql, bound, salt)
        known = self._reader.recall(digest)
        if known is not None:
            return Table(kind=name, columns=known[0], rows=known[1], queries=_labels(query))
        try:
            columns, rows = self._fetch(sql, bound, declared)
        except duckdb.Error as exc:
            raise QueryError(
                f"query {name} (queries/{query.filename}) failed on {self.path.name}: "
                f"{str(exc).splitlines()[0]}"
            ) from None
        self._reader.remember(digest, columns, rows)
        return Table(kind=name, columns=columns, rows=rows, queries=_labels(query))

    def run_arrays(self, name: str, *, record: bool = True, **params: Any) -> dict[str, Any]:
        """Run the packaged query ``name`` in this session's scope; return its rows as one numpy array
        per column (for the numeric work done outside SQL, such as nsysq.gputime.intervals). Recorded for
        --show-sql like every query (``record`` False: not, for a read of nsysq's own helper tables
        whose computed result is recorded instead, see ``keep_arrays``); never kept as an answer."""
        import duckdb

        query = catalog.get(name)
        bound = {p: params[p] for p in query.params}
        self._define_macros()
        sql, declared, _ = self._in_scope(query.sql, query.declared_columns)
        if record:
            self.executed.append(Statement(sql, bound, query.label))

        def call() -> dict[str, Any]:
            with engine.pandas_free_binding():
                cur = self._con.execute(sql, bound) if bound else self._con.execute(sql)
                return dict(cur.fetchnumpy())

        try:
            return self._reader.fetch(call, declared, sql)
        except duckdb.Error as exc:
            raise QueryError(
                f"query {name} (queries/{query.filename}) failed on {self.path.name}: "
                f"{str(exc).splitlines()[0]}"
            ) from None

    def decoded_arrays(self, table: str, columns: tuple[str, ...]) -> dict[str, Any] | None:
        """On an unscoped read of ``table`` from the export's pages or from its cached copy: its
        ``columns`` as arrays, each with its NULL mask (None: no NULL; a column the table lacks is
        left out), rows in the export's order (from the copy, kernels in start order: it stores
        them grouped by name). None otherwise: read the rows with SQL (run_arrays)."""
        decoded = self._decoded
        if self.scope.active:
            return None
        if decoded is None:
            return self._copy_arrays(table, columns) if self._cache.mode == "cached" else None
        if not decoded.from_pages(table):
            return None
        return self._reader.fetch(lambda: decoded.tables[table].arrays(columns), {table: columns})

    def decoding_arrays(
        self, table: str, columns: tuple[str, ...]
    ) -> Callable[[], dict[str, Any] | None] | None:
        """On an unscoped direct read whose background decode (``prefetch``) reads ``columns`` of
        ``table`` (or has read them): a wait any thread may call for what ``decoded_arrays`` will
        return (None from it: the decode failed; the session's own read then says why). None
        otherwise: ask ``decoded_arrays`` on this thread."""
        decoded = self._decoded
        if self.scope.active or decoded is None or not decoded.from_pages(table):
            return None
        return decoded.tables[table].decoding(columns)

    def _copy_arrays(self, table: str, columns: tuple[str, ...]) -> dict[str, Any] | None:
        """decoded_arrays from the cached copy: one scan of the stored columns (kernels put back in
        start order: lookups by correlation id then walk the calls in order, as on the export)."""
        import duckdb
        import numpy as np

        from nsysq.base.sorting import lexsorted

        present = [c for c in columns if c in self.schema.columns.get(table, ())]
        if table not in DECODED_TABLES or not present:  # the tables a direct read decodes, alone
            return None
        read = [*present, "start"] if table == schema.KERNEL and "start" not in present else present
        select = ", ".join(schema.quote(c) for c in read)
        try:
            with engine.pandas_free_binding():
                got = self._con.execute(f"SELECT {select} FROM {schema.quote(table)}").fetchnumpy()
        except duckdb.Error:  # the query path reads it again and says what is wrong
            return None
        order = lexsorted((np.ma.getdata(got["start"]),)) if table == schema.KERNEL else None
        out: dict[str, Any] = {}
        for column in present:
            values = got.pop(column)
            mask = np.ma.getmaskarray(values) if np.ma.isMaskedArray(values) else None
            nulls = mask if mask is not None and mask.any() else None
            data = np.ma.getdata(values)
            out[column] = (
                (data, nulls) if order is None else (data[order], None if nulls is None else nulls[order])
            )
        return out

    def kept(
        self,
        name: str,
        analysis: str,
        params: dict[str, Any],
        compute: Callable[[], tuple[tuple[str, ...], list[tuple[Any, ...]]]],
    ) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
        """Rows an ``analysis`` (name and version, e.g. "gpu_busy/1") computes outside SQL from the
        rows of packaged query ``name`` with ``params``: kept like a query's answer (same trace,
        scope and lineup rules: read back, not computed again)."""
        query = catalog.get(name)
        sql, _, salt = self._in_scope(query.sql, query.declared_columns)
        digest = self._answer_key(query, sql, {k: params[k] for k in sorted(params)}, salt, analysis)
        known = self._reader.recall(digest)
        if known is not None:
            self.note_query(name, f"{analysis}: its result kept from an earlier run", **params)
            return known
        columns, rows = compute()
        self._reader.remember(digest, columns, rows)
        return columns, rows

    def _answer_key(
        self, query: catalog.Query, sql: str, params: dict[str, Any], scope_key: str, analysis: str = ""
    ) -> str | None:
        """The one key of a kept answer: the SQL as it runs (in scope), its parameters, the scope, the
        lineup rules loaded (for a query over nsysq's helper tables, or an analysis's rows), the macros
        the query calls and, for rows computed outside SQL, the analysis and its version."""
        lineage = "".join(self._lineage.get(t, "") for t in query.table_names)
        if analysis:
            salt = scope_key + self._rules_digest + analysis + lineage
        else:
            rules = self._rules_digest if "nsysq_" in query.tables else ""
            salt = scope_key + rules + _macros_salt(query) + lineage
        return self._reader.answer_digest(sql, params, salt)

    def _note_lineage(self, name: str, table: str, params: dict[str, Any]) -> None:
        """Helper table ``table`` now holds (or stands for) packaged query ``name``'s rows with
        ``params``: its lineage is those and the lineage of the helper tables the query reads, so two
        answers over tables built differently (``nsysq nvtx`` and ``nsysq nvtx --innermost`` both
        read nsysq_nvtx_rows) are never kept under one key."""
        parents = "|".join(self._lineage.get(t, "") for t in catalog.get(name).table_names if t != table)
        text = f"{name}|{_built_key(table, params)}|{parents}"
        self._lineage[table] = hashlib.sha256(text.encode()).hexdigest()[:16]

    def note_query(self, name: str, note: str, **params: Any) -> None:
        """Record packaged query ``name`` for --show-sql without running it: its rows were read
        another way (``note`` says how), e.g. from decoded columns."""
        query = catalog.get(name)
        self.executed.append(
            Statement(query.sql, {p: params[p] for p in query.params if p in params}, query.label, note)
        )

    # -- scope ----------------------------------------------------------------------------------
    def _change_scope(self, scope: Scope) -> None:
        """Read only the GPU work in ``scope`` from now on (see nsysq.session.scope): what was built or
        learnt in the old scope is forgotten, so it is built again in the new one."""
        self.scope = scope
        self._scope_ready = False
        self._materialized.clear()  # helper tables built from kernels are rebuilt in the new scope
        self._lineage.clear()
        self._rules_loaded = None
        for fact in ("kernel_totals", "whole_graphs"):
            self.__dict__.pop(fact, None)

    def _in_scope(
        self, sql: str, declared: dict[str, tuple[str, ...]], *, scoped: bool = True
    ) -> tuple[str, dict[str, tuple[str, ...]], str]:
        """``sql`` as it runs in this session's scope, the columns it reads, and the salt of its answer."""
        if not scoped or not self.scope.active:
            return sql, declared, ""
        self._apply_scope()
        sql = scope_mod.rewrite(sql)
        if scope_mod.reads_scoped(sql):
            self._scoped_name_stats()
        merged = scope_mod.merge_declared(declared, self.scope.declared_extra()) or declared
        return sql, merged, self.scope.key()

    def _apply_scope(self) -> None:
        """Create the scoped views once, after checking the scope names GPU work the trace has."""
        if self._scope_ready:
            return
        self._define_macros()
        scope_mod.check(self.scope, self._run("scope_values", {}, scoped=False).rows, self.path.name)
        ops = self.scope.ops_statement()
        if ops is not None and self.scope.ops is not None:
            self._record(ops, dict(self.scope.ops.declared))
        for statement in self.scope.view_statements():
            self._record(statement)
        self._scope_ready = True

    def _scoped_name_stats(self) -> None:
        """Per-name statistics of the kernels in scope (the unscoped ones are precomputed)."""
        table = scope_mod.SCOPED[scope_mod.NAME_STATS]
        if table in self._materialized:
            return
        query = catalog.get(schema.DERIVED[scope_mod.NAME_STATS])
        sql = scope_mod.rewrite(query.sql)
        declared = scope_mod.merge_declared(query.declared_columns, self.scope.declared_extra())
        self._record(
            Statement(f"CREATE OR REPLACE TEMP TABLE {table} AS\n{sql}", label=query.label), declared
        )
        self._materialized.add(table)

    def _fetch(
        self, sql: str, params: Any = None, declared: dict[str, tuple[str, ...]] | None = None
    ) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
        """Run one statement; return its column names and rows. ``declared``: the columns it reads
        per table, decoded first on a direct read (any other is decoded when it asks)."""

        def call() -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
            with engine.pandas_free_binding():
                cur = self._con.execute(sql, params) if params else self._con.execute(sql)
                return tuple(d[0] for d in cur.description or ()), cur.fetchall()

        return self._reader.fetch(call, declared, sql)

    def bounded_memory(self, limit: str) -> contextlib.AbstractContextManager[None]:
        """Within the block, DuckDB's working memory on this trace's connection stays under
        ``limit``: past it DuckDB spills into a private ``nsysq-spill-*`` directory in the system's
        temporary directory, removed when the trace is closed (engine.bounded_memory)."""
        if self._spill is None:
            self._spill = Path(tempfile.mkdtemp(prefix="nsysq-spill-"))
        return engine.bounded_memory(self._con, limit, self._spill)

    @property
    def kernel_reader(self) -> str:
        """How kernel rows are read: "cached copy", "pages" (decoded from the file's pages) or
        "sqlite (<why not pages>)"."""
        return self._reader.kernel_reader

    def prefetch(self, name: str | tuple[str, ...]) -> None:
        """On a direct read, start decoding in the background the columns packaged query ``name``
        declares; the query then only waits for what is left."""
        if self._decoded is not None:
            self._decoded.prefetch(catalog.declared(name))

    def release_columns(self, table: str, columns: tuple[str, ...] | None = None) -> None:
        """Free the decoded arrays of ``table``'s ``columns`` (None: every column) on a direct read;
        a later query that reads them decodes them again. A no-op on a cached copy."""
        decoded = self._decoded.tables.get(table) if self._decoded is not None else None
        if decoded is None:
            return
        if columns is None:
            decoded.release()
        else:
            decoded.release_columns(columns)

    def release_kernel_rows(self) -> None:
        """Free the kernel columns decoded so far (a later query decodes what it needs again)."""
        if self._decoded is not None:
            self._decoded.tables[schema.KERNEL].release()

    def sql_table(
        self, text: str, params: dict[str, Any] | list[Any] | None = None, *, sealed: bool = False
    ) -> Table:
        """Run one read-only ad-hoc SELECT (or WITH ... SELECT); return its rows as a Table.

        ``sealed`` (``nsysq sql`` and the MCP server's ``sql`` tool): the query reads the trace and
        nothing else. It may call no table function but :data:`SEALED_TABLE_FUNCTIONS` (the sqlite
        extension's ``sqlite_scan`` opens files by itself), and it runs with DuckDB's external
        access off and the configuration locked (no file reads or writes, no ATTACH, COPY, INSTALL
        or LOAD), which stays so for the rest of the session: seal only a session that runs this
        one query."""
        import duckdb

        try:
            statements = duckdb.extract_statements(text)
        except duckdb.Error as exc:
            raise UsageError(f"the SQL does not parse: {str(exc).splitlines()[0]}") from None
        if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
            raise UsageError("nsysq sql runs exactly one read-only SELECT (or WITH ... SELECT) statement.")
        if sealed:
            self._seal(text)
        try:
            columns, rows = self._fetch(text, params)
        except duckdb.Error as exc:
            raise UsageError(f"the query failed: {str(exc).splitlines()[0]}") from None
        return Table(kind="sql", columns=columns, rows=rows)

    def _seal(self, text: str) -> None:
        """Refuse a query that calls a table function other than the harmless ones, then turn
        DuckDB's external access off and lock the configuration on this session's connection."""
        import json

        import duckdb

        with engine.pandas_free_binding():
            tree = self._con.execute("SELECT json_serialize_sql($1::VARCHAR)", [text]).fetchone()
        called = sorted(_table_functions(json.loads(tree[0] if tree else "{}")) - SEALED_TABLE_FUNCTIONS)
        if called:
            raise UsageError(
                f"nsysq sql reads only the trace's tables and views, so {', '.join(called)}() is refused; "
                "query the canonical tables (nsysq info lists them)."
            )
        try:
            self._con.execute("SET enable_external_access = false")
            self._con.execute("SET lock_configuration = true")
        except duckdb.Error as exc:
            raise QueryError(f"could not seal the connection: {str(exc).splitlines()[0]}") from None

    # -- facts every analysis needs -------------------------------------------------------------
    @functools.cached_property
    def span(self) -> dict[str, Any]:
        """``t0`` (earliest GPU/API start, ns), ``t_end`` and ``span_ns``."""
        return self._run("trace_span", {}, scoped=False).records()[0]  # one clock in every scope

    @property
    def t0(self) -> int:
        return int(self.span["t0"] or 0)

    @functools.cached_property
    def kernel_totals(self) -> dict[str, Any]:
        return self.run("kernel_totals").records()[0]

    @functools.cached_property
    def whole_graphs(self) -> dict[str, int]:
        """CUDA graphs traced whole, in scope: ``executions``, ``graphs``, ``graph_ns``."""
        return {k: int(v) for k, v in self.run("graph_executions").records()[0].items()}

    def whole_graph_note(self) -> str | None:
        """The one line that says graphs were traced whole and how to see inside them (None: none)."""
        found = self.whole_graphs
        if not found["executions"]:
            return None
        return WHOLE_GRAPH_NOTE.format(
            executions=found["executions"], graphs=found["graphs"], ms=found["graph_ns"] / 1e6
        )

    def _has_kernels(self) -> bool:
        """queries/kernel/presence.sql's answer; on a direct, unscoped read from the pages, from the
        file's first kernel row through SQLite, so that no one waits for the kernel table's decode
        (still under way in the background) to learn that it has a row."""
        decoded = self._decoded
        if decoded is not None and not self.scope.active and decoded.from_pages(schema.KERNEL):
            found = _first_row(self.path, schema.KERNEL)
            if found is not None:
                self.note_query("kernel_presence", PRESENCE_NOTE)
                return found
        return bool(self.run("kernel_presence").rows[0][0])

    def require_kernels(self) -> None:
        """Raise NoDataError when the export (or the scope) holds no CUDA kernels and no executions of
        CUDA graphs traced whole (their kernels are not in the kernel table)."""
        if not self.schema.has(schema.KERNEL):
            raise NoDataError(
                f"{self.path.name} recorded no CUDA kernels (it has no {schema.KERNEL} table); "
                + _KERNEL_HINT
                + "."
            )
        if not self._has_kernels() and not self.whole_graphs["executions"]:
            if self.scope.active:
                raise NoDataError(f"{self.path.name} has no CUDA kernels in scope {self.scope.describe()}.")
            raise NoDataError(
                f"{self.path.name} recorded no CUDA kernels ({schema.KERNEL} is empty); " + _KERNEL_HINT + "."
            )

    def use_rules(self, rules: list[Rule] | None = None, *, source: str = "packaged") -> None:
        """Load lineup rules into ``nsysq_lineup_rules`` and (re)build ``nsysq_kernel_category``."""
        from nsysq.catalog import rules as rules_mod

        if rules is None:
            if self._rules_loaded == "packaged":
                return
            rules = rules_mod.load_lineup_rules()
        self._define_macros()
        rows = rules_mod.rules_rows(rules)
        rules_sql = rows_table("nsysq_lineup_rules", _RULE_COLUMNS, rows)
        self._record(Statement(rules_sql, note="the lineup rules"))
        if "nsysq_kernel_pairs" not in self._materialized:
            # The distinct name-id pairs: from the kernel groups when a diff already read them.
            groups = "nsysq_kernel_groups"
            pairs_from = groups if groups in self._materialized else schema.KERNEL
            self._record(
                Statement(
                    "CREATE OR REPLACE TEMP TABLE nsysq_kernel_pairs AS "
                    f"SELECT DISTINCT shortName, demangledName FROM {pairs_from}",
                    note="the distinct kernel name-id pairs",
                ),
                declared={pairs_from: ("shortName", "demangledName")},
            )
            self._materialized.add("nsysq_kernel_pairs")
        category = catalog.get("kernel_category")
        self._record(
            Statement(
                f"CREATE OR REPLACE TEMP TABLE nsysq_kernel_category AS\n{category.sql}", label=category.label
            ),
            category.declared_columns,  # its header names what it reads (the parser cannot: macros)
        )
        self._rules_loaded = source
        self._rules_digest = hashlib.sha256(repr(rows).encode()).hexdigest()

    def _record(self, statement: Statement, declared: dict[str, tuple[str, ...]] | None = None) -> None:
        """Run one statement that builds a helper table (parameters bound from it), and record it."""
        self.executed.append(statement)
        self._fetch(statement.sql, dict(statement.params) or None, declared)

    def materialize(self, name: str, table: str, *, rebuild: bool = False, **params: Any) -> None:
        """Keep the rows of packaged query ``name`` (bound ``params``) as temp table ``table`` for
        later queries; built once per table and parameters (other parameters, or ``rebuild``, build
        it again: for a table made from another one that was rebuilt)."""
        import duckdb

        if _built_key(table, params) in self._materialized and not rebuild:
            return
        query = catalog.get(name)
        missing = set(query.params) - set(params)
        if missing:
            raise QueryError(f"query {name} needs parameters {sorted(missing)}.")
        self._define_macros()
        self._forget_arrays(table)
        bound = {p: params[p] for p in query.params}
        sql, declared, _ = self._in_scope(query.sql, query.declared_columns)
        statement = Statement(f"CREATE OR REPLACE TEMP TABLE {table} AS\n{sql}", bound, label=query.label)
        try:
            self._record(statement, declared)
        except duckdb.Error as exc:
            raise QueryError(
                f"query {name} (queries/{query.filename}) failed on {self.path.name}: "
                f"{str(exc).splitlines()[0]}"
            ) from None
        self._mark_built(table, params)
        self._note_lineage(name, table, params)

    def _materialize_statement(self, name: str, table: str, note: str, params: dict[str, Any]) -> Statement:
        query = catalog.get(name)
        missing = set(query.params) - set(params)
        if missing:
            raise QueryError(f"query {name} needs parameters {sorted(missing)}.")
        sql, _, _ = self._in_scope(query.sql, query.declared_columns)
        bound = {p: params[p] for p in query.params}
        return Statement(f"CREATE OR REPLACE TEMP TABLE {table} AS\n{sql}", bound, query.label, note)

    def note_materialized(self, name: str, table: str, note: str, **params: Any) -> None:
        """Record, for --show-sql, the statement that keeps packaged query ``name`` as temp table
        ``table`` without running it: what it holds was computed another way (``note`` says how)
        and a later step reads that instead. The script then builds it, and its result is the same."""
        self.executed.append(self._materialize_statement(name, table, note, params))
        self._note_lineage(name, table, params)

    def keep_arrays(
        self,
        name: str,
        table: str,
        arrays: dict[str, Any],
        *,
        select: str = "*",
        note: str,
        record: bool = True,
        strings: dict[str, list[str]] | None = None,
        **params: Any,
    ) -> None:
        """Keep ``arrays`` (numpy columns of one length) as temp table ``table``, read through
        ``select`` (an SQL select list over them, e.g. to turn a sentinel into NULL): the rows packaged
        query ``name`` (``params`` bound) gives, computed outside SQL (``note`` says how). --show-sql
        shows that query in its place; ``is_materialized`` and ``materialize`` treat the table as
        built from it. The arrays are read in place (a view over them, no copy), held until the
        table is dropped or built again. ``record`` False: the statement is not recorded again (it
        was, by ``note_materialized``, where the table was first needed). ``strings``: per column of
        ``arrays`` holding codes (0-based ints), the strings they stand for; ``select`` reads that
        column as the strings (VARCHAR), with no Python string per row handed to DuckDB."""
        self._define_macros()
        statement = self._materialize_statement(name, table, note, params)
        self._forget_arrays(table)
        self._con.execute(f"DROP TABLE IF EXISTS {table}")
        scratch = f"nsysq_arrays_{table}"
        with engine.pandas_free_binding():  # the view's binding too: DuckDB checks pandas then
            self._con.register(scratch, arrays)  # read in place: no copy into DuckDB
            self._array_views[table] = scratch
            source, self._string_tables[scratch] = engine.decoded_source(self._con, scratch, strings or {})
            self._con.execute(f"CREATE OR REPLACE TEMP VIEW {table} AS SELECT {select} FROM {source}")
        if record:
            self.executed.append(statement)
        self._mark_built(table, params)
        self._note_lineage(name, table, params)

    def materialize_via(
        self, name: str, table: str, via: str, arrays: dict[str, dict[str, Any]], *, note: str, **params: Any
    ) -> None:
        """Keep as temp table ``table`` the rows packaged query ``name`` (``params`` bound) gives, built
        instead by packaged query ``via`` over ``arrays`` (per scratch table name, its numpy columns,
        read in place and let go once it ran; ``via`` takes the params ``name`` takes). --show-sql
        shows ``name`` in its place (``note`` says how it was built); ``is_materialized`` and
        ``materialize`` treat the table as built from it."""
        self._define_macros()
        statement = self._materialize_statement(name, table, note, params)
        query = catalog.get(via)
        self._forget_arrays(table)
        bound = {p: params[p] for p in query.params}
        try:
            with engine.pandas_free_binding():
                for scratch, columns in arrays.items():
                    self._con.register(scratch, columns)
                self._con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS\n{query.sql}", bound or None)
        finally:
            for scratch in arrays:
                self._con.unregister(scratch)
        self.executed.append(statement)
        self._mark_built(table, params)
        self._note_lineage(name, table, params)

    def free_arrays(self, *tables: str) -> None:
        """Let go of the arrays ``keep_arrays`` kept as ``tables`` (memory) without recording a DROP:
        the --show-sql script keeps the table it built, and the rows it holds stay the same. The
        tables count as not built from then on, so a later ``materialize`` (or ``keep_arrays``)
        builds them again."""
        for table in tables:
            if table in self._array_views:
                self._forget_arrays(table)
                self._unmark(table)

    def _forget_arrays(self, table: str) -> None:
        """Drop the view ``keep_arrays`` made as ``table`` and let its arrays go (if it made one)."""
        scratch = self._array_views.pop(table, None)
        if scratch is not None:
            self._con.execute(f"DROP VIEW IF EXISTS {table}")
            self._con.unregister(scratch)
            for held in self._string_tables.pop(scratch, []):
                self._con.execute(f"DROP TABLE IF EXISTS {held}")

    def _mark_built(self, table: str, params: dict[str, Any]) -> None:
        """Temp table ``table`` now holds the rows of its query with ``params`` (and no others)."""
        self._unmark(table)
        self._materialized.add(_built_key(table, params))

    def _unmark(self, *tables: str) -> None:
        """``tables`` count as not built (whatever their parameters were)."""
        self._materialized = {k for k in self._materialized if k.split(" ", 1)[0] not in tables}

    def is_materialized(self, table: str, **params: Any) -> bool:
        """Whether ``materialize`` has built temp table ``table`` in this scope: with ``params``,
        from exactly those parameters; without, from any."""
        if params:
            return _built_key(table, params) in self._materialized
        return any(k.split(" ", 1)[0] == table for k in self._materialized)

    def drop_materialized(self, *tables: str) -> None:
        """Drop helper tables ``materialize`` built, to free their memory; a later ``materialize``
        builds them again."""
        for table in tables:
            if table in self._array_views:  # the script built a table there: it drops a table
                self.executed.append(Statement(f"DROP TABLE IF EXISTS {table}", note="no longer needed"))
                self._forget_arrays(table)
                continue
            self._record(Statement(f"DROP TABLE IF EXISTS {table}", note="no longer needed"))
        self._unmark(*tables)


def _built_key(table: str, params: dict[str, Any]) -> str:
    """How ``_materialized`` names ``table`` built from ``params``."""
    return table if not params else f"{table} {sorted(params.items())!r}"


WHOLE_GRAPH_NOTE = (
    "{executions:,} executions of {graphs:,} CUDA graph(s) were traced whole ({ms:,.3f} ms of GPU time): "
    "they appear as 'graph <id>' rows, their kernels are not in the kernel table; profile with "
    "nsys profile --cuda-graph-trace=node to see inside them."
)

_RULE_COLUMNS = (
    ("rule_order", "INTEGER"),
    ("category", "VARCHAR"),
    ("field", "VARCHAR"),
    ("pattern", "VARCHAR"),
)


def _labels(query: catalog.Query) -> tuple[str, ...]:
    """The labels of ``query`` and of the packaged queries behind the derived views it reads."""
    derived = (catalog.get(schema.DERIVED[t]).label for t in query.table_names if t in schema.DERIVED)
    return (query.label, *derived)


def _macros_salt(query: catalog.Query) -> str:
    """The macros ``query`` calls, so a kept answer is not reused after a macro changes."""
    return "".join(m.sql for m in catalog.macros() if m.macro and m.macro in query.sql)


SEALED_TABLE_FUNCTIONS = frozenset({"range", "generate_series", "unnest"})
"""The table functions a sealed query (:meth:`Session.sql_table`) may call: none of them reads anything."""


def _table_functions(tree: Any) -> set[str]:
    """The names of the table functions a query calls, anywhere in DuckDB's JSON parse tree of it
    (``json_serialize_sql``); a tree DuckDB could not serialize counts as calling ``unknown``."""
    if isinstance(tree, dict) and tree.get("error") is True:
        return {"unknown"}
    found: set[str] = set()
    todo = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            if node.get("type") == "TABLE_FUNCTION":
                function = node.get("function") or {}
                found.add(str(function.get("function_name", "unknown")).lower())
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return found
