"""Warm-up, outliers and causes: which iterations are out of line with the steady state.

The score is diff's and fleet's robust score, the SQL of queries/diff/outliers.sql run as is (in a
scratch DuckDB, as ``nsysq fleet`` runs it): each iteration's duration is compared with the
typical (median) duration by ``ln(duration / typical)``, every iteration weighing the same (the
a/b pair fleet's stragglers feed it); the center is their median, the spread 1.4826 x their
median absolute deviation, never below FLOOR; ``score = (log_ratio - center) / spread``.

* **warm-up**: scored against the median of every iteration, the leading run of iterations
  scoring THRESHOLD or more (slower), at most half of them;
* **outlier**: scored again against the steady state (every iteration after the warm-up), a
  steady iteration whose ``|score|`` reaches THRESHOLD; warm-up iterations are never outliers
  (their score is against the steady state too);
* **cause**: for an outlier, the kernel name (or the memcpy, memset or whole-graph time, or the
  GPU idle time) whose time changed most against its typical time in the steady iterations, in
  the direction the duration changed.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from nsysq import catalog
from nsysq.base.units import fmt_time
from nsysq.iterations.params import FLOOR, THRESHOLD

if TYPE_CHECKING:
    import duckdb

SCORE_QUERY = "diff_outliers"


@dataclass(frozen=True)
class Scores:
    """Per iteration: ``warmup``, ``outlier``, ``score`` (against the steady state; None when the
    duration is 0), and the steady state's ``median`` and ``spread`` (ns)."""

    warmup: Any
    outlier: Any
    score: list[float | None]
    median: float
    spread: float


def score(durations: Any, *, threshold: float = THRESHOLD) -> Scores:
    """Warm-up, outliers and scores of ``durations`` (ns, in iteration order). It touches no
    session (a scratch DuckDB of its own): it may run on a thread of its own."""
    from nsysq.export.engine import connect

    d = np.asarray(durations, dtype=np.float64)
    n = len(d)
    con = connect(sqlite=False)
    with contextlib.closing(con):
        first = _robust(con, d, np.ones(n, dtype=bool), threshold)
        warm = 0
        while warm < n // 2 and first[warm] is not None and float(first[warm] or 0) >= threshold:
            warm += 1
        warmup = np.arange(n) < warm
        steady = ~warmup
        scores = _robust(con, d, steady, threshold) if warm else first  # no warm-up: the same scores
    outlier = steady & np.array([s is not None and abs(s) >= threshold for s in scores], dtype=bool)
    median = float(np.median(d[steady])) if steady.any() else 0.0
    spread = 1.4826 * float(np.median(np.abs(d[steady] - median))) if steady.any() else 0.0
    return Scores(warmup=warmup, outlier=outlier, score=scores, median=median, spread=spread)


def _robust(con: duckdb.DuckDBPyConnection, d: Any, chosen: Any, threshold: float) -> list[float | None]:
    """Each duration's score against the ``chosen`` ones (queries/diff/outliers.sql, on ``con``)."""
    from nsysq.export.engine import pandas_free_binding, table_from_arrays

    if not chosen.any():
        return [None] * len(d)
    table_from_arrays(con, "score_input", _score_input(d, chosen), strings={"status": list(_STATUSES)})
    sql = catalog.get(SCORE_QUERY).sql
    params = {"min_ns": 0.0, "threshold": threshold, "floor": FLOOR}
    with pandas_free_binding():  # DuckDB would import pandas (0.2 s) to bind them
        found = con.execute(
            f"SELECT key, log_ratio, center, scale FROM ({sql}) ORDER BY key", params
        ).fetchall()
    out: list[float | None] = []
    for _key, log_ratio, center, scale in found:
        out.append(None if log_ratio is None or center is None else (log_ratio - center) / scale)
    return out


_STATUSES = ("absent", "both", "steady_only")


def _score_input(d: Any, chosen: Any) -> dict[str, Any]:
    """score_input's columns: per duration its key, the a/b pair (a + b = 2: each iteration weighs
    the same) of its ratio to the median of the ``chosen`` ones, and its status ('absent' for a
    duration or median of 0, else 'both' when chosen, 'steady_only' when not)."""
    typical = float(np.median(d[chosen]))
    present = (d > 0) & (typical > 0)
    ratio = np.divide(d, typical, out=np.zeros(len(d)), where=present)
    status = np.where(present, np.where(chosen, 1, 2), 0).astype(np.int8)  # codes into _STATUSES
    return {
        "key": np.arange(len(d), dtype=np.int64),
        "a_ns": np.where(present, 2.0 / (1.0 + ratio), 0.0),
        "b_ns": np.where(present, 2.0 * ratio / (1.0 + ratio), 0.0),
        "status": status,
    }


def query_label() -> str:
    """The label of the scoring query (queries/diff/outliers.sql)."""
    return catalog.get(SCORE_QUERY).label


def causes(
    outliers: list[int],
    steady: Any,
    by_name: dict[int, Any],
    names: dict[int, str],
    idle: Any,
    faster: list[bool],
) -> dict[int, str]:
    """The cause of each outlier iteration (row index): the kernel name whose time (``by_name``:
    name id -> time per iteration, ns) or the GPU idle time changed most against its median over
    the ``steady`` iterations, in the direction of the iteration's change (``faster``)."""
    found: dict[int, str] = {}
    typical = {k: float(np.median(v[steady])) for k, v in by_name.items()}
    idle_typical = float(np.median(idle[steady]))
    for i, quicker in zip(outliers, faster, strict=True):
        deltas = [(float(v[i]) - typical[k], names.get(k, f"kernel {k}"), float(v[i]), typical[k])
                  for k, v in by_name.items()]  # fmt: skip
        deltas.append((float(idle[i]) - idle_typical, "GPU idle", float(idle[i]), idle_typical))
        pick = min(deltas) if quicker else max(deltas)
        found[i] = _cause_text(*pick)
    return found


def _cause_text(delta: float, name: str, value: float, typical: float) -> str:
    sign = "+" if delta >= 0 else "-"
    if typical <= 0:
        return f"{name} (absent from a typical iteration): {sign}{fmt_time(abs(delta))}"
    return f"{name} {value / typical:.1f}x its typical time: {sign}{fmt_time(abs(delta))}"
