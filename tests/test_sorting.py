"""nsysq.base.sorting.lexsorted gives np.lexsort's order exactly (stable), whatever its keys hold."""

from __future__ import annotations

import numpy as np
import pytest

from nsysq.base.sorting import KeyIndex, coded, lexsorted


def _key(rng: np.random.Generator, kind: int, n: int) -> np.ndarray:
    if kind == 0:  # a few small values (a stream, a kind)
        return rng.integers(0, 3, n)
    if kind == 1:  # the whole int64 range: neither offsets nor ranks fit beside another key
        return rng.integers(-(2**62), 2**62, n)
    if kind == 2:
        return rng.integers(0, 2, n).astype(bool)
    if kind == 3:  # nsys thread ids: a few values far apart (ranked, not offset)
        return (rng.integers(0, 4, n) * (1 << 40) + (1 << 48)).astype(np.int64)
    if kind == 4:
        return rng.integers(-5, 5, n).astype(np.int8)
    if kind == 5:  # timestamps that tie now and then
        return rng.integers(0, max(n // 3, 1), n) * 1000 + 10**12
    if kind == 7:  # one value (a single domain): orders nothing, packed as nothing
        return np.full(n, int(rng.integers(-3, 3)) << 50, dtype=np.int64)
    if kind == 8:
        return np.full(n, bool(rng.integers(0, 2)))
    return rng.integers(0, 2**63 - 1, n, dtype=np.uint64) + np.uint64(2**63 - 1)  # above int64


@pytest.mark.parametrize("seed", range(80))
def test_lexsorted_is_lexsort(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.choice([0, 1, 2, 7, 150, 6000]))
    keys = [_key(rng, int(rng.integers(0, 9)), n) for _ in range(int(rng.integers(1, 5)))]
    got = lexsorted(keys)
    assert np.array_equal(got, np.lexsort(keys[::-1])), [k.dtype for k in keys]


@pytest.mark.parametrize("seed", range(12))
def test_lexsorted_writes_the_rows_a_run_at_a_time(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The row numbers packed beside the key go in _RUN at a time (a reused buffer, no arange as
    long as the key): runs of 7 rows, a last run shorter or full, give np.lexsort's order."""
    from nsysq.base import sorting

    monkeypatch.setattr(sorting, "_RUN", 7)
    rng = np.random.default_rng(seed)
    n = int(rng.choice([7, 8, 13, 14, 15, 200, 3001]))
    keys = [_key(rng, 5, n), _key(rng, int(rng.choice([0, 5])), n)]  # many descents: the packed sort
    assert np.array_equal(lexsorted(keys), np.lexsort(keys[::-1]))


def test_lexsorted_resolves_ties_by_the_keys_that_did_not_fit() -> None:
    start = np.array([5, 5, 5, 1, 1, 9], dtype=np.int64)
    end = np.array([-(2**62), 2**62, 0, 3, -3, 7], dtype=np.int64)  # too wide to pack beside start
    tid = np.array([2, 2, 2, 2, 2, 1], dtype=np.int64) << 40
    assert lexsorted([tid, start, end]).tolist() == [5, 4, 3, 0, 2, 1]


@pytest.mark.parametrize("runs", [1, 2, 3, 50, 5000])
def test_lexsorted_of_keys_in_ascending_runs_is_lexsort(runs: int) -> None:
    """Keys that come in a few ascending runs take numpy's merge sort, many runs the packed sort:
    both give lexsort's order, ties on the leading keys ordered by the rest."""
    rng = np.random.default_rng(runs)
    n = 20_000
    start = np.sort(rng.integers(0, n // 4, n)).reshape(runs, -1).T.ravel() if n % runs == 0 else None
    start = start if start is not None else np.sort(rng.integers(0, n // 4, n))
    end = rng.integers(-(2**62), 2**62, n)  # too wide to pack beside start: ties go to _order_ties
    tid = (np.arange(n) * runs // n).astype(np.int32)
    for keys in ([start], [start, end], [tid, start, end], [start, tid]):
        assert np.array_equal(lexsorted(keys), np.lexsort(keys[::-1]))


@pytest.mark.parametrize("spread", [1, 3, 4, 5, 1000])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_key_index_finds_what_a_binary_search_finds(spread: int, dtype: type) -> None:
    """A direct table (keys dense: spread <= 4) or a binary search: the same positions, -1 for a
    value no key equals, below the first key or past the last."""
    rng = np.random.default_rng(spread)
    keys = np.unique(rng.integers(-50, 50 + 400 * spread, 400)).astype(dtype)
    wanted = rng.integers(int(keys[0]) - 30, int(keys[-1]) + 30, 5000).astype(np.int64)
    wanted[:3] = [-(2**62), 2**62, int(keys[-1])]
    index = KeyIndex(keys)
    assert (index.table is not None) == (int(keys[-1]) - int(keys[0]) + 1 <= 4 * len(keys))
    at = np.searchsorted(keys, wanted.clip(np.iinfo(dtype).min, np.iinfo(dtype).max).astype(dtype))
    at = np.minimum(at, len(keys) - 1)
    expected = np.where(keys[at] == wanted, at, -1)
    got = index.find(wanted)
    assert got.dtype == np.int64 and np.array_equal(got, expected)
    assert KeyIndex(keys[:0]).find(wanted).tolist() == [-1] * len(wanted)


@pytest.mark.parametrize("kind", ["threads", "late", "many", "empty"])
def test_coded_is_unique_with_inverse(kind: str) -> None:
    """base.sorting.coded: each value's index into the sorted distinct values, and those values,
    as np.unique(return_inverse=True) gives them, whether the leading rows hold every value, a
    value first seen late, or too many values to rank."""
    rng = np.random.default_rng(7)
    n = 20_000
    values = ((rng.integers(0, 5, n) + 1) << 24) + rng.integers(0, 3, n)
    if kind == "late":
        values[-3:] = [1, 99 << 30, 5 << 24]
    elif kind == "many":
        values = rng.integers(0, 2**40, n)
    elif kind == "empty":
        values = values[:0]
    codes, distinct = coded(values)
    expected_distinct, expected_codes = np.unique(values, return_inverse=True)
    assert np.array_equal(distinct, expected_distinct)
    assert np.array_equal(codes.astype(np.int64), expected_codes)
    assert np.array_equal(distinct[codes], values)


@pytest.mark.parametrize("n", [0, 1, 6, 7, 8, 20, 1000])
def test_place_rows_is_the_arange_scatter(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """place_rows(out, at) is out[at] = arange(len(at)), in runs of 7 rows: an order's inverse, and a
    KeyIndex table's positions."""
    from nsysq.base import sorting

    monkeypatch.setattr(sorting, "_RUN", 7)
    rng = np.random.default_rng(n)
    for dtype in (np.int32, np.int64):
        at = rng.permutation(n)
        want = np.full(n, -1, dtype=dtype)
        want[at] = np.arange(n, dtype=dtype)
        got = np.full(n, -1, dtype=dtype)
        sorting.place_rows(got, at)
        assert got.dtype == dtype and np.array_equal(got, want)
    keys = np.unique(rng.integers(0, 3 * n + 1, n))
    assert np.array_equal(KeyIndex(keys).find(keys), np.arange(len(keys)))
