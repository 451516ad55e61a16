"""Diff: compare two traces and name the change that is out of line with the rest.

Each trace is read once (``queries/diff_side_kernels.sql`` plus ``copies`` and the time span);
the small per-name aggregates of both sides are then joined in a scratch DuckDB database by the
SQL files in ``queries/diff/``. Python only turns the few resulting rows into findings.

The outlier method (documented in ``docs/diff.md``): for every row present in both traces with
at least ``min_time_ms`` on one side, take the log-ratio ``ln(B/A)`` of its time. The trace's
typical change is the time-weighted median of those log-ratios; the spread is the time-weighted
median absolute deviation (scaled by 1.4826 to match a standard deviation), never below
``MAD_FLOOR``. A row is an outlier when ``|log_ratio - median| / spread >= threshold``.

Modules: ``compare`` (the entry point :func:`diff`), ``sides`` (reading one trace into a
:class:`~nsysq.diffing.side.Side`), ``side`` (that data), ``combine`` (the scratch-DuckDB joins
and outlier scores), ``lineage`` (a result's queries, read off the statements recorded for it),
``totals`` (the totals section), ``findings`` (the evidence board), ``result`` (:class:`Finding`,
:class:`DiffResult`, JSON), ``format`` (text helpers), ``params`` (tuning constants). They call
each other by public names only.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nsysq.base.units import fmt_bytes, fmt_time
    from nsysq.diffing.combine import score_rows
    from nsysq.diffing.compare import RulesArg, diff
    from nsysq.diffing.params import COPY_CHANGE, DEFAULT_MIN_TIME_MS, DEFAULT_THRESHOLD, MAD_FLOOR
    from nsysq.diffing.result import (
        FAIL_ON_ALIASES,
        FINDING_KINDS,
        SECTIONS,
        DiffResult,
        Finding,
        parse_fail_on,
    )

_HOME = {
    "fmt_bytes": "nsysq.base.units",
    "fmt_time": "nsysq.base.units",
    "score_rows": "nsysq.diffing.combine",
    "RulesArg": "nsysq.diffing.compare",
    "diff": "nsysq.diffing.compare",
    **dict.fromkeys(
        ("COPY_CHANGE", "DEFAULT_MIN_TIME_MS", "DEFAULT_THRESHOLD", "MAD_FLOOR"), "nsysq.diffing.params"
    ),
    **dict.fromkeys(
        ("FAIL_ON_ALIASES", "FINDING_KINDS", "SECTIONS", "DiffResult", "Finding", "parse_fail_on"),
        "nsysq.diffing.result",
    ),
}
__all__ = [
    "COPY_CHANGE",
    "DEFAULT_MIN_TIME_MS",
    "DEFAULT_THRESHOLD",
    "FAIL_ON_ALIASES",
    "FINDING_KINDS",
    "MAD_FLOOR",
    "SECTIONS",
    "DiffResult",
    "Finding",
    "RulesArg",
    "diff",
    "fmt_bytes",
    "fmt_time",
    "parse_fail_on",
    "score_rows",
]


def __getattr__(name: str) -> Any:
    """The package's names, each loaded from its module on first use: importing one light module
    (``params`` for the CLI's defaults) never loads the comparison (``nsysq census`` pays nothing)."""
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module 'nsysq.diffing' has no attribute {name!r}")
