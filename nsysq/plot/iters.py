"""``plot_iters``: each iteration's duration as a stacked bar, warm-up and outliers marked.

The bar of an iteration is its duration split into what the GPU did in it: compute (GPU busy
minus exposed communication), exposed communication, GPU idle inside the iteration's GPU span,
and the rest of the duration with no GPU work of the iteration (CPU only). Warm-up bars are
hatched, outliers outlined in red with their score. Takes the frame of ``Trace.iters()``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nsysq.base.table import TIME_UNITS

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

PARTS = (
    ("compute", "#2ca02c"),
    ("exposed communication", "#d62728"),
    ("GPU idle", "#bdbdbd"),
    ("CPU only", "#9ecae1"),
)


def _unit(df: pd.DataFrame) -> str:
    for unit in TIME_UNITS:
        if f"duration_{unit}" in df.columns:
            return unit
    raise ValueError("plot_iters needs the frame of nsysq iters (a duration_<unit> column).")


def plot_iters(df: pd.DataFrame, *, ax: Axes | None = None) -> Axes:
    """Draw ``df`` (the rows of nsysq iters, any time unit) on ``ax`` (a new figure when None)."""
    from nsysq.plot.style import new_axes

    unit = _unit(df)
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[unit]  # drawn in ms

    def col(name: str) -> Any:
        return df[f"{name}_{unit}"].fillna(0).to_numpy(dtype=float) * scale

    duration, span, busy, exposed = col("duration"), col("gpu_span"), col("gpu_busy"), col("comm_exposed")
    parts = [busy - exposed, exposed, span - busy, (duration - span).clip(min=0)]
    ax = new_axes(ax, (max(6.0, min(24.0, 0.25 * len(df) + 4)), 4.5))
    x = list(range(len(df)))
    bottom = 0.0 * duration
    warm = df["warmup"].fillna(False).to_numpy(dtype=bool)
    for (label, color), values in zip(PARTS, parts, strict=True):
        bars = ax.bar(x, values, bottom=bottom, color=color, label=label, width=0.8)
        for bar, is_warm in zip(bars, warm, strict=True):
            if is_warm:
                bar.set_hatch("//")
        bottom = bottom + values
    for i, (outlier, score) in enumerate(zip(df["outlier"], df["score"], strict=True)):
        if bool(outlier):
            ax.bar([i], [duration[i]], fill=False, edgecolor="#d62728", linewidth=1.5, width=0.8)
            ax.annotate(f"{score:+.1f}", (i, duration[i]), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, [str(v) for v in df["iteration"]], fontsize=7, rotation=90 if len(df) > 30 else 0)
    ax.set_xlabel("iteration (hatched: warm-up; outlined: outlier, with its score)")
    ax.set_ylabel("duration (ms)")
    ax.set_title("iterations")
    ax.legend(fontsize=8, loc="upper right")
    return ax
