"""nsysq fleet: merged answers equal an oracle summed over the files, every input is accounted for,
the slow rank is the first straggler, and the local and Ray engines give identical answers.

The rank set is generated (nsysq.synth.rank_set: 8 ranks, rank 3 three times slower in its nvjet
GEMMs) plus a damaged (truncated) rank, a SQLite file that is not an nsys export, and an export
with no kernels. The Ray tests start a small local Ray instance and skip when Ray is not installed.
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import nsysq
from nsysq.fleet_analysis import Job, LocalEngine, read_trace
from nsysq.fleet_analysis.engines import pool_size
from nsysq.fleet_analysis.merge import FleetFold, census_table, lineup_table
from nsysq.fleet_analysis.stats import ALPHA, GAMMA, LOG_GAMMA, Bucket, Moments, add_bucket, histogram_median
from nsysq.synth import fixture, rank_set
from tests import oracle
from tests.conftest import REAL_TRACES, ROOT

RANKS = 8
SLOW_RANK = 3
SLOW_CATEGORY = "Persistent GEMM (nvjet)"
BROKEN = {"rank08_damaged.sqlite", "notes.sqlite", "no_kernels.sqlite"}


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """8 generated ranks (rank 3 slow), a truncated copy of a rank, a non-export, a kernel-less export."""
    out = tmp_path_factory.mktemp("ranks")
    paths = rank_set(out, RANKS, 3_000, slow_rank=SLOW_RANK)
    damaged = out / "rank08_damaged.sqlite"
    damaged.write_bytes(paths[1].read_bytes()[: paths[1].stat().st_size // 2])
    fixture("not_nsys", out / "notes.sqlite")
    fixture("no_kernels", out / "no_kernels.sqlite")
    return out


def good(ranks: Path) -> list[Path]:
    return sorted(p for p in ranks.glob("*.sqlite") if p.name not in BROKEN)


@pytest.fixture(scope="module")
def local(ranks: Path) -> Any:
    return nsysq.fleet(ranks, idle=True, cache=False)


def test_every_input_is_accounted_for(ranks: Path, local: Any) -> None:
    traces = local.traces
    assert sorted(Path(p).name for p in traces["path"]) == sorted(p.name for p in ranks.glob("*.sqlite"))
    failed = traces[traces["status"] == "failed"]
    assert {Path(p).name for p in failed["path"]} == BROKEN
    reasons = dict(zip(failed["path"].map(lambda p: Path(p).name), failed["reason"], strict=True))
    assert "truncated" in reasons["rank08_damaged.sqlite"]
    assert "not an nsys export" in reasons["notes.sqlite"]
    assert "recorded no CUDA kernels" in reasons["no_kernels.sqlite"]
    assert all(r.endswith(".") and "\n" not in r for r in reasons.values())
    footer = local.traces_table.footer
    assert (footer["traces"], footer["traces_ok"], footer["traces_failed"]) == (RANKS + 3, RANKS, 3)


def test_per_trace_totals_equal_raw_sql(ranks: Path, local: Any) -> None:
    rows = {Path(r["path"]).name: r for r in local.traces_table.records()}
    for path in good(ranks):
        row = rows[path.name]
        assert row["kernels"] == oracle.kernel_count(path)
        assert row["kernel_ns"] == oracle.kernel_ns(path)
        devices = oracle.gaps_by_device(path)
        assert row["busy_ns"] == sum(d["busy"] for d in devices.values())
        assert row["idle_ns"] == sum(d["idle"] for d in devices.values())
        assert row["nsys_version"] and row["gpu"]


def test_merged_census_equals_the_oracle_summed_over_the_files(ranks: Path, local: Any) -> None:
    expected = oracle.fleet_merged(good(ranks))["kernels"]
    rows = {r["name"]: r for r in local.census_table.records()}
    assert set(rows) == set(expected)
    for name, want in expected.items():
        got = rows[name]
        assert (got["instances"], got["total_ns"]) == (want["instances"], want["total"]), name
        assert (got["min_ns"], got["max_ns"]) == (want["min"], want["max"]), name
        values = want["values"]
        if len(values) > 1:
            assert got["stddev_ns"] == pytest.approx(statistics.stdev(values), rel=1e-12), name
        exact = statistics.median(values)
        assert abs(got["med_ns"] - exact) <= ALPHA * exact + 1e-9, (name, got["med_ns"], exact)
    footer = local.census_table.footer
    assert footer["total_kernels"] == sum(oracle.kernel_count(p) for p in good(ranks))
    assert footer["total_kernel_ns"] == sum(oracle.kernel_ns(p) for p in good(ranks))
    assert footer["median_method"] == "histogram (relative error <= 0.5%)"


def test_merged_lineup_equals_the_oracle_summed_over_the_files(ranks: Path, local: Any) -> None:
    expected = oracle.fleet_merged(good(ranks))["categories"]
    rows = {r["category"]: r for r in local.lineup_table.records()}
    assert set(rows) == set(expected)
    for category, want in expected.items():
        got = rows[category]
        assert (got["instances"], got["total_ns"]) == (want["instances"], want["total"]), category
        assert (got["min_ns"], got["max_ns"]) == (want["min"], want["max"]), category
    assert sum(r["share_pct"] for r in rows.values()) == pytest.approx(100.0)


def test_the_slow_rank_is_the_first_straggler_with_its_category(local: Any) -> None:
    first = local.stragglers_table.records()[0]
    assert Path(first["path"]).name == f"rank{SLOW_RANK:02d}.sqlite"
    assert first["category"] == SLOW_CATEGORY
    assert first["ratio"] == pytest.approx(3.0, rel=0.15)
    assert SLOW_CATEGORY in first["verdict"] and f"rank{SLOW_RANK:02d}.sqlite" in first["verdict"]
    assert len(local.stragglers) == 1
    marked = local.traces.set_index(local.traces["path"].map(lambda p: Path(p).name))["straggler"]
    assert marked[f"rank{SLOW_RANK:02d}.sqlite"] == SLOW_CATEGORY
    assert marked.drop(f"rank{SLOW_RANK:02d}.sqlite").isna().all()


def test_merge_is_exact_in_any_order(ranks: Path) -> None:
    job = Job(cache=False)
    reports = [read_trace(str(p), job) for p in good(ranks)]
    tables = []
    for seed in (0, 1):
        order = list(enumerate(reports))
        random.Random(seed).shuffle(order)
        fold = FleetFold()
        for index, report in order:
            fold.add(index, report)
        tables.append((census_table(fold, limit=0, footer={}).rows, lineup_table(fold, footer={}).rows))
    assert tables[0] == tables[1]


def test_census_limit_keeps_the_totals(ranks: Path, local: Any) -> None:
    limited = nsysq.fleet(good(ranks), lineup=False, limit=5, cache=False).census_table
    assert len(limited.rows) == 6 and limited.rows[-1][1].startswith("other (")
    assert sum(r[2] for r in limited.rows) == local.census_table.footer["total_kernels"]
    assert sum(r[3] for r in limited.rows) == local.census_table.footer["total_kernel_ns"]


# -- statistics --------------------------------------------------------------------------------------
def test_stddev_comes_from_exact_integer_sums() -> None:
    rng = random.Random(7)
    values = [rng.randrange(10**9, 10**9 + 50) for _ in range(2_000)]  # float64 sums of squares lose this
    m = Moments()
    for v in values:
        m.add(1, v, v * v, v, v)
    assert m.sum_sq == sum(v * v for v in values)
    mean = Fraction(sum(values), len(values))
    exact = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
    assert m.stddev == pytest.approx(exact, rel=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_histogram_median_is_within_the_stated_error(seed: int) -> None:
    rng = random.Random(seed)
    values = [max(1, int(rng.paretovariate(1.2) * 1_000)) for _ in range(rng.randrange(1, 3_000))]
    values += [0] * rng.randrange(0, 5)
    histogram: dict[int, Bucket] = {}
    for v in values:
        bucket = math.ceil(math.log(v) / LOG_GAMMA) if v > 0 else -1
        add_bucket(histogram, bucket, 1, v, v)
    exact = statistics.median(values)
    got = histogram_median(histogram)
    assert got is not None and abs(got - exact) <= ALPHA * exact + 1e-9, (got, exact)
    assert GAMMA == pytest.approx((1 + ALPHA) / (1 - ALPHA))


# -- the local engine -------------------------------------------------------------------------------
def test_pool_is_sized_to_cores_and_memory() -> None:
    gib = 1024**3
    assert pool_size(10 * 1024**2, cores=8, memory=64 * gib) == 8
    assert pool_size(2 * gib, cores=8, memory=8 * gib) == 1
    assert pool_size(100 * 1024**2, cores=8, memory=gib * 5 // 4) == 2
    assert pool_size(100 * 1024**2, cores=8, memory=1 * gib) == 1  # a second slot's worker interpreter
    assert pool_size(50 * gib, cores=4, memory=1 * gib) == 1


def test_local_engine_never_holds_more_than_its_workers() -> None:
    lock = threading.Lock()
    now, peak = 0, 0

    def work(item: int) -> int:
        nonlocal now, peak
        with lock:
            now += 1
            peak = max(peak, now)
        time.sleep(0.01)
        with lock:
            now -= 1
        return item * 2

    got = dict(LocalEngine(3).map(work, list(range(40))))
    assert got == {i: i * 2 for i in range(40)} and peak <= 3


# -- the cache ---------------------------------------------------------------------------------------
def test_a_repeat_question_reads_only_the_cached_copies(
    ranks: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NSYSQ_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("NSYSQ_CACHE_MIN_BYTES", "0")
    first = nsysq.fleet(good(ranks), cache="build")
    again = nsysq.fleet(good(ranks))
    assert set(again.traces["reader"]) == {"cached copy"}
    assert again.census_table.rows == first.census_table.rows
    assert again.lineup_table.rows == first.lineup_table.rows


# -- the CLI -----------------------------------------------------------------------------------------
def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nsysq", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )


def test_cli_fleet_lists_every_trace_and_fails_on_failed(ranks: Path) -> None:
    proc = cli("fleet", ranks, "-f", "json", "--no-cache")
    assert proc.returncode == 3, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["kind"] == "fleet" and len(doc["traces"]) == RANKS + 3
    assert Path(doc["stragglers"][0]["path"]).name == f"rank{SLOW_RANK:02d}.sqlite"
    assert doc["stragglers"][0]["category"] == SLOW_CATEGORY
    for name in BROKEN:
        assert f"{name}" in proc.stderr
    assert "Traceback" not in proc.stderr
    ok = cli("fleet", "traces", *good(ranks), "--fail-on", "none", "-f", "csv", "--no-idle")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.splitlines()[0].startswith("path,status,reason,gpu,nsys_version,kernels,kernel_ns")
    slow = cli("fleet", *good(ranks), "--fail-on", "straggler", "-f", "csv", "--no-idle")
    assert slow.returncode == 3


def test_cli_fleet_census_and_lineup(ranks: Path, local: Any) -> None:
    census = cli("fleet", "census", str(ranks / "*.sqlite"), "-n", "0", "-f", "json", "--fail-on", "none")
    assert census.returncode == 0, census.stderr
    doc = json.loads(census.stdout)
    assert doc["kind"] == "fleet_census"
    assert [r["instances"] for r in doc["rows"]] == local.census_table.column("instances")
    lineup = cli("fleet", "lineup", ranks, "-f", "json", "--fail-on", "none")
    assert (
        json.loads(lineup.stdout)["footer"]["total_kernel_ns"] == local.lineup_table.footer["total_kernel_ns"]
    )
    bad = cli("fleet", "census", ranks, "--fail-on", "everything")
    assert bad.returncode == 2 and "--fail-on" in bad.stderr


def test_cli_fleet_show_sql_runs(ranks: Path) -> None:
    import duckdb

    proc = cli("fleet", "census", ranks, "--show-sql")
    assert proc.returncode == 0, proc.stderr
    con = duckdb.connect(config={"allow_unsigned_extensions": True})
    con.execute(proc.stdout)  # the script runs as printed; its last statement is the bucket query
    assert "fleet_kernel_buckets@1" in proc.stdout


# -- Ray ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ray_session() -> Iterator[Any]:
    ray = pytest.importorskip("ray")
    ray.init(
        num_cpus=2,
        object_store_memory=80 * 1024**2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}},
    )
    yield ray
    ray.shutdown()


def _tables(result: Any) -> tuple[Any, ...]:
    return tuple(
        (t.columns, t.rows, t.footer | {"engine": None})
        for t in (result.traces_table, result.census_table, result.lineup_table, result.stragglers_table)
    )


def test_ray_gives_the_local_answer(ranks: Path, local: Any, ray_session: Any) -> None:
    result = nsysq.fleet(ranks, engine="ray", idle=True, cache=False)
    assert result.traces_table.footer["engine"] == "ray"
    assert _tables(result) == _tables(local)


def test_ray_gives_the_local_collectives(ray_session: Any, tmp_path: Path) -> None:
    """fleet collectives: the same tables, verdict and phases from Ray tasks as from local threads."""
    from nsysq.fleet_analysis import collectives
    from nsysq.synth.ranks import collective_ranks

    collective_ranks(tmp_path, ranks=4, steps=4, late_rank=2, late_steps=(1, 3))
    here = collectives(tmp_path, cache=False)
    there = collectives(tmp_path, engine="ray", cache=False)
    assert there.collectives_table.footer["engine"] == "ray"
    for a, b in ((here.collectives_table, there.collectives_table), (here.ranks_table, there.ranks_table)):
        assert (a.columns, a.rows, a.footer | {"engine": None}) == (
            b.columns,
            b.rows,
            b.footer | {"engine": None},
        )
    assert (here.verdict, here.phases, here.match) == (there.verdict, there.phases, there.match)
    assert Path(here.ranks_table.rows[0][0]).name == "rank02.sqlite"


class DieOnce:
    """Wraps the per-trace function: the first call on ``victim`` kills its worker process."""

    def __init__(self, fn: Callable[[str], Any], victim: str, marker: Path) -> None:
        self.fn, self.victim, self.marker = fn, victim, marker

    def __call__(self, path: str) -> Any:
        if path == self.victim:
            try:
                fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                pass
            else:
                os.close(fd)
                os._exit(1)  # the worker dies mid-run, as on a lost node
        return self.fn(path)


def test_ray_retries_a_task_whose_worker_died(
    ranks: Path, local: Any, ray_session: Any, tmp_path: Path
) -> None:
    from nsysq.fleet_analysis import RayEngine

    victim = str(ranks / f"rank{SLOW_RANK:02d}.sqlite")
    marker = tmp_path / "died"

    class Killing(RayEngine):
        def map(self, fn: Callable[[Any], Any], items: Any) -> Iterator[tuple[int, Any]]:
            return super().map(DieOnce(fn, victim, marker), items)

    result = nsysq.fleet(ranks, engine=Killing(), idle=True, cache=False)
    assert marker.exists(), "no worker was killed"
    assert _tables(result) == _tables(local)


def test_ray_missing_is_one_sentence(ranks: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(nsysq.NsysqError, match=r"pip install 'nsysq\[ray\]'"):
        nsysq.fleet(ranks, engine="ray")


# -- real exports ------------------------------------------------------------------------------------
@pytest.mark.real
@pytest.mark.skipif(not REAL_TRACES, reason="no real exports")
def test_real_exports_as_one_fleet(tmp_path: Path) -> None:
    result = nsysq.fleet(REAL_TRACES, cache=False)
    rows = {r["path"]: r for r in result.traces_table.records()}
    assert len(rows) == len(REAL_TRACES)
    ok = []
    for path in REAL_TRACES:
        row = rows[str(path)]
        if row["status"] == "failed":
            assert row["reason"] and "\n" not in row["reason"]
            continue
        ok.append(path)
        assert row["kernels"] == oracle.kernel_count(path)
        assert row["kernel_ns"] == oracle.kernel_ns(path)
    merged = oracle.fleet_merged(ok)["kernels"]
    rows_by_name = {r["name"]: r for r in result.census_table.records()}
    for name, want in merged.items():
        assert (rows_by_name[name]["instances"], rows_by_name[name]["total_ns"]) == (
            want["instances"],
            want["total"],
        )
    shutil.rmtree(tmp_path, ignore_errors=True)


# -- the plot ----------------------------------------------------------------------------------------
def test_plot_fleet_highlights_the_straggler(local: Any) -> None:
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_hex

    from nsysq.plot.fleet import STRAGGLER_COLOR, plot_fleet

    ax = plot_fleet(local.traces)
    bars = ax.patches
    assert len(bars) == RANKS  # one bar per trace that answered
    red = [i for i, b in enumerate(bars) if to_hex(b.get_facecolor()) == STRAGGLER_COLOR]
    assert red == [SLOW_RANK]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert len(labels) == RANKS + 3 and sum(t.get_text() == "failed" for t in ax.texts) == 3
    assert any(t.get_text() == SLOW_CATEGORY for t in ax.texts)
    with pytest.raises(ValueError, match="plot_fleet"):
        plot_fleet(local.census)
    plt.close("all")


# -- docs/json.md names every key ---------------------------------------------------------------------
def test_fleet_json_is_documented(ranks: Path) -> None:
    from tests.test_docs import _named, _section

    doc = json.loads(cli("fleet", ranks, "-f", "json", "--fail-on", "none", "--no-cache").stdout)
    keys = set(doc) | set(doc["footer"]) | set(doc["traces"][0]) | set(doc["stragglers"][0])
    assert not keys - _named(_section("fleet traces"))
    for section, args in (("fleet census", ("census", "-n", "3")), ("fleet lineup", ("lineup",))):
        table = json.loads(cli("fleet", *args, ranks, "-f", "json", "--fail-on", "none").stdout)
        assert table["kind"] == section.replace(" ", "_")
        assert not (set(table["columns"]) | set(table["footer"])) - _named(_section(section)), section


def test_one_very_slow_trace_does_not_become_the_typical_one() -> None:
    """Each trace weighs the same: a rank 100x slower (more time than all the others together)
    is the straggler, not the seven normal ones."""
    from nsysq.fleet_analysis.stragglers import stragglers

    paths = [f"rank{i}.sqlite" for i in range(8)]
    values = {"idle time": [10_000_000 + 100_000 * i for i in range(8)]}
    values["idle time"][5] = 1_000_000_000
    table = stragglers(paths, values, threshold=3.0, min_time_ms=0.5)
    assert [r["path"] for r in table.records()] == ["rank5.sqlite"]
    assert table.records()[0]["category"] == "idle time" and table.records()[0]["ratio"] > 50
    small = {"kernel time": [1_000_000] * 7 + [10_000_000]}  # 1 ms, one rank 10 ms
    assert len(stragglers(paths, small, threshold=3.0, min_time_ms=0.5).rows) == 1
    assert stragglers(paths, small, threshold=3.0, min_time_ms=20.0).rows == []  # all under the floor
