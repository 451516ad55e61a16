"""Every packaged query runs against every fixture; portable ones give the same answer in sqlite3."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from nsysq import catalog
from nsysq.errors import QueryError
from nsysq.schema import CANONICAL, DERIVED
from nsysq.trace import Trace
from tests import oracle
from tests.conftest import REAL_TRACES

DEFAULT_PARAMS: dict[str, Any] = {
    "names": "short",
    "limit": 3,
    "kernel": "%a%",
    "match": "like",
    "t0": 0,
    "from_ns": None,
    "to_ns": None,
    "nvtx": True,
    "row_limit": 50,
    "top": 5,
    "min_gap": 0,
    "call_causes": ["launch_bound", "host_wait"],
    "call_patterns": ["cudalaunch%", "cuda%synchronize%"],
    "feeder_devices": [0, 1],
    "feeder_threads": [4242, 4243],
    "comm_category": "NCCL / communication",
    "kind_names": ["AllReduce"],
    "kind_patterns": ["%allreduce%"],
}
QUERIES = sorted(catalog.all_queries())


def test_every_query_has_a_complete_header() -> None:
    derived = {"nsysq_lineup_rules", "nsysq_kernel_category", "nsysq_kernel_pairs", "nsysq_kernel_groups"}
    known = derived | set(CANONICAL) | set(DERIVED)
    for query in catalog.all_queries().values():
        assert set(query.table_names) <= known, (query.name, query.table_names)
        assert query.version >= 1
        assert query.returns and query.tables
        assert query.dialect in ("duckdb", "portable")
        assert query.sql.lstrip().startswith("-- name: " + query.name)
        assert query.filename == f"{query.name}.sql"


def test_params_must_match_the_sql() -> None:
    text = "-- name: x\n-- version: 1\n-- returns: r\n-- tables: t\n-- params: a\n-- dialect: duckdb\n"
    with pytest.raises(QueryError, match="declares params"):
        catalog.parse(text + "SELECT $a, $b", "x.sql")
    assert catalog.parse(text + "SELECT $a -- $c in a comment\n, '$d'", "x.sql").params == ("a",)


@pytest.mark.parametrize("name", QUERIES)
def test_query_runs_on_every_fixture(name: str, fixture_trace: Path) -> None:
    query = catalog.get(name)
    with Trace(fixture_trace) as trace:
        trace.materialize("kernel_groups", "nsysq_kernel_groups")
        trace.use_rules()
        table = trace.run(name, **{p: DEFAULT_PARAMS[p] for p in query.params})
    assert table.columns, name
    assert table.queries == (f"{name}@{query.version}",)


def _portable_targets() -> list[Path]:
    return REAL_TRACES


@pytest.mark.parametrize("name", [q for q in QUERIES if catalog.get(q).dialect == "portable"])
def test_portable_query_matches_sqlite3(name: str, fixture_dir: Path) -> None:
    """The file runs unchanged in SQLite wherever the tables it names exist, with equal results."""
    query = catalog.get(name)
    targets = [fixture_dir / f"{n}.sqlite" for n in ("v2021_2", "v2024_6", "v2025_5")]
    targets += _portable_targets()
    checked = 0
    for path in targets:
        present = oracle.tables(path)
        if not set(query.table_names) <= present:
            continue
        with oracle.connect(path) as con:
            try:
                expected = con.execute(query.sql).fetchall()
            except sqlite3.OperationalError as exc:
                pytest.fail(f"{name} does not run in sqlite3 on {path.name}: {exc}")
        with Trace(path) as trace:
            got = trace.run(name).rows
        assert [tuple(r) for r in got] == expected, path.name
        checked += 1
    assert checked, f"no file had every table {name} needs"
