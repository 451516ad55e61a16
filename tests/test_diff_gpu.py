"""nsysq diff's GPU-time side: gpu_busy_ns / gpu_idle_ns / comm_exposed_ns against the oracle's
sweeps, the idle-change finding on generated pairs (the issue's sparse solver, a synchronization
change) and the per-call finding on a pair of windows of different length."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import nsysq
from nsysq.diffing import DiffResult
from nsysq.diffing.params import DEFAULT_MIN_TIME_MS, PER_CALL_FLOOR
from nsysq.gputime.gaps import gaps
from tests import oracle
from tests.conftest import ROOT
from tests.fixtures import diff_pairs, gaps_scenarios

MS = 1_000_000
GPU_METRICS = ("gpu_busy_ns", "gpu_idle_ns", "comm_exposed_ns")


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    directory = tmp_path_factory.mktemp("diff_pairs")
    return {name: diff_pairs.build(name, directory) for name in diff_pairs.PAIRS}


def _totals(result: DiffResult) -> dict[str, dict[str, Any]]:
    return {r["metric"]: r for r in result.tables["totals"].records()}


def _kinds(result: DiffResult) -> list[str]:
    return [f.kind for f in result.findings]


def _check_gpu_totals(a: Path, b: Path) -> None:
    totals = _totals(nsysq.diff(a, b))
    for side, path in (("a", a), ("b", b)):
        expected = oracle.diff_gpu_totals(path)
        for metric in GPU_METRICS:
            assert totals[metric][side] == expected[metric], (path.name, metric)
    for metric in GPU_METRICS:
        row = totals[metric]
        if row["a"] is not None and row["b"] is not None:
            assert row["delta"] == row["b"] - row["a"]


# -- the totals reconcile with the oracle -----------------------------------------------------------
def test_gpu_totals_match_the_oracle_on_the_pairs(pairs: dict[str, tuple[Path, Path]]) -> None:
    for a, b in pairs.values():
        _check_gpu_totals(a, b)


def test_gpu_totals_with_communication_and_several_devices(tmp_path: Path) -> None:
    scenario = gaps_scenarios.build("gaps_overlap", tmp_path)
    _check_gpu_totals(scenario, scenario)
    totals = _totals(nsysq.diff(scenario, scenario))
    expected_exposed = sum(d["exposed_ns"] for d in gaps_scenarios.EXPECTED_OVERLAP.values())
    assert totals["comm_exposed_ns"]["a"] == expected_exposed > 0
    assert totals["gpu_idle_ns"]["a"] == sum(d["idle_ns"] for d in gaps_scenarios.EXPECTED_DEVICES.values())


def test_gpu_totals_match_the_oracle_on_real_exports(real_trace: Path) -> None:
    _check_gpu_totals(real_trace, real_trace)


def test_gpu_totals_equal_the_gaps_command(pairs: dict[str, tuple[Path, Path]]) -> None:
    a, b = pairs["solver"]
    totals = _totals(nsysq.diff(a, b))
    for side, path in (("a", a), ("b", b)):
        with nsysq.open(path) as t:
            footer = gaps(t.session).devices.footer
        assert (totals["gpu_busy_ns"][side], totals["gpu_idle_ns"][side]) == (
            footer["busy_ns"],
            footer["idle_ns"],
        )


def test_gpu_totals_equal_gaps_and_overlap_with_whole_graphs(fixture_dir: Path, tmp_path: Path) -> None:
    """Executions of CUDA graphs traced whole are GPU busy time in the diff as in gaps, and neither
    communication nor compute in comm_exposed_ns as in overlap (docs/gaps.md)."""
    from nsysq.gputime.overlap import overlap
    from nsysq.synth.writer import write_trace
    from tests.fixtures import nvtx_scenarios

    paths = [
        fixture_dir / "graph_trace.sqlite",
        write_trace(tmp_path / "nvtx_graphs.sqlite", nvtx_scenarios.nvtx_graphs_spec()),
        gaps_scenarios.build("graphs_overlap", tmp_path),
    ]
    for path in paths:
        totals = _totals(nsysq.diff(path, path))
        with nsysq.open(path) as t:
            footer, exposed = gaps(t.session).devices.footer, overlap(t.session).devices.footer["exposed_ns"]
        assert footer["busy_ns"] > 0 and oracle.graph_executions(path), path.name
        assert (totals["gpu_busy_ns"]["a"], totals["gpu_idle_ns"]["a"], totals["comm_exposed_ns"]["a"]) == (
            footer["busy_ns"],
            footer["idle_ns"],
            exposed,
        ), path.name
        expected = oracle.diff_gpu_totals(path)
        assert {m: totals[m]["a"] for m in GPU_METRICS} == expected, path.name
    assert totals["comm_exposed_ns"]["a"] == 180 * MS // 1000  # graphs_overlap: the AllReduce's exposed time


# -- the idle-time finding --------------------------------------------------------------------------
def test_the_solver_rewrite_is_45_ms_less_idle(pairs: dict[str, tuple[Path, Path]]) -> None:
    result = nsysq.diff(*pairs["solver"])
    totals = _totals(result)
    assert (totals["kernel_time_ns"]["a"], totals["kernel_time_ns"]["b"]) == (74 * MS, 74 * MS)
    assert (totals["gpu_span_ns"]["a"], totals["gpu_span_ns"]["b"]) == (159 * MS, 114 * MS)
    assert (totals["gpu_idle_ns"]["a"], totals["gpu_idle_ns"]["b"]) == (85 * MS, 40 * MS)
    assert totals["gpu_idle_ns"]["delta"] == -45 * MS
    (idle,) = result.findings_of("idle_change")
    assert result.findings[0] is idle
    assert idle.clue == "same kernel time, 45 ms less idle"
    assert idle.verdict.startswith("Fewer launches and syncs")
    assert idle.numbers["excess_ns"] == pytest.approx(-45 * MS)
    assert (idle.numbers["kernels_a"], idle.numbers["kernels_b"]) == (1221, 18)


def test_a_synchronization_change_names_the_idle_time(pairs: dict[str, tuple[Path, Path]]) -> None:
    a, b = pairs["sync"]
    result = nsysq.diff(a, b)
    (idle,) = result.findings_of("idle_change")
    expected = oracle.diff_gpu_totals(a)["gpu_idle_ns"], oracle.diff_gpu_totals(b)["gpu_idle_ns"]
    assert (idle.numbers["a_ns"], idle.numbers["b_ns"]) == expected
    assert expected[0] is not None and expected[1] is not None and expected[0] > 10 * expected[1]
    assert idle.clue.startswith("same kernel time, ") and "less idle" in idle.clue
    assert "fewer synchronizations" in idle.verdict  # the same launches: not "fewer launches"
    # and the other way round the same change reads as more idle
    (back,) = nsysq.diff(b, a).findings_of("idle_change")
    assert "more idle" in back.clue and back.numbers["excess_ns"] > 0
    with nsysq.open(a) as t:  # nsysq gaps, which the verdict points to, names the sync as the cause
        assert gaps(t.session).devices.footer["idle_ns"] == expected[0]
        assert gaps(t.session).devices.records()[0]["host_wait_ns"] > 0


def test_idle_in_line_with_kernel_time_is_no_finding(pairs: dict[str, tuple[Path, Path]]) -> None:
    a, b = ROOT / "examples" / "bs1.sqlite", ROOT / "examples" / "bs16.sqlite"
    if a.is_file() and b.is_file():  # idle 46.7 -> 47.6 ms while kernel time grows 1.10x
        assert not {"idle_change", "exposed_comm", "per_call"} & set(_kinds(nsysq.diff(a, b)))
    same = pairs["sync"][0]
    assert not nsysq.diff(same, same).findings


# -- the per-call finding ---------------------------------------------------------------------------
def test_per_call_finding_on_windows_of_different_length(pairs: dict[str, tuple[Path, Path]]) -> None:
    a, b = pairs["window"]
    result = nsysq.diff(a, b)
    kernels = {r["name"]: r for r in result.tables["kernels"].records()}
    comm = kernels[diff_pairs.ALL_REDUCE]
    assert comm["ratio"] == pytest.approx(2.1) and not comm["outlier"]  # the total looks ordinary
    (finding,) = result.findings_of("per_call")
    assert finding.subject == diff_pairs.ALL_REDUCE
    assert finding.numbers["per_call_ratio"] == pytest.approx(1.4)
    assert finding.clue.startswith("1.40x ncclDevKernel_AllReduce_Sum_f32_RING_LL time per call")
    assert "outlier" not in _kinds(result)
    scores = oracle.per_call_scores(a, b, DEFAULT_MIN_TIME_MS * MS, PER_CALL_FLOOR)
    for name, row in kernels.items():
        assert row["per_call_score"] == pytest.approx(scores[name]), name
        assert row["per_call_outlier"] == (name == diff_pairs.ALL_REDUCE)


def test_per_call_scores_match_the_oracle_on_the_example_pair() -> None:
    a, b = ROOT / "examples" / "bs1.sqlite", ROOT / "examples" / "bs16.sqlite"
    if not (a.is_file() and b.is_file()):
        pytest.skip("examples not present")
    kernels = nsysq.diff(a, b).tables["kernels"].records()
    scores = oracle.per_call_scores(a, b, DEFAULT_MIN_TIME_MS * MS, PER_CALL_FLOOR)
    for row in kernels:
        if row["status"] == "both":
            assert row["per_call_score"] == pytest.approx(scores[row["name"]], abs=1e-9), row["name"]


def test_the_same_work_is_compared_by_totals_only(tmp_path: Path) -> None:
    """Launch counts within 5%: no per-call test (a per-call change is then a total-time change)."""
    spec_a, spec_b = diff_pairs._window(10, 1.0), diff_pairs._window(10, 1.4)
    from nsysq.synth.writer import write_trace

    a, b = write_trace(tmp_path / "a.sqlite", spec_a), write_trace(tmp_path / "b.sqlite", spec_b)
    assert "per_call" not in _kinds(nsysq.diff(a, b))


# -- CLI ---------------------------------------------------------------------------------------------
def test_fail_on_idle_and_json_totals(pairs: dict[str, tuple[Path, Path]]) -> None:
    a, b = pairs["solver"]
    cmd = [sys.executable, "-m", "nsysq", "diff", str(a), str(b)]
    proc = subprocess.run(
        [*cmd, "--fail-on", "idle", "-f", "json", "--time-unit", "ms"], capture_output=True, text=True
    )
    assert proc.returncode == 3, proc.stderr
    doc = json.loads(proc.stdout)
    totals = {r["metric"]: r for r in doc["totals"]}
    assert totals["gpu_idle_ms"] == {
        "metric": "gpu_idle_ms",
        "a": 85.0,
        "b": 40.0,
        "ratio": pytest.approx(40 / 85),
        "delta": -45.0,
    }
    assert {"gpu_busy_ms", "comm_exposed_ms"} <= set(totals)
    assert doc["findings"][0]["kind"] == "idle_change"
    ok = subprocess.run([*cmd, "--fail-on", "per_call,comm"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
