"""Joining both sides in a scratch DuckDB database with the SQL files in ``queries/diff/``: kernel and
category rows with their outlier scores, variants, launch configuration, danger kernels and copies."""

from __future__ import annotations

import contextlib
import functools
import importlib.resources
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from nsysq import catalog
from nsysq.diffing.params import MAD_FLOOR
from nsysq.table import Table

if TYPE_CHECKING:
    import duckdb

    from nsysq.rules import DangerRule

_TEXT_COLUMNS = {
    "short_name",
    "demangled_name",
    "category",
    "name_config_sig",
    "top_config",
    "top_grid",
    "top_block",
    "operation",
    "kind",
    "side",
    "field",
    "pattern",
    "reason",
}


@functools.cache
def _diff_query(filename: str) -> catalog.Query:
    root = importlib.resources.files("nsysq") / "queries" / "diff"
    return catalog.parse((root / filename).read_text(encoding="utf-8"), f"diff/{filename}")


def _load(con: duckdb.DuckDBPyConnection, name: str, columns: Sequence[str], rows: list[Any]) -> None:
    """Create temp table ``name`` from Python rows in one statement."""
    from nsysq import extension

    extension.table_from_rows(con, name, [(c, _sql_type(c)) for c in columns], rows)


def _run(con: duckdb.DuckDBPyConnection, filename: str, **params: Any) -> Table:
    query = _diff_query(filename)
    bound = {p: params[p] for p in query.params}
    cur = con.execute(query.sql, bound) if bound else con.execute(query.sql)
    columns = tuple(d[0] for d in cur.description or ())
    return Table(
        kind=query.name, columns=columns, rows=cur.fetchall(), queries=(f"{query.name}@{query.version}",)
    )


def _materialize(con: duckdb.DuckDBPyConnection, name: str, filename: str, **params: Any) -> str:
    query = _diff_query(filename)
    bound = {p: params[p] for p in query.params}
    sql = f"CREATE OR REPLACE TEMP TABLE {name} AS {query.sql}"
    if bound:
        con.execute(sql, bound)
    else:
        con.execute(sql)
    return f"{query.name}@{query.version}"


def _scored(
    con: duckdb.DuckDBPyConnection,
    source: str,
    key: str,
    columns: str,
    *,
    min_ns: float,
    threshold: float,
) -> tuple[Table, str]:
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW score_input AS SELECT {key} AS key, a_ns, b_ns, status FROM {source}"
    )
    label = _materialize(con, "scores", "outliers.sql", min_ns=min_ns, threshold=threshold, floor=MAD_FLOOR)
    cur = con.execute(
        f"SELECT {columns}, s.log_ratio, s.center AS typical_log_ratio, s.score, s.eligible, s.outlier "
        f"FROM {source} AS t JOIN scores AS s ON s.key = t.{key} "
        "ORDER BY s.outlier DESC, greatest(t.a_ns, t.b_ns) DESC, t." + key
    )
    cols = tuple(d[0] for d in cur.description or ())
    return Table(kind=source, columns=cols, rows=cur.fetchall()), label


def _combine(
    side_a: dict[str, Any],
    side_b: dict[str, Any],
    danger: list[DangerRule],
    *,
    min_ns: float,
    threshold: float,
) -> dict[str, Table]:
    from nsysq import extension

    con = extension.connect(sqlite=False)  # small tables only: no sqlite extension, no progress bar
    # Binding Python values as parameters would otherwise make DuckDB import pandas (0.45 s).
    with contextlib.closing(con), extension.pandas_free_binding():
        kcols = ("side", *side_a["kernels"].columns)
        _load(
            con,
            "side_kernels",
            kcols,
            [("a", *r) for r in side_a["kernels"].rows] + [("b", *r) for r in side_b["kernels"].rows],
        )
        ccols = ("side", "operation", "kind", "operations", "bytes", "total_ns")
        _load(
            con,
            "side_copies",
            ccols,
            [
                (
                    "a" if s is side_a else "b",
                    r["operation"],
                    r["kind"],
                    r["operations"],
                    r["bytes"],
                    r["total_ns"],
                )
                for s in (side_a, side_b)
                for r in s["copies"].records()
            ],
        )
        _load(
            con,
            "danger_rules",
            ("rule_order", "kind", "field", "pattern", "reason"),
            [(r.order, r.kind, r.field, r.like, r.reason) for r in danger],
        )
        base = ("diff_side_kernels@" + str(catalog.get("diff_side_kernels").version), "copies@1")

        k_label = _materialize(con, "kernel_rows", "kernels.sql")
        kernels, s_label = _scored(
            con,
            "kernel_rows",
            "name",
            "t.name, t.category, t.status, t.calls_a, t.calls_b, t.a_ns, t.b_ns, t.avg_a_ns, "
            "t.avg_b_ns, t.ratio, t.calls_ratio, t.per_call_ratio, t.pattern, t.family, "
            "t.variants_a, t.variants_b",
            min_ns=min_ns,
            threshold=threshold,
        )
        kernels = replace(kernels, kind="diff_kernels", queries=(*base, k_label, s_label))

        c_label = _materialize(con, "category_rows", "categories.sql")
        categories, _ = _scored(
            con,
            "category_rows",
            "category",
            "t.category, t.status, t.calls_a, t.calls_b, t.a_ns, t.b_ns, t.avg_a_ns, t.avg_b_ns, "
            "t.ratio, t.calls_ratio, t.per_call_ratio, t.kernels_a, t.kernels_b, t.top_kernel",
            min_ns=min_ns,
            threshold=threshold,
        )
        categories = replace(categories, kind="diff_categories", queries=(*base, c_label, s_label))

        variants = _run(con, "variants.sql")
        variants = replace(variants, queries=(*base, k_label, *variants.queries))
        launch = _run(con, "launch_config.sql")
        launch = replace(launch, queries=(*base, *launch.queries))
        danger_t = _run(con, "danger.sql")
        danger_t = replace(danger_t, queries=(*base, *danger_t.queries))
        copies = _run(con, "copies.sql")
        copies = replace(copies, queries=("copies@1", *copies.queries))
    return {
        "categories": categories,
        "kernels": kernels,
        "variants": variants,
        "launch_config": launch,
        "danger": danger_t,
        "copies": copies,
    }


def _sql_type(column: str) -> str:
    if column in _TEXT_COLUMNS:
        return "VARCHAR"
    return "DOUBLE" if column.endswith("_ratio") else "BIGINT"
