"""What nsysq fleet returns: the per-trace table, the merged census and lineup, the stragglers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from nsysq.base.table import Table

if TYPE_CHECKING:
    import pandas as pd

TRACE_COLUMNS = (
    "path", "status", "reason", "gpu", "nsys_version", "kernels", "kernel_ns", "span_ns", "busy_ns",
    "idle_ns", "busy_pct", "reader", "straggler",
)  # fmt: skip
FAIL_ON = ("failed", "straggler")
"""What ``--fail-on`` may name: any failed trace, any straggler."""


@dataclass(frozen=True)
class FleetResult:
    """The tables of one fleet question (``census``/``lineup`` None when not asked)."""

    traces_table: Table
    stragglers_table: Table
    census_table: Table | None = None
    lineup_table: Table | None = None

    @property
    def traces(self) -> pd.DataFrame:
        """One row per input: status (ok / failed with the reason), identity, totals, straggler."""
        return self.traces_table.to_pandas()

    @property
    def stragglers(self) -> pd.DataFrame:
        """One row per straggler trace, most out of line first, with the category that makes it one."""
        return self.stragglers_table.to_pandas()

    @property
    def census(self) -> pd.DataFrame:
        """The fleet's census (per kernel name, merged over every trace that answered)."""
        return _required(self.census_table, "census").to_pandas()

    @property
    def lineup(self) -> pd.DataFrame:
        """The fleet's lineup (per category, merged over every trace that answered)."""
        return _required(self.lineup_table, "lineup").to_pandas()

    @property
    def failed(self) -> list[tuple[str, str]]:
        """``(path, reason)`` of every input that could not be answered."""
        return [(r["path"], r["reason"]) for r in self.traces_table.records() if r["status"] == "failed"]

    def fails_on(self, kinds: tuple[str, ...]) -> list[str]:
        """The ``--fail-on`` kinds that happened: "failed" (a trace failed), "straggler"."""
        happened = {"failed": bool(self.failed), "straggler": bool(self.stragglers_table.rows)}
        return [k for k in kinds if happened[k]]


def _required(table: Table | None, name: str) -> Table:
    if table is None:
        from nsysq.base.errors import UsageError

        raise UsageError(f"this fleet result was computed without the {name}; ask for it with {name}=True.")
    return table
