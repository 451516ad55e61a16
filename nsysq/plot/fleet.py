"""``plot_fleet``: one bar per trace (rank) of its kernel time, stragglers highlighted.

Takes the per-trace DataFrame of :func:`nsysq.fleet` (``result.traces``); draws it, importing
matplotlib only then. Failed traces get an empty slot labelled "failed", so every input shows.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from nsysq.base.units import TIME_UNIT_LABELS, TIME_UNITS, axis_unit

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

BAR_COLOR = "#9ecae1"
STRAGGLER_COLOR = "#d62728"


def plot_fleet(data: pd.DataFrame, *, ax: Axes | None = None, unit: str | None = None) -> Axes:
    """Kernel time per trace (``kernel_ns``), in input order; a straggler's bar is red and labelled
    with the category that makes it one (the ``straggler`` column)."""
    required = {"path", "status", "kernel_ns", "straggler"}
    if not required <= set(data.columns):
        raise ValueError("plot_fleet() takes the per-trace DataFrame of nsysq.fleet(...).traces.")
    if ax is None:
        from nsysq.plot import figure_axes

        ax = figure_axes((max(6.0, 0.45 * len(data) + 2.0), 4.0))
    ok = data[data["status"] == "ok"]
    shown = unit or axis_unit(float(ok["kernel_ns"].max()) if len(ok) else 0.0)
    scale = 1.0 / TIME_UNITS[shown]
    labels = [Path(str(p)).stem for p in data["path"]]
    for x, (_, row) in enumerate(data.iterrows()):
        if row["status"] != "ok":
            ax.text(x, 0, "failed", rotation=90, ha="center", va="bottom", fontsize=8, color="#7f7f7f")
            continue
        slow = isinstance(row["straggler"], str)
        ax.bar(x, float(row["kernel_ns"]) * scale, color=STRAGGLER_COLOR if slow else BAR_COLOR)
        if slow:
            ax.annotate(row["straggler"], (x, float(row["kernel_ns"]) * scale), xytext=(0, 3),
                        textcoords="offset points", ha="center", va="bottom", fontsize=8,
                        color=STRAGGLER_COLOR)  # fmt: skip
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=45, ha="right")
    ax.set_ylabel(f"kernel time ({TIME_UNIT_LABELS[shown]})")
    n_slow = int(data["straggler"].notna().sum())
    ax.set_title(f"kernel time per trace: {len(ok)} of {len(data)} answered, {n_slow} straggler(s)",
                 loc="left", fontsize=11)  # fmt: skip
    return ax
