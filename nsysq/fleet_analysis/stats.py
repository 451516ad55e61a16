"""Mergeable statistics: what one trace contributes per kernel, and how contributions add up.

Counts, sums, minima, maxima and sums of squares are Python integers, so merging them over any
number of traces, in any order, is exact; the standard deviation comes from those exact sums.
Medians come from a log-spaced histogram: every duration ``d > 0`` falls in bucket
``b = ceil(ln(d) / ln(gamma))`` with ``gamma = (1 + alpha) / (1 - alpha)``, and the bucket's
representative value ``2 gamma^b / (gamma + 1)`` (clamped to the bucket's own minimum and maximum)
is within ``alpha`` of every duration in it. Buckets merge by adding counts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

ALPHA = 0.005
"""The median's stated relative error (0.5 %)."""
GAMMA = (1 + ALPHA) / (1 - ALPHA)
LOG_GAMMA = math.log(GAMMA)
MEDIAN_METHOD = f"histogram (relative error <= {ALPHA:.1%})"
"""What the merged median is, as the output states it."""
NONPOSITIVE_BUCKET = -1
"""The bucket of durations <= 0 (their representative is the bucket's own min..max midpoint)."""


@dataclass
class Moments:
    """Exact running totals of durations (ns): count, sum, sum of squares, min, max."""

    count: int = 0
    total: int = 0
    sum_sq: int = 0
    lo: int | None = None
    hi: int | None = None

    def add(self, count: int, total: int, sum_sq: int, lo: int | None, hi: int | None) -> None:
        self.count += count
        self.total += total
        self.sum_sq += sum_sq
        if lo is not None:
            self.lo = lo if self.lo is None else min(self.lo, lo)
        if hi is not None:
            self.hi = hi if self.hi is None else max(self.hi, hi)

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count else None

    @property
    def stddev(self) -> float | None:
        """Sample standard deviation from the exact integer sums (None below two values)."""
        n = self.count
        if n < 2:
            return None
        variance = Fraction(n * self.sum_sq - self.total * self.total, n * (n - 1))
        return math.sqrt(max(variance, Fraction(0)))


@dataclass
class Bucket:
    """One histogram bucket: how many durations, and the smallest and largest of them."""

    count: int
    lo: int
    hi: int


def representative(bucket: int, lo: int, hi: int) -> float:
    """The value that stands for every duration in ``bucket`` (within ALPHA of each of them)."""
    if bucket == NONPOSITIVE_BUCKET:
        return (lo + hi) / 2
    value = 2 * GAMMA**bucket / (GAMMA + 1)
    return float(min(max(value, lo), hi))


def add_bucket(histogram: dict[int, Bucket], bucket: int, count: int, lo: int, hi: int) -> None:
    """Fold one trace's bucket into ``histogram``."""
    known = histogram.get(bucket)
    if known is None:
        histogram[bucket] = Bucket(count, lo, hi)
    else:
        known.count += count
        known.lo = min(known.lo, lo)
        known.hi = max(known.hi, hi)


def histogram_median(histogram: dict[int, Bucket]) -> float | None:
    """The median (mean of the two middle values for an even count) from the merged histogram."""
    n = sum(b.count for b in histogram.values())
    if n == 0:
        return None
    ranks = {(n - 1) // 2, n // 2}  # 0-based ranks of the middle value(s)
    found = list(_values_at(sorted(histogram.items()), sorted(ranks)))
    return sum(found) / len(found)


def _values_at(buckets: Iterable[tuple[int, Bucket]], ranks: list[int]) -> Iterable[float]:
    seen = 0
    pending = list(ranks)
    for key, bucket in buckets:
        while pending and pending[0] < seen + bucket.count:
            yield _value_in(key, bucket, pending.pop(0) - seen)
        seen += bucket.count
        if not pending:
            return


def _value_in(key: int, bucket: Bucket, offset: int) -> float:
    """The value standing for the ``offset``-th duration of a bucket: exact when the bucket holds
    one distinct value or the asked-for duration is its smallest or largest, else the
    representative value."""
    if offset == 0:
        return float(bucket.lo)
    if offset == bucket.count - 1:
        return float(bucket.hi)
    return representative(key, bucket.lo, bucket.hi)
