"""nsysq.gputime.intervals (unions from separately sorted starts and ends) against the oracle's merge, and
nsysq.gputime.gpu_busy read every way a trace can be read (decoded pages, the sqlite scanner, a scope,
the cached copy) against the oracle's sweeps."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from nsysq.gputime import intervals
from nsysq.gputime.gpu_busy import gpu_busy
from nsysq.gputime.overlap import COMM_CATEGORY
from nsysq.session import Session
from nsysq.session.scope import Scope
from tests import oracle
from tests.conftest import keep_answers
from tests.fixtures import gaps_scenarios


def _random_intervals(rng: random.Random, n: int) -> list[tuple[int, int]]:
    """Nested, touching, repeated and zero-length intervals on a small clock (many ties)."""
    out = []
    for _ in range(n):
        start = rng.randrange(0, 60)
        out.append((start, start + rng.choice([0, 0, 1, 2, 3, 5, 8, 20])))
    return out


def _sorted(pairs: list[tuple[int, int]]) -> intervals.Sorted:
    """``pairs`` (start, end) as one interval set."""
    return intervals.Sorted.of(
        np.array([s for s, _ in pairs], dtype=np.int64), np.array([e for _, e in pairs], dtype=np.int64)
    )


@pytest.mark.parametrize("seed", range(300))
def test_union_and_gaps_match_a_merge_of_the_sorted_intervals(seed: int) -> None:
    rng = random.Random(seed)
    pairs = _random_intervals(rng, rng.randrange(1, 40))
    rng.shuffle(pairs)
    starts = np.array([s for s, _ in pairs], dtype=np.int64)
    ends = np.array([e for _, e in pairs], dtype=np.int64)
    got = intervals.union(intervals.Sorted.of(starts, ends))
    expected_gaps = oracle.idle_gaps(pairs)
    span = max(e for _, e in pairs) - min(s for s, _ in pairs)
    assert (got.span, got.busy, got.idle, got.gaps) == (
        span,
        oracle.length(oracle.merge(pairs)),
        oracle.length(expected_gaps),
        len(expected_gaps),
    )
    gap_starts, gap_ends = intervals.gaps(intervals.Sorted.of(starts, ends))
    assert list(zip(gap_starts.tolist(), gap_ends.tolist(), strict=True)) == expected_gaps


@pytest.mark.parametrize("seed", range(50))
def test_merged_sets_are_the_union_of_both(seed: int) -> None:
    rng = random.Random(seed)
    xs, ys = _random_intervals(rng, rng.randrange(0, 20)), _random_intervals(rng, rng.randrange(0, 20))

    both = _sorted(xs).merged(_sorted(ys))
    assert both.starts.tolist() == sorted(s for s, _ in xs + ys)
    assert both.ends.tolist() == sorted(e for _, e in xs + ys)
    if xs or ys:
        assert intervals.union(both).busy == oracle.length(oracle.merge(xs + ys))
    else:
        assert intervals.union(both) == intervals.Union(0, 0, 0, 0)


def test_groups_lists_each_key_once() -> None:
    assert intervals.groups(np.array([3, -1, 3, 7], dtype=np.int32)) == [-1, 3, 7]
    assert intervals.groups(np.array([1 << 40, 5], dtype=np.int64)) == [5, 1 << 40]
    assert intervals.groups(np.array([], dtype=np.int64)) == []


def _expected(path: Path, devices: set[int] | None = None) -> dict[object, tuple[int, int, int]]:
    """Per device: busy, idle (oracle.gaps_by_device) and exposed communication (overlap)."""
    exposed = {d: v["exposed"] for d, v in oracle.overlap_by_device(path)[0].items()}
    return {
        d: (v["busy"], v["idle"], exposed.get(d, 0))
        for d, v in oracle.gaps_by_device(path).items()
        if devices is None or d in devices
    }


def _busy(trace: Session) -> dict[object, tuple[int, int, int]]:
    trace.use_rules()
    table = gpu_busy(trace, COMM_CATEGORY)
    return {r["device_id"]: (r["busy_ns"], r["idle_ns"], r["comm_exposed_ns"]) for r in table.records()}


def _every_reader(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _expected(path)
    with Session(path, cache=False) as trace:
        assert _busy(trace) == expected, "decoded pages"
        assert trace.executed[-1].label.startswith("gpu_ops@")
    monkeypatch.setenv("NSYSQ_PAGE_READER", "0")
    with Session(path, cache=False) as trace:
        assert _busy(trace) == expected, "sqlite scanner"
    monkeypatch.delenv("NSYSQ_PAGE_READER")
    monkeypatch.setenv("NSYSQ_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("NSYSQ_CACHE_MIN_BYTES", "0")
    with Session(path, cache="build") as trace:
        assert _busy(trace) == expected, "cached copy"
    first = min((d for d in expected if d is not None), default=None)
    if first is not None:
        with Session(path, cache=False, scope=Scope(device=first)) as trace:
            assert _busy(trace) == _expected(path, {first}), "scoped to one device"


def test_gpu_busy_reads_the_same_ops_every_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scenario = gaps_scenarios.build("gaps_overlap", tmp_path)
    assert any(v[2] for v in _expected(scenario).values())  # communication partly exposed
    _every_reader(scenario, tmp_path, monkeypatch)


def test_gpu_busy_on_real_exports_every_way(
    real_trace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _every_reader(real_trace, tmp_path, monkeypatch)


@pytest.mark.parametrize("seed", range(100))
def test_covered_is_the_length_of_each_window_under_the_union(seed: int) -> None:
    rng = random.Random(seed)
    pairs = _random_intervals(rng, rng.randrange(0, 30))
    windows = sorted({(a, a + rng.randrange(1, 15)) for a in (rng.randrange(0, 80) for _ in range(10))})
    sets = _sorted(pairs)
    got = intervals.Coverage.of(sets).between(
        np.array([a for a, _ in windows], dtype=np.int64),
        np.array([b for _, b in windows], dtype=np.int64),
    )
    islands = [(a, b) for a, b in oracle.merge(pairs) if b > a]
    assert got.tolist() == [oracle.length(oracle.intersect(islands, [w])) for w in windows]
    starts, ends = intervals.islands(sets)
    assert [(a, b) for a, b in zip(starts.tolist(), ends.tolist(), strict=True) if b > a] == islands


def _gaps_answer(trace: Session) -> dict[str, list[tuple[object, ...]]]:
    from nsysq.gputime.gaps import gaps

    result = gaps(trace, top=10**6)
    return {name: table.rows for name, table in result.tables().items()}


def _gaps_every_reader(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """nsys gaps answers the same read from decoded pages, through the scanner, from the copy."""
    from nsysq.base.errors import NoDataError

    try:
        with Session(path, cache=False) as trace:
            pages = _gaps_answer(trace)
    except NoDataError:
        return
    monkeypatch.setenv("NSYSQ_PAGE_READER", "0")
    with Session(path, cache=False) as trace:
        assert _gaps_answer(trace) == pages, "sqlite scanner"
    monkeypatch.delenv("NSYSQ_PAGE_READER")
    monkeypatch.setenv("NSYSQ_CACHE_DIR", str(tmp_path / "gaps-cache"))
    monkeypatch.setenv("NSYSQ_CACHE_MIN_BYTES", "0")
    with Session(path, cache="build") as trace:
        assert _gaps_answer(trace) == pages, "cached copy"


def test_gaps_read_the_same_rows_every_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _gaps_every_reader(gaps_scenarios.build("gaps_overlap", tmp_path), tmp_path, monkeypatch)


def test_gaps_on_real_exports_every_way(
    real_trace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _gaps_every_reader(real_trace, tmp_path, monkeypatch)


def test_feeding_threads_by_sql_and_by_arrays_agree(
    real_trace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When correlation ids repeat, queries/gap/feeders.sql finds the feeding threads; both ways agree."""
    from nsysq.base.errors import NoDataError
    from nsysq.gputime import gap_unions

    try:
        with Session(real_trace, cache=False) as trace:
            arrays = _gaps_answer(trace)
    except NoDataError:
        return
    monkeypatch.setattr(gap_unions, "feeders", lambda parts, calls, devices: None)
    with Session(real_trace, cache=False) as trace:
        assert _gaps_answer(trace) == arrays
        assert any(s.label.startswith("gap_feeders@") and not s.note for s in trace.executed)


def test_gaps_and_gpu_busy_are_kept_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Asked again of the same trace, gaps and the diff's GPU totals are read back, not computed."""
    from nsysq.gputime import gap_unions
    from nsysq.gputime import gpu_busy as gpu_busy_mod

    scenario = gaps_scenarios.build("gaps_overlap", tmp_path)
    keep_answers(monkeypatch, tmp_path / "kept")
    with Session(scenario, cache=True) as trace:
        first = (_gaps_answer(trace), _busy(trace))

    def refuse(*args: object) -> None:
        raise AssertionError("computed again")

    monkeypatch.setattr(gap_unions, "read_ops", refuse)
    monkeypatch.setattr(gpu_busy_mod, "_rows", refuse)
    with Session(scenario, cache=True) as trace:
        assert (_gaps_answer(trace), _busy(trace)) == first
        assert any("kept from an earlier run" in s.note for s in trace.executed)


@pytest.mark.parametrize("seed", range(100))
def test_coverage_under_is_the_length_of_the_intersection(seed: int) -> None:
    """|union of X ∩ union of Y| from Y's islands and X's islands (overlap's intersections)."""
    rng = random.Random(seed)
    xs, ys = _random_intervals(rng, rng.randrange(0, 25)), _random_intervals(rng, rng.randrange(0, 25))

    expected = oracle.length(oracle.intersect(oracle.merge(xs), oracle.merge(ys)))
    assert intervals.Coverage.of(_sorted(ys)).under(_sorted(xs)) == expected
    assert intervals.Coverage.of(_sorted(xs)).under(_sorted(ys)) == expected
