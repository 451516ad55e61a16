"""The diff plot: both traces' times side by side per kernel (or category), biggest first, the ratio
written beside each pair and the outliers flagged. Pure like every nsysq plot (:mod:`nsysq.plot`,
which re-exports :func:`plot_diff`)."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from nsysq.base.units import axis_unit, convert, fmt_in_unit, is_missing

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.container import BarContainer

from nsysq.plot.style import (
    HIGHLIGHT,
    PLAIN_BAR,
    axis_label,
    category_color,
    frame_of,
    new_axes,
    shorten,
    tidy_axes,
    time_column,
    unique_labels,
)


# -- diff -------------------------------------------------------------------------------------------
class _DiffRows(NamedTuple):
    """The rows a diff plot draws, biggest first: both sides' times (in ``unit``), what to write."""

    names: list[str]
    a: list[float]
    b: list[float]
    unit: str
    ratios: list[Any]
    status: list[Any]
    outlier: list[bool]
    colours: list[str]
    typical_ratio: float | None  # the change most rows share (exp of typical_log_ratio)


def plot_diff(
    data: Any,
    *,
    ax: Axes | None = None,
    section: str = "categories",
    labels: tuple[str, str] | None = None,
    top: int = 25,
    log: bool = True,
    name_width: int = 36,
    title: str | None = None,
) -> Axes:
    """Paired A/B bars per category (or kernel), the B/A ratio written on each pair, outliers red.

    ``data`` is the result of ``nsysq.diff(a, b)`` (its ``section`` DataFrame is used) or such a
    DataFrame itself. Bars use a log scale by default, so the gap between a pair's ends *is* the
    log-ratio the outlier test measures and small categories stay visible. Outlier rows get a red
    band, a red bold ratio and a red label.
    """
    rows = _diff_rows(_diff_frame(data, section), section, top)
    la, lb = (shorten(x, 28) for x in (labels or _diff_labels(data)))
    shown_unit = axis_unit(convert(max(rows.a + rows.b + [0.0]), rows.unit, "ns"))
    a_shown = [convert(v, rows.unit, shown_unit) for v in rows.a]
    b_shown = [convert(v, rows.unit, shown_unit) for v in rows.b]
    n = len(rows.names)
    ax = new_axes(ax, (10.5, max(3.0, 0.55 * n + 1.6)))
    bars = _draw_pairs(ax, a_shown, b_shown, rows.colours, (la, lb), log)
    ax.set_yticks(list(range(n)), unique_labels(rows.names, name_width), fontsize=9)
    ax.invert_yaxis()
    _mark_outliers(ax, rows.outlier)
    for side_bars, values in zip(bars, (a_shown, b_shown), strict=True):
        _write_pair_values(ax, side_bars, values, shown_unit)
    _write_ratios(ax, rows)
    _diff_axis(ax, a_shown + b_shown, shown_unit, log)
    _diff_legend(ax, la, lb)
    tidy_axes(ax)
    if title is None:
        title = _diff_title(rows, section, la, lb)
    ax.set_title(title, loc="left", fontsize=11)
    return ax


def _diff_rows(df: pd.DataFrame, section: str, top: int) -> _DiffRows:
    """The ``top`` rows with the most time on either side, and every outlier whatever its size."""
    a_col, b_col, unit = _side_columns(df)
    order = ("category", "name") if section == "categories" else ("name", "kernel", "category", "subject")
    name_col = next((c for c in order if c in df.columns), df.columns[0])
    rows = df.copy()
    rows["_a"] = [float(v) if not is_missing(v) else 0.0 for v in rows[a_col]]
    rows["_b"] = [float(v) if not is_missing(v) else 0.0 for v in rows[b_col]]
    rows["_key"] = rows[["_a", "_b"]].max(axis=1)
    rows["_out"] = [bool(v) and not is_missing(v) for v in rows.get("outlier", [False] * len(rows))]
    rows = rows.sort_values("_key", ascending=False)
    if len(rows) > top:
        flagged = rows[rows["_out"]].head(top)
        rest = rows[~rows["_out"]].head(max(top - len(flagged), 0))
        rows = rows.loc[[i for i in rows.index if i in set(flagged.index) | set(rest.index)]]
    a_vals, b_vals, n = list(rows["_a"]), list(rows["_b"]), len(rows)
    has_category = "category" in rows.columns
    colours = [category_color(c) for c in rows["category"]] if has_category else [PLAIN_BAR] * n
    return _DiffRows(
        names=[str(v) for v in rows[name_col]],
        a=a_vals,
        b=b_vals,
        unit=unit,
        ratios=(
            list(rows["ratio"])
            if "ratio" in rows.columns
            else [(b / a if a else math.inf) for a, b in zip(a_vals, b_vals, strict=True)]
        ),
        status=list(rows["status"]) if "status" in rows.columns else [None] * n,
        outlier=[bool(v) for v in rows["_out"]],
        colours=colours,
        typical_ratio=_typical_ratio(rows),
    )


def _typical_ratio(rows: pd.DataFrame) -> float | None:
    """The B/A change most rows share (the outlier test's centre), when the frame has it."""
    if "typical_log_ratio" not in rows.columns or not rows["typical_log_ratio"].notna().any():
        return None
    return math.exp(float(rows["typical_log_ratio"].dropna().iloc[0]))


def _draw_pairs(
    ax: Axes, a: list[float], b: list[float], colours: list[str], names: tuple[str, str], log: bool
) -> tuple[BarContainer, BarContainer]:
    """A's bar (pale) above B's bar in each row; a zero time draws no bar."""
    h = 0.38
    y = list(range(len(a)))
    a_widths = [v if v > 0 else math.nan for v in a]
    b_widths = [v if v > 0 else math.nan for v in b]
    bars_a = ax.barh([v - h / 2 for v in y], a_widths, height=h, color=colours, alpha=0.45, label=names[0])
    bars_b = ax.barh([v + h / 2 for v in y], b_widths, height=h, color=colours, label=names[1])
    if log:
        ax.set_xscale("log")
    return bars_a, bars_b


def _mark_outliers(ax: Axes, outlier: list[bool]) -> None:
    """A red band behind each outlier row and its tick label in red bold."""
    for i, flagged in enumerate(outlier):
        if flagged:
            ax.axhspan(i - 0.5, i + 0.5, color=HIGHLIGHT, alpha=0.08, lw=0)
    for tick, flagged in zip(ax.get_yticklabels(), outlier, strict=True):
        if flagged:
            tick.set_color(HIGHLIGHT)
            tick.set_fontweight("bold")


def _write_pair_values(ax: Axes, bars: BarContainer, values: list[float], unit: str) -> None:
    """Each drawn bar's time just past its end."""
    for bar, v in zip(bars, values, strict=True):
        if v > 0:
            ax.annotate(
                fmt_in_unit(v, unit),
                xy=(v, bar.get_y() + bar.get_height() / 2),
                xytext=(3, 0),
                textcoords="offset points",
                va="center",
                fontsize=7,
                color="#444444",
            )


def _ratio_text(ratio: Any, status: Any, a: float, b: float) -> str:
    """``5.15×``, or ``new`` / ``removed`` when one side has no time, ``–`` when unknown."""
    if status in ("new", "removed"):
        return str(status)
    if is_missing(ratio):
        return "new" if a == 0 and b > 0 else ("removed" if b == 0 else "–")
    if math.isinf(ratio):
        return "new"
    return f"{float(ratio):.2f}×"


def _write_ratios(ax: Axes, rows: _DiffRows) -> None:
    """The B/A column right of the axes; outliers say so, in red bold."""
    for i, flagged in enumerate(rows.outlier):
        text = _ratio_text(rows.ratios[i], rows.status[i], rows.a[i], rows.b[i])
        ax.annotate(
            text + ("  outlier" if flagged else ""),
            xy=(1.0, i),
            xycoords=("axes fraction", "data"),
            xytext=(8, 0),
            textcoords="offset points",
            va="center",
            ha="left",
            fontsize=9,
            color=HIGHLIGHT if flagged else "#222222",
            fontweight="bold" if flagged else "normal",
            annotation_clip=False,
        )


def _diff_axis(ax: Axes, values: list[float], unit: str, log: bool) -> None:
    """Room for the value labels, the time axis label, and "B/A" over the ratio column."""
    positive = [v for v in values if v > 0]
    if positive:
        if log:
            ax.set_xlim(min(positive) / 2, max(positive) * 5)
        else:
            ax.set_xlim(0, max(positive) * 1.3)
    ax.set_xlabel(axis_label("kernel time", unit, log))
    ax.annotate(
        "B/A",
        xy=(1.0, 1.0),
        xycoords="axes fraction",
        xytext=(8, 4),
        textcoords="offset points",
        ha="left",
        va="bottom",
        fontsize=8,
        color="#666666",
    )


def _diff_legend(ax: Axes, la: str, lb: str) -> None:
    """Which shade is A and which is B, and the outlier band, centred 30 points below the axes."""
    from matplotlib.patches import Patch
    from matplotlib.transforms import ScaledTranslation

    below = ax.transAxes + ScaledTranslation(0.0, -30 / 72.0, ax.figure.dpi_scale_trans)
    ax.legend(
        handles=[
            Patch(facecolor="#808080", alpha=0.45, label=f"A: {la}"),
            Patch(facecolor="#808080", label=f"B: {lb}"),
            Patch(facecolor=HIGHLIGHT, alpha=0.15, label="outlier"),
        ],
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        bbox_transform=below,
        ncol=3,
        fontsize=8,
        frameon=False,
    )


def _diff_title(rows: _DiffRows, section: str, la: str, lb: str) -> str:
    """ "diff by category: bs1 → bs16", then the typical change and the rows out of line."""
    title = f"diff by {section.rstrip('s') if section != 'categories' else 'category'}: {la} → {lb}"
    facts = []
    if rows.typical_ratio is not None:
        facts.append(f"typical change {rows.typical_ratio:.2f}×")
    flagged = [name for name, out in zip(rows.names, rows.outlier, strict=True) if out]
    if flagged:
        facts.append("out of line: " + ", ".join(shorten(f, 30) for f in flagged[:3]))
    return title + ("\n" + "; ".join(facts) if facts else "")


def _diff_frame(data: Any, section: str) -> pd.DataFrame:
    if hasattr(data, "iloc"):
        return data
    frame = getattr(data, section, None)
    if frame is None and isinstance(data, Mapping):
        frame = data.get(section)
    if frame is None:
        raise ValueError(f"the diff result has no {section!r} section")
    return frame_of(frame)


def _side_columns(df: pd.DataFrame) -> tuple[str, str, str]:
    """The time columns of sides A and B (``a_ns`` and ``b_ns``, or both in another unit, as
    ``DiffResult.section(name, unit)`` names them) and their unit."""
    a_col, unit = time_column(df, "a")
    if f"b_{unit}" not in df.columns:
        raise ValueError(f"expected a column b_{unit} beside {a_col}; the frame has {list(df.columns)}")
    return a_col, f"b_{unit}", unit


def _diff_labels(data: Any) -> tuple[str, str]:
    """Names for side A and B: the trace file stems of a diff result, else "A" and "B"."""
    names = []
    for side in ("a", "b"):
        about = getattr(data, side, None)
        if isinstance(about, Mapping):
            about = about.get("name") or about.get("path")
        else:
            about = getattr(about, "path", None)
        names.append(_stem(about) if about else None)
    if all(names):
        return str(names[0]), str(names[1])
    attrs = getattr(data, "attrs", None)
    if isinstance(attrs, Mapping) and len(attrs.get("labels", ())) == 2:
        return str(attrs["labels"][0]), str(attrs["labels"][1])
    return "A", "B"


def _stem(path: Any) -> str:
    return os.path.splitext(os.path.basename(str(path)))[0]
