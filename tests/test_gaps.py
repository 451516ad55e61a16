"""nsysq gaps and nsysq overlap: exact numbers on a hand-placed trace, reconciliation with the plain
Python sweeps of tests/oracle.py on every fixture and real export, and the CLI contract."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nsysq.base.errors import NoDataError, RulesError, UsageError
from nsysq.gputime.gaps import CAUSES, GapsResult, call_cause, gaps, load_call_rules
from nsysq.gputime.overlap import DEVICE_COLUMNS as OVERLAP_COLUMNS
from nsysq.gputime.overlap import OverlapResult, collective_kind, load_kind_rules, overlap
from nsysq.session import Session
from tests import oracle
from tests.conftest import NSYS_FIXTURES, ROOT, keep_answers
from tests.fixtures import gaps_scenarios as scen

CAUSE_KEYS = [f"{c}_ns" for c in CAUSES]


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scen.build("gaps_overlap", tmp_path_factory.mktemp("gaps"))


def _gaps(path: Path, **kwargs: Any) -> GapsResult:
    with Session(path, cache=False) as trace:
        return gaps(trace, **kwargs)


def _overlap(path: Path) -> OverlapResult:
    with Session(path, cache=False) as trace:
        return overlap(trace)


def _by(records: list[dict[str, Any]], *keys: str) -> dict[Any, dict[str, Any]]:
    return {(r[keys[0]] if len(keys) == 1 else tuple(r[k] for k in keys)): r for r in records}


# -- exact numbers, worked out by hand ------------------------------------------------------------------
def test_gaps_per_device_match_the_hand_placed_trace(scenario: Path) -> None:
    devices = _by(_gaps(scenario).devices.records(), "device_id")
    assert set(devices) == set(scen.EXPECTED_DEVICES)
    for dev, expected in scen.EXPECTED_DEVICES.items():
        got = devices[dev]
        assert {k: got[k] for k in expected} == expected, dev
        assert got["busy_pct"] == pytest.approx(100 * expected["busy_ns"] / expected["span_ns"])


def test_gaps_per_stream_match_the_hand_placed_trace(scenario: Path) -> None:
    streams = _by(_gaps(scenario).streams.records(), "device_id", "stream_id")
    assert set(streams) == set(scen.EXPECTED_STREAMS)
    for lane, expected in scen.EXPECTED_STREAMS.items():
        assert {k: streams[lane][k] for k in expected} == expected, lane


def test_gap_list_names_each_cause(scenario: Path) -> None:
    listed = _gaps(scenario, top=20).gaps.records()
    got = [
        (r["device_id"], r["start_ns"], r["gap_ns"], *(r[k] for k in CAUSE_KEYS), r["cause"]) for r in listed
    ]
    assert got == scen.EXPECTED_GAPS
    assert [r["rank"] for r in listed] == list(range(1, len(listed) + 1))
    first = listed[0]  # device 1's gap: after gemm_b on stream 7, before the synchronous memcpy
    assert (first["before_kind"], first["before_name"], first["before_stream"]) == ("kernel", "gemm_b", 7)
    assert first["after_kind"] == "memcpy" and first["after_name"].startswith("memcpy ")
    second = listed[1]  # device 0: the memset on stream 13 ended last; the AllReduce starts it
    assert (second["before_kind"], second["after_name"]) == ("memset", scen.AR_NEW)


def test_top_and_min_gap_only_filter_the_list(scenario: Path) -> None:
    full = _gaps(scenario, top=20)
    cut = _gaps(scenario, top=3, min_gap_ns=150 * scen.U)
    assert [r["gap_ns"] for r in cut.gaps.records()] == [550 * scen.U, 280 * scen.U, 200 * scen.U]
    assert cut.devices.rows == full.devices.rows
    assert [r["gap_ns"] for r in _gaps(scenario, min_gap_ns=150 * scen.U).gaps.records()] == [
        g[2] for g in scen.EXPECTED_GAPS if g[2] >= 150 * scen.U
    ]
    assert _gaps(scenario, top=0).gaps.rows == []


def test_overlap_matches_the_hand_placed_trace(scenario: Path) -> None:
    result = _overlap(scenario)
    devices = _by(result.devices.records(), "device_id")
    for dev, expected in scen.EXPECTED_OVERLAP.items():
        assert {k: devices[dev][k] for k in expected} == expected, dev
    kinds = {
        (r["device_id"], r["collective"]): (r["kernels"], r["comm_ns"], r["overlap_ns"], r["exposed_ns"])
        for r in result.collectives.records()
    }
    assert kinds == scen.EXPECTED_COLLECTIVES


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "AllReduce"),
        ("ncclKernel_AllReduce_RING_LL_Sum_float", "AllReduce"),
        ("ncclAllReduceRingLLKernel_sum_f32", "AllReduce"),
        ("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", "ReduceScatter"),
        ("ncclReduceScatterRingLLKernel_sum_f16", "ReduceScatter"),
        ("ncclKernel_AllGather_RING_LL_Sum_int8_t", "AllGather"),
        ("ncclDevKernel_SendRecv", "SendRecv"),
        ("ncclKernel_Broadcast_RING_LL_Sum_int8_t", "Broadcast"),
        ("ncclDevKernel_Reduce_Sum_f32_RING_LL", "Reduce"),
        ("cross_device_reduce_1stage", "AllReduce"),
        ("ncclDevKernel_Generic", "unknown"),
    ],
)
def test_collective_kind_reads_every_nccl_generation(name: str, kind: str) -> None:
    assert collective_kind(name) == kind


@pytest.mark.parametrize(
    ("name", "cause"),
    [
        ("cudaLaunchKernel_v7000", "launch_bound"),
        ("cudaLaunchKernel", "launch_bound"),
        ("cuLaunchKernel", "launch_bound"),
        ("cudaGraphLaunch_v10000", "launch_bound"),
        ("cudaMemcpyAsync_v3020", "launch_bound"),
        ("cudaMemsetAsync_v3020", "launch_bound"),
        ("cudaMemcpy_v3020", "host_wait"),
        ("cudaMemcpy2D_v3020", "host_wait"),
        ("cudaDeviceSynchronize_v3020", "host_wait"),
        ("cudaStreamSynchronize", "host_wait"),
        ("cudaEventSynchronize_v3020", "host_wait"),
        ("cudaMalloc_v3020", None),
        ("cudaStreamWaitEvent_v3020", None),
    ],
)
def test_call_rules(name: str, cause: str | None) -> None:
    assert call_cause(name) == cause


def test_rule_files_are_validated(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('version = 1\n[[rule]]\ncause = "sleeping"\nlike = "cuda%"\n')
    with pytest.raises(RulesError, match="cause 'sleeping'"):
        load_call_rules(str(bad))
    bad.write_text('version = 1\n[[rule]]\nkind = "unknown"\nlike = "nccl%"\n')
    with pytest.raises(RulesError, match="kind 'unknown'"):
        load_kind_rules(str(bad))


# -- reconciliation with the oracle ---------------------------------------------------------------------
def _reconcile(path: Path) -> None:
    expected = oracle.gaps_by_device(path)
    if not expected:
        with pytest.raises(NoDataError, match="recorded no GPU work"):
            _gaps(path)
        return
    result = _gaps(path, top=10**9)
    devices = _by(result.devices.records(), "device_id")
    assert set(devices) == set(expected)
    t0 = oracle.trace_t0(path)
    for dev, want in expected.items():
        got = devices[dev]
        assert got["busy_ns"] + got["idle_ns"] == got["span_ns"]
        assert sum(got[k] for k in CAUSE_KEYS) == got["idle_ns"]
        assert (got["ops"], got["start_ns"], got["span_ns"]) == (
            want["ops"],
            want["first"] - t0,
            want["span"],
        )
        assert (got["busy_ns"], got["idle_ns"], got["idle_gaps"]) == (
            want["busy"],
            want["idle"],
            len(want["gaps"]),
        )
        assert got["feeding_threads"] == want["feeding_threads"]
        assert {k: got[f"{k}_ns"] for k in CAUSES} == want["causes"]
    streams = _by(result.streams.records(), "device_id", "stream_id")
    want_streams = oracle.busy_by_stream(path)
    assert set(streams) == set(want_streams)
    for lane, want_lane in want_streams.items():
        assert (streams[lane]["ops"], streams[lane]["span_ns"], streams[lane]["busy_ns"]) == (
            want_lane["ops"], want_lane["span"], want_lane["busy"],
        )  # fmt: skip
    every_gap = sorted(
        ((dev, gap, causes) for dev, d in expected.items() for gap, causes in d["gaps"]),
        key=lambda g: (-(g[1][1] - g[1][0]), g[0] is None, g[0] or 0, g[1][0]),
    )
    listed = [
        (r["device_id"], r["start_ns"] + t0, r["gap_ns"], *(r[k] for k in CAUSE_KEYS))
        for r in result.gaps.records()
    ]
    assert listed == [
        (dev, gap[0], gap[1] - gap[0], *(causes[c] for c in CAUSES)) for dev, gap, causes in every_gap
    ]


_OVERLAP_KEYS = {c for c in OVERLAP_COLUMNS if c.endswith("_ns")} | {
    "kernels", "comm_kernels", "memcpys", "graph_executions",
}  # fmt: skip


def _reconcile_overlap(path: Path) -> None:
    if oracle.kernel_count(path) == 0:
        with pytest.raises(NoDataError):
            _overlap(path)
        return
    want_devices, want_kinds = oracle.overlap_by_device(path)
    result = _overlap(path)
    devices = _by(result.devices.records(), "device_id")
    assert set(devices) == set(want_devices)
    for dev, want in want_devices.items():
        got = {k.removesuffix("_ns"): v for k, v in devices[dev].items() if k in _OVERLAP_KEYS}
        assert got == want, dev
    kinds = {
        (r["device_id"], r["collective"]): {
            "comm": r["comm_ns"],
            "overlap": r["overlap_ns"],
            "exposed": r["exposed_ns"],
        }
        for r in result.collectives.records()
    }
    assert kinds == want_kinds


def test_overlap_counts_whole_graphs_as_their_own_class(tmp_path: Path) -> None:
    """Executions of CUDA graphs traced whole are neither communication nor compute: counted, their
    union and the exposed time beside them shown, a note saying the overlap is a bound; gaps counts
    them as busy time."""
    path = scen.build("graphs_overlap", tmp_path)
    result = _overlap(path)
    devices = _by(result.devices.records(), "device_id")
    assert set(devices) == set(scen.EXPECTED_GRAPH_OVERLAP)
    for dev, expected in scen.EXPECTED_GRAPH_OVERLAP.items():
        assert {k: devices[dev][k] for k in expected} == expected, dev
    kinds = [
        (r["device_id"], r["collective"], r["comm_ns"], r["overlap_ns"]) for r in result.collectives.records()
    ]
    assert kinds == [(0, "AllReduce", 250 * scen.U, 70 * scen.U)]
    footer = result.devices.footer
    assert (footer["graph_executions"], footer["graph_ns"], footer["graph_overlap_ns"]) == (
        3, 230 * scen.U, 100 * scen.U,
    )  # fmt: skip
    (note,) = result.devices.notes
    assert note.startswith("3 execution(s) of CUDA graphs traced whole") and "lower bounds" in note
    busy = {r["device_id"]: (r["span_ns"], r["busy_ns"], r["idle_ns"]) for r in _gaps(path).devices.records()}
    assert busy == scen.EXPECTED_GRAPH_BUSY
    _reconcile(path)
    _reconcile_overlap(path)


def _overlap_answer(trace: Session) -> dict[str, Any]:
    result = overlap(trace)
    return {name: (table.rows, table.footer, table.notes) for name, table in result.tables().items()}


@pytest.mark.parametrize("name", ["gaps_overlap", "graphs_overlap"])
def test_overlap_reads_the_same_rows_every_way(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decoded pages, the sqlite scanner and the cached copy give the same answer; a device scope
    gives that device's rows (the rows of queries/gpu_ops.sql, run in the scope)."""
    from nsysq.session.scope import Scope

    path = scen.build(name, tmp_path)
    with Session(path, cache=False) as trace:
        pages = _overlap_answer(trace)
        assert trace.executed[-1].label.startswith("gpu_ops@") and trace.executed[-1].note
    monkeypatch.setenv("NSYSQ_PAGE_READER", "0")
    with Session(path, cache=False) as trace:
        assert _overlap_answer(trace) == pages, "sqlite scanner"
        assert trace.executed[-1].label.startswith("gpu_ops@") and not trace.executed[-1].note
    monkeypatch.delenv("NSYSQ_PAGE_READER")
    monkeypatch.setenv("NSYSQ_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("NSYSQ_CACHE_MIN_BYTES", "0")
    with Session(path, cache="build") as trace:
        assert _overlap_answer(trace) == pages, "cached copy"
    with Session(path, cache=False, scope=Scope(device=0)) as trace:
        scoped = overlap(trace)
    whole = _overlap(path)
    assert scoped.devices.rows == [r for r in whole.devices.rows if r[0] == 0]
    assert scoped.collectives.rows == [r for r in whole.collectives.rows if r[0] == 0]


def test_overlap_is_a_kept_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Asked again of the same trace (same lineup rules), overlap is read back, not computed."""
    from nsysq.gputime import overlap as overlap_mod

    path = scen.build("graphs_overlap", tmp_path)
    keep_answers(monkeypatch, tmp_path / "kept")
    with Session(path, cache=True) as trace:
        first = _overlap_answer(trace)

    def refuse(*args: object) -> None:
        raise AssertionError("computed again")

    monkeypatch.setattr(overlap_mod, "_kept_rows", refuse)
    with Session(path, cache=True) as trace:
        assert _overlap_answer(trace) == first
        assert any("kept from an earlier run" in s.note for s in trace.executed)


def test_overlap_reconciles_on_whole_graph_fixtures(fixture_dir: Path, tmp_path: Path) -> None:
    from nsysq.synth.writer import write_trace
    from tests.fixtures import nvtx_scenarios

    _reconcile_overlap(fixture_dir / "graph_trace.sqlite")
    _reconcile_overlap(write_trace(tmp_path / "nvtx_graphs.sqlite", nvtx_scenarios.nvtx_graphs_spec()))
    assert _overlap(fixture_dir / "graph_trace.sqlite").devices.footer["graph_executions"] == 12


@pytest.mark.parametrize("name", NSYS_FIXTURES)
def test_gaps_reconcile_with_the_oracle_on_every_fixture(name: str, fixture_dir: Path) -> None:
    _reconcile(fixture_dir / f"{name}.sqlite")


@pytest.mark.parametrize("name", NSYS_FIXTURES)
def test_overlap_reconciles_with_the_oracle_on_every_fixture(name: str, fixture_dir: Path) -> None:
    _reconcile_overlap(fixture_dir / f"{name}.sqlite")


def test_gaps_and_overlap_reconcile_on_the_hand_placed_trace(scenario: Path) -> None:
    _reconcile(scenario)
    _reconcile_overlap(scenario)


def test_gaps_and_overlap_reconcile_on_real_exports(real_trace: Path) -> None:
    _reconcile(real_trace)
    _reconcile_overlap(real_trace)


def test_examples_reconcile() -> None:
    example = ROOT / "examples" / "bs1.sqlite"
    if not example.exists():
        pytest.skip("examples/bs1.sqlite is not in this checkout")
    _reconcile(example)
    _reconcile_overlap(example)


# -- the CLI contract -------------------------------------------------------------------------------------
def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nsysq", *args], capture_output=True, text=True, timeout=300, cwd=ROOT
    )


def test_gaps_json_document(scenario: Path) -> None:
    proc = _cli("gaps", str(scenario), "-f", "json", "--no-cache")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert set(doc) == {"kind", "unit", "queries", "devices", "streams", "gaps", "footer", "notes"}
    assert (
        doc["kind"] == "gaps"
        and doc["unit"] == "ns"
        and doc["queries"]
        == ["gap_ops@1", "gap_calls@1", "gap_feeders@2", "gap_call_classes@1", "gap_ends@1"]
    )
    assert doc["devices"][0]["idle_ns"] == scen.EXPECTED_DEVICES[0]["idle_ns"]
    assert doc["footer"]["idle_ns"] == sum(d["idle_ns"] for d in scen.EXPECTED_DEVICES.values())
    assert len(doc["gaps"]) == 9 and doc["notes"]  # device 2 has no host data


def test_gaps_units_sections_and_sql(scenario: Path) -> None:
    proc = _cli("gaps", str(scenario), "-f", "csv", "-u", "us", "--section", "gaps", "-n", "2")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("rank,device_id,start_us,gap_us,cause,")
    assert lines[1].startswith("1,1,320.0,550.0,host_wait,350.0,5.0,195.0,0.0,kernel,gemm_b,7,memcpy,")
    assert len(lines) == 3
    shown = _cli("gaps", str(scenario), "--show-sql", "--min-gap", "0.1")
    assert shown.returncode == 0 and shown.stdout.startswith("-- nsysq --show-sql for gaps_overlap.sqlite")
    # the gaps of at least 0.1 ms, picked from the unions (nsysq.gputime.gap_unions), named by gap_ends
    assert "\n-- gap_ends@1 with ranks = [1, 2" in shown.stdout
    for fmt in ("table", "markdown"):
        out = _cli("gaps", str(scenario), "-f", fmt)
        assert out.returncode == 0 and "longest idle gaps" in out.stdout and "host_wait" in out.stdout


def test_overlap_cli(scenario: Path) -> None:
    proc = _cli("overlap", str(scenario), "-f", "json", "-u", "us")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert set(doc) == {"kind", "unit", "queries", "devices", "collectives", "footer", "notes"}
    assert doc["devices"][0]["exposed_us"] == 400.0 and doc["footer"]["comm_kernels"] == 6
    assert {r["collective"] for r in doc["collectives"]} == {
        "AllReduce",
        "AllGather",
        "unknown",
        "ReduceScatter",
        "SendRecv",
    }
    csv = _cli("overlap", str(scenario), "-f", "csv", "--section", "collectives")
    assert csv.stdout.splitlines()[1] == "0,AllReduce,2,500000,250000,250000,50.0"
    shown = _cli("overlap", str(scenario), "--show-sql").stdout  # the rows the unions are computed from
    assert "\n-- kernel_comm_pairs@2 with " in shown and "\n-- gpu_ops@2: " in shown


@pytest.mark.parametrize("command", ["gaps", "overlap"])
def test_no_gpu_work_is_one_sentence(command: str, fixture_dir: Path) -> None:
    proc = _cli(command, str(fixture_dir / "no_kernels.sqlite"))
    assert proc.returncode == 5
    assert proc.stdout == "" and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


@pytest.mark.parametrize("args", [("--top", "-1"), ("--min-gap", "-2"), ("--section", "nope")])
def test_bad_gaps_options_exit_2(args: tuple[str, ...], scenario: Path) -> None:
    proc = _cli("gaps", str(scenario), *args)
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr


@pytest.mark.parametrize("command", ["gaps", "overlap"])
def test_json_md_names_every_key(command: str, scenario: Path) -> None:
    from tests.test_docs import _named, _section

    doc = json.loads(_cli(command, str(scenario), "-f", "json").stdout)
    keys = set(doc) | set(doc["footer"])
    for value in doc.values():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            keys |= set(value[0])
    missing = keys - _named(_section(command))
    assert not missing, f"docs/json.md section '{command}' does not name {sorted(missing)}"


# -- the picture ------------------------------------------------------------------------------------------
def test_plot_gaps_draws_busy_and_each_cause(scenario: Path, tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from nsysq.plot.gaps import BUSY_COLOR, CAUSE_COLORS, gaps_frame, plot_gaps

    with Session(scenario, cache=False) as trace:
        df = gaps_frame(trace)
    assert len(df) == len(scen.EXPECTED_GAPS)
    ax = plot_gaps(df, bins=2000)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["GPU 0\n63.5% busy", "GPU 1\n48.2% busy", "GPU 2\n33.3% busy"]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[0] == "busy" and legend[1] == "host waiting on the GPU (0.595 ms)"
    from matplotlib.colors import to_hex

    colours = set()
    for patch in ax.patches:
        colours.add(to_hex(patch.get_facecolor()))
    assert colours == {BUSY_COLOR, *CAUSE_COLORS.values()}
    # the unknown (grey) share of GPU 2 is its idle share: 400 of 600 us
    grey = sum(
        p.get_width() * p.get_height()
        for p in ax.patches
        if to_hex(p.get_facecolor()) == CAUSE_COLORS["unknown"]
    )
    assert grey == pytest.approx(0.7 * 400, rel=1e-6)


def test_plot_gaps_cli_and_lazy_matplotlib(scenario: Path, tmp_path: Path) -> None:
    out = tmp_path / "gaps.svg"
    proc = _cli("plot", "gaps", str(scenario), "-o", str(out), "--bins", "300")
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().lstrip().startswith("<?xml") and proc.stdout == ""
    bad = _cli("plot", "gaps", str(scenario), "-o", str(tmp_path / "x.png"), "--bins", "0")
    assert bad.returncode == 2 and "--bins" in bad.stderr
    probe = subprocess.run(
        [sys.executable, "-c", "import sys, nsysq.plot.gaps, nsysq.cli.gaps; print('matplotlib' in sys.modules)"],  # noqa: E501
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert probe.stdout.strip() == "False"


def test_no_gap_and_a_long_call(tmp_path: Path) -> None:
    """Touching kernels leave no gap; a sync call as long as the trace must not be cut into
    buckets (there is no gap to measure them against)."""
    from nsysq.synth.writer import TraceSpec, write_trace

    spec = TraceSpec(
        version="2025.1",
        kernels=[scen._kernel(1, 0, 7, 0, 100, "k"), scen._kernel(2, 0, 13, 100, 250, "k")],
        runtime=[
            scen._call(scen.T0, 1, -5, -1, scen.LAUNCH),
            scen._call(scen.T0, 2, -1, 0, scen.LAUNCH),
            scen._call(scen.T0, 0, 0, 10**7, scen.DEVICE_SYNC),
        ],
    )
    path = write_trace(tmp_path / "touching.sqlite", spec)
    device = _gaps(path).devices.records()[0]
    assert (device["span_ns"], device["busy_ns"], device["idle_ns"], device["idle_gaps"]) == (
        250_000,
        250_000,
        0,
        0,
    )
    assert device["feeding_threads"] == 1 and sum(device[k] for k in CAUSE_KEYS) == 0


def test_one_short_gap_under_a_very_long_call(tmp_path: Path) -> None:
    """A 1 us gap under a sync call a million times longer: exact, and the call is cut to the
    gaps' stretch of time before bucketing (else 10^6 bucket rows)."""
    from nsysq.synth.writer import TraceSpec, write_trace

    spec = TraceSpec(
        version="2025.1",
        kernels=[scen._kernel(1, 0, 7, 0, 100, "k"), scen._kernel(2, 0, 7, 101, 200, "k")],
        runtime=[
            scen._call(scen.T0, 1, -5, -1, scen.LAUNCH),
            scen._call(scen.T0, 2, -1, 0, scen.LAUNCH),
            scen._call(scen.T0, 0, -(10**6), 10**6, scen.DEVICE_SYNC),
        ],
    )
    path = write_trace(tmp_path / "long_call.sqlite", spec)
    device = _gaps(path).devices.records()[0]
    assert (device["idle_ns"], device["idle_gaps"], device["host_wait_ns"]) == (1_000, 1, 1_000)
    _reconcile(path)


def test_plot_overlap_bars(scenario: Path, tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.colors import to_hex

    from nsysq.plot.gaps import EXPOSED_COLOR, OVERLAP_COLOR, overlap_frame, plot_overlap

    with Session(scenario, cache=False) as trace:
        df = overlap_frame(trace)
    assert list(df["subject"])[:5] == ["communication", "  AllReduce", "  AllGather", "  unknown", "memcpy"]
    ax = plot_overlap(df)
    green = [p.get_width() for p in ax.patches if to_hex(p.get_facecolor()) == OVERLAP_COLOR]
    red = [p.get_width() for p in ax.patches if to_hex(p.get_facecolor()) == EXPOSED_COLOR]
    assert green == pytest.approx([250, 250, 0, 0, 50, 50, 50, 0, 0])  # us
    assert red == pytest.approx([400, 250, 100, 50, 130, 250, 150, 100, 30])
    out = tmp_path / "overlap.png"
    proc = _cli("plot", "overlap", str(scenario), "-o", str(out))
    assert proc.returncode == 0 and out.stat().st_size > 1000, proc.stderr


def test_plot_overlap_shows_time_beside_graph_executions(tmp_path: Path) -> None:
    """Exposed time beside an execution of a CUDA graph traced whole is its own grey segment (hidden
    or not is unknown): green + grey + red = the communication (or memcpy) time."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.colors import to_hex

    from nsysq.plot.gaps import EXPOSED_COLOR, GRAPH_COLOR, OVERLAP_COLOR, overlap_frame, plot_overlap

    with Session(scen.build("graphs_overlap", tmp_path), cache=False) as trace:
        df = overlap_frame(trace)
    expected = scen.EXPECTED_GRAPH_OVERLAP[0]
    rows = {s.strip(): r for s, r in zip(df["subject"], df.to_dict("records"), strict=True)}
    assert rows["communication"]["graph_overlap_ns"] == expected["graph_overlap_ns"]
    assert rows["memcpy"]["graph_overlap_ns"] == expected["memcpy_graph_overlap_ns"]
    assert rows["AllReduce"]["graph_overlap_ns"] == 0  # the kinds' bars are not split
    ax = plot_overlap(df, unit="us")

    def widths(color: str) -> list[float]:
        return [p.get_width() for p in ax.patches if to_hex(p.get_facecolor()) == color]

    assert widths(OVERLAP_COLOR) == pytest.approx([70, 70, 40])
    assert widths(GRAPH_COLOR) == pytest.approx([100, 0, 80])
    assert widths(EXPOSED_COLOR) == pytest.approx([80, 180, 80])
    totals = [
        sum(w) for w in zip(*(widths(c) for c in (OVERLAP_COLOR, GRAPH_COLOR, EXPOSED_COLOR)), strict=True)
    ]
    assert totals == pytest.approx([250, 250, 200])


@pytest.mark.parametrize("command", ["gaps", "overlap"])
def test_show_sql_script_runs_as_printed(command: str, scenario: Path) -> None:
    """The printed script runs in a fresh DuckDB exactly as printed (list parameters as literals)."""
    from tests.test_show_sql import run_script

    shown = _cli(command, str(scenario), "--show-sql")
    assert shown.returncode == 0, shown.stderr
    assert run_script(shown.stdout), "the script's last statement returned no rows"


def test_bounded_memory_restores_the_limit_and_removes_its_spill_directory(scenario: Path) -> None:
    import tempfile

    setting = "SELECT current_setting('memory_limit'), current_setting('temp_directory')"
    with Session(scenario, cache=False) as t:
        (before,) = t.sql_table(setting).rows
        with t.bounded_memory("64MB"):
            ((limit, spill),) = t.sql_table(setting).rows
            assert limit != before[0]
            assert Path(spill).parent == Path(tempfile.gettempdir()) and Path(spill).is_dir()
            assert gaps(t).devices.footer["busy_ns"] > 0  # gaps bounds itself too, then restores 64MB
            assert t.sql_table(setting).rows[0] == (limit, spill)
        assert t.sql_table(setting).rows[0][0] == before[0]
    assert not Path(spill).exists()  # removed when the trace closed


def test_top_of_a_longer_list_is_the_shorter_list(fixture_dir: Path) -> None:
    """GapsResult.top(n) of a result listing every gap equals gaps(top=n) (the report computes gaps
    once and shows the top 10 beside a plot of all of them)."""
    for path in (fixture_dir / "edge_cases.sqlite", ROOT / "examples" / "bs1.sqlite"):
        with Session(path) as trace:
            every = gaps(trace, top=10**9)
            for n in (0, 1, 3, 10):
                want, got = gaps(trace, top=n), every.top(n)
                for name, table in want.tables().items():
                    assert got.tables()[name].rows == table.rows, (path.name, n, name)
                    assert got.tables()[name].footer == table.footer, (path.name, n, name)
            assert len(every.gaps.rows) > 3
        with Session(path) as trace, pytest.raises(UsageError, match="at least 11 gaps"):
            gaps(trace, top=10).top(11)


@pytest.mark.parametrize("distinct", [1, 3, 16, 17, 200])
def test_feeding_threads_are_every_distinct_thread(distinct: int) -> None:
    """A device's feeding threads are peeled one at a time while they are few and sorted past that:
    the same set as numpy's unique either way, in any order of the calls."""
    import numpy as np

    from nsysq.gputime.gap_unions import _few_distinct

    rng = np.random.default_rng(distinct)
    threads = (rng.choice(1 << 40, size=distinct, replace=False) + (7 << 24)).astype(np.int64)
    values = threads[rng.integers(0, distinct, size=50_000)]
    values[:distinct] = threads  # each at least once
    rng.shuffle(values)
    got = _few_distinct(values)
    assert len(got) == distinct and sorted(got) == np.unique(values).tolist()
