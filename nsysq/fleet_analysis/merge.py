"""The driver's side of nsysq fleet: fold trace reports as they arrive into fleet-wide totals.

Nothing here knows which engine produced a report. Folding is exact and order-free: integer sums,
minima, maxima and histogram counts (see :mod:`nsysq.fleet_analysis.stats`), so every engine and every
completion order gives the same tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from nsysq import catalog
from nsysq.base.table import Table
from nsysq.fleet_analysis.partial import TraceReport
from nsysq.fleet_analysis.stats import MEDIAN_METHOD, Bucket, Moments, add_bucket, histogram_median

CENSUS_COLUMNS = (
    "rank", "name", "instances", "total_ns", "avg_ns", "med_ns", "min_ns", "max_ns", "stddev_ns",
    "share_pct", "traces",
)  # fmt: skip
LINEUP_COLUMNS = (
    "category", "instances", "total_ns", "avg_ns", "min_ns", "max_ns", "share_pct", "kernels",
    "top_kernel", "traces",
)  # fmt: skip


@dataclass
class KernelFold:
    """One kernel name over the fleet: exact moments, the merged histogram, traces it ran in. Each
    trace's buckets are kept as they came (``chunks``); the histogram is merged from them when
    first read, and again after a chunk is added."""

    moments: Moments = field(default_factory=Moments)
    chunks: list[Any] = field(default_factory=list)  # int64 arrays: bucket, count, lo, hi
    traces: int = 0
    _merged: dict[int, Bucket] | None = None

    def add_chunk(self, rows: Any) -> None:
        self.chunks.append(rows)
        self._merged = None

    @property
    def histogram(self) -> dict[int, Bucket]:
        if self._merged is None:
            self._merged = _merge_chunks(self.chunks)
        return self._merged


def _merge_chunks(chunks: list[Any]) -> dict[int, Bucket]:
    """Buckets (rows of bucket, count, lo, hi) from many traces merged: counts added, the smallest
    lo and the largest hi kept (integers throughout: exact)."""
    if not chunks:
        return {}
    rows = np.concatenate(chunks)
    rows = rows[np.argsort(rows[:, 0], kind="stable")]
    keys, first = np.unique(rows[:, 0], return_index=True)
    counts = np.add.reduceat(rows[:, 1], first)
    los, his = np.minimum.reduceat(rows[:, 2], first), np.maximum.reduceat(rows[:, 3], first)
    return {
        int(k): Bucket(int(c), int(lo), int(hi))
        for k, c, lo, hi in zip(keys.tolist(), counts.tolist(), los.tolist(), his.tolist(), strict=True)
    }


@dataclass
class CategoryFold:
    """One lineup category over the fleet: exact moments, time per short name, traces."""

    moments: Moments = field(default_factory=Moments)
    by_kernel: dict[str, int] = field(default_factory=dict)
    traces: int = 0


@dataclass
class FleetFold:
    """Everything the driver keeps: one light report per input and the fleet-wide folds."""

    reports: dict[int, TraceReport] = field(default_factory=dict)
    kernels: dict[str, KernelFold] = field(default_factory=dict)
    categories: dict[str, CategoryFold] = field(default_factory=dict)
    category_ns: dict[int, dict[str, int]] = field(default_factory=dict)
    queries: dict[str, None] = field(default_factory=dict)

    def add(self, index: int, report: TraceReport) -> None:
        """Fold one report in, keeping only its identity and totals (its rows are merged)."""
        self._fold_buckets(report)
        self.category_ns[index] = self._fold_lineup(report)
        self.queries.update(dict.fromkeys(report.queries))
        self.reports[index] = replace(report, kernels_by_name=[], lineup=[])

    def _fold_buckets(self, report: TraceReport) -> None:
        """One report's kernels, grouped by name where the trace was read (partial.by_name)."""
        for name, count, total, sum_sq, lo, hi, buckets in report.kernels_by_name:
            fold = self.kernels.get(name)
            if fold is None:
                fold = self.kernels[name] = KernelFold()
            fold.moments.add(count, total, sum_sq, lo, hi)
            if buckets is not None:
                fold.add_chunk(buckets)
            fold.traces += 1

    def _fold_lineup(self, report: TraceReport) -> dict[str, int]:
        per_category: dict[str, int] = {}
        for category, short_name, count, total, lo, hi in report.lineup:
            fold = self.categories.setdefault(category, CategoryFold())
            fold.moments.add(count, total or 0, 0, lo, hi)
            fold.by_kernel[short_name] = fold.by_kernel.get(short_name, 0) + (total or 0)
            per_category[category] = per_category.get(category, 0) + (total or 0)
        for category in per_category:
            self.categories[category].traces += 1
        return per_category


def census_table(fold: FleetFold, *, limit: int, footer: dict[str, Any]) -> Table:
    """The merged census: per kernel name, sorted by total time; with ``limit`` > 0 the top rows
    plus one "other (K kernels)" row, so the rows always add up to the fleet's totals."""
    ordered = sorted(fold.kernels.items(), key=lambda kv: (-kv[1].moments.total, -kv[1].moments.count, kv[0]))
    grand = sum(k.moments.total for _, k in ordered)
    shown = ordered if limit <= 0 else ordered[:limit]
    rows = [_census_row(rank, name, k, grand) for rank, (name, k) in enumerate(shown, start=1)]
    rest = ordered[len(shown) :]
    if rest:
        other = KernelFold()
        for _, k in rest:
            m = k.moments
            other.moments.add(m.count, m.total, m.sum_sq, m.lo, m.hi)
            for key, b in k.histogram.items():
                add_bucket(other.histogram, key, b.count, b.lo, b.hi)
        other.traces = sum(1 for r in fold.reports.values() if r.status == "ok")
        label = f"other ({len(rest)} kernel{'s' if len(rest) > 1 else ''})"
        rows.append(_census_row(None, label, other, grand))
        rows[-1] = (*rows[-1][:-1], None)  # the traces any of them ran in is not kept: not shown
    full = {
        **footer,
        "total_kernels": sum(k.moments.count for _, k in ordered),
        "total_kernel_ns": grand,
        "distinct_names": len(ordered),
        "shown_rows": len(shown),
        "median_method": MEDIAN_METHOD,
    }
    return Table(
        kind="fleet_census",
        columns=CENSUS_COLUMNS,
        rows=rows,
        queries=_labels(fold, "fleet_kernel_buckets"),
        footer=full,
    )


def _census_row(rank: int | None, name: str, k: KernelFold, grand: int) -> tuple[Any, ...]:
    m = k.moments
    return (
        rank,
        name,
        m.count,
        m.total,
        m.mean,
        histogram_median(k.histogram),
        m.lo,
        m.hi,
        m.stddev,
        100.0 * m.total / grand if grand else None,
        k.traces,
    )


def lineup_table(fold: FleetFold, *, footer: dict[str, Any]) -> Table:
    """The merged lineup: one row per category, sorted by total time."""
    ordered = sorted(
        fold.categories.items(), key=lambda kv: (-kv[1].moments.total, -kv[1].moments.count, kv[0])
    )
    grand = sum(c.moments.total for _, c in ordered)
    rows = []
    for category, c in ordered:
        m = c.moments
        top = min(c.by_kernel.items(), key=lambda kv: (-kv[1], kv[0]))[0] if c.by_kernel else None
        share = 100.0 * m.total / grand if grand else None
        rows.append((category, m.count, m.total, m.mean, m.lo, m.hi, share, len(c.by_kernel), top, c.traces))
    full = {
        **footer,
        "total_kernels": sum(c.moments.count for _, c in ordered),
        "total_kernel_ns": grand,
        "categories": len(rows),
    }
    return Table(
        kind="fleet_lineup",
        columns=LINEUP_COLUMNS,
        rows=rows,
        queries=_labels(fold, "fleet_lineup_kernels"),
        footer=full,
    )


def _labels(fold: FleetFold, main: str) -> tuple[str, ...]:
    """The per-trace queries behind a merged table: ``main`` first, then the rest the traces ran."""
    label = catalog.get(main).label
    return (label, *(q for q in fold.queries if q != label))
