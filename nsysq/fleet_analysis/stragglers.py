"""Stragglers: traces whose kernel time, time in one category, or idle time is out of line.

The method is diff's, reused as is (:func:`nsysq.diffing.score_rows`, queries/diff/outliers.sql):
for each measure, every trace's value is compared with the fleet's median value by the log-ratio
``ln(value / median)``; the typical log-ratio is their weighted median, the spread 1.4826 x their
weighted median absolute deviation (never below diff's floor), and a trace is out of line when
``|log_ratio - typical| / spread`` reaches the threshold. Each trace weighs the same (see
:func:`_score_input`): in a diff two rows' times are weighed, here one trace must not outvote the
others by being slow. Values below the noise floor
(``min_time_ms``) on both sides never count. A straggler's verdict names the measure with the
largest score (a lineup category when one is out of line, else idle or total kernel time).
"""

from __future__ import annotations

import contextlib
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nsysq.base.table import Table
from nsysq.base.units import fmt_time

KERNEL_TIME = "kernel time"
IDLE_TIME = "idle time"
STRAGGLER_COLUMNS = (
    "rank", "path", "category", "value_ns", "typical_ns", "ratio", "score", "flagged", "verdict",
)  # fmt: skip
_ROW_COLUMNS = (
    ("metric", "VARCHAR"), ("path", "VARCHAR"), ("a_ns", "DOUBLE"), ("b_ns", "DOUBLE"), ("status", "VARCHAR"),
)  # fmt: skip


def measures(
    paths: Sequence[str],
    kernel_ns: Sequence[int],
    category_ns: Sequence[dict[str, int]],
    idle_ns: Sequence[int | None],
) -> dict[str, list[int]]:
    """Every measure a trace is compared on: kernel time, each category's time, idle time."""
    found: dict[str, list[int]] = {KERNEL_TIME: list(kernel_ns)}
    for category in sorted({c for per in category_ns for c in per}):
        found[category] = [per.get(category, 0) for per in category_ns]
    if paths and all(v is not None for v in idle_ns):
        found[IDLE_TIME] = [int(v or 0) for v in idle_ns]
    return found


def stragglers(
    paths: Sequence[str], values: dict[str, list[int]], *, threshold: float, min_time_ms: float
) -> Table:
    """One row per trace with at least one measure out of line, most out of line first."""
    flagged, labels = _flagged(paths, values, threshold=threshold, min_time_ms=min_time_ms)
    found: list[tuple[Any, ...]] = [_row(path, records) for path, records in flagged.items()]
    found.sort(key=lambda r: (-abs(float(r[5])), str(r[0])))
    ranked = [(rank, *row) for rank, row in enumerate(found, start=1)]
    return Table(
        kind="fleet_stragglers",
        columns=STRAGGLER_COLUMNS,
        rows=ranked,
        queries=labels,
        footer={"threshold": threshold, "min_time_ms": min_time_ms, "stragglers": len(ranked)},
    )


def _flagged(
    paths: Sequence[str], values: dict[str, list[int]], *, threshold: float, min_time_ms: float
) -> tuple[dict[str, list[dict[str, Any]]], tuple[str, ...]]:
    """The scored rows that are out of line, per trace, and the label of the scoring query."""
    from nsysq.diffing import score_rows
    from nsysq.export.engine import connect, table_from_rows

    flagged: dict[str, list[dict[str, Any]]] = {}
    labels: tuple[str, ...] = ()
    if len(paths) < 3:  # a median and a spread need a few traces
        return flagged, labels
    con = connect(sqlite=False)
    with contextlib.closing(con):
        for metric, per_trace in values.items():
            typical = float(statistics.median(per_trace))
            rows = [
                _score_input(metric, p, float(v), typical, min_time_ms * 1e6)
                for p, v in zip(paths, per_trace, strict=True)
            ]
            table_from_rows(con, "fleet_rows", _ROW_COLUMNS, rows)
            scored, label = score_rows(
                con, "fleet_rows", "path", "t.metric, t.path", min_ns=0.0, threshold=threshold
            )
            labels = (label,)
            actual = dict(zip(paths, per_trace, strict=True))
            for record in scored.records():
                if record["outlier"]:
                    found = {**record, "value": int(actual[record["path"]]), "typical": typical}
                    flagged.setdefault(record["path"], []).append(found)
    return flagged, labels


def _score_input(metric: str, path: str, value: float, typical: float, min_ns: float) -> tuple[Any, ...]:
    """One row for diff's scoring query: ``b/a`` is the trace's ratio to the fleet's median, and
    ``a + b`` (the query's weight) is 2 for every trace, so each trace counts once: time-weighting
    would let one trace that is very slow become the typical one. Values under the noise floor on
    both sides, and measures a trace lacks, are not eligible (status other than 'both')."""
    if value <= 0 or typical <= 0:
        return (metric, path, 0.0, 0.0, "absent")
    ratio = value / typical
    status = "both" if max(value, typical) >= min_ns else "below_floor"
    return (metric, path, 2.0 / (1.0 + ratio), 2.0 * ratio / (1.0 + ratio), status)


def _row(path: str, found: list[dict[str, Any]]) -> tuple[Any, ...]:
    """(path, category, value_ns, typical_ns, ratio, score, flagged, verdict) for one straggler."""
    named = [r for r in found if r["metric"] != KERNEL_TIME] or found
    worst = max(named, key=lambda r: (abs(r["score"]), r["metric"]))
    value, typical = int(worst["value"]), int(worst["typical"])
    ratio = value / typical if typical else None
    others = sorted(r["metric"] for r in found if r is not worst)
    return (
        path,
        worst["metric"],
        value,
        typical,
        ratio,
        float(worst["score"]),
        "; ".join([worst["metric"], *others]),
        _verdict(path, worst["metric"], value, typical, ratio, float(worst["score"]), others),
    )


def _verdict(
    path: str, metric: str, value: int, typical: int, ratio: float | None, score: float, others: list[str]
) -> str:
    what = "idles" if metric == IDLE_TIME else "spends"
    where = "" if metric in (KERNEL_TIME, IDLE_TIME) else f" in {metric}"
    slower = "longer" if value >= typical else "shorter"
    text = (
        f"{Path(path).name} {what} {fmt_time(value)}{where} against a typical {fmt_time(typical)} "
        f"({ratio:.2f}x, {slower}; score {score:+.1f})"
        if ratio is not None
        else f"{Path(path).name} {what} {fmt_time(value)}{where}"
    )
    if others:
        text += "; also out of line: " + ", ".join(others)
    return text
