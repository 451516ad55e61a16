"""Labels and --show-sql: every label a command emits names a file under queries/ at that version, and
the script --show-sql prints, run as printed in a fresh DuckDB, gives the command's own rows."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from nsysq.base.errors import QueryError
from nsysq.session import sqlscript
from tests.conftest import REAL_TRACES

ROOT = Path(__file__).resolve().parents[1]
SCRIPT_FIXTURES = ("v2020_3", "v2024_6", "edge_cases")


def cli(*args: str | Path) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "nsysq", *map(str, args)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def file_versions() -> dict[str, int]:
    """name -> version read from the header of every .sql file under queries/ (not through nsysq)."""
    out: dict[str, int] = {}
    for path in (ROOT / "queries").rglob("*.sql"):
        text = path.read_text(encoding="utf-8")
        name = re.search(r"^-- name: (\S+)$", text, re.M)
        version = re.search(r"^-- version: (\d+)$", text, re.M)
        assert name and version, path
        out[name.group(1)] = int(version.group(1))
    return out


def top_kernel(path: Path) -> str:
    return str(json.loads(cli("census", path, "-f", "json", "-n", "1"))["rows"][0]["name"])


def command_args(command: str, path: Path) -> list[str | Path]:
    """The arguments of one command on ``path`` (stakeout: the kernel with most time)."""
    if command == "stakeout":
        return ["stakeout", path, top_kernel(path)]
    if command == "timeline":
        return ["timeline", path, "-n", "0"]
    return [command, path]


def test_every_emitted_label_names_a_file_at_that_version(fixture_dir: Path) -> None:
    versions = file_versions()
    a, b = fixture_dir / "v2024_6.sqlite", fixture_dir / "v2025_5.sqlite"
    documents = {
        command: json.loads(cli(*command_args(command, a), "-f", "json"))
        for command in ("census", "lineup", "stakeout", "timeline", "info")
    }
    documents["diff"] = json.loads(cli("diff", a, b, "-f", "json"))
    seen: set[str] = set()
    for command, doc in documents.items():
        assert doc["queries"], command
        for label in doc["queries"]:
            name, _, version = label.partition("@")
            assert versions.get(name) == int(version), f"{command} emits {label}: no file at that version"
            seen.add(name)
    assert {"census", "lineup", "kernel_category", "stakeout", "timeline", "copies", "diff_kernels"} <= seen
    assert "kernel_name_stats" in documents["census"]["queries"][1]


def run_script(text: str) -> list[tuple[Any, ...]]:
    """Execute ``text`` statement by statement, as printed, in a fresh DuckDB; the last rows."""
    con = duckdb.connect()
    try:
        rows: list[tuple[Any, ...]] = []
        for statement in duckdb.extract_statements(text):
            rows = con.execute(statement).fetchall()
        return rows
    finally:
        con.close()


def assert_same_rows(got: list[tuple[Any, ...]], doc: dict[str, Any]) -> None:
    expected = [[row[c] for c in doc["columns"]] for row in doc["rows"]]
    assert len(got) == len(expected)
    for got_row, want_row in zip(got, expected, strict=True):
        for value, want in zip(got_row, want_row, strict=True):
            if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
                value = None  # JSON writes NaN as null
            if isinstance(want, float) or isinstance(value, float):
                assert value == pytest.approx(want, rel=1e-9, abs=1e-9), (got_row, want_row)
            else:
                assert value == want, (got_row, want_row)


@pytest.mark.parametrize("command", ["census", "lineup", "stakeout", "timeline"])
@pytest.mark.parametrize("fixture", SCRIPT_FIXTURES)
def test_show_sql_script_reproduces_the_result(command: str, fixture: str, fixture_dir: Path) -> None:
    path = fixture_dir / f"{fixture}.sqlite"
    args = command_args(command, path)
    script = cli(*args, "--show-sql")
    code = re.sub(r"'(?:[^']|'')*'|--[^\n]*", "", script)  # outside strings and comments:
    assert "INSTALL" not in code.upper() and "$" not in code  # nothing fetched, every parameter filled
    assert re.search(r"^LOAD '[^']+sqlite_scanner\.duckdb_extension';$", script, re.M)
    assert f"ATTACH '{path.resolve()}' AS src (TYPE sqlite, READ_ONLY);" in script
    doc = json.loads(cli(*args, "-f", "json"))
    assert_same_rows(run_script(script), doc)


@pytest.mark.skipif(not REAL_TRACES, reason="no real exports")
def test_show_sql_script_on_a_real_export() -> None:
    path = min(REAL_TRACES, key=lambda p: p.stat().st_size)
    for command in ("census", "lineup"):
        doc = json.loads(cli(command, path, "-f", "json"))
        if doc["rows"]:
            assert_same_rows(run_script(cli(command, path, "--show-sql")), doc)


def statement_rows(text: str, label: str) -> list[tuple[Any, ...]]:
    """Run the script; the rows of the statement whose leading comment names ``label``."""
    con = duckdb.connect()
    try:
        found: list[tuple[Any, ...]] | None = None
        for statement in duckdb.extract_statements(text):
            rows = con.execute(statement).fetchall()
            if statement.query.lstrip().startswith(f"-- {label}"):
                found = rows
        assert found is not None, label
        return found
    finally:
        con.close()


def test_diff_per_trace_scripts_reproduce_each_side(fixture_dir: Path) -> None:
    """Each trace a diff read has a script; its kernel and copy rows add up to the diff's totals."""
    import nsysq
    from nsysq import catalog
    from nsysq.diffing import diff

    with (
        nsysq.open(fixture_dir / "v2024_6.sqlite") as ta,
        nsysq.open(fixture_dir / "edge_cases.sqlite") as tb,
    ):
        totals = {r["metric"]: r for r in diff(ta, tb).tables["totals"].records()}
        scripts = {"a": ta.session.script(), "b": tb.session.script()}
    for side, text in scripts.items():
        kernels = statement_rows(text, catalog.get("diff_side_kernels").label)
        assert sum(r[3] for r in kernels) == totals["kernels"][side]  # calls
        assert sum(r[4] for r in kernels) == totals["kernel_time_ns"][side]  # total_ns
        copies = statement_rows(text, catalog.get("copies").label)
        assert sum(r[3] for r in copies if r[0] == "memcpy") == totals["memcpy_ops"][side]
        ((first, last),) = statement_rows(text, catalog.get("kernel_groups_span").label)
        starts = [first, *(r[6] for r in copies)]
        ends = [last, *(r[7] for r in copies)]
        assert max(ends) - min(starts) == totals["gpu_span_ns"][side]
    # Printed one after the other (as for both traces of a diff), they run in one session too.
    assert run_script(scripts["a"] + scripts["b"]) == statement_rows(scripts["b"], "kernel_groups_span")


def test_rules_load_once() -> None:
    """A second use_rules() with the packaged rules runs (and records) nothing."""
    import nsysq

    with nsysq.open(ROOT / "examples" / "bs1.sqlite") as opened:
        trace = opened.session
        trace.use_rules()
        ran = len(trace.executed)
        trace.use_rules()
        assert len(trace.executed) == ran
        assert [s.note for s in trace.executed].count("the lineup rules") == 1


def test_parameters_become_literals_of_the_bound_type() -> None:
    sql = "SELECT $a, $b, $c, $d, $e, '$a', \"$b\" -- $c\n"
    filled = sqlscript.fill(sql, {"a": "it's", "b": 5, "c": None, "d": True, "e": 0.5})
    assert filled == "SELECT 'it''s', 5, NULL, true, CAST(0.5 AS DOUBLE), '$a', \"$b\" -- $c\n"
    con = duckdb.connect()
    params = {"a": "it's", "b": 5, "e": 0.5}
    bound = con.execute("SELECT $a, $b, $e, typeof($b), typeof($e)", params).fetchall()
    filled = sqlscript.fill("SELECT $a, $b, $e, typeof($b), typeof($e)", params)
    assert con.execute(filled).fetchall() == bound
    with pytest.raises(QueryError, match=r"\$z"):
        sqlscript.fill("SELECT $z", {})


def test_rows_table_keeps_types_and_empty_tables() -> None:
    con = duckdb.connect()
    columns = (("n", "INTEGER"), ("s", "VARCHAR"))
    con.execute(sqlscript.rows_table("t", columns, [(1, "a'b"), (2, None)]))
    assert con.execute("SELECT * FROM t ORDER BY n").fetchall() == [(1, "a'b"), (2, None)]
    con.execute(sqlscript.rows_table("e", columns, []))
    assert con.execute("SELECT count(*) FROM e").fetchall() == [(0,)]
    assert [d[1] for d in con.execute("SELECT * FROM e").description or ()] == ["INTEGER", "VARCHAR"]


def _duckdb_cli() -> str | None:
    """The duckdb CLI of the version nsysq uses: $NSYSQ_DUCKDB_CLI, else `duckdb` on PATH."""
    import os
    import shutil

    found = os.environ.get("NSYSQ_DUCKDB_CLI") or shutil.which("duckdb")
    if not found:
        return None
    version = subprocess.run([found, "--version"], capture_output=True, text=True).stdout
    return found if version.startswith(f"v{duckdb.__version__} ") else None


@pytest.mark.skipif(
    _duckdb_cli() is None, reason=f"no duckdb CLI {duckdb.__version__} (set NSYSQ_DUCKDB_CLI)"
)
def test_show_sql_script_runs_in_the_duckdb_cli(fixture_dir: Path) -> None:
    path = fixture_dir / "edge_cases.sqlite"
    script = cli("census", path, "-n", "4", "--show-sql")
    out = subprocess.run(
        [str(_duckdb_cli()), "-json"], input=script, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0 and not out.stderr, out.stderr
    # -json prints one array per statement that returns rows; the last one is the result.
    last = json.loads("[" + out.stdout.strip().split("\n[")[-1].lstrip("["))
    doc = json.loads(cli("census", path, "-n", "4", "-f", "json"))
    # The CLI's JSON writes 128-bit integers (sums) as strings.
    got = [tuple(int(v) if isinstance(v, str) and v.isdigit() else v for v in r.values()) for r in last]
    assert_same_rows(got, doc)
