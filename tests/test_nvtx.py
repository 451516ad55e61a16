"""nsysq nvtx: hand-worked answers on NVTX fixtures, the oracle on every fixture and real export
with NVTX ranges, the CLI contract (keys, units, limits, errors, --show-sql), plots and Trace.nvtx."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nsysq.analyses.nvtx import COLUMNS, nvtx
from nsysq.base.errors import NoDataError, UsageError
from nsysq.base.table import Table
from nsysq.session import Session
from nsysq.session.scope import NvtxSelection
from nsysq.trace import Trace
from tests import oracle
from tests.conftest import REAL_TRACES
from tests.fixtures import nvtx_scenarios as scenarios
from tests.test_show_sql import assert_same_rows, run_script

NVTX_FIXTURES = ("v2022_2_nonlazy", "v2023_1", "v2024_6", "edge_cases")
MODES = ("launch", "innermost", "window")
GRAPH_TRACE = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
REAL_WITH_NVTX = [p for p in REAL_TRACES if "NVTX_EVENTS" in oracle.tables(p)]
GPU_KEYS = (
    "instances",
    "total_ns",
    "kernels",
    "kernel_ns",
    "memcpys",
    "memsets",
    "gpu_span_ns",
    "gpu_busy_ns",
)


@pytest.fixture(scope="module")
def nvtx_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("nvtx")
    for name in scenarios.SPECS:
        scenarios.build(name, directory)
    return directory


def cli(*args: str | Path, code: int = 0) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "nsysq", *map(str, args)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == code, proc.stderr
    return proc


def by_name(table: Table) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["domain"], r["name"]): r for r in table.records()}


def run(path: Path, **kwargs: Any) -> Table:
    with Session(path) as trace:
        return nvtx(trace, **kwargs)


# -- answers worked out by hand ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "expected"), [("nvtx_2024", scenarios.EXPECTED_2024), ("nvtx_2022", scenarios.EXPECTED_2022)]
)
def test_launch_attribution_by_hand(nvtx_dir: Path, name: str, expected: dict[Any, tuple[int, ...]]) -> None:
    rows = by_name(run(nvtx_dir / f"{name}.sqlite"))
    assert set(rows) == set(expected)
    for key, values in expected.items():
        assert tuple(rows[key][k] for k in GPU_KEYS) == values, key


def test_footer_by_hand(nvtx_dir: Path) -> None:
    table = run(nvtx_dir / "nvtx_2024.sqlite", limit=3)
    for key, value in scenarios.FOOTER_2024.items():
        assert table.footer[key] == value, key
    assert table.footer["shown_rows"] == 3 and len(table.rows) == 3
    assert table.footer["range_names"] == len(scenarios.EXPECTED_2024)
    assert table.footer["ignored_ranges"] == 2
    assert table.footer["unattributed_pct"] == pytest.approx(100 * 24_000 / table.footer["gpu_ns"])
    assert any("--group-names" in note for note in table.notes)
    assert any("1 ended on another thread, 1 never ended" in note for note in table.notes)


def test_innermost_by_hand(nvtx_dir: Path) -> None:
    rows = by_name(run(nvtx_dir / "nvtx_2024.sqlite", innermost=True))
    for key, expected in scenarios.EXPECTED_2024.items():
        want = scenarios.INNERMOST_2024.get(key, expected[2:6])
        assert tuple(rows[key][k] for k in ("kernels", "kernel_ns", "memcpys", "memsets")) == want, key
        assert (rows[key]["instances"], rows[key]["total_ns"]) == expected[:2]


def test_window_by_hand(nvtx_dir: Path) -> None:
    table = run(nvtx_dir / "nvtx_2024.sqlite", window=True)
    rows = by_name(table)
    for key, want in scenarios.WINDOW_2024.items():
        assert (rows[key]["kernels"], rows[key]["kernel_ns"]) == want, key
    assert table.footer["attribution"] == "window"


@pytest.mark.parametrize("depth", sorted(scenarios.DEPTH_2024))
def test_depth_by_hand(nvtx_dir: Path, depth: int) -> None:
    assert set(by_name(run(nvtx_dir / "nvtx_2024.sqlite", depth=depth))) == scenarios.DEPTH_2024[depth]


def test_filters_and_group_names(nvtx_dir: Path) -> None:
    path = nvtx_dir / "nvtx_2024.sqlite"
    grouped = by_name(run(path, group_names=True, like="ATEN%"))
    assert list(grouped) == [("", "aten::mm")]
    assert tuple(grouped[("", "aten::mm")][k] for k in ("instances", "total_ns", "kernels", "kernel_ns")) == (
        2, 20_000, 2, 25_000,
    )  # fmt: skip
    assert list(by_name(run(path, domain="MPI"))) == [("MPI", "MPI_Barrier")]
    assert set(by_name(run(path, domain=""))) == {k for k in scenarios.EXPECTED_2024 if k[0] == ""}
    assert run(path, like="no such range%").rows == []


def test_eventclass_67_rows_do_not_double_count(nvtx_dir: Path) -> None:
    """The 2022.2 fixture's every call has a wider eventClass-67 twin: joined without the filter,
    saxpy would hold each kernel twice."""
    path = nvtx_dir / "nvtx_2022.sqlite"
    twins = oracle.scalar(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass = 67")
    assert twins == oracle.scalar(
        path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass = 0"
    )
    assert by_name(run(path))[("", "saxpy")]["kernels"] == 3


@pytest.mark.skipif(
    not any("2022.2" in p.name for p in REAL_TRACES), reason="the real 2022.2 export is not here"
)
def test_real_2022_saxpy_is_not_doubled() -> None:
    """research: 5 kernels / 88.6 ms inside saxpy ranges with eventClass IN (0,1), 10 without."""
    path = next(p for p in REAL_TRACES if "2022.2" in p.name)
    unfiltered = oracle.scalar(
        path,
        """SELECT count(*) FROM NVTX_EVENTS n JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
               ON r.globalTid = n.globalTid AND n.start <= r.start AND r."end" <= n."end"
           JOIN CUPTI_ACTIVITY_KIND_KERNEL k ON k.correlationId = r.correlationId
           WHERE n.text = 'saxpy'""",
    )
    saxpy = by_name(run(path))[("", "saxpy")]
    assert unfiltered == 2 * saxpy["kernels"] == 10
    assert saxpy["kernel_ns"] == oracle.kernel_ns(path)  # every kernel of this trace runs in a saxpy range


# -- the oracle, on fixtures and real exports --------------------------------------------------------
def _oracle_targets(fixture_dir: Path, nvtx_dir: Path) -> list[Path]:
    return [
        *(fixture_dir / f"{n}.sqlite" for n in NVTX_FIXTURES),
        *(nvtx_dir / f"{n}.sqlite" for n in scenarios.SPECS),
        *REAL_WITH_NVTX,
    ]


def _mode(mode: str) -> dict[str, bool]:
    return {"innermost": mode == "innermost", "window": mode == "window"}


@pytest.mark.parametrize("mode", MODES)
def test_matches_the_oracle_everywhere(fixture_dir: Path, nvtx_dir: Path, mode: str) -> None:
    targets = _oracle_targets(fixture_dir, nvtx_dir)
    for path in targets:
        table = run(path, limit=0, **_mode(mode))
        rows = by_name(table)
        got = {
            k: tuple(r[c] for c in ("instances", "total_ns", "kernels", "kernel_ns")) for k, r in rows.items()
        }
        assert got == oracle.nvtx_by_name(path, **_mode(mode)), path.name
        graphs = {
            k: tuple(r[c] for c in ("instances", "total_ns", "graph_executions", "graph_ns"))
            for k, r in rows.items()
        }
        assert graphs == oracle.nvtx_by_name(path, **_mode(mode), table=GRAPH_TRACE), path.name
        _, other_thread, never_ended = oracle.nvtx_ranges(path)
        assert (table.footer["ignored_other_thread"], table.footer["ignored_never_ended"]) == (
            other_thread,
            never_ended,
        )
        assert (
            table.footer["graph_executions"] == oracle.count(path, GRAPH_TRACE)
            if GRAPH_TRACE in oracle.tables(path)
            else table.footer["graph_executions"] == 0
        )


def test_real_exports_with_nvtx_are_found() -> None:
    """The real-export sweeps above run on every export that has NVTX_EVENTS: at least the four
    of the corpus known to (the folder may hold more)."""
    if not REAL_TRACES:
        pytest.skip("no real exports")
    versions = {p.name.split("_")[0] for p in REAL_WITH_NVTX}
    assert {"nsys2022.2", "nsys2023.1", "nsys2024.6", "nsys2025.1"} <= versions


@pytest.mark.parametrize("path", REAL_WITH_NVTX or [None], ids=lambda p: p.stem if p else "none")
def test_innermost_rows_add_up_to_the_attributed_ops(path: Path | None) -> None:
    """With --innermost each op counts once per domain: per domain, the rows' ops plus the ops no
    range of that domain got add up to every GPU op (single-domain exports: exactly the footer)."""
    if path is None:
        pytest.skip("no real exports")
    table = run(path, innermost=True, limit=0)
    domains = {r["domain"] for r in table.records()}
    if len(domains) != 1:
        pytest.skip("several domains: each domain attributes the same op")
    ops = sum(r["kernels"] + r["memcpys"] + r["memsets"] + r["graph_executions"] for r in table.records())
    assert ops + table.footer["unattributed_ops"] == table.footer["gpu_ops"]
    assert table.footer["gpu_ops"] == sum(
        oracle.count(path, t)
        for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
        if t in oracle.tables(path)
    )


# -- the command line ------------------------------------------------------------------------------
def test_json_keys_units_and_limit(nvtx_dir: Path) -> None:
    path = nvtx_dir / "nvtx_2024.sqlite"
    doc = json.loads(cli("nvtx", path, "-f", "json", "-n", "0").stdout)
    assert doc["kind"] == "nvtx" and doc["columns"] == list(COLUMNS)
    assert len(doc["rows"]) == len(scenarios.EXPECTED_2024) == doc["footer"]["range_names"]
    assert doc["queries"][0] == "nvtx@2"
    doc_ms = json.loads(cli("nvtx", path, "-f", "json", "-n", "2", "-u", "ms").stdout)
    assert "kernel_ms" in doc_ms["columns"] and "gpu_busy_ms" in doc_ms["columns"]
    assert len(doc_ms["rows"]) == 2
    assert doc_ms["rows"][0]["kernel_ms"] == pytest.approx(doc["rows"][0]["kernel_ns"] / 1e6)
    assert "unattributed_gpu_ms" in doc_ms["footer"]


def test_errors(fixture_dir: Path, nvtx_dir: Path) -> None:
    proc = cli("nvtx", fixture_dir / "v2020_3.sqlite", code=5)
    assert (
        proc.stdout == "" and "recorded no NVTX ranges" in proc.stderr and "--trace=cuda,nvtx" in proc.stderr
    )
    proc = cli("nvtx", nvtx_dir / "nvtx_2024.sqlite", "--innermost", "--window", code=2)
    assert "do not combine" in proc.stderr
    with Session(nvtx_dir / "nvtx_2024.sqlite") as trace:
        with pytest.raises(UsageError, match="--depth"):
            nvtx(trace, depth=-1)
        with pytest.raises(UsageError, match="--limit"):
            nvtx(trace, limit=-1)
    with Session(fixture_dir / "v2021_2.sqlite") as trace, pytest.raises(NoDataError):
        nvtx(trace)


@pytest.mark.parametrize("args", [(), ("--innermost",), ("--window", "--group-names", "-n", "3")])
def test_show_sql_script_reproduces_the_rows(nvtx_dir: Path, args: tuple[str, ...]) -> None:
    path = nvtx_dir / "nvtx_2024.sqlite"
    doc = json.loads(cli("nvtx", path, *args, "-f", "json").stdout)
    assert_same_rows(run_script(cli("nvtx", path, *args, "--show-sql").stdout), doc)


def test_trace_nvtx_dataframe_and_plot(nvtx_dir: Path, tmp_path: Path) -> None:
    from matplotlib.axes import Axes

    from nsysq.plot import plot_nvtx

    with Trace(nvtx_dir / "nvtx_2024.sqlite") as trace:
        df = trace.nvtx(unit="us", limit=5)
    assert list(df.columns) == [c.replace("_ns", "_us") for c in COLUMNS]
    assert df.attrs["footer"]["attribution"] == "launch" and len(df) == 5
    ax = plot_nvtx(df)
    assert isinstance(ax, Axes)
    assert "launch attribution" in ax.get_title(loc="left")
    assert len(ax.patches) == 2 * len(df)  # a CPU and a GPU bar per range name
    out = tmp_path / "nvtx.png"
    proc = cli("plot", "nvtx", nvtx_dir / "nvtx_2024.sqlite", "-o", out, "--innermost")
    assert out.stat().st_size > 1000 and "wrote" in proc.stderr


def test_unnested_stacks_fall_back_to_the_interval_join(fixture_dir: Path) -> None:
    """The synthetic 2023.1 fixture's ranges wrap GPU intervals and cross each other (no real NVTX
    stack can); nsysq says so and attributes by the plain interval join (the oracle test above
    checks the numbers). Real exports nest."""
    table = run(fixture_dir / "v2023_1.sqlite")
    assert table.footer["unnested_ranges"] > 0
    assert "nvtx_interval_pairs@1" in table.queries
    assert any("overlap without nesting" in note for note in table.notes)
    for path in REAL_WITH_NVTX:
        real = run(path)
        assert real.footer["unnested_ranges"] == 0 and "nvtx_pairs@1" in real.queries, path.name


@pytest.mark.parametrize("nested", [False, True])
def test_benchmark_generator_nests_like_a_real_stack(tmp_path: Path, nested: bool) -> None:
    """nsysq.synth.big writes NVTX ranges as a real push/pop stack (bench/ times the projection on
    it): the fast path is taken and agrees with the oracle."""
    from nsysq.synth import big

    path = big(tmp_path / "big.sqlite", 4_000, seed=5, nested_nvtx=nested)
    table = run(path, limit=0)
    assert table.footer["unnested_ranges"] == 0
    got = {
        k: tuple(r[c] for c in ("instances", "total_ns", "kernels", "kernel_ns"))
        for k, r in by_name(table).items()
    }
    assert got == oracle.nvtx_by_name(path)
    levels = {r["name"] for r in run(path, depth=1, limit=0).records()}
    assert levels == ({f"layer_{i}" for i in range(20)} if nested else set())


# -- --nvtx scopes (census, lineup, stakeout, timeline, diff, plot) ----------------------------------
def test_selector_grammar() -> None:
    from nsysq.analyses.nvtx import parse_selector

    assert parse_selector("step") == ("step", None, None)
    assert parse_selector("MPI_Send@MPI/2") == ("MPI_Send", "MPI", 2)
    assert parse_selector("step@/0") == ("step", "", 0)
    assert parse_selector("x@*") == ("x", None, None)
    assert parse_selector("/conv1/Conv + /relu/Relu") == ("/conv1/Conv + /relu/Relu", None, None)
    assert parse_selector("a\\@b\\/3") == ("a@b/3", None, None)
    with pytest.raises(UsageError, match="names no range"):
        parse_selector("@MPI")


def scoped_census(path: Path, selector: str, *, like: bool = False) -> Table:
    from nsysq.analyses.census import census

    with Trace(path, nvtx=NvtxSelection(selector, like=like)) as opened:
        return census(opened.session, limit=0)


def _escape(name: str) -> str:
    return name.replace("\\", "\\\\").replace("@", "\\@").replace("/", "\\/")


def test_scoped_census_reconciles_by_hand(nvtx_dir: Path) -> None:
    path = nvtx_dir / "nvtx_2024.sqlite"
    for (domain, name), expected in scenarios.EXPECTED_2024.items():
        if expected[2] == 0:
            continue
        table = scoped_census(path, f"{_escape(name)}@{domain}")
        assert (table.footer["total_kernels"], table.footer["total_kernel_ns"]) == expected[2:4], name
        assert table.footer["scope"] == f"nvtx {_escape(name)}@{domain}"
    second_step = scoped_census(path, "step/1")  # R7: c7 and c8
    assert (second_step.footer["total_kernels"], second_step.footer["total_kernel_ns"]) == (2, 18_000)
    grouped = scoped_census(path, "ATEN::MM%", like=True)
    assert grouped.footer["total_kernels"] == 2


@pytest.mark.parametrize("path", REAL_WITH_NVTX or [None], ids=lambda p: p.stem if p else "none")
def test_scoped_census_matches_nvtx_and_the_oracle(path: Path | None) -> None:
    """For the range names with most kernels: census --nvtx NAME@DOMAIN adds up to the distinct
    kernels the oracle finds inside those ranges, and to nsysq nvtx's row (names that never
    enclose themselves: nested same-name ranges count a kernel once per instance in nsysq nvtx)."""
    if path is None:
        pytest.skip("no real exports")
    rows = [r for r in run(path, limit=0).records() if r["kernels"]][:3]
    assert rows
    for row in rows:
        table = scoped_census(path, f"{_escape(row['name'])}@{row['domain']}")
        want = oracle.nvtx_scoped_kernels(path, row["name"], row["domain"])
        assert (table.footer["total_kernels"], table.footer["total_kernel_ns"]) == want, row["name"]
        if oracle.nvtx_by_name(path)[(row["domain"], row["name"])][2] == want[0]:
            assert (row["kernels"], row["kernel_ns"]) == want


def test_nvtx_scope_on_the_command_line(nvtx_dir: Path, tmp_path: Path) -> None:
    path = nvtx_dir / "nvtx_2024.sqlite"
    proc = cli("census", path, "--nvtx", "forwrd", code=2)
    assert proc.stdout == "" and "closest range names: 'forward'" in proc.stderr
    proc = cli("census", path, "--nvtx", "step/5", code=2)
    assert "no range instance 5" in proc.stderr
    assert "not both" in cli("lineup", path, "--nvtx", "a", "--nvtx-like", "b", code=2).stderr
    doc = json.loads(cli("diff", path, path, "--nvtx", "forward", "-f", "json").stdout)
    kernels = next(r for r in doc["totals"] if r["metric"] == "kernels")
    assert kernels["a"] == kernels["b"] == 5
    stake = json.loads(cli("stakeout", path, "mm_kernel", "--nvtx", "forward/0", "-f", "json").stdout)
    assert len(stake["rows"]) == 2
    timeline = json.loads(cli("timeline", path, "--nvtx-like", "backward", "-f", "json", "-n", "0").stdout)
    assert {r["kind"] for r in timeline["rows"]} == {"kernel", "memset"}
    timeline = json.loads(cli("timeline", path, "--nvtx", "backward", "-f", "json", "-n", "0").stdout)
    assert {r["kind"] for r in timeline["rows"]} == {"kernel", "memset"}
    assert timeline["footer"]["scope"] == "nvtx backward"
    out = tmp_path / "census.png"
    cli("plot", "census", path, "-o", out, "--nvtx", "MPI_Barrier@MPI")
    assert out.stat().st_size > 1000
    args = ("census", path, "--nvtx", "step", "-n", "0")
    doc = json.loads(cli(*args, "-f", "json").stdout)
    assert doc["footer"]["scope"] == "nvtx step" and doc["footer"]["total_kernels"] == 6
    assert_same_rows(run_script(cli(*args, "--show-sql").stdout), doc)


def test_nvtx_takes_the_process_scope(nvtx_dir: Path) -> None:
    """nsysq nvtx --pid N reads that process's NVTX ranges, calls and GPU work; the processes add up."""
    path = nvtx_dir / "nvtx_2024.sqlite"
    docs = {
        pid: json.loads(cli("nvtx", path, "--pid", pid, "-f", "json", "-n", "0").stdout)
        for pid in ("4242", "5000")
    }
    assert sum(d["footer"]["gpu_ops"] for d in docs.values()) == scenarios.FOOTER_2024["gpu_ops"]
    assert docs["5000"]["footer"]["scope"] == "pid 5000"
    assert {(r["domain"], r["name"]) for r in docs["5000"]["rows"]} == {("NCCL", "allreduce")}
    step = next(r for r in docs["4242"]["rows"] if r["name"] == "step")
    assert step["kernels"] == scenarios.EXPECTED_2024[("", "step")][2]
    args = ("nvtx", path, "--pid", "4242")
    assert_same_rows(run_script(cli(*args, "--show-sql").stdout), json.loads(cli(*args, "-f", "json").stdout))


# -- timeline --nvtx, --nvtx-mode, whole-graph executions ------------------------------------------
def scoped(
    path: Path, selector: str, *, mode: str = "launch", like: bool = False
) -> tuple[Table | None, Table]:
    """(census, timeline) of the GPU work --nvtx SELECTOR --nvtx-mode MODE keeps, on one Trace
    (census None when the scope holds no kernel and no graph execution: it says so)."""
    from nsysq.analyses.census import census
    from nsysq.analyses.timeline import timeline

    with Trace(path, nvtx=NvtxSelection(selector, like=like, mode=mode)) as opened:
        trace = opened.session
        try:
            counted: Table | None = census(trace, limit=0)
        except NoDataError as exc:
            assert "no CUDA kernels in scope" in str(exc)
            counted = None
        return counted, timeline(trace, limit=0)


def _timeline_work(table: Table, kind: str) -> tuple[int, int]:
    rows = [r for r in table.records() if r["kind"] == kind]
    return len(rows), sum(r["duration_ns"] for r in rows)


def _scoped_targets(fixture_dir: Path, nvtx_dir: Path) -> list[Path]:
    return [
        *(fixture_dir / f"{n}.sqlite" for n in NVTX_FIXTURES),
        nvtx_dir / "nvtx_2024.sqlite",
        nvtx_dir / "nvtx_graphs.sqlite",
        *REAL_WITH_NVTX,
    ]


@pytest.mark.parametrize("mode", MODES)
def test_scoped_census_and_timeline_match_the_oracle_in_every_mode(
    fixture_dir: Path, nvtx_dir: Path, mode: str
) -> None:
    """--nvtx NAME@DOMAIN --nvtx-mode MODE, for the three range names with most GPU time in that
    mode: the census totals and the timeline's kernel and graph rows are the distinct ops the
    oracle attributes to those ranges in that mode, and nsysq nvtx's row in the same mode (when no
    op counts twice). A range with no work in scope (the 2022.2 export's saxpy kernels all end
    after their range: nothing in window mode) gives an empty timeline and a census that says so."""
    for path in _scoped_targets(fixture_dir, nvtx_dir):
        for row in run(path, limit=3, **_mode(mode)).records():
            selector = f"{_escape(row['name'])}@{row['domain']}"
            census, timeline = scoped(path, selector, mode=mode)
            kernels = oracle.nvtx_scoped_kernels(path, row["name"], row["domain"], mode=mode)
            graphs = oracle.nvtx_scoped_kernels(
                path, row["name"], row["domain"], mode=mode, table=GRAPH_TRACE
            )
            assert _timeline_work(timeline, "kernel") == kernels, selector
            assert _timeline_work(timeline, "graph") == graphs, selector
            by_oracle = oracle.nvtx_by_name(path, **_mode(mode))[(row["domain"], row["name"])]
            if by_oracle[2] == kernels[0]:  # no kernel attributed twice to ranges of this name
                assert (row["kernels"], row["kernel_ns"]) == kernels
            suffix = "" if mode == "launch" else f" ({mode})"
            assert timeline.footer["scope"] == f"nvtx {selector}{suffix}"
            if census is None:
                assert kernels == graphs == (0, 0), selector
                continue
            assert (census.footer["total_kernels"], census.footer["total_kernel_ns"]) == kernels, selector
            assert (census.footer.get("graph_executions", 0), census.footer.get("graph_ns", 0)) == graphs
            assert census.footer["scope"] == timeline.footer["scope"]


def test_whole_graph_executions_by_hand(nvtx_dir: Path) -> None:
    path = nvtx_dir / "nvtx_graphs.sqlite"
    keys = ("instances", "total_ns", "kernels", "kernel_ns", "graph_executions", "graph_ns")
    keys += ("gpu_span_ns", "gpu_busy_ns")
    for mode, expected in scenarios.EXPECTED_GRAPHS.items():
        table = run(path, **_mode(mode))
        assert {k: tuple(r[c] for c in keys) for k, r in by_name(table).items()} == expected, mode
    footer = run(path).footer
    for key, value in scenarios.FOOTER_GRAPHS.items():
        assert footer[key] == value, key
    assert [r["name"] for r in run(path).records()] == ["decode", "layer", "prefill"]  # by GPU time
    census, timeline = scoped(path, "layer")
    assert [(r["name"], r["instances"]) for r in census.records()] == [("graph 1", 2), ("sample_kernel", 1)]
    assert [(r["kind"], r["duration_ns"]) for r in timeline.records()] == [
        ("graph", 20_000), ("graph", 40_000), ("kernel", 3_000),
    ]  # fmt: skip
    _, window = scoped(path, "layer", mode="window")
    assert [(r["kind"], r["duration_ns"]) for r in window.records()] == [("graph", 20_000)]
    _, prefill = scoped(path, "prefill", mode="window")  # g5 was launched from another thread
    assert [r["duration_ns"] for r in prefill.records()] == [18_000, 18_000]


def test_timeline_nvtx_scope_and_lanes_on_the_command_line(nvtx_dir: Path, tmp_path: Path) -> None:
    path = nvtx_dir / "nvtx_2024.sqlite"
    proc = cli("timeline", path, "--nvtx", "forwrd", code=2)
    assert proc.stdout == "" and "closest range names: 'forward'" in proc.stderr
    lanes = json.loads(cli("timeline", path, "--nvtx-lanes", "-f", "json", "-n", "0").stdout)
    plain = json.loads(cli("timeline", path, "-f", "json", "-n", "0").stdout)
    assert "nvtx" in {r["kind"] for r in lanes["rows"]} and "nvtx" not in {r["kind"] for r in plain["rows"]}
    args = ("timeline", path, "--nvtx", "forward", "--nvtx-mode", "innermost", "-n", "0")
    doc = json.loads(cli(*args, "-f", "json").stdout)
    assert doc["footer"]["scope"] == "nvtx forward (innermost)"
    kernels = [r["duration_ns"] for r in doc["rows"] if r["kind"] == "kernel"]
    assert (len(kernels), sum(kernels)) == scenarios.INNERMOST_2024[("", "forward")][:2]
    assert_same_rows(run_script(cli(*args, "--show-sql").stdout), doc)
    args = ("census", path, "--nvtx", "step", "--nvtx-mode", "window", "-n", "0")
    doc = json.loads(cli(*args, "-f", "json").stdout)
    assert (doc["footer"]["total_kernels"], doc["footer"]["total_kernel_ns"]) == scenarios.WINDOW_2024[
        ("", "step")
    ]
    assert_same_rows(run_script(cli(*args, "--show-sql").stdout), doc)
    assert "needs --nvtx" in cli("census", path, "--nvtx-mode", "window", code=2).stderr
    out = tmp_path / "timeline.png"
    cli("plot", "timeline", path, "-o", out, "--nvtx", "step", "--nvtx-mode", "innermost", "--no-nvtx-lanes")
    assert out.stat().st_size > 1000


def test_trace_timeline_keywords(nvtx_dir: Path) -> None:
    """Trace.timeline: nvtx_lanes=True adds the NVTX rows; nvtx=True, the name before, still does;
    a range name there is an error pointing at the scope."""
    with Trace(nvtx_dir / "nvtx_2024.sqlite") as trace:
        new = trace.timeline(nvtx_lanes=True, limit=0)
        old = trace.timeline(nvtx=True, limit=0)
        assert new.equals(old) and "nvtx" in set(new["kind"])
        with pytest.raises(UsageError, match=r"nsysq\.open\(path, nvtx=NAME\)"):
            trace.timeline(nvtx="step")


def test_extend_unended_matches_the_oracle_and_the_hand(fixture_dir: Path, nvtx_dir: Path) -> None:
    """--extend-unended: a range that never ended on its thread runs to the last NVTX timestamp,
    as nsys's reports treat it; rows equal the oracle's with the same rule, the footer counts them,
    and the same Trace answers both ways."""
    for path in _oracle_targets(fixture_dir, nvtx_dir):
        table = run(path, limit=0, extend_unended=True)
        got = {
            k: tuple(r[c] for c in ("instances", "total_ns", "kernels", "kernel_ns"))
            for k, r in by_name(table).items()
        }
        assert got == oracle.nvtx_by_name(path, extend=True), path.name
        _, _, never_ended = oracle.nvtx_ranges(path)
        assert (table.footer["extended_ranges"], table.footer["ignored_never_ended"]) == (never_ended, 0)
    path = nvtx_dir / "nvtx_2024.sqlite"
    with Session(path) as trace:
        extended, plain = nvtx(trace, extend_unended=True, limit=0), nvtx(trace, limit=0)
    for key, want in scenarios.EXTENDED_2024.items():
        assert (
            tuple(by_name(extended)[key][c] for c in ("instances", "total_ns", "kernels", "kernel_ns"))
            == want
        )
        assert key not in by_name(plain)
    assert any("run to the last NVTX timestamp" in note for note in extended.notes)
    assert any("--extend-unended" in note for note in plain.notes)
    assert plain.footer["extended_ranges"] == 0 and plain.footer["ignored_never_ended"] == 1
    doc = json.loads(cli("nvtx", path, "--extend-unended", "-f", "json", "-n", "0").stdout)
    assert doc["footer"]["extended_ranges"] == 1


def test_kept_answers_tell_nvtx_selectors_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a cached copy, answers are kept per scope: two --nvtx selectors share the filter's SQL
    (it reads the selected ranges' table), so the scope's key must name the selector too."""
    monkeypatch.setenv("NSYSQ_CACHE_MIN_BYTES", "0")
    monkeypatch.setenv("NSYSQ_CACHE_BACKGROUND", "0")
    path = Path(__file__).resolve().parents[1] / "examples" / "bs1.sqlite"
    cli("cache", "build", path)
    totals = {}
    for selector in ("execute_model/3", "execute_model/4", "decoder_layer_0"):
        doc = json.loads(cli("census", path, "--nvtx", selector, "-f", "json").stdout)
        totals[selector] = doc["footer"]["total_kernels"]
        with Trace(path, nvtx=selector, cache=False) as trace:
            assert totals[selector] == trace.session.kernel_totals["kernels"], selector
    assert len(set(totals.values())) == 3


def test_kept_answers_tell_nvtx_modes_apart(
    nvtx_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With answers kept (the cache on), every mode and filter of ``nsysq nvtx`` asked one after
    the other answers as it does alone: their last query reads the same helper table
    (nsysq_nvtx_rows), built differently, and the answer's key names how (Session._note_lineage).
    Asked in this order, a key without it gave --innermost the launch rows."""
    monkeypatch.setenv("NSYSQ_CACHE_MIN_BYTES", "0")
    monkeypatch.setenv("NSYSQ_CACHE_BACKGROUND", "0")
    monkeypatch.setenv("NSYSQ_CACHE_DIR", str(tmp_path / "cache"))
    asked: list[dict[str, Any]] = [
        {}, {"innermost": True}, {"window": True}, {"depth": 0}, {"extend_unended": True}, {},
    ]  # fmt: skip
    differ = 0
    for name in scenarios.SPECS:
        path = nvtx_dir / f"{name}.sqlite"
        alone = []
        for kwargs in asked:
            with Session(path, cache=False) as trace:
                alone.append(nvtx(trace, limit=0, **kwargs).rows)
        for cached in (True, "build", True):
            for kwargs, want in zip(asked, alone, strict=True):
                with Session(path, cache=cached) as trace:
                    assert nvtx(trace, limit=0, **kwargs).rows == want, (name, kwargs, cached)
        differ += alone[0] != alone[1]
    assert differ  # a fixture where --innermost differs from the launch attribution


def test_an_nvtx_scope_never_extends_unended_ranges(nvtx_dir: Path) -> None:
    """A trace opened with nvtx= reads the ranges as they ended (--nvtx never extends), and its
    session still answers nvtx(extend_unended=True) afterwards: the scope was fixed when it opened."""
    path = nvtx_dir / "nvtx_2024.sqlite"
    extended_only = {key[1] for key in scenarios.EXTENDED_2024}
    for name in sorted(extended_only):
        with pytest.raises(UsageError, match="no NVTX range"):
            Trace(path, nvtx=name).close()
    with Trace(path, nvtx="step") as opened:
        kernels = opened.session.kernel_totals["kernels"]
        nvtx(opened.session, extend_unended=True, limit=0)
        assert opened.session.kernel_totals["kernels"] == kernels
    assert kernels == scoped_census(path, "step").footer["total_kernels"]


@pytest.mark.parametrize("extend_unended", [False, True])
def test_ranges_from_the_pages_are_the_sql_rows(
    fixture_dir: Path, nvtx_dir: Path, extend_unended: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """nsysq_nvtx_ranges read from the pages and sorted in numpy (nsysq.analyses.nvtx_ranges) holds
    queries/nvtx/ranges.sql's rows in its rid order, and the totals computed beside the sweep are
    the query's, on every NVTX fixture and real export."""
    from nsysq.analyses import nvtx as nvtx_mod
    from nsysq.analyses import nvtx_ranges

    def ranges(path: Path) -> tuple[list[tuple[Any, ...]], dict[str, Any], bool]:
        with Session(path) as trace:
            table = nvtx(trace, extend_unended=extend_unended, limit=0)
            rows = trace.sql_table("SELECT * FROM nsysq_nvtx_ranges ORDER BY rid").rows
            return rows, table.footer, nvtx_ranges.kept(trace, "nsysq_nvtx_ranges") is not None

    for path in _oracle_targets(fixture_dir, nvtx_dir):
        fast, fast_footer, decoded = ranges(path)
        with monkeypatch.context() as patch:
            patch.setattr(nvtx_mod.nvtx_ranges, "keep_decoded", lambda *a, **k: False)
            slow, slow_footer, _ = ranges(path)
        assert decoded or path in REAL_WITH_NVTX, path.name  # every fixture takes the pages
        assert fast == slow, path.name
        assert fast_footer == slow_footer, path.name


@pytest.mark.parametrize("run", [3, 1 << 20])
def test_call_runs_by_process_read_in_chunks(run: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """nvtx_sweep._process_runs (the calls' processes read a chunk at a time) gives the runs of
    one process a sort would, with the process's globalPid, and None when the calls are not in
    (process, correlation id) order; with ``rows``, over those calls alone."""
    import numpy as np

    from nsysq.analyses import nvtx_sweep

    monkeypatch.setattr(nvtx_sweep, "_MATCH_RUN", run)
    rng = np.random.default_rng(run)
    pids = np.repeat(np.array([1, 4, 9], dtype=np.int64) << 24, [7, 1, 5])
    gtid = pids + rng.integers(0, 3, len(pids))  # threads of each process, any order within it
    corr = np.concatenate([np.arange(7) * 2, [0], np.arange(5) + 100]).astype(np.int32)
    expected = [(0, 7, 1 << 24), (7, 8, 4 << 24), (8, 13, 9 << 24)]
    assert nvtx_sweep._process_runs(gtid, corr, None) == expected
    assert nvtx_sweep._process_runs(gtid[:1], corr[:1], None) == [(0, 1, 1 << 24)]
    assert nvtx_sweep._process_runs(gtid[:0], corr[:0], None) == []
    swapped = corr.copy()
    swapped[[2, 3]] = swapped[[3, 2]]
    assert nvtx_sweep._process_runs(gtid, swapped, None) is None
    repeated = corr.copy()
    repeated[10] = repeated[9]
    assert nvtx_sweep._process_runs(gtid, repeated, None) is None
    rows = np.array([0, 2, 8, 12])
    assert nvtx_sweep._process_runs(gtid, corr[rows], rows) == [(0, 2, 1 << 24), (2, 4, 9 << 24)]


@pytest.mark.parametrize("mode", ["all", "innermost"])
def test_runs_shared_between_two_threads_give_the_same_rows(
    nvtx_dir: Path, fixture_dir: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """attributed_pairs' lookups and per_range's sums go in runs, half on a second thread
    (base.threads.Background) when there is more than one run: with runs of 2 calls and 4 pairs
    (every fixture then takes that path), every row and the footer are as with one run, and the
    oracle's."""
    from nsysq.analyses import nvtx_sweep

    targets = [*(nvtx_dir / f"{n}.sqlite" for n in scenarios.SPECS), fixture_dir / "v2024_6.sqlite"]
    whole = {path: run(path, limit=0, **_mode(mode)) for path in targets}
    monkeypatch.setattr(nvtx_sweep, "_OPS_RUN", 2)
    monkeypatch.setattr(nvtx_sweep, "CHUNK_PAIRS", 8)
    from nsysq.base import threads

    split = []
    original = threads.Background

    def counted(compute: Any) -> Any:
        split.append(compute)
        return original(compute)

    monkeypatch.setattr(threads, "Background", counted)
    for path, expected in whole.items():
        table = run(path, limit=0, **_mode(mode))
        assert (table.rows, table.footer) == (expected.rows, expected.footer), path.name
        got = {
            k: tuple(r[c] for c in ("instances", "total_ns", "kernels", "kernel_ns"))
            for k, r in by_name(table).items()
        }
        assert got == oracle.nvtx_by_name(path, **_mode(mode)), path.name
    assert len(split) >= 2 * len(targets) - 2  # both steps split on (nearly) every fixture


@pytest.mark.parametrize("threads", [0, 1, 3, 8, 9, 40])
def test_ops_grouped_by_thread_as_a_stable_sort_groups_them(threads: int) -> None:
    """nvtx_sweep._by_thread: a pass per thread (up to _FEW_THREADS) or numpy's stable sort, the
    same groups in the same order, and each thread's run where the edges say."""
    import numpy as np

    from nsysq.analyses import nvtx_sweep

    rng = np.random.default_rng(threads)
    n = 0 if threads == 0 else 5000
    code = rng.integers(0, max(threads, 1), n).astype(np.uint16)
    timed = rng.permutation(n).astype(np.int32)
    grouped, edges = nvtx_sweep._by_thread(timed, code, threads)
    assert np.array_equal(grouped, timed[np.argsort(code, kind="stable")])
    assert len(edges) == max(threads, 1) + 1 or threads == 0
    for k in range(threads):
        assert np.array_equal(grouped[edges[k] : edges[k + 1]], timed[code == k])


@pytest.mark.parametrize("innermost", [False, True])
def test_scope_launches_from_the_sweep_are_the_query_rows(
    fixture_dir: Path, nvtx_dir: Path, innermost: bool
) -> None:
    """The launches a --nvtx scope keeps, found from the sweep's pairs (nvtx._launches_by_sweep),
    are queries/nvtx/scope_launches.sql's rows over the same tables, one per op, for the three
    most frequent range names of every NVTX fixture and real export."""
    from nsysq import catalog
    from nsysq.analyses import nvtx as nvtx_mod

    swept = 0
    for path in _oracle_targets(fixture_dir, nvtx_dir):
        with Session(path) as trace:
            try:
                nvtx_mod.build_pairs(trace, innermost=innermost, extend_unended=False)
            except NoDataError:
                continue
            state = nvtx_mod._swept(trace)
            names = trace.sql_table(
                "SELECT name, count(*) FROM nsysq_nvtx_ranges WHERE dropped IS NULL AND name IS NOT NULL "
                "GROUP BY name ORDER BY 2 DESC, 1 LIMIT 3"
            ).rows
            for name, _ in names:
                trace.materialize(
                    "nvtx_select", "nsysq_nvtx_selected", rebuild=True, range_name=name, match="exact",
                    domain=None, instance=None,
                )  # fmt: skip
                want = sorted(trace.sql_table(catalog.get("nvtx_scope_launches").sql).rows, key=repr)
                got = nvtx_mod._launches_by_sweep(trace, state) if state is not None else None
                if got is None:
                    continue
                rows = [
                    (int(p) if hp else None, int(c) if hc else None)
                    for p, hp, c, hc in zip(
                        got["pid"], got["has_pid"], got["corr"], got["has_corr"], strict=True
                    )
                ]
                assert sorted(rows, key=repr) == want, (path.name, name)
                swept += bool(want)
    assert swept >= len(scenarios.SPECS)


@pytest.mark.parametrize("seed", range(12))
def test_per_range_beside_the_ranges_sums_as_the_left_join(seed: int) -> None:
    """rows_coded.sql reads each range's GPU work beside it (nvtx._beside) where rows.sql LEFT
    JOINs nsysq_nvtx_per_range: per group the sums are the same, with ranges without a row, NULL
    sums, rows of ranges not kept and kept ranges out of rid order."""
    import duckdb
    import numpy as np

    from nsysq.analyses import nvtx_sweep
    from nsysq.analyses.nvtx import _beside

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    rid = rng.choice(np.arange(1, 3 * n + 1), size=n, replace=False).astype(np.int64)
    if seed % 3:
        rid.sort()
    candidates = np.union1d(rid, rng.integers(1, 4 * n, size=n))  # some rows of ranges not kept
    rows = np.sort(rng.choice(candidates, size=int(rng.integers(0, len(candidates) + 1)), replace=False))
    names = [c for c in nvtx_sweep.PER_RANGE_COLUMNS if c != "rid"]
    per_range: dict[str, Any] = {"rid": rows}
    for c in names:
        values = rng.integers(0, 1000, size=len(rows)).astype(np.int64)
        per_range[c] = np.ma.masked_array(values, mask=rng.random(len(rows)) < 0.3) if seed % 2 else values
    group = rng.integers(0, 4, size=n).astype(np.int64)
    con = duckdb.connect()
    joined_in = {"rid": rows, **{c: np.ma.filled(per_range[c], -1) for c in names}}
    nulls = {c: np.ma.getmaskarray(per_range[c]) for c in names}
    con.register("ranges", {"rid": rid, "grp": group})
    con.register("per_range_raw", {**joined_in, **{f"{c}_null": nulls[c] for c in names}})
    cols = ", ".join(f"CASE WHEN {c}_null THEN NULL ELSE {c} END AS {c}" for c in names)
    con.execute(f"CREATE TABLE per_range AS SELECT rid, {cols} FROM per_range_raw")
    sums = ", ".join(f"COALESCE(sum(p.{c}), 0)" for c in names)
    want = con.execute(
        f"SELECT r.grp, {sums} FROM ranges r LEFT JOIN per_range p ON p.rid = r.rid GROUP BY 1 ORDER BY 1"
    ).fetchall()
    beside = _beside(rid, per_range)
    assert set(beside) == set(names)
    got = [(int(g), *(int(beside[c][group == g].sum()) for c in names)) for g in sorted(set(group.tolist()))]
    assert [tuple(int(v) for v in row) for row in want] == got


@pytest.mark.parametrize("seed", range(6))
def test_parents_by_level_are_the_parents_by_one_sort(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """nvtx_sweep._parents (a pass over the pushes per level, here at any depth) gives
    _parents_by_key's parents (one sort of (level, position) keys, which stacks deeper than
    _FEW_LEVELS take) on random nested stacks, shallow and deep, several to a run of boundaries."""
    import numpy as np

    from nsysq.analyses import nvtx_sweep

    monkeypatch.setattr(nvtx_sweep, "_FEW_LEVELS", 1 << 20)
    rng = np.random.default_rng(seed)
    ev_g, ev_range, delta = [], [], []
    ranges = 0
    for g in range(int(rng.integers(1, 5))):
        depth, cap = 0, int(rng.choice([1, 3, 8, 200]))
        for _ in range(int(rng.integers(1, 3000))):
            push = depth == 0 or (depth < cap and rng.random() < 0.5)
            ev_g.append(g)
            ev_range.append(ranges if push else -1)
            delta.append(1 if push else -1)
            ranges += push
            depth += 1 if push else -1
        ev_g += [g] * depth
        ev_range += [-1] * depth
        delta += [-1] * depth
    g_arr, range_arr, d_arr = np.array(ev_g), np.array(ev_range), np.array(delta)
    depth_arr = np.zeros(len(d_arr), dtype=np.int64)
    for g in np.unique(g_arr):
        depth_arr[g_arr == g] = np.cumsum(d_arr[g_arr == g])
    pushes = np.flatnonzero(d_arr == 1)
    levels = depth_arr[pushes] - 1
    by_level, by_key = np.full(ranges, -1), np.full(ranges, -1)
    nvtx_sweep._parents(pushes, levels, g_arr, range_arr, by_level)
    nvtx_sweep._parents_by_key(pushes, levels, g_arr, range_arr, by_key)
    assert np.array_equal(by_level, by_key)
    assert np.count_nonzero(by_level >= 0) == np.count_nonzero(levels > 0)  # every child has one
