"""Every packaged query runs against every fixture; portable ones give the same answer in sqlite3."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from nsysq import catalog
from nsysq.base.errors import QueryError
from nsysq.export.schema import CANONICAL, DERIVED, VISIBLE_DEVICES
from nsysq.session import Session
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
    "nvtx_lanes": True,
    "row_limit": 50,
    "top": 5,
    "min_gap": 0,
    "call_causes": ["launch_bound", "host_wait"],
    "call_patterns": ["cudalaunch%", "cuda%synchronize%"],
    "name_ids": [1, 2, 3],
    "ranks": [1, 2],
    "devices": [0, None],
    "starts": [1000, 2000],
    "ends": [1500, 2600],
    "comm_category": "NCCL / communication",
    "kind_names": ["AllReduce"],
    "kind_patterns": ["%allreduce%"],
    "innermost": False,
    "depth": None,
    "like": None,
    "domain": None,
    "group_names": False,
    "extend_unended": False,
    "range_name": "%",
    "instance": None,
    "log_gamma": 0.01,
    "fill_pct": 50.0,
    "min_share_pct": 0.0,
    "danger_kinds": ["split_k"],
    "danger_fields": ["short"],
    "danger_patterns": ["%a%"],
    "tids": [1, 2],
    "comm_sids": [1, 2, -1],
    "pid": 4242,
    "dev": 0,
    "lo": 0,
    "hi": 2**62,
    "min_instances": 3,
    "rids": [1, 2],
    "tid": 0,
    "dom": 0,
    "lvl": None,
    "profiler": True,
    "stream": 7,
    "ids": [1, 2],
    "first": 0,
    "last": 1,
}
ROOT = Path(__file__).resolve().parents[1]
# Temp tables nsysq builds on a trace's connection, and those nsysq diff builds in its scratch database.
BUILT = {"nsysq_lineup_rules", "nsysq_kernel_category", "nsysq_kernel_pairs", "nsysq_kernel_groups"}
BUILT.add(VISIBLE_DEVICES)  # a view every Trace creates with the canonical ones (nsysq/export/schema.py)
# The NVTX attribution's temp tables (nsysq.analyses.nvtx), built in this order.
NVTX_BUILT = {
    "nsysq_nvtx_ranges_sorted": "nvtx_ranges_sorted",
    "nsysq_nvtx_ranges": "nvtx_ranges",
    "nsysq_nvtx_marks": "nvtx_marks",
    "nsysq_nvtx_stack": "nvtx_stack",
    "nsysq_nvtx_ops": "nvtx_ops",
    "nsysq_nvtx_ancestors": "nvtx_ancestors",
    "nsysq_nvtx_inner": "nvtx_inner",
    "nsysq_nvtx_pairs": "nvtx_pairs",
    "nsysq_nvtx_per_range": "nvtx_per_range",
    "nsysq_nvtx_rows": "nvtx_rows",
    "nsysq_nvtx_selected": "nvtx_select",
    "nsysq_nvtx_launches": "nvtx_scope_launches",
}
BUILT |= set(NVTX_BUILT)
# nsys iters' temp tables (nsysq.iterations), built after the NVTX ones, in this order.
ITERS_BUILT = {
    "nsysq_iter_groups": "iters_candidates",
    "nsysq_iter_launches": "iters_nvtx_launches",
    "nsysq_iter_scope": "iters_scope_launches",
}
BUILT |= set(ITERS_BUILT)
# A scoped export's launching calls (nsysq.output.chrome_trace.collect).
BUILT |= {"nsysq_export_launches"}
DIFF_BUILT = {"side_kernels", "side_copies", "danger_rules", "kernel_rows", "score_input"}
# Arrays nsysq.analyses.nvtx registers only while queries/nvtx/rows_coded.sql runs (materialize_via).
NVTX_CODED = {"nsysq_nvtx_coded", "nsysq_nvtx_coded_names", "nsysq_nvtx_coded_domains"}
BUILT |= NVTX_CODED
# The queries that run on a trace (not a macro, not a diff/ file over the diff's scratch tables).
QUERIES = sorted(
    name
    for name, q in catalog.all_queries().items()
    if q.macro is None and not set(q.table_names) & (DIFF_BUILT | NVTX_CODED)
)


def test_every_sql_file_is_in_the_catalogue() -> None:
    """Every .sql file under queries/, subfolders included, loads; names are unique."""
    files = sorted(str(p.relative_to(ROOT / "queries")) for p in (ROOT / "queries").rglob("*.sql"))
    assert sorted(q.filename for q in catalog.all_queries().values()) == files
    assert any(f.startswith("diff/") for f in files)


def test_every_query_has_a_complete_header() -> None:
    known = BUILT | DIFF_BUILT | set(CANONICAL) | set(DERIVED)
    for query in catalog.all_queries().values():
        assert set(query.table_names) <= known, (query.name, query.table_names)
        assert query.version >= 1
        assert query.returns and query.tables
        assert query.dialect in ("duckdb", "portable")
        assert query.sql.lstrip().startswith("-- name: " + query.name)
        assert query.name == query.filename.removesuffix(".sql").replace("/", "_"), query.filename
        assert query.label == f"{query.name}@{query.version}"
        in_scratch = set(query.table_names) & DIFF_BUILT  # diff/ files read the diff's scratch tables only
        assert in_scratch == (set(query.table_names) if query.filename.startswith("diff/") else set())


def test_duplicate_names_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    header = "-- name: twin\n-- version: 1\n-- returns: r\n-- tables: t\n-- params: none\n"
    header += "-- dialect: duckdb\n"
    (tmp_path / "queries" / "sub").mkdir(parents=True)
    (tmp_path / "queries" / "twin.sql").write_text(header + "SELECT 1")
    (tmp_path / "queries" / "sub" / "twin.sql").write_text(header + "SELECT 2")
    monkeypatch.setattr(catalog.importlib.resources, "files", lambda _package: tmp_path)
    catalog.all_queries.cache_clear()
    try:
        with pytest.raises(QueryError, match="both named 'twin'"):
            catalog.all_queries()
    finally:
        monkeypatch.undo()
        catalog.all_queries.cache_clear()


def test_one_definition_of_the_unresolved_name() -> None:
    """The '<unresolved id N>' text is written once, in the macro every query calls."""
    writers = [q.name for q in catalog.all_queries().values() if "'<unresolved id '" in q.sql]
    assert writers == ["name_label"]
    callers = {q.name for q in catalog.all_queries().values() if "nsysq_name_label(" in q.sql}
    assert {"census", "kernel_category", "timeline"} <= callers
    assert [q.name for q in catalog.macros()] == ["launch_dims", "name_label", "sm_fill"]


def test_params_must_match_the_sql() -> None:
    text = "-- name: x\n-- version: 1\n-- returns: r\n-- tables: t\n-- params: a\n-- dialect: duckdb\n"
    with pytest.raises(QueryError, match="declares params"):
        catalog.parse(text + "SELECT $a, $b", "x.sql")
    assert catalog.parse(text + "SELECT $a -- $c in a comment\n, '$d'", "x.sql").params == ("a",)


@pytest.mark.parametrize("name", QUERIES)
def test_query_runs_on_every_fixture(name: str, fixture_trace: Path) -> None:
    query = catalog.get(name)
    with Session(fixture_trace) as trace:
        trace.materialize("kernel_groups", "nsysq_kernel_groups")
        trace.use_rules()
        for table_name, step in (NVTX_BUILT | ITERS_BUILT).items():  # on empty views too: no NVTX, no ranges
            params = {p: DEFAULT_PARAMS[p] for p in catalog.get(step).params}
            trace.materialize(step, table_name, **params)
        trace.materialize("export_launches", "nsysq_export_launches")
        table = trace.run(name, **{p: DEFAULT_PARAMS[p] for p in query.params})
    assert table.columns, name
    assert table.queries[0] == query.label
    assert set(table.queries) <= {q.label for q in catalog.all_queries().values()}


def _portable_targets() -> list[Path]:
    return REAL_TRACES  # graph_trace (every kind of GPU op, whole-graph executions too) is added below


@pytest.mark.parametrize("name", [q for q in QUERIES if catalog.get(q).dialect == "portable"])
def test_portable_query_matches_sqlite3(name: str, fixture_dir: Path) -> None:
    """The file runs unchanged in SQLite wherever the tables it names exist, with equal results."""
    query = catalog.get(name)
    targets = [fixture_dir / f"{n}.sqlite" for n in ("v2021_2", "v2024_6", "v2025_5", "graph_trace")]
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
        with Session(path) as trace:
            got = trace.run(name).rows
        assert [tuple(r) for r in got] == expected, path.name
        checked += 1
    assert checked, f"no file had every table {name} needs"
