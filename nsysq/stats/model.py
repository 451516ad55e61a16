"""What one ``nsysq stats`` report is: its columns (nsysq's key, nsys's header, the kind of cell)
and, once run, its Table or the reason nsys gives for skipping it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nsysq.base.table import Table
    from nsysq.session import Session
    from nsysq.stats.flavor import Flavor

#: Cell kinds: how a value is computed from the raw rows and printed.
PCT = "pct"  # Time (%): 1 decimal
TIME = "time"  # an integer duration or timestamp in ns (Total, Min, Max, Start, Duration)
STAT = "stat"  # a derived duration (Avg, Med, StdDev): 1 decimal
COUNT = "count"  # a count (Instances, Num Calls, Count)
MB = "mb"  # bytes shown in MB (10^6 bytes), 3 decimals
INT = "int"  # an integer attribute (ids, grid, registers)
TEXT = "text"  # a name or label


@dataclass(frozen=True)
class Column:
    """One column: ``key`` is nsysq's name (time keys end in ``_ns``, renamed by the unit),
    ``header`` nsys's (``{unit}`` stands for the unit), ``kind`` one of the cell kinds above."""

    key: str
    header: str
    kind: str

    def key_in(self, unit: str) -> str:
        return self.key[: -len("_ns")] + "_" + unit if self.key.endswith("_ns") else self.key

    def header_in(self, unit: str) -> str:
        return self.header.replace("{unit}", unit)


@dataclass(frozen=True)
class StatsReport:
    """One report as run: ``name`` as the export's nsys calls it (``cuda_gpu_kern_sum:base``,
    ``gpukernsum``), ``report`` nsysq's canonical name, ``title`` its title, ``columns`` its
    columns, and either ``table`` (values already in ``unit`` and rounded as nsys prints them) or
    ``skipped`` (what the export lacks: "CUDA kernel data")."""

    name: str
    report: str
    title: str
    columns: tuple[Column, ...]
    unit: str
    heading: str = ""  # the line nsys prints above it (" ** CUDA API Summary (cuda_api_sum):")
    table: Table | None = None
    skipped: str | None = None

    @property
    def headers(self) -> list[str]:
        return [c.header_in(self.unit) for c in self.columns]


@dataclass
class Context:
    """What every report reads: the session, the export's flavor, the unit, the window (absolute
    ns, None = open), the report's options, and rows shared by two reports (the memory pass)."""

    session: Session
    flavor: Flavor
    unit: str
    from_ns: int | None
    to_ns: int | None
    options: tuple[str, ...] = ()
    shared: dict[str, Table] = field(default_factory=dict)

    def run(self, name: str, **params: Any) -> Table:
        """A packaged query over the window; once per session for the shared ones."""
        key = f"{name}|{sorted(params.items())}"
        if key not in self.shared:
            self.shared[key] = self.session.run(name, from_ns=self.from_ns, to_ns=self.to_ns, **params)
        return self.shared[key]


#: What a report's builder returns: its columns and its Table.
Built = tuple[tuple[Column, ...], "Table"]
