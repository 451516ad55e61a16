"""``nsysq graphs``: per CUDA graph, launches, GPU time per launch, kernels per launch, NVTX range.

Registered by :mod:`nsysq.cli.root`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsysq.cli.common import (
    DeviceOpt,
    Format,
    FormatOpt,
    NoCacheOpt,
    PidOpt,
    ShowSqlOpt,
    StreamOpt,
    TraceArg,
    UnitOpt,
    run_table,
    scope_of,
)

if TYPE_CHECKING:
    from nsysq.base.table import Table
    from nsysq.session import Session


def graphs_command(
    trace: TraceArg,
    fmt: FormatOpt = Format.table,
    unit: UnitOpt = None,
    show_sql: ShowSqlOpt = False,
    device: DeviceOpt = None,
    stream: StreamOpt = None,
    pid: PidOpt = None,
    no_cache: NoCacheOpt = False,
) -> None:
    """CUDA graphs: launches, GPU time per launch (median, min, max), kernels per launch, NVTX range."""
    from nsysq.analyses.graphs import graphs

    def compute(t: Session) -> Table:
        return graphs(t)

    run_table(
        trace,
        compute,
        fmt,
        unit,
        sql=show_sql,
        no_cache=no_cache,
        scope=scope_of(device, stream, pid),
        title="graphs",
        prefetch="graphs",
    )
