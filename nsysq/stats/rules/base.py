"""What every rule of ``nsysq check`` shares: its options, the window, one rule's outcome, and the
columns of a finding (docs/stats.md, "nsysq check")."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nsysq.base.errors import UsageError
from nsysq.base.units import ms_to_ns

if TYPE_CHECKING:
    from nsysq.session import Session

FINDING_COLUMNS = (
    "rule", "start_ns", "duration_ns", "pid", "tid", "device_id", "stream_id", "api_name", "kernel",
    "bytes", "src_kind", "dst_kind", "mem_kind", "nvtx", "value_pct", "detail",
)  # fmt: skip
"""The columns of the findings table, in order (a rule leaves the ones that do not apply NULL)."""
CALL = "_call"
"""A finding's private key: (globalTid, start, end) of the CUDA API call it names, for its NVTX range."""


@dataclass(frozen=True)
class CheckOptions:
    """The thresholds of every rule (the CLI's options; docs/stats.md gives each one's meaning)."""

    rows: int = 50
    gap_ms: float = 500.0
    threshold_pct: float = 50.0
    chunks: int = 30
    fill_pct: float = 50.0
    min_share_pct: float = 1.0
    launch_bound_pct: float = 10.0
    danger_min_share_pct: float = 0.0
    danger_rules: str | Path | None = None
    from_ms: float | None = None
    to_ms: float | None = None

    def __post_init__(self) -> None:
        checks = (
            (self.rows >= -1, "--rows must be a number of rows, or 0 (or -1, as nsys) for every row."),
            (self.gap_ms >= 0, "--gap must be 0 or more (ms)."),
            (self.threshold_pct >= 0, "--threshold must be 0 or more (percent)."),
            (self.chunks >= 1, "--chunks must be 1 or more."),
            (0 < self.fill_pct <= 100, "--fill must be above 0 and at most 100 (percent of the SMs)."),
            (self.min_share_pct >= 0, "--min-share must be 0 or more (percent of kernel time)."),
            (self.launch_bound_pct >= 0, "--launch-bound must be 0 or more (percent of the span)."),
            (self.danger_min_share_pct >= 0, "--danger-share must be 0 or more (percent of kernel time)."),
        )
        for ok, message in checks:
            if not ok:
                raise UsageError(message)
        if self.from_ms is not None and self.to_ms is not None and self.to_ms <= self.from_ms:
            raise UsageError(f"--to ({self.to_ms} ms) must be after --from ({self.from_ms} ms).")

    @property
    def row_limit(self) -> int:
        """Rows per rule, 0 for every row (nsys's -1 too)."""
        return max(self.rows, 0)

    @property
    def from_ns(self) -> int | None:
        return None if self.from_ms is None else ms_to_ns(self.from_ms)

    @property
    def to_ns(self) -> int | None:
        return None if self.to_ms is None else ms_to_ns(self.to_ms)


@dataclass(frozen=True)
class Outcome:
    """One rule's answer: ``status`` found, clean or skipped (``reason`` says why), ``count`` the
    findings before --rows, ``total_ns`` their time, ``findings`` the rows kept (dicts keyed by
    FINDING_COLUMNS, plus CALL when the finding is a CUDA API call)."""

    status: str
    count: int = 0
    total_ns: int = 0
    findings: list[dict[str, Any]] = field(default_factory=list)
    reason: str | None = None
    notes: tuple[str, ...] = ()

    @staticmethod
    def of(
        rule: str, findings: list[dict[str, Any]], total_ns: int, rows: int, notes: tuple[str, ...] = ()
    ) -> Outcome:
        """The outcome of ``findings`` (longest first already): found when there is one."""
        kept = findings[:rows] if rows else findings
        status = "found" if findings else "clean"
        return Outcome(status, len(findings), int(total_ns), [finding(rule, **f) for f in kept], notes=notes)

    @staticmethod
    def skipped(reason: str) -> Outcome:
        return Outcome("skipped", reason=reason)


def finding(rule: str, **values: Any) -> dict[str, Any]:
    """One finding row: ``values`` for the columns that apply, NULL for the others."""
    unknown = set(values) - set(FINDING_COLUMNS) - {CALL}
    if unknown:
        raise ValueError(f"not finding columns: {sorted(unknown)}")
    row = dict.fromkeys(FINDING_COLUMNS)
    row.update(values, rule=rule)
    return row


class Context:
    """One ``check`` run: the session, the options, and what several rules read (read once)."""

    def __init__(self, trace: Session, options: CheckOptions) -> None:
        self.trace = trace
        self.options = options
        self.memo: dict[str, Any] = {}  # what several rules read, read by the first that asks

    @property
    def t0(self) -> int:
        return self.trace.t0

    def window(self) -> dict[str, Any]:
        """The window parameters every windowed query takes."""
        return {"t0": self.t0, "from_ns": self.options.from_ns, "to_ns": self.options.to_ns}

    @functools.cached_property
    def bounds(self) -> tuple[int | None, int | None]:
        """The window as absolute timestamps (None: open)."""
        lo, hi = self.options.from_ns, self.options.to_ns
        return (None if lo is None else self.t0 + lo, None if hi is None else self.t0 + hi)


Runner = Callable[[Context], Outcome]


@dataclass(frozen=True)
class Rule:
    """One rule: its name (a contract), where it comes from (nsys or nsysq), a title, the one
    sentence of advice, the canonical tables it needs (one absent: skipped) and what computes it."""

    name: str
    origin: str
    title: str
    advice: str
    needs: tuple[str, ...]
    run: Runner
    gpu_work: bool = False  # also needs one of the GPU-work tables (kernels, memcpys, memsets, graphs)
