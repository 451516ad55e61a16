"""What a diff returns: :class:`Finding`, :class:`DiffResult` and its JSON shape, and the finding
kinds ``--fail-on`` accepts."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from nsysq.base.errors import UsageError
from nsysq.base.table import TIME_UNITS, Table, check_unit
from nsysq.diffing.side import SideInfo

if TYPE_CHECKING:
    import pandas as pd

FINDING_KINDS = (
    "overall",
    "outlier",
    "new_variants",
    "removed_variants",
    "danger",
    "copy_change",
    "launch_config",
    "idle_change",
    "exposed_comm",
    "per_call",
)
FAIL_ON_ALIASES: dict[str, tuple[str, ...]] = {
    "new": ("new_variants",),
    "removed": ("removed_variants",),
    "variants": ("new_variants", "removed_variants"),
    "copy": ("copy_change",),
    "copies": ("copy_change",),
    "launch": ("launch_config",),
    "idle": ("idle_change",),
    "comm": ("exposed_comm",),
    "any": FINDING_KINDS,
}
SECTIONS = ("totals", "categories", "kernels", "variants", "launch_config", "danger", "copies")


class TotalsTable(Table):
    """The totals section: one row per metric (metric, a, b, ratio, delta), its values in mixed
    units (counts, bytes, names, and times for the metrics ending ``_ns``), built in ns."""

    def in_unit(self, unit: str) -> TotalsTable:
        """The same rows with each time metric (its a, b and delta) in ``unit``, renamed
        ``*_<unit>``; the other metrics as they are."""
        check_unit(unit)
        if unit == self.unit:
            return self
        if self.unit != "ns":
            raise ValueError(f"the totals convert from ns, not from {self.unit}")
        scale = TIME_UNITS[unit]
        rows = [
            (
                (
                    m[:-3] + "_" + unit,
                    *(None if v is None else v / scale for v in (a, b)),
                    r,
                    None if d is None else d / scale,
                )
                if m.endswith("_ns")
                else (m, a, b, r, d)
            )
            for m, a, b, r, d in self.rows
        ]
        return replace(self, rows=rows, unit=unit)


@dataclass
class Finding:
    """One line of the evidence board: the clue, the evidence with numbers, and a verdict.

    ``numbers`` holds the values behind the evidence; times in it are nanoseconds (keys end ``_ns``).
    """

    kind: str
    subject: str
    clue: str
    evidence: str
    verdict: str
    severity: str = "medium"
    numbers: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = _jsonable(asdict(self))
        return data


@dataclass
class DiffResult:
    """What ``nsysq.diff(a, b)`` returns. Section properties are pandas DataFrames (time in ns);
    ``tables`` holds the same sections as :class:`nsysq.base.table.Table` for rendering without pandas.
    """

    a: SideInfo
    b: SideInfo
    tables: dict[str, Table]
    findings: list[Finding]
    warnings: list[str]
    params: dict[str, Any]

    # DataFrame views for notebooks
    @property
    def totals(self) -> pd.DataFrame:
        return self.tables["totals"].to_pandas()

    @property
    def categories(self) -> pd.DataFrame:
        return self.tables["categories"].to_pandas()

    @property
    def kernels(self) -> pd.DataFrame:
        return self.tables["kernels"].to_pandas()

    @property
    def variants(self) -> pd.DataFrame:
        return self.tables["variants"].to_pandas()

    @property
    def launch_config(self) -> pd.DataFrame:
        return self.tables["launch_config"].to_pandas()

    @property
    def danger(self) -> pd.DataFrame:
        return self.tables["danger"].to_pandas()

    @property
    def copies(self) -> pd.DataFrame:
        return self.tables["copies"].to_pandas()

    @property
    def board(self) -> pd.DataFrame:
        return self.board_table().to_pandas()

    def findings_of(self, *kinds: str) -> list[Finding]:
        return [f for f in self.findings if f.kind in kinds]

    def section(self, name: str, unit: str = "ns") -> Table:
        """One section as a Table with every time in ``unit`` (totals included)."""
        if name not in self.tables:
            raise UsageError(f"unknown diff section {name!r}; use one of {', '.join(SECTIONS)}.")
        check_unit(unit)
        return self.tables[name].in_unit(unit)

    def board_table(self) -> Table:
        """The evidence board: one row per finding, most anomalous first."""
        rows = [
            (i, f.kind, f.severity, f.clue, f.evidence, f.verdict)
            for i, f in enumerate(self.findings, start=1)
        ]
        return Table(
            kind="diff_board",
            columns=("rank", "kind", "severity", "clue", "evidence", "verdict"),
            rows=rows,
        )

    def to_dict(self, unit: str = "ns") -> dict[str, Any]:
        """The JSON document (schema in docs/diff.md)."""
        check_unit(unit)
        out: dict[str, Any] = {
            "kind": "diff",
            "unit": unit,
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "params": self.params,
            "warnings": list(self.warnings),
            "queries": sorted({q for t in self.tables.values() for q in t.queries}),
        }
        for name in SECTIONS:
            out[name] = self.section(name, unit).records()
        out["findings"] = [f.to_dict() for f in self.findings]
        data: dict[str, Any] = _jsonable(out)
        return data

    def to_json(self, unit: str = "ns", indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(unit), indent=indent, ensure_ascii=False)

    def fails_on(self, kinds: Sequence[str]) -> list[Finding]:
        """The findings whose kind is in ``kinds`` (aliases: new, removed, variants, copy, launch, any)."""
        wanted = set(parse_fail_on(",".join(kinds)))
        return [f for f in self.findings if f.kind in wanted]


def parse_fail_on(text: str) -> tuple[str, ...]:
    """``"outlier,danger,new"`` -> finding kinds; raises UsageError for an unknown word."""
    kinds: list[str] = []
    for word in (w.strip().lower() for w in text.split(",")):
        if not word:
            continue
        if word in FINDING_KINDS:
            kinds.append(word)
        elif word in FAIL_ON_ALIASES:
            kinds.extend(FAIL_ON_ALIASES[word])
        else:
            choices = ", ".join((*FINDING_KINDS, *FAIL_ON_ALIASES))
            raise UsageError(f"--fail-on does not know {word!r}; use a comma list of {choices}.")
    return tuple(dict.fromkeys(kinds))


def _jsonable(value: Any) -> Any:
    """Plain JSON values: NaN/inf -> None, Decimal -> float, tuples -> lists."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)
