"""Lengths of unions of ``[start, end)`` intervals, from their starts and ends sorted separately.

For n intervals (each end at or after its start) let ``s`` be their starts and ``e`` their ends,
each sorted on its own. At any instant t, #(starts <= t) >= #(ends <= t), and nothing runs at t
exactly when the two counts are equal; they are equal (to k) exactly for t in
``[e[k-1], s[k])`` (0-based). So the time inside ``[s[0], e[n-1])`` when no interval runs is the
disjoint union of ``[e[k-1], s[k])`` over the k where ``e[k-1] < s[k]``:

    idle = sum(max(0, s[k] - e[k-1]) for k in 1..n-1),   union = (e[n-1] - s[0]) - idle

and the k where ``s[k] > e[k-1]`` are the idle gaps, in time order, the same gaps as a sweep over
the intervals sorted by start with a running maximum of their ends (``tests/oracle.py``). No running
maximum is needed, only two sorts, which numpy does in a fraction of the time DuckDB's window
operator takes (bench/README.md, "Interval unions"); the union of two sets whose sorted starts and
ends are known is a merge of sorted arrays, not a new sort.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

    Ints = NDArray[np.int64]


_COUNT_SLICE = 1 << 18
"""Keys counted at a time by :func:`groups`."""


@dataclass(frozen=True)
class Sorted:
    """One interval set: its starts sorted, and its ends sorted (separately).

    Sorting is numpy's stable sort (timsort): an export's timestamps come in long ascending runs
    (each table nearly in time order, the tables concatenated), which it merges in linear time,
    where the default introsort takes 4-10x longer on them (and is only ~1.2x faster on random
    input)."""

    starts: Ints
    ends: Ints

    @staticmethod
    def of(starts: Ints, ends: Ints) -> Sorted:
        """Sort ``starts`` and ``ends`` (copies; ends before starts must be clipped already)."""
        return Sorted(np.sort(starts, kind="stable"), np.sort(ends, kind="stable"))

    @staticmethod
    def owned(starts: Ints, ends: Ints) -> Sorted:
        """Sort ``starts`` and ``ends`` in place (arrays nobody else holds) and keep them."""
        starts.sort(kind="stable")
        ends.sort(kind="stable")
        return Sorted(starts, ends)

    def merged(self, *others: Sorted) -> Sorted:
        """The union of this set and ``others`` as one set: the sorted runs concatenated and merged
        by one stable sort (linear in runs, not a new sort), one new pair of arrays however many."""
        runs = [s for s in (self, *others) if len(s.starts)]
        if len(runs) <= 1:
            return runs[0] if runs else self
        return Sorted(_merge([r.starts for r in runs]), _merge([r.ends for r in runs]))

    def __len__(self) -> int:
        return len(self.starts)


@dataclass(frozen=True)
class Union:
    """The union of one interval set: ``span`` (first start to last end), ``busy`` (the union's
    length), ``idle`` = span - busy, and ``gaps`` (the maximal idle intervals inside the span)."""

    span: int
    busy: int
    idle: int
    gaps: int


def union(intervals: Sorted) -> Union:
    """Span, union length, idle time and idle gaps of ``intervals`` (all zero when empty)."""
    if not len(intervals):
        return Union(0, 0, 0, 0)
    after = intervals.starts[1:] - intervals.ends[:-1]
    positive = after > 0
    idle = int(after.sum(where=positive))
    span = int(intervals.ends[-1] - intervals.starts[0])
    return Union(span, span - idle, idle, int(np.count_nonzero(positive)))


def gaps(intervals: Sorted) -> tuple[Ints, Ints]:
    """The idle gaps of ``intervals`` in time order: (their starts, their ends)."""
    after = intervals.starts[1:] - intervals.ends[:-1]
    at = np.flatnonzero(after > 0)
    return intervals.ends[at], intervals.starts[at + 1]


def islands(intervals: Sorted) -> tuple[Ints, Ints]:
    """The maximal busy intervals of ``intervals`` in time order: (their starts, their ends)."""
    if not len(intervals):
        return intervals.starts[:0], intervals.ends[:0]
    # One index array and one result per side: at 5M intervals every fresh array costs page faults.
    after = np.empty(len(intervals), dtype=bool)
    after[0] = True
    np.greater(intervals.starts[1:], intervals.ends[:-1], out=after[1:])  # an idle gap before k
    at = np.flatnonzero(after)
    del after
    starts = intervals.starts[at]
    at[:-1] = at[1:] - 1  # each island ends at the end before the next island's first interval
    at[-1] = len(intervals) - 1
    return starts, intervals.ends[at]


@dataclass(frozen=True)
class Coverage:
    """The islands of one interval set with the union's length before each, so how long the union
    covers any window takes two binary searches (built once, asked many times)."""

    starts: Ints
    lengths: Ints
    before: Ints

    @staticmethod
    def of(intervals: Sorted) -> Coverage:
        starts, ends = islands(intervals)
        lengths = np.subtract(ends, starts, out=ends)
        before = np.cumsum(lengths)
        before -= lengths  # the union's length before each island
        return Coverage(starts, lengths, before)

    def up_to(self, t: Ints) -> Ints:
        """For each of ``t``: |union ∩ (-inf, t)|."""
        at = np.searchsorted(self.starts, t, side="right") - 1
        inside = np.maximum(at, 0)
        value = self.before[inside] + np.minimum(t - self.starts[inside], self.lengths[inside])
        return np.where(at >= 0, value, 0)

    def between(self, lows: Ints, highs: Ints) -> Ints:
        """For each ``[lows[i], highs[i])``: how long the union covers it."""
        if not len(self.starts):
            return np.zeros(len(lows), dtype=np.int64)
        return self.up_to(highs) - self.up_to(lows)

    def under(self, intervals: Sorted) -> int:
        """|union of ``intervals`` ∩ this union|: the coverage of each island of ``intervals``."""
        return int(self.between(*islands(intervals)).sum()) if len(intervals) else 0


def _merge(runs: list[Ints]) -> Ints:
    """Sorted arrays as one sorted array (numpy's stable sort finds the runs and merges them)."""
    both = np.concatenate(runs)
    both.sort(kind="stable")
    return both


def groups(keys: NDArray[np.int64]) -> list[int]:
    """The distinct values of ``keys`` in increasing order (a count when they span a small range,
    taken a slice of the keys at a time: no temporary as large as the keys, whose fresh memory
    costs more than the count at millions of keys)."""
    if not len(keys):
        return []
    low, high = int(keys.min()), int(keys.max())
    if high - low < 1 << 20:  # a count over at most 8 MB: cheaper than a sort of the keys
        counts = np.zeros(high - low + 1, dtype=np.int64)
        for lo in range(0, len(keys), _COUNT_SLICE):
            counts += np.bincount(keys[lo : lo + _COUNT_SLICE] - low, minlength=len(counts))
        return [int(v) + low for v in np.flatnonzero(counts)]
    return [int(v) for v in np.unique(keys)]
