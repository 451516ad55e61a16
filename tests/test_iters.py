"""nsysq iters and the --iteration scope, held to the plain splitter of tests/oracle.py."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nsysq.analyses.census import census
from nsysq.base.errors import NoDataError, UsageError
from nsysq.iterations.period import find_period
from nsysq.iterations.table import COLUMNS, iters
from nsysq.session import Session
from nsysq.session.scope import Scope
from nsysq.synth import training as plan
from nsysq.trace import Trace
from tests import oracle
from tests.conftest import REAL_TRACES


@pytest.fixture(scope="module")
def loop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return plan.training(tmp_path_factory.mktemp("iters") / "training.sqlite")


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return plan.training(tmp_path_factory.mktemp("iters_plain") / "plain.sqlite", nvtx=False)


@pytest.fixture(scope="module")
def loop_rows(loop: Path) -> list[dict[str, Any]]:
    with Session(loop) as trace:
        return iters(trace).records()


def cli(*args: str | Path, code: int = 0) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "nsysq", *map(str, args)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == code, proc.stderr
    return proc


def test_steps_match_the_oracle(loop: Path, loop_rows: list[dict[str, Any]]) -> None:
    want = oracle.iteration_kernels(loop)
    assert [r["name"] for r in loop_rows] == [name for name, _ in want]
    assert [r["iteration"] for r in loop_rows] == list(range(plan.FIRST_STEP, plan.FIRST_STEP + plan.STEPS))
    assert [r["kernels"] for r in loop_rows] == [len(k) for _, k in want]
    assert [r["kernel_ns"] for r in loop_rows] == [sum(e - s for _, _, s, e in k) for _, k in want]
    for row, (_, kernels) in zip(loop_rows, want, strict=True):
        starts, ends = [k[2] for k in kernels], [k[3] for k in kernels]
        assert row["gpu_span_ns"] == max(ends) - min(starts)
        merged = oracle.merge(sorted(zip(starts, ends, strict=True)))
        assert row["gpu_busy_ns"] == oracle.length(merged)
        assert row["gpu_idle_ns"] == row["gpu_span_ns"] - row["gpu_busy_ns"]
        assert row["comm_exposed_ns"] <= row["comm_ns"] <= row["kernel_ns"]
    assert set(loop_rows[0]) == set(COLUMNS)


def test_slow_step_is_the_outlier_with_its_cause(loop_rows: list[dict[str, Any]]) -> None:
    outliers = [r for r in loop_rows if r["outlier"]]
    assert [r["iteration"] for r in outliers] == [plan.SLOW_STEP]
    cause = outliers[0]["cause"]
    assert cause.startswith(f"{plan.SLOW_KERNEL} 3.0x its typical time: +"), cause
    assert outliers[0]["score"] > 3
    assert [r["iteration"] for r in loop_rows if r["warmup"]] == [plan.FIRST_STEP, plan.FIRST_STEP + 1]
    assert all(r["cause"] is None for r in loop_rows if not r["outlier"])


def test_footer_names_the_source(loop: Path) -> None:
    with Session(loop) as trace:
        table = iters(trace, unit="ms")
    footer = table.footer
    assert footer["source"] == "nvtx" and footer["source_name"] == "ProfilerStep#N"
    assert "ProfilerStep#N" in footer["why"]
    assert footer["iterations"] == plan.STEPS and footer["warmup"] == 2 and footer["outliers"] == 1
    assert footer["unattributed_ops"] == 0
    durations = sorted(r[COLUMNS.index("duration_ns")] for r in table.rows[2:])
    assert footer["steady_median_ms"] == pytest.approx(durations[len(durations) // 2], rel=0.02)


def test_named_range(loop: Path) -> None:
    with Session(loop) as trace:
        rows = iters(trace, nvtx="forward").records()
    want = oracle.iteration_kernels(loop, "forward")
    assert [r["iteration"] for r in rows] == list(range(plan.STEPS))
    assert [r["kernels"] for r in rows] == [len(k) for _, k in want]
    assert [r["kernel_ns"] for r in rows] == [sum(e - s for _, _, s, e in k) for _, k in want]
    with Session(loop) as trace, pytest.raises(UsageError, match="no kept NVTX range is named"):
        iters(trace, nvtx="no_such_range")


def test_detected_repeating_range(tmp_path: Path, loop_rows: list[dict[str, Any]]) -> None:
    path = plan.training(tmp_path / "named.sqlite", step_name="train_step")
    with Session(path) as trace:
        table = iters(trace)
    rows = table.records()
    assert table.footer["source"] == "nvtx" and table.footer["source_name"] == "train_step"
    assert f"repeats {plan.STEPS} times at depth 0" in table.footer["why"]
    assert [r["iteration"] for r in rows] == list(range(plan.STEPS))
    want = oracle.iteration_kernels(path, "train_step")
    assert [r["kernels"] for r in rows] == [len(k) for _, k in want]
    assert [r["kernel_ns"] for r in rows] == [r["kernel_ns"] for r in loop_rows]
    assert [r["iteration"] for r in rows if r["outlier"]] == [plan.SLOW_STEP - plan.FIRST_STEP]


def test_work_launched_from_another_thread_is_counted(tmp_path: Path) -> None:
    path = plan.training(tmp_path / "autograd.sqlite", autograd=True)
    with Session(path) as trace:
        table = iters(trace)
    steps = oracle.iteration_kernels(path)
    held = sum(len(k) for _, k in steps)
    assert [r["kernels"] for r in table.records()] == [len(k) for _, k in steps]
    assert table.footer["unattributed_ops"] == oracle.kernel_count(path) - held
    # every kernel not held was launched (from the autograd thread) inside a step's range
    assert table.footer["unattributed_during_ops"] == table.footer["unattributed_ops"] > 0
    assert any("autograd thread" in note for note in table.notes)


def test_period_without_nvtx(plain: Path, loop_rows: list[dict[str, Any]]) -> None:
    with Session(plain) as trace:
        table = iters(trace)
    rows = table.records()
    assert table.footer["source"] == "period"
    assert "repeat every 18 kernels" in table.footer["why"]
    assert table.footer["regular_pct"] == pytest.approx(100.0 * (plan.STEPS - 1) / plan.STEPS)
    assert [r["kernels"] for r in rows] == oracle.kernels_per_period(plain, "indexSelectLargeIndex")
    # the same GPU work as the NVTX variant: the same kernels per step
    assert [r["kernels"] for r in rows] == [r["kernels"] for r in loop_rows]
    assert [r["kernel_ns"] for r in rows] == [r["kernel_ns"] for r in loop_rows]
    assert [r["iteration"] for r in rows if r["outlier"]] == [plan.SLOW_STEP - plan.FIRST_STEP]
    assert [r["iteration"] for r in rows if r["warmup"]] == [0, 1]
    with Session(plain) as trace, pytest.raises(NoDataError, match="no NVTX ranges"):
        iters(trace, source="nvtx")


def test_forced_period_on_the_nvtx_variant(loop: Path) -> None:
    with Session(loop) as trace:
        table = iters(trace, source="period")
    assert table.footer["source"] == "period" and len(table.rows) == plan.STEPS


def test_find_period_by_hand() -> None:
    step = [5, 1, 2, 1, 2, 3, 4]
    found = find_period([9, 9] + step * 6)
    assert found is not None and found.anchor == 5 and found.length == len(step)
    assert list(found.cuts) == [2 + i * len(step) for i in range(6)]
    assert find_period([1, 2, 3, 4, 5, 6]) is None


@pytest.mark.parametrize("selection", ["10", "4:6"])
def test_iteration_scope_is_the_oracles_kernels(loop: Path, selection: str) -> None:
    first, _, last = selection.partition(":")
    numbers = range(int(first), int(last or first) + 1)
    want = [
        k
        for i, (_, kernels) in enumerate(oracle.iteration_kernels(loop))
        if i + plan.FIRST_STEP in numbers
        for k in kernels
    ]
    with Trace(loop, iteration=selection) as trace:
        table = census(trace.session, limit=0)
    assert table.footer["total_kernels"] == len(want)
    assert table.footer["total_kernel_ns"] == sum(e - s for _, _, s, e in want)
    assert table.footer["scope"] == ("iteration 10" if selection == "10" else "iterations 4:6")


def test_iteration_scope_on_the_period_variant(plain: Path) -> None:
    counts = oracle.kernels_per_period(plain, "indexSelectLargeIndex")
    with Trace(plain, iteration=3) as trace:
        assert census(trace.session, limit=0).footer["total_kernels"] == counts[3]


def test_iteration_errors(loop: Path) -> None:
    proc = cli("census", loop, "--iteration", "40", code=2)
    assert f"it has {plan.STEPS} iterations, numbered {plan.FIRST_STEP} to" in proc.stderr
    assert "Traceback" not in proc.stderr
    with pytest.raises(UsageError, match="is not N or A:B"):
        Trace(loop, iteration="x")
    with pytest.raises(UsageError, match="does not combine"):
        Trace(loop, iteration=3, nvtx="forward")


def test_cli_json_and_plot(loop: Path, tmp_path: Path) -> None:
    proc = cli("iters", loop, "--format", "json")
    data = json.loads(proc.stdout)
    rows = data["rows"] if isinstance(data, dict) else data
    assert set(rows[0]) == set(COLUMNS)
    out = tmp_path / "iters.png"
    cli("plot", "iters", loop, "-o", out)
    assert out.stat().st_size > 0


def test_trace_method(loop: Path) -> None:
    with Trace(loop) as trace:
        df = trace.iters(unit="ms")
    assert len(df) == plan.STEPS and df.attrs["footer"]["outliers"] == 1


def _has_nvtx(path: Path) -> bool:
    with sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True) as con:
        return bool(
            con.execute("SELECT count(*) FROM sqlite_master WHERE name = 'NVTX_EVENTS'").fetchone()[0]
        )


@pytest.mark.skipif(not REAL_TRACES, reason="no real exports")
def test_real_exports_with_nvtx_match_the_oracle() -> None:
    checked = 0
    for path in (p for p in REAL_TRACES if _has_nvtx(p) and oracle.kernel_count(p)):
        with Session(path) as trace:
            try:
                table = iters(trace)
            except NoDataError:
                continue
        if table.footer["source"] != "nvtx":
            continue
        rows = table.records()
        want = oracle.iteration_kernels(path, str(table.footer["source_name"]))
        assert [r["kernels"] for r in rows] == [len(k) for _, k in want], path.name
        assert [r["kernel_ns"] for r in rows] == [sum(e - s for _, _, s, e in k) for _, k in want], path.name
        checked += 1
    if not checked:
        pytest.skip("no real export with NVTX step ranges")


def test_step_codes_from_the_kept_codes_are_the_querys(loop: Path, tmp_path: Path) -> None:
    """candidates._step_codes (the distinct step names and each range's, from the codes kept with
    the ranges) gives queries/iters/range_names.sql's rows and what range_codes.sql's hashes give
    (candidates._hashed_codes), on the training loop (ProfilerStep#N ranges), a loop named
    otherwise and the NVTX scenarios (domains)."""
    import numpy as np

    from nsysq.analyses import nvtx as nvtx_mod
    from nsysq.iterations import candidates
    from tests.fixtures import nvtx_scenarios

    paths = [loop, plan.training(tmp_path / "named.sqlite", step_name="train_step")]
    for name in nvtx_scenarios.SPECS:
        nvtx_scenarios.build(name, tmp_path)
        paths.append(tmp_path / f"{name}.sqlite")
    compared = 0
    for path in paths:
        with Session(path) as trace:
            nvtx_mod.require_ranges(trace)
            names = trace.run("iters_range_names").records()
            hashes = np.array([int(r["h"]) for r in names], dtype=np.uint64)
            direct = candidates._step_codes(trace)
            if direct is None:
                continue
            assert direct[0] == [{k: r[k] for k in ("code", "domain", "name")} for r in names], path.name
            hashed = candidates._hashed_codes(trace, names, hashes)
            for got, expected in zip(direct[1], hashed, strict=True):
                assert np.array_equal(got, expected), path.name
            compared += 1
    assert compared >= 3


def test_shares_from_the_calls_on_two_cores_are_the_querys(tmp_path: Path) -> None:
    """The candidate groups' GPU shares from the calls, the threads shared between two cores
    (source._shares), are queries/iters/shares.sql's over the NVTX attribution, on the bench's
    nested-NVTX generator (8 threads, each with its own step ranges)."""
    from nsysq.synth import big

    path = tmp_path / "nested.sqlite"
    big(path, 30_000, nested_nvtx=True)
    fits, fast, slow = _shares_both_ways(path)
    assert len({g["tid"] for g in fits}) > 1  # the split between the cores ran
    assert [tuple(r[k] for k in _SHARE_KEYS) for r in fast] == [
        tuple(r[k] for k in _SHARE_KEYS) for r in slow
    ]


_SHARE_KEYS = ("tid", "dom", "name", "lvl", "instances", "gpu_ns", "thread_gpu_ns")


def _shares_both_ways(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The fit candidate groups, their shares from the calls (source._shares) and shares.sql's rows."""
    from nsysq.iterations import source

    with Session(path, cache=False) as trace:
        found = source._path(trace)
        fits = [g for g in source._groups(trace, found) if g["fit"]]
        fast = source._shares(trace, found, fits)
        trace.materialize("iters_candidates", source.GROUPS, rebuild=True, min_instances=source.MIN_INSTANCES)
        source._attribution(trace)
        return fits, fast, trace.run("iters_shares").records()


def test_shares_skip_the_levels_below_a_whole_share(tmp_path: Path) -> None:
    """Once a group holds all of its thread's GPU work, source._shares sums no deeper level: its
    rows are the query's rows down to that level, and its first row is the query's first."""
    _, fast, slow = _shares_both_ways(plan.training(tmp_path / "named.sqlite", step_name="train_step"))
    keys = _SHARE_KEYS
    deepest = max(r["lvl"] for r in fast)
    assert any(r["gpu_ns"] == r["thread_gpu_ns"] for r in fast)  # a whole share: the levels below skipped
    assert deepest < max(r["lvl"] for r in slow)
    want = [tuple(r[k] for k in keys) for r in slow if r["lvl"] <= deepest]
    assert [tuple(r[k] for k in keys) for r in fast] == want


def test_iteration_ops_from_the_calls_are_the_querys(loop: Path, tmp_path: Path) -> None:
    """The iterations' GPU ops found from the calls they hold (launches.Kept.ops) are
    queries/iters/ops.sql's rows, in its order of iteration then start: on the training loop,
    its autograd and named variants, the nested-NVTX generator and the real exports with NVTX."""
    import numpy as np

    from nsysq.iterations import source
    from nsysq.synth import big

    nested = tmp_path / "nested.sqlite"
    big(nested, 30_000, nested_nvtx=True)
    paths = [
        loop, plan.training(tmp_path / "autograd.sqlite", autograd=True),
        plan.training(tmp_path / "named.sqlite", step_name="train_step"), nested,
        *(p for p in REAL_TRACES if _has_nvtx(p)),
    ]  # fmt: skip
    columns = ("it", "kind", "dev", "s", "e", "sid", "did")
    checked = 0
    for path in paths:
        with Session(path, cache=False) as trace:
            try:
                found = source.find_iterations(trace)
            except NoDataError:
                continue
            fast = found.kept.ops(trace) if found.kept is not None else None
            slow = trace.run_arrays("iters_ops")
        if fast is None:
            continue
        got = [np.ma.getdata(fast[c]).astype(np.int64).tolist() for c in columns]
        want = [np.ma.getdata(slow[c]).astype(np.int64).tolist() for c in columns]
        assert sorted(zip(*got, strict=True)) == sorted(zip(*want, strict=True)), path.name
        assert list(zip(got[0], got[3], strict=True)) == list(zip(want[0], want[3], strict=True)), path.name
        checked += bool(got[0])
    assert checked >= 4


def _random_ranges_spec(seed: int) -> Any:
    """Push/pop ranges nested at random (names from a small pool, back-to-back and zero-length
    ones, ties) on two threads and two domains, and start/end ranges of repeated names, some
    overlapping each other: candidate groups of every kind."""
    import random

    from nsysq.synth.writer import H200, TraceSpec, global_tid

    rng = random.Random(seed)
    ranges: list[dict[str, Any]] = []
    tids = [global_tid(4242, 4242), global_tid(4242, 4243)]

    def nest(tid: int, dom: int, lo: int, hi: int, depth: int) -> None:
        t = lo
        while t < hi and depth < 4:
            start = t + rng.choice([0, 0, 1, 5])
            end = min(hi, start + rng.choice([0, 3, 10, 40]))
            if start > hi:
                break
            name = rng.choice(["step", "fwd", "bwd", "opt", f"d{depth}"])
            ranges.append({"start": start, "end": end, "eventType": 59, "globalTid": tid, "domainId": dom,
                           "text": name})  # fmt: skip
            if end > start and rng.random() < 0.6:
                nest(tid, dom, start, end, depth + 1)
            t = end + rng.choice([0, 0, 2])

    for tid in tids:
        for dom in (0, 1):
            nest(tid, dom, 1_000, 1_400, 0)
        for i in range(rng.randint(3, 8)):  # start/end ranges: some overlap, some not
            start = 1_000 + rng.randint(0, 350) if rng.random() < 0.5 else 1_000 + 50 * i
            ranges.append({"start": start, "end": start + rng.choice([0, 10, 49, 120]), "eventType": 60,
                           "globalTid": tid, "domainId": 0, "text": rng.choice(["io", "io", "load"]),
                           "rangeId": i + 1})  # fmt: skip
    kernels = [{"start": 1_500, "end": 1_510, "correlationId": 1, "globalPid": tids[0] & ~0xFFFFFF,
                "shortName": "k", "demangledName": "k"}]  # fmt: skip
    return TraceSpec(version="2024.6", nvtx=ranges, kernels=kernels, gpus=[H200],
                     analysis={"duration": 10_000, "startTime": 0, "stopTime": 10_000})  # fmt: skip


def test_candidate_groups_from_the_stacks_are_the_querys(loop: Path, tmp_path: Path) -> None:
    """candidates.groups (push/pop groups taken as never overlapping, start/end ones sorted) gives
    queries/iters/candidates.sql's rows in its order (``overlaps`` compared as none or some: the
    array counts ranges starting before the previous one ended, the query before any earlier one),
    on random nests of push/pop and start/end ranges, the training loop, the NVTX scenarios, the
    nested-NVTX generator and the real exports with NVTX."""
    from nsysq.iterations import candidates, source
    from nsysq.synth import big
    from nsysq.synth.writer import write_trace
    from tests.fixtures import nvtx_scenarios

    paths = [loop, big(tmp_path / "nested.sqlite", 20_000, nested_nvtx=True)]
    paths += [write_trace(tmp_path / f"random{s}.sqlite", _random_ranges_spec(s)) for s in range(12)]
    paths += [nvtx_scenarios.build(name, tmp_path) for name in nvtx_scenarios.SPECS]
    paths += [p for p in REAL_TRACES if _has_nvtx(p)]
    keys = ("tid", "dom", "domain", "name", "lvl", "profiler", "instances", "fit")
    compared = overlapping = 0
    for path in paths:
        with Session(path, cache=False) as trace:
            try:
                found = source._path(trace)
            except NoDataError:
                continue
            if found.stacks is None:
                continue
            got = candidates.groups(trace, found.stacks, source.MIN_INSTANCES)
            assert got is not None, path.name
            least = source.MIN_INSTANCES
            trace.materialize("iters_candidates", source.GROUPS, rebuild=True, min_instances=least)
            want = trace.sql_table(f"SELECT * FROM {source.GROUPS}").records()
        fast = [(*(r[k] for k in keys), r["overlaps"] > 0) for r in got[0]]
        slow = [(*(r[k] for k in keys), r["overlaps"] > 0) for r in want]
        assert fast == slow, path.name
        compared += 1
        overlapping += sum(r["overlaps"] > 0 for r in want)
    assert compared >= 14 and overlapping > 0  # some group overlaps itself: the sorted branch ran


def test_unattributed_from_the_calls_a_run_at_a_time_is_the_querys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """launches.Kept.unattributed, the calls' windows found a run of 7 calls at a time, gives
    queries/iters/unattributed.sql's row: on the autograd loop (work launched during the steps from
    another thread), the loop named otherwise and the nested-NVTX generator."""
    import numpy as np

    from nsysq.iterations import launches, source
    from nsysq.synth import big

    monkeypatch.setattr(launches, "_RUN", 7)
    paths = [
        plan.training(tmp_path / "autograd.sqlite", autograd=True),
        plan.training(tmp_path / "named.sqlite", step_name="train_step"),
        big(tmp_path / "nested.sqlite", 20_000, nested_nvtx=True),
    ]
    during = 0
    for path in paths:
        with Session(path, cache=False) as trace:
            found = source.find_iterations(trace)
            assert found.kept is not None, path.name
            order = np.argsort(found.starts, kind="stable")
            starts, ends = found.starts[order], found.ends[order]
            fast = found.kept.unattributed(starts, ends)
            slow = trace.run(
                "iters_unattributed", starts=[int(v) for v in starts], ends=[int(v) for v in ends]
            ).records()[0]
        assert fast == {k: int(slow[k]) for k in fast}, path.name
        during += fast["during_ops"]
    assert during > 0


def test_calls_started_inside_windows_by_slices_and_by_search() -> None:
    """launches._started_inside: calls in start order take a slice per window, others a binary
    search per call; both give, per call, whether it lies in the window of the last start at or
    before it (windows that tie, nest, overlap, end before they start, calls before the first)."""
    import numpy as np

    from nsysq.iterations import launches

    rng = np.random.default_rng(7)
    for case in range(2000):
        m, n = int(rng.integers(0, 60)), int(rng.integers(1, 8))
        s = rng.integers(0, 100, m)
        s = np.sort(s) if case % 2 else s  # in start order: the slices; else the search
        starts = np.sort(rng.integers(0, 100, n))
        ends = starts + rng.integers(-3, 40, n)
        got = np.zeros(m, dtype=bool)
        launches._started_inside(s, starts, ends, got)
        last = np.searchsorted(starts, s, side="right") - 1
        want = [bool(j >= 0 and v <= ends[j]) for v, j in zip(s.tolist(), last.tolist(), strict=True)]
        assert got.tolist() == want, (s, starts, ends)


def test_group_ranges_from_the_stacks_are_the_querys(loop: Path, tmp_path: Path) -> None:
    """The iterations of a candidate group read from the stacks and the kept name codes
    (source._group_ranges) are queries/iters/ranges.sql's rows, for the first groups of the
    training loop (ProfilerStep#N), a loop named otherwise, the nested-NVTX generator and the real
    exports with NVTX."""
    from nsysq.iterations import source
    from nsysq.synth import big

    nested = tmp_path / "nested.sqlite"
    big(nested, 30_000, nested_nvtx=True)
    paths = [loop, plan.training(tmp_path / "named.sqlite", step_name="train_step"), nested]
    paths += [p for p in REAL_TRACES if _has_nvtx(p)]
    compared = 0
    for path in paths:
        with Session(path, cache=False) as trace:
            found = source._path(trace)
            groups = source._groups(trace, found)
            for g in groups[:6] if found.ranges is not None else []:
                params = {k: g[k] for k in ("tid", "dom", "lvl", "profiler")} | {"range_name": g["name"]}
                got = source._group_ranges(trace, found, g["group"], params)
                assert got is not None
                want = trace.run("iters_ranges", **params).records()
                assert got[0] == [r["rid"] for r in want] and got[1] == [r["name"] for r in want], path.name
                assert got[2].tolist() == [r["start"] for r in want], path.name
                assert got[3].tolist() == [r["end"] for r in want], path.name
                compared += 1
    assert compared >= 10


def test_calls_joined_as_they_decode_are_the_fetched_ones(tmp_path: Path) -> None:
    """The launching calls joined on a thread of their own as the background decode gives them
    (launches.calls_decoding) are those joined from the session's own read (fetch_calls); without a
    background decode of them (a scoped read) there is no such join."""
    import numpy as np

    from nsysq.iterations import launches
    from nsysq.synth import big

    path = tmp_path / "nested.sqlite"
    big(path, 30_000, nested_nvtx=True)
    with Session(path, cache=False, prefetch="iters_ops") as trace:  # as nsysq iters opens it
        trace.prefetch(("iters_call_arrays", "iters_op_arrays"))
        early = launches.calls_decoding(trace)
        assert early is not None
        got = early.result()
        fetched = launches.fetch_calls(trace)
        assert got is not None and fetched is not None
        want = launches.calls_from(fetched)
        assert want is not None
        for field in ("tid", "key", "s", "e", "gpu", "launched", "op_call", "op_ns", "op_timed"):
            assert np.array_equal(getattr(got, field), getattr(want, field)), field
    with Session(path, cache=False, scope=Scope(device=0)) as trace:
        trace.prefetch(("iters_call_arrays", "iters_op_arrays"))
        assert launches.calls_decoding(trace) is None
