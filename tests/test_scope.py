"""Scopes (--device/--stream/--pid, and the launch-set slot) reconcile with the whole trace; CUDA graphs
show up in both trace modes. Every number is checked against tests/oracle.py (raw SQL / plain Python)."""

from __future__ import annotations

import json
import math
import shutil
import sqlite3
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from nsysq.analyses.census import census
from nsysq.analyses.graphs import graphs
from nsysq.analyses.info import info
from nsysq.analyses.lineup import lineup
from nsysq.analyses.stakeout import stakeout
from nsysq.analyses.timeline import timeline
from nsysq.base.errors import NoDataError, UsageError
from nsysq.diffing import diff
from nsysq.gputime.gaps import gaps
from nsysq.session import Session
from nsysq.session.scope import OpFilter, Scope, rewrite
from tests import oracle
from tests.conftest import NSYS_FIXTURES
from tests.test_show_sql import run_script

ROOT = Path(__file__).resolve().parents[1]
DIMENSIONS = ("device", "stream", "pid")
GPU_FIXTURES = [n for n in NSYS_FIXTURES if n != "no_kernels"]


def _cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nsysq", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )


def _graph_ns(path: Path, **scope: int | None) -> int:
    return sum(ns for _n, ns in oracle.graph_executions(path, **scope).values())


def check_reconciles(path: Path) -> None:
    """For each dimension: census and lineup totals in every scope equal the oracle's, and add up to
    the unscoped totals."""
    values = oracle.gpu_scope_values(path)
    has_kernels = oracle.scoped_kernels(path)[0] > 0
    with Session(path) as trace:
        whole = census(trace).footer if has_kernels else None
    for dim in DIMENSIONS:
        launches = kernel_ns = 0
        for value in values[dim]:
            scope = {dim: value}
            with Session(path, scope=Scope(**scope)) as trace:
                got = _scoped_totals(trace, path, scope)
            if got is not None:
                launches, kernel_ns = launches + got[0], kernel_ns + got[1]
        if whole is not None:
            assert (launches, kernel_ns) == (whole["total_kernels"], whole["total_kernel_ns"]), dim


def _scoped_totals(trace: Session, path: Path, scope: dict[str, int]) -> tuple[int, int] | None:
    """(kernels, kernel ns) of the census in ``scope``, each checked against the oracle (None: no
    kernel in that scope, as the census says)."""
    ((dim, value),) = scope.items()
    expected = oracle.scoped_kernels(path, **scope)
    if not expected[0]:
        with pytest.raises(NoDataError, match="no CUDA kernels in scope"):
            census(trace)
        return None
    got = census(trace).footer
    assert got["scope"] == f"{dim} {value}"
    assert (got["total_kernels"], got["total_kernel_ns"]) == expected, (dim, value)
    assert got.get("graph_ns", 0) == _graph_ns(path, **scope)
    rows = lineup(trace)
    assert sum(r["total_ns"] for r in rows.records()) == expected[1] + _graph_ns(path, **scope)
    assert rows.footer["scope"] == f"{dim} {value}"
    return got["total_kernels"], got["total_kernel_ns"]


@pytest.mark.parametrize("name", GPU_FIXTURES)
def test_scopes_reconcile_on_fixtures(name: str, fixture_dir: Path) -> None:
    check_reconciles(fixture_dir / f"{name}.sqlite")


def test_scopes_reconcile_on_real_exports(real_trace: Path) -> None:
    if not any(oracle.gpu_scope_values(real_trace).values()):
        pytest.skip("no GPU work in this export")
    check_reconciles(real_trace)


def test_scope_with_two_processes(fixture_dir: Path) -> None:
    """graph_node has two processes whose correlation ids overlap: each pid keeps its own kernels."""
    path = fixture_dir / "graph_node.sqlite"
    assert oracle.gpu_scope_values(path)["pid"] == [4242, 5151]
    with Session(path, scope=Scope(pid=5151)) as trace:
        rows = stakeout(trace, "rms_norm_kernel")
        assert {r["device_id"] for r in rows.records()} == {1}
        assert rows.footer["launches"] == 5
        records = timeline(trace, limit=0).records()
        assert records and {r["device_id"] for r in records if r["kind"] != "nvtx"} == {1}
    with Session(path) as trace:
        processes = {p["pid"]: p for p in info(trace)["processes"]}
    expected = oracle.process_work(path)
    assert {pid: (p["kernels"], p["kernel_ns"]) for pid, p in processes.items()} == expected
    assert processes[5151]["devices"] == "1"


def test_stakeout_suggests_names_in_scope(fixture_dir: Path) -> None:
    """A kernel that ran only outside the scope is not offered back as "did you mean" (the names
    suggested used to be read from the whole trace)."""
    path = fixture_dir / "graph_node.sqlite"
    with Session(path, scope=Scope(pid=5151)) as trace, pytest.raises(UsageError) as caught:
        stakeout(trace, "device_kernel")  # launched by pid 4242 only
    message = str(caught.value)
    assert message.count("device_kernel") == 1, message
    with (
        Session(path, scope=Scope(pid=5151)) as trace,
        pytest.raises(UsageError, match="did you mean Kernel2"),
    ):
        stakeout(trace, "Kernel3")


def test_gaps_device_scope_keeps_that_device(fixture_dir: Path) -> None:
    path = fixture_dir / "edge_cases.sqlite"
    with Session(path) as trace:
        whole = {r["device_id"]: r for r in gaps(trace).devices.records()}
    for device, row in whole.items():
        with Session(path, scope=Scope(device=device)) as trace:
            result = gaps(trace)
        (got,) = result.devices.records()
        assert result.devices.footer["scope"] == f"device {device}"
        for key in ("ops", "span_ns", "busy_ns", "idle_ns", "idle_gaps"):
            assert got[key] == row[key], key


def test_diff_scopes_both_sides(fixture_dir: Path) -> None:
    path = fixture_dir / "edge_cases.sqlite"
    result = diff(path, path, scope=Scope(device=1))
    assert result.a.scope == result.b.scope == "device 1"
    totals = {r["metric"]: r["a"] for r in result.to_dict()["totals"]}
    assert totals["kernels"] == oracle.scoped_kernels(path, device=1)[0]


def test_unknown_scope_value_names_the_ones_there_are(fixture_dir: Path) -> None:
    proc = _cli("census", fixture_dir / "edge_cases.sqlite", "--device", "5")
    assert proc.returncode == 2
    assert "no GPU work on device 5; devices with GPU work: 0, 1" in proc.stderr
    assert proc.stdout == ""


def test_launch_set_slot(fixture_dir: Path) -> None:
    """The slot another filter (NVTX attribution) plugs into: a SELECT of (globalPid, correlationId)."""
    path = fixture_dir / "graph_node.sqlite"
    ops = OpFilter(
        label="even launches",
        sql="SELECT globalPid, correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE correlationId % 2 = 0",
        declared={"CUPTI_ACTIVITY_KIND_KERNEL": ("globalPid", "correlationId")},
    )
    rows = oracle._rows(
        path,
        'SELECT count(*), sum("end" - start) FROM CUPTI_ACTIVITY_KIND_KERNEL '
        "WHERE correlationId % 2 = 0 AND (globalPid >> 24) & 16777215 = 4242",
    )
    with Session(path, scope=Scope(pid=4242, ops=ops)) as trace:
        footer = census(trace).footer
    assert footer["scope"] == "pid 4242, even launches"
    assert (footer["total_kernels"], footer["total_kernel_ns"]) == (rows[0][0], rows[0][1])


def test_rewrite_leaves_comments_and_strings() -> None:
    head = "-- CUPTI_ACTIVITY_KIND_KERNEL\nSELECT 'CUPTI_ACTIVITY_KIND_KERNEL' FROM "
    assert rewrite(head + '"CUPTI_ACTIVITY_KIND_KERNEL" k') == head + "nsysq_scope_kernel k"


def test_scoped_show_sql_reproduces_the_result(fixture_dir: Path) -> None:
    path = fixture_dir / "edge_cases.sqlite"
    proc = _cli("census", path, "--stream", "13", "--device", "1", "--show-sql")
    assert proc.returncode == 0, proc.stderr
    got = run_script(proc.stdout)
    doc = json.loads(_cli("census", path, "--stream", "13", "--device", "1", "-f", "json").stdout)
    assert len(got) == len(doc["rows"])
    assert [r[1] for r in got] == [r["name"] for r in doc["rows"]]
    assert sum(r[3] for r in got) == oracle.scoped_kernels(path, device=1, stream=13)[1]


def test_every_gpu_command_takes_the_scope_options() -> None:
    commands = [
        ("census",),
        ("lineup",),
        ("stakeout",),
        ("timeline",),
        ("gaps",),
        ("overlap",),
        ("graphs",),
        ("diff",),
        ("export",),
        ("plot", "census"),
        ("plot", "lineup"),
        ("plot", "stakeout"),
        ("plot", "timeline"),
        ("plot", "diff"),
        ("plot", "gaps"),
        ("plot", "overlap"),
    ]
    for command in commands:
        text = _cli(*command, "--help").stdout
        for option in ("--device", "--stream", "--pid"):
            assert option in text, (command, option)


# -- CUDA graphs -------------------------------------------------------------------------------


def test_whole_graphs_are_rows_that_add_up(fixture_dir: Path) -> None:
    path = fixture_dir / "graph_trace.sqlite"
    executions = oracle.graph_executions(path)
    kernels = oracle.scoped_kernels(path)
    with Session(path) as trace:
        table = census(trace)
        rows = {r["name"]: r for r in table.records()}
        for graph_id, (n, ns) in executions.items():
            assert (rows[f"graph {graph_id}"]["instances"], rows[f"graph {graph_id}"]["total_ns"]) == (n, ns)
            assert rows[f"graph {graph_id}"]["kernel_names"] == 0
        assert (table.footer["total_kernels"], table.footer["total_kernel_ns"]) == kernels
        assert table.footer["total_gpu_ns"] == kernels[1] + _graph_ns(path)
        assert math.isclose(sum(r["share_pct"] for r in table.records()), 100.0)
        assert any("--cuda-graph-trace=node" in note for note in table.notes)
        top = census(trace, limit=1)
        assert sum(r["total_ns"] for r in top.records()) == kernels[1] + _graph_ns(path)
        assert top.footer["total_kernels"] == kernels[0]
        line = {r["category"]: r for r in lineup(trace).records()}["CUDA graph (traced whole)"]
        assert (line["instances"], line["total_ns"], line["kernels"]) == (
            sum(n for n, _ in executions.values()),
            _graph_ns(path),
            len(executions),
        )
        events = timeline(trace, limit=0).records()
        assert sum(1 for r in events if r["kind"] == "graph") == sum(n for n, _ in executions.values())
        (device,) = gaps(trace).devices.records()
        memory = oracle.count(path, "CUPTI_ACTIVITY_KIND_MEMCPY") + oracle.count(
            path, "CUPTI_ACTIVITY_KIND_MEMSET"
        )
        assert device["ops"] == kernels[0] + memory + sum(n for n, _ in executions.values())


def check_graphs(path: Path) -> None:
    expected = oracle.graph_table(path)
    with Session(path) as trace:
        table = graphs(trace)
    got = {r["graph"]: r for r in table.records()}
    assert set(got) == set(expected)
    for label, want in expected.items():
        row = got[label]
        spans = want["spans"]
        assert row["traced"] == want["traced"]
        assert (row["launches"], row["total_ns"]) == (len(spans), sum(spans))
        assert (row["min_ns"], row["max_ns"]) == (min(spans), max(spans))
        assert row["med_ns"] == statistics.median(spans)
        if want["kernels"]:
            assert row["kernels_per_launch"] == statistics.median(want["kernels"])
        else:
            assert row["kernels_per_launch"] is None
        assert row["nvtx_launches"] == len(want["ranges"])
        if want["ranges"]:
            assert row["nvtx_range"] == statistics.mode(want["ranges"])
    assert table.footer["launches"] == sum(len(w["spans"]) for w in expected.values())


@pytest.mark.parametrize("name", ["graph_node", "graph_node_v2024_6", "graph_trace"])
def test_graphs_both_modes(name: str, fixture_dir: Path) -> None:
    check_graphs(fixture_dir / f"{name}.sqlite")


def test_graphs_before_graph_ids(fixture_dir: Path) -> None:
    """nsys 2024.6 kernels carry graphNodeId only: a graph is named by its lowest node id."""
    with Session(fixture_dir / "graph_node_v2024_6.sqlite") as trace:
        rows = {r["graph"]: r for r in graphs(trace).records()}
    assert set(rows) == {"graph of node 1000", "graph of node 2000"}
    assert rows["graph of node 1000"]["graph_id"] is None


@pytest.mark.parametrize("name", ["graph_node", "graph_trace"])
def test_graphs_show_sql_reproduces_the_result(name: str, fixture_dir: Path) -> None:
    path = fixture_dir / f"{name}.sqlite"
    proc = _cli("graphs", path, "--pid", "4242", "--show-sql")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(_cli("graphs", path, "--pid", "4242", "-f", "json").stdout)
    got = run_script(proc.stdout)
    assert [(r[1], r[3], r[4]) for r in got] == [
        (r["graph"], r["launches"], r["total_ns"]) for r in doc["rows"]
    ]


def test_graphs_node_mode_values(fixture_dir: Path) -> None:
    """Node mode: kernels in the kernel table, 3 per launch, launched inside 'decode_step'."""
    with Session(fixture_dir / "graph_node.sqlite") as trace:
        rows = {r["graph"]: r for r in graphs(trace).records()}
        names = {r["name"] for r in census(trace).records()}
    assert rows["graph 1"]["launches"] == 8 and rows["graph 2"]["launches"] == 5
    assert rows["graph 1"]["kernels_per_launch"] == 3 and rows["graph 1"]["nvtx_range"] == "decode_step"
    assert "rms_norm_kernel" in names and not any(n.startswith("graph ") for n in names)


def test_graphs_without_graphs_is_no_data(fixture_dir: Path) -> None:
    with Session(fixture_dir / "v2024_6.sqlite") as trace, pytest.raises(NoDataError, match="no CUDA graph"):
        graphs(trace)


def test_graphs_on_real_exports(real_trace: Path) -> None:
    """None of the real exports uses graphs: the oracle agrees there is nothing, nsysq says so."""
    expected = oracle.graph_table(real_trace)
    with Session(real_trace) as trace:
        if expected:
            check_graphs(real_trace)
        else:
            with pytest.raises(NoDataError):
                graphs(trace)


def test_info_processes_on_real_exports(real_trace: Path) -> None:
    with Session(real_trace) as trace:
        data = info(trace)
    got = {p["pid"]: (p["kernels"], p["kernel_ns"]) for p in data["processes"] if p["kernels"]}
    assert got == oracle.process_work(real_trace)
    if "PROCESSES" in oracle.tables(real_trace):
        names = dict(oracle._rows(real_trace, "SELECT pid, name FROM PROCESSES"))
        for proc in data["processes"]:
            assert proc["name"] == names.get(proc["pid"])


def test_scope_and_graph_keys_are_documented(fixture_dir: Path) -> None:
    text = (ROOT / "docs" / "json.md").read_text(encoding="utf-8")
    doc = json.loads(_cli("graphs", fixture_dir / "graph_trace.sqlite", "-f", "json").stdout)
    scoped = json.loads(
        _cli("census", fixture_dir / "graph_trace.sqlite", "--pid", "4242", "-f", "json").stdout
    )
    keys: set[str] = {*doc["columns"], *doc["footer"], *scoped["footer"]}
    proc = json.loads(_cli("info", fixture_dir / "graph_node.sqlite", "-f", "json").stdout)["processes"][0]
    keys |= set(proc)
    assert not {k for k in keys if f"`{k}`" not in text}


def test_diff_warns_about_whole_graphs(fixture_dir: Path) -> None:
    path = fixture_dir / "graph_trace.sqlite"
    executions = sum(n for n, _ in oracle.graph_executions(path).values())
    result = diff(path, path)
    graph_warnings = [w for w in result.warnings if "traced whole" in w]
    assert len(graph_warnings) == 2 and all(f"{executions:,} executions" in w for w in graph_warnings)


def test_info_warns_when_graph_launches_were_not_traced(fixture_dir: Path, tmp_path: Path) -> None:
    """A capture without the graph-mode key (before nsys 2023.3) whose cudaGraphLaunch calls left
    neither executions nor node kernels: the graphs' GPU time is missing, and info says so."""
    copy = tmp_path / "untraced.sqlite"
    shutil.copy(fixture_dir / "graph_trace.sqlite", copy)
    with sqlite3.connect(copy) as con:
        con.execute("DROP TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE")
        con.execute("DELETE FROM META_DATA_CAPTURE WHERE name LIKE '%CUDA_GRAPH_TRACE_OPTIONS:MODE'")
    launches = oracle._rows(
        copy,
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass IN (0, 1) AND nameId IN "
        "(SELECT id FROM StringIds WHERE value LIKE 'cudaGraphLaunch%')",
    )[0][0]
    with Session(copy) as trace:
        (warning,) = [w for w in info(trace)["warnings"] if "graph" in w.lower()]
    assert f"({launches} cudaGraphLaunch calls) but neither" in warning
    with Session(fixture_dir / "graph_node.sqlite") as trace:  # traced per node: nothing missing
        assert not [w for w in info(trace)["warnings"] if "graph" in w.lower()]


def test_iteration_scopes_add_up(tmp_path: Path) -> None:
    from nsysq.session.scope import IterationSelection
    from nsysq.synth.training import STEPS, training
    from nsysq.trace import Trace

    path = training(tmp_path / "plain.sqlite", nvtx=False)
    totals = []
    for part in (f"0:{STEPS // 2 - 1}", f"{STEPS // 2}:{STEPS - 1}"):
        with Trace(path, iteration=part) as trace:
            footer = census(trace.session, limit=0).footer
        assert footer["scope"] == IterationSelection.parse(part).label
        totals.append((footer["total_kernels"], footer["total_kernel_ns"]))
    kernels, ns = oracle.kernel_count(path), oracle.kernel_ns(path)
    assert (sum(k for k, _ in totals), sum(n for _, n in totals)) == (kernels, ns)
    assert Scope(iterations=IterationSelection(3, 5)).active
    assert Scope(iterations=IterationSelection(3, 5)).describe() == "iterations 3:5"
    with pytest.raises(UsageError, match="is empty"):
        IterationSelection(5, 3)


def test_iteration_show_sql_reproduces_the_result(tmp_path: Path) -> None:
    from nsysq.synth.training import training

    path = training(tmp_path / "loop.sqlite")
    proc = _cli("census", path, "--iteration", "10", "--limit", "0", "--show-sql")
    assert proc.returncode == 0, proc.stderr
    got = run_script(proc.stdout)
    doc = json.loads(_cli("census", path, "--iteration", "10", "--limit", "0", "-f", "json").stdout)
    assert [r[1] for r in got] == [r["name"] for r in doc["rows"]]
    assert sum(r[3] for r in got) == doc["footer"]["total_kernel_ns"]
