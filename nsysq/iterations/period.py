"""The period of the GPU work: a repeating sequence of kernel names on one stream (no NVTX needed).

The kernels of the busiest stream, in start order, are a sequence of name ids. A training or
decode loop repeats the same sequence every step, so some names occur once per step. For each
count c (at least MIN_PERIODS, smallest first, up to MAX_CANDIDATES of them) the first name that
occurs exactly c times is an anchor: its occurrences cut the sequence into c periods. A period
is *regular* when its sequence of names equals the most common one (compared by a 64-bit hash of
the sequence and its length); the split is accepted when at least MIN_REGULAR of its periods are
regular. The smallest accepted count wins (the longest period that repeats; a shorter one, such
as a layer inside a step, repeats less well across the step's ends). Everything is numpy over the
whole sequence (bincounts and reduceat), no loop over kernels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

MIN_PERIODS = 3
"""A period must repeat at least this many times."""
MIN_REGULAR = 0.8
"""The share of periods whose kernel sequence is the most common one, for a split to be accepted."""
MAX_CANDIDATES = 32
"""How many occurrence counts are tried (smallest first)."""
_MULT = np.uint64(0x9E3779B97F4A7C15)


@dataclass(frozen=True)
class Period:
    """A split of one stream's kernels: ``cuts`` (the index of each period's first kernel; the
    anchor's occurrences), ``anchor`` (its name id), ``length`` (kernels in the most common
    period) and ``regular`` (the share of periods with the most common sequence)."""

    cuts: Any
    anchor: int
    length: int
    regular: float


def find_period(codes: Any) -> Period | None:
    """The split of ``codes`` (name ids in start order) into repeating periods, or None."""
    codes = np.asarray(codes, dtype=np.int64)
    if len(codes) < MIN_PERIODS:
        return None
    names, first_seen, compact, counts = np.unique(
        codes, return_index=True, return_inverse=True, return_counts=True
    )
    weights = _weights(len(names))
    for c in np.unique(counts[counts >= MIN_PERIODS])[:MAX_CANDIDATES]:
        named = np.flatnonzero(counts == c)
        anchor = int(named[np.argmin(first_seen[named])])
        cuts = np.flatnonzero(compact == anchor)
        gaps = np.diff(cuts)  # equal sequences have equal lengths: a cheap test first
        if len(gaps) and np.bincount(gaps).max() + 1 < MIN_REGULAR * len(cuts):
            continue
        regular, length = _regularity(compact, weights, cuts)
        if regular >= MIN_REGULAR:
            return Period(cuts=cuts, anchor=int(names[anchor]), length=length, regular=regular)
    return None


def _weights(n: int) -> Any:
    """A pseudo-random 64-bit weight per name (deterministic)."""
    rng = np.random.default_rng(25)
    return rng.integers(1, np.iinfo(np.int64).max, size=n, dtype=np.int64).astype(np.uint64)


def _regularity(compact: Any, weights: Any, cuts: Any) -> tuple[float, int]:
    """(share of periods equal to the most common one, its length in kernels). The periods run
    from each cut to the next; the last one as long as the most common (or to the end)."""
    lengths = np.diff(np.append(cuts, len(compact)))
    typical = int(np.bincount(lengths[:-1]).argmax()) if len(lengths) > 1 else int(lengths[0])
    end = min(len(compact), int(cuts[-1]) + typical)
    seq = compact[cuts[0] : end]
    starts = cuts - cuts[0]
    lengths = np.diff(np.append(starts, len(seq)))
    position = np.arange(len(seq)) - np.repeat(starts, lengths)
    powers = np.cumprod(np.full(max(int(lengths.max()), 1), _MULT, dtype=np.uint64))
    with np.errstate(over="ignore"):
        terms = weights[seq] * powers[position]
        hashes = np.add.reduceat(terms, starts) ^ lengths.astype(np.uint64)
    _, inverse, tally = np.unique(hashes, return_inverse=True, return_counts=True)
    common = int(tally.argmax())
    return float(tally[common]) / len(cuts), int(lengths[np.flatnonzero(inverse == common)[0]])
