"""What the diff reads from one trace, as data: :class:`Side` and its parts (:class:`SideInfo`,
:class:`Span`, :class:`GpuTotals`). ``nsysq.diffing.sides`` reads them; the other modules of the
package only read their attributes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from nsysq.base.table import Table


@dataclass(frozen=True)
class SideInfo:
    """Which trace one side is and what it ran on: the JSON document's ``a`` / ``b`` (docs/diff.md,
    the keys in this order)."""

    path: str
    name: str
    nsys_version: str
    gpus: tuple[str, ...]
    """The CUDA GPUs' names (display adapters left out)."""
    kernels: int
    """Kernel launches compared (the sum of the side's kernel calls)."""
    has_kernel_table: bool
    scope: str | None
    """The GPU work compared (nsysq.session.scope); None: all of it."""
    sms: int | None
    """The SM count of the GPUs the kernels ran on (None: unknown or mixed), for fill changes."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of this side (``gpus`` a list)."""
        return {**asdict(self), "gpus": list(self.gpus)}


@dataclass(frozen=True)
class Span:
    """The GPU span of one side: first GPU operation's start (``t0``, ns) to the last one's end
    (``t_end``); None when the trace holds none. ``queries``: the labels of the queries read."""

    t0: int | None
    t_end: int | None
    queries: tuple[str, ...] = ()

    @property
    def span_ns(self) -> int | None:
        return None if self.t0 is None or self.t_end is None else self.t_end - self.t0


@dataclass(frozen=True)
class GpuTotals:
    """GPU busy and idle time (``nsysq gaps``' device unions) and exposed communication time
    (``nsysq overlap``'s exposed_ns) summed over devices, in ns (None: no device); ``queries``: the
    labels of the queries read."""

    gpu_busy_ns: int | None
    gpu_idle_ns: int | None
    comm_exposed_ns: int
    queries: tuple[str, ...] = ()

    def metrics(self) -> tuple[tuple[str, int | None], ...]:
        """(metric, value) in the totals section's order."""
        return (
            ("gpu_busy_ns", self.gpu_busy_ns),
            ("gpu_idle_ns", self.gpu_idle_ns),
            ("comm_exposed_ns", self.comm_exposed_ns),
        )


@dataclass(frozen=True)
class Side:
    """Everything the diff reads from one trace, once: its per-name kernel aggregates
    (queries/diff_side_kernels.sql) and copies (queries/copies.sql) with the SQL type of each of
    their columns, the GPU span and totals, and the CUDA graphs traced whole (not in the kernel rows
    compared: ``executions``, ``graphs``, ``graph_ns``)."""

    info: SideInfo
    kernels: Table
    copies: Table
    span: Span
    busy: GpuTotals
    whole_graphs: Mapping[str, int]
    kernel_types: Mapping[str, str]
    copy_types: Mapping[str, str]
