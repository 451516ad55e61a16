"""Joining both sides in a scratch DuckDB database with the SQL files in ``queries/diff/`` (packaged
queries ``diff_*``, loaded by ``nsysq.catalog`` like every other): kernel and category rows with their
outlier scores, variants, launch configuration, danger kernels and copies. The database is a
:class:`Scratch`, which records its statements as a Session does, so each section's ``queries`` is
read off the record (nsysq.diffing.lineage)."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from nsysq import catalog
from nsysq.base.table import Table
from nsysq.diffing.lineage import lineage
from nsysq.diffing.params import MAD_FLOOR, PER_CALL_FLOOR
from nsysq.session.sqlscript import Statement

if TYPE_CHECKING:
    import duckdb

    from nsysq.catalog.rules import DangerRule
    from nsysq.diffing.side import Side

# A side table's columns keep the SQL types the per-trace query gave them (Side.kernel_types and
# copy_types, read by nsysq.diffing.sides); a column with no known type is typed from its Python values (they
# come out of DuckDB, so a column holds one Python type), BIGINT when it holds only NULLs.
_PYTHON_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "BOOLEAN"),
    (int, "BIGINT"),
    (float, "DOUBLE"),
    (str, "VARCHAR"),
)
PER_CALL_COLUMNS = ("per_call_log_ratio", "typical_per_call_log_ratio", "per_call_score", "per_call_outlier")
"""The per-call outlier test's columns, added to the kernel rows (see _with_per_call_scores)."""
# The danger rules table the rules file fills (see nsysq.catalog.rules.DangerRule).
_DANGER_COLUMNS = (
    ("rule_order", "INTEGER"),
    ("kind", "VARCHAR"),
    ("field", "VARCHAR"),
    ("pattern", "VARCHAR"),
    ("reason", "VARCHAR"),
)


class Scratch:
    """The small DuckDB database the diff joins both sides in. Like a Session it records every
    statement it runs (``executed``), so a result's ``queries`` is the lineage of the statements
    behind it (nsysq.diffing.lineage); ``sources``: the labels behind each table loaded from rows
    read elsewhere (the sides' kernels and copies)."""

    def __init__(
        self, con: duckdb.DuckDBPyConnection, sources: Mapping[str, tuple[str, ...]] | None = None
    ) -> None:
        self.con = con
        self.sources: dict[str, tuple[str, ...]] = dict(sources or {})
        self.executed: list[Statement] = []

    def execute(
        self, sql: str, params: Mapping[str, Any] | None = None, label: str = ""
    ) -> duckdb.DuckDBPyConnection:
        """Run and record one statement (``label``: the packaged query it runs)."""
        self.executed.append(Statement(sql, dict(params or {}), label))
        if not params:
            return self.con.execute(sql)
        from nsysq.export import engine

        with engine.pandas_free_binding():  # DuckDB would import pandas (0.2 s) to bind them
            return self.con.execute(sql, dict(params))

    def select(self, kind: str, sql: str, params: Mapping[str, Any] | None = None, label: str = "") -> Table:
        """The rows of one SELECT as a Table, labelled with the lineage of the statement."""
        cur = self.execute(sql, params, label)
        columns = tuple(d[0] for d in cur.description or ())
        rows = cur.fetchall()
        return Table(kind=kind, columns=columns, rows=rows, queries=self.lineage(len(self.executed) - 1))

    def run(self, name: str, **params: Any) -> Table:
        """The rows of packaged query ``name`` with bound ``params``."""
        query = catalog.get(name)
        return self.select(query.name, query.sql, {p: params[p] for p in query.params}, query.label)

    def materialize(self, table: str, name: str, **params: Any) -> str:
        """Keep the rows of packaged query ``name`` as temp table ``table``; return the query's label."""
        query = catalog.get(name)
        bound = {p: params[p] for p in query.params}
        self.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS {query.sql}", bound, query.label)
        return query.label

    def lineage(self, *indices: int) -> tuple[str, ...]:
        """The labels behind the recorded statements at ``indices``."""
        return lineage(self.executed, *indices, sources=self.sources)


def _load(
    con: duckdb.DuckDBPyConnection,
    name: str,
    columns: Sequence[str],
    rows: list[Any],
    types: Mapping[str, str],
) -> None:
    """Create temp table ``name`` from Python rows in one statement; ``types``: known SQL types."""
    from nsysq.export import engine

    typed = [
        (column, types.get(column) or _sql_type([row[i] for row in rows])) for i, column in enumerate(columns)
    ]
    engine.table_from_rows(con, name, typed, rows)


def score_rows(
    db: duckdb.DuckDBPyConnection | Scratch,
    source: str,
    key: str,
    columns: str,
    *,
    min_ns: float,
    threshold: float,
) -> tuple[Table, str]:
    """Score the rows of temp table ``source`` (columns ``key``, a_ns, b_ns, status) with the
    outlier method of queries/diff/outliers.sql; return ``columns`` of ``source`` plus log_ratio,
    typical_log_ratio, score, eligible and outlier, outliers first, and the query's label.
    ``db``: a connection, or the diff's :class:`Scratch` (which records the statements).
    nsysq fleet scores its traces with it too."""
    scratch = db if isinstance(db, Scratch) else Scratch(db)
    scratch.execute(
        f"CREATE OR REPLACE TEMP VIEW score_input AS SELECT {key} AS key, a_ns, b_ns, status FROM {source}"
    )
    label = scratch.materialize(
        "scores", "diff_outliers", min_ns=min_ns, threshold=threshold, floor=MAD_FLOOR
    )
    table = scratch.select(
        source,
        f"SELECT {columns}, s.log_ratio, s.center AS typical_log_ratio, s.score, s.eligible, s.outlier "
        f"FROM {source} AS t JOIN scores AS s ON s.key = t.{key} "
        "ORDER BY s.outlier DESC, greatest(t.a_ns, t.b_ns) DESC, t." + key,
    )
    return table, label


def combine(
    side_a: Side,
    side_b: Side,
    danger: list[DangerRule],
    *,
    min_ns: float,
    threshold: float,
) -> dict[str, Table]:
    """Both sides joined: the categories, kernels, variants, launch_config, danger and copies
    sections, each labelled with the queries behind it (the sides' and queries/diff/*.sql)."""
    from nsysq.export import engine

    con = engine.connect(sqlite=False)  # small tables only: no sqlite extension, no progress bar
    # Binding Python values as parameters would otherwise make DuckDB import pandas (0.45 s).
    with contextlib.closing(con), engine.pandas_free_binding():
        _load_sides(con, side_a, side_b, danger)
        db = Scratch(con, _side_sources(side_a, side_b))
        db.materialize("kernel_rows", "diff_kernels")
        kernels, _ = score_rows(
            db,
            "kernel_rows",
            "name",
            "t.name, t.category, t.status, t.calls_a, t.calls_b, t.a_ns, t.b_ns, t.avg_a_ns, "
            "t.avg_b_ns, t.ratio, t.calls_ratio, t.per_call_ratio, t.pattern, t.family, "
            "t.variants_a, t.variants_b",
            min_ns=min_ns,
            threshold=threshold,
        )
        kernels = _with_per_call_scores(db, kernels, min_ns=min_ns, threshold=threshold)
        db.materialize("category_rows", "diff_categories")
        categories, _ = score_rows(
            db,
            "category_rows",
            "category",
            "t.category, t.status, t.calls_a, t.calls_b, t.a_ns, t.b_ns, t.avg_a_ns, t.avg_b_ns, "
            "t.ratio, t.calls_ratio, t.per_call_ratio, t.kernels_a, t.kernels_b, t.top_kernel",
            min_ns=min_ns,
            threshold=threshold,
        )
        return {
            "categories": replace(categories, kind="diff_categories"),
            "kernels": replace(kernels, kind="diff_kernels"),
            "variants": db.run("diff_variants"),
            "launch_config": db.run("diff_launch_config"),
            "danger": db.run("diff_danger"),
            "copies": db.run("diff_copies"),
        }


def _side_sources(side_a: Side, side_b: Side) -> dict[str, tuple[str, ...]]:
    """The labels behind the side tables _load_sides fills, as the sides' Tables carry them."""
    return {
        "side_kernels": tuple(dict.fromkeys(side_a.kernels.queries + side_b.kernels.queries)),
        "side_copies": tuple(dict.fromkeys(side_a.copies.queries + side_b.copies.queries)),
    }


def _side_types(a: Mapping[str, str], b: Mapping[str, str]) -> dict[str, str]:
    """The SQL types of one side table's columns, as the sides' queries returned them."""
    return {"side": "VARCHAR", **a, **b}


def _load_sides(con: duckdb.DuckDBPyConnection, side_a: Side, side_b: Side, danger: list[DangerRule]) -> None:
    """Load what the diff queries (queries/diff/*.sql) read: both sides' kernels (side_kernels) and
    copies (side_copies), a column ``side`` saying 'a' or 'b', and the danger rules."""
    from nsysq.export import engine

    _load(
        con,
        "side_kernels",
        ("side", *side_a.kernels.columns),
        [("a", *r) for r in side_a.kernels.rows] + [("b", *r) for r in side_b.kernels.rows],
        _side_types(side_a.kernel_types, side_b.kernel_types),
    )
    _load(
        con,
        "side_copies",
        ("side", "operation", "kind", "operations", "bytes", "total_ns"),
        [
            (label, r["operation"], r["kind"], r["operations"], r["bytes"], r["total_ns"])
            for label, side in (("a", side_a), ("b", side_b))
            for r in side.copies.records()
        ],
        _side_types(side_a.copy_types, side_b.copy_types),
    )
    danger_rows = [(r.order, r.kind, r.field, r.like, r.reason) for r in danger]
    engine.table_from_rows(con, "danger_rules", _DANGER_COLUMNS, danger_rows)


def _with_per_call_scores(db: Scratch, kernels: Table, *, min_ns: float, threshold: float) -> Table:
    """Add ``per_call_log_ratio``, ``typical_per_call_log_ratio``, ``per_call_score`` and
    ``per_call_outlier`` to the kernel rows: the outlier test of ``queries/diff/outliers.sql`` on
    each kernel's time per call, scaled by its mean number of calls (avg x (calls_a + calls_b) / 2,
    so weights and the noise floor stay in units of kernel time) with the smaller spread floor
    PER_CALL_FLOOR (docs/diff.md)."""
    db.execute(
        "CREATE OR REPLACE TEMP VIEW score_input AS SELECT name AS key, "
        "avg_a_ns * (calls_a + calls_b) / 2.0 AS a_ns, avg_b_ns * (calls_a + calls_b) / 2.0 AS b_ns, "
        "status FROM kernel_rows"
    )
    db.materialize(
        "per_call_scores", "diff_outliers", min_ns=min_ns, threshold=threshold, floor=PER_CALL_FLOOR
    )
    per_call = db.select(
        "per_call_scores",
        "SELECT key, log_ratio, center, CASE WHEN eligible THEN score END, outlier FROM per_call_scores",
    )
    scored = {key: rest for key, *rest in per_call.rows}
    empty = [None, None, None, False]
    rows = [(*row, *scored.get(row[0], empty)) for row in kernels.rows]
    queries = tuple(dict.fromkeys((*kernels.queries, *per_call.queries)))
    return replace(kernels, columns=(*kernels.columns, *PER_CALL_COLUMNS), rows=rows, queries=queries)


def _sql_type(values: Sequence[Any]) -> str:
    """The SQL type of one column's Python values (see _PYTHON_TYPES)."""
    for value in values:
        if value is not None:
            for python_type, sql_type in _PYTHON_TYPES:
                if isinstance(value, python_type):
                    return sql_type
            return "VARCHAR"
    return "BIGINT"
