"""The result every nsysq analysis returns: named columns, rows, where they came from, a footer.

Kept free of pandas so the CLI can render without importing it; ``to_pandas`` converts for notebooks.
Columns ending in ``_ns`` hold nanoseconds; ``in_unit`` converts them all (and renames the suffix).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from nsysq.base.units import TIME_UNITS, check_unit, time_factor

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["TIME_UNITS", "Table", "check_unit"]  # the unit helpers stay importable from here


@dataclass(frozen=True)
class Table:
    """Rows from one analysis. ``queries`` names each SQL file (name@version) that produced it."""

    kind: str
    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    queries: tuple[str, ...] = ()
    unit: str = "ns"
    footer: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def column(self, name: str) -> list[Any]:
        i = self.columns.index(name)
        return [row[i] for row in self.rows]

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    def in_unit(self, unit: str) -> Table:
        """The same table with every ``*_ns`` column (and ns footer value) expressed in ``unit``."""
        check_unit(unit)
        if unit == self.unit:
            return self
        scale = time_factor(self.unit, unit)
        suffix = "_" + self.unit
        cells = [list(column) for column in zip(*self.rows, strict=True)]  # column by column
        for i, c in enumerate(self.columns):
            if c.endswith(suffix) and cells:
                cells[i] = [None if v is None else float(v) * scale for v in cells[i]]
        rows = list(zip(*cells, strict=True)) if cells else [() for _ in self.rows]
        columns = tuple(c[: -len(suffix)] + "_" + unit if c.endswith(suffix) else c for c in self.columns)
        footer = {
            (k[: -len(suffix)] + "_" + unit if k.endswith(suffix) else k): (
                float(v) * scale if k.endswith(suffix) and v is not None else v
            )
            for k, v in self.footer.items()
        }
        return replace(self, columns=columns, rows=rows, unit=unit, footer=footer)

    def to_pandas(self) -> pd.DataFrame:
        import pandas as pd

        df = pd.DataFrame.from_records(self.rows, columns=list(self.columns))
        df.attrs.update(
            {
                "kind": self.kind,
                "queries": list(self.queries),
                "unit": self.unit,
                "footer": dict(self.footer),
                "notes": list(self.notes),
            }
        )
        return df
