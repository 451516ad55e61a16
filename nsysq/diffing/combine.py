"""Joining both sides in a scratch DuckDB database with the SQL files in ``queries/diff/`` (packaged
queries ``diff_*``, loaded by ``nsysq.catalog`` like every other): kernel and category rows with their
outlier scores, variants, launch configuration, danger kernels and copies."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from nsysq import catalog
from nsysq.base.table import Table
from nsysq.diffing.params import MAD_FLOOR, PER_CALL_FLOOR

if TYPE_CHECKING:
    import duckdb

    from nsysq.catalog.rules import DangerRule
    from nsysq.diffing.side import Side

# A side table's columns keep the SQL types the per-trace query gave them (each side's "types",
# read by nsysq.diffing.sides); a column with no known type is typed from its Python values (they
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


def _side_types(a: Mapping[str, str], b: Mapping[str, str]) -> dict[str, str]:
    """The SQL types of one side table's columns, as the sides' queries returned them."""
    return {"side": "VARCHAR", **a, **b}


def _run(con: duckdb.DuckDBPyConnection, name: str, **params: Any) -> Table:
    query = catalog.get(name)
    bound = {p: params[p] for p in query.params}
    cur = con.execute(query.sql, bound) if bound else con.execute(query.sql)
    columns = tuple(d[0] for d in cur.description or ())
    return Table(kind=query.name, columns=columns, rows=cur.fetchall(), queries=(query.label,))


def _materialize(con: duckdb.DuckDBPyConnection, table: str, name: str, **params: Any) -> str:
    """Keep the rows of packaged query ``name`` as temp table ``table``; return the query's label."""
    query = catalog.get(name)
    bound = {p: params[p] for p in query.params}
    sql = f"CREATE OR REPLACE TEMP TABLE {table} AS {query.sql}"
    if bound:
        con.execute(sql, bound)
    else:
        con.execute(sql)
    return query.label


def score_rows(
    con: duckdb.DuckDBPyConnection,
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
    nsysq fleet scores its traces with it too."""
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW score_input AS SELECT {key} AS key, a_ns, b_ns, status FROM {source}"
    )
    label = _materialize(con, "scores", "diff_outliers", min_ns=min_ns, threshold=threshold, floor=MAD_FLOOR)
    cur = con.execute(
        f"SELECT {columns}, s.log_ratio, s.center AS typical_log_ratio, s.score, s.eligible, s.outlier "
        f"FROM {source} AS t JOIN scores AS s ON s.key = t.{key} "
        "ORDER BY s.outlier DESC, greatest(t.a_ns, t.b_ns) DESC, t." + key
    )
    cols = tuple(d[0] for d in cur.description or ())
    return Table(kind=source, columns=cols, rows=cur.fetchall()), label


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
        # The labels of the per-trace queries behind the side tables, as the sides' Tables carry them.
        kernel_labels = tuple(dict.fromkeys(side_a.kernels.queries + side_b.kernels.queries))
        copy_labels = tuple(dict.fromkeys(side_a.copies.queries + side_b.copies.queries))

        k_label = _materialize(con, "kernel_rows", "diff_kernels")
        kernels, s_label = score_rows(
            con,
            "kernel_rows",
            "name",
            "t.name, t.category, t.status, t.calls_a, t.calls_b, t.a_ns, t.b_ns, t.avg_a_ns, "
            "t.avg_b_ns, t.ratio, t.calls_ratio, t.per_call_ratio, t.pattern, t.family, "
            "t.variants_a, t.variants_b",
            min_ns=min_ns,
            threshold=threshold,
        )
        kernels = replace(kernels, kind="diff_kernels", queries=(*kernel_labels, k_label, s_label))
        kernels = _with_per_call_scores(con, kernels, min_ns=min_ns, threshold=threshold)

        c_label = _materialize(con, "category_rows", "diff_categories")
        categories, _ = score_rows(
            con,
            "category_rows",
            "category",
            "t.category, t.status, t.calls_a, t.calls_b, t.a_ns, t.b_ns, t.avg_a_ns, t.avg_b_ns, "
            "t.ratio, t.calls_ratio, t.per_call_ratio, t.kernels_a, t.kernels_b, t.top_kernel",
            min_ns=min_ns,
            threshold=threshold,
        )
        categories = replace(categories, kind="diff_categories", queries=(*kernel_labels, c_label, s_label))

        variants = _run(con, "diff_variants")
        variants = replace(variants, queries=(*kernel_labels, k_label, *variants.queries))
        launch = _run(con, "diff_launch_config")
        launch = replace(launch, queries=(*kernel_labels, *launch.queries))
        danger_t = _run(con, "diff_danger")
        danger_t = replace(danger_t, queries=(*kernel_labels, *danger_t.queries))
        copies = _run(con, "diff_copies")
        copies = replace(copies, queries=(*copy_labels, *copies.queries))
    return {
        "categories": categories,
        "kernels": kernels,
        "variants": variants,
        "launch_config": launch,
        "danger": danger_t,
        "copies": copies,
    }


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


def _with_per_call_scores(
    con: duckdb.DuckDBPyConnection, kernels: Table, *, min_ns: float, threshold: float
) -> Table:
    """Add ``per_call_log_ratio``, ``typical_per_call_log_ratio``, ``per_call_score`` and
    ``per_call_outlier`` to the kernel rows: the outlier test of ``queries/diff/outliers.sql`` on
    each kernel's time per call, scaled by its mean number of calls (avg x (calls_a + calls_b) / 2,
    so weights and the noise floor stay in units of kernel time) with the smaller spread floor
    PER_CALL_FLOOR (docs/diff.md)."""
    con.execute(
        "CREATE OR REPLACE TEMP VIEW score_input AS SELECT name AS key, "
        "avg_a_ns * (calls_a + calls_b) / 2.0 AS a_ns, avg_b_ns * (calls_a + calls_b) / 2.0 AS b_ns, "
        "status FROM kernel_rows"
    )
    label = _materialize(
        con, "per_call_scores", "diff_outliers", min_ns=min_ns, threshold=threshold, floor=PER_CALL_FLOOR
    )
    scored = {
        key: rest
        for key, *rest in con.execute(
            "SELECT key, log_ratio, center, CASE WHEN eligible THEN score END, outlier FROM per_call_scores"
        ).fetchall()
    }
    empty = [None, None, None, False]
    rows = [(*row, *scored.get(row[0], empty)) for row in kernels.rows]
    columns = (*kernels.columns, *PER_CALL_COLUMNS)
    return replace(
        kernels, columns=columns, rows=rows, queries=tuple(dict.fromkeys((*kernels.queries, label)))
    )


def _sql_type(values: Sequence[Any]) -> str:
    """The SQL type of one column's Python values (see _PYTHON_TYPES)."""
    for value in values:
        if value is not None:
            for python_type, sql_type in _PYTHON_TYPES:
                if isinstance(value, python_type):
                    return sql_type
            return "VARCHAR"
    return "BIGINT"
