"""Plots of nsysq results: census, lineup, stakeout, timeline and diff.

Every function is pure: it takes the DataFrame (or Table) an analysis returned, draws on ``ax``
(a new figure when ``ax`` is None) and returns the main ``Axes``. Nothing is shown or saved here;
matplotlib is imported inside the functions only (``import nsysq.plot`` stays cheap), and without a
display the Agg backend is chosen. The functions only present: they read the columns the analyses
return (``total_ns`` or ``total_ms`` ..., whichever unit the frame is in) and never query a trace.

Conventions shared by all plots:

* long kernel names are shortened in the middle (``shorten``), keeping the distinguishing tail;
* every bar carries its value as text, so small bars are never lost (and ``log=True`` is offered);
* one colour per lineup category everywhere (``category_color``), so census, lineup, timeline and
  diff read alike.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from nsysq.base.errors import UsageError
from nsysq.base.output_path import check_output_path
from nsysq.base.units import TIME_UNIT_LABELS, axis_unit, convert, fmt_in_unit, is_missing, time_factor

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

from nsysq.plot.diff import plot_diff
from nsysq.plot.style import (
    CATEGORY_COLORS,
    FALLBACK_COLORS,
    HIGHLIGHT,
    OTHER_BAR,
    PLAIN_BAR,
    axis_label,
    category_color,
    copy_kind_color,
    footer_of,
    frame_of,
    mpl,
    new_axes,
    pick_unit,
    shorten,
    tidy_axes,
    time_column,
    unique_labels,
)
from nsysq.plot.timeline import plot_timeline

__all__ = [
    "CATEGORY_COLORS",
    "category_color",
    "copy_kind_color",
    "figure_axes",
    "figure_svg",
    "plot_census",
    "plot_diff",
    "plot_lineup",
    "plot_nvtx",
    "plot_stakeout",
    "plot_timeline",
    "save_figure",
    "shorten",
]

PICTURE_SUFFIXES = (".png", ".svg", ".pdf")  # what nsysq plot writes (the suffix picks the format)
UNDERFILLED_GID = "nsysq-underfilled"  # the rings plot_stakeout draws around under-filled launches


# -- figures, for callers that size or save a plot themselves (nsysq plot) ---------------------
def figure_axes(figsize: tuple[float, float]) -> Axes:
    """The Axes of a new figure of ``figsize`` inches (constrained layout), for ``ax=`` of a plot."""
    return new_axes(None, figsize)


def save_figure(ax: Axes, path: str | os.PathLike[str], *, dpi: int = 150, title: str | None = None) -> None:
    """Write the figure holding ``ax`` to ``path`` (the suffix picks png, svg, pdf, ...) and close
    it; ``title`` replaces the plot's title. Raises OSError when the file cannot be written."""
    plt = mpl()
    from matplotlib.figure import Figure

    if title is not None:
        ax.set_title(title, loc="left", fontsize=11)
    fig = ax.figure if isinstance(ax.figure, Figure) else ax.figure.figure  # a SubFigure's root
    try:
        suffix = os.path.splitext(os.fspath(path))[1].lstrip(".").lower()
        fig.savefig(path, dpi=dpi, format=suffix or None, bbox_inches="tight")
    finally:
        plt.close(fig)


def check_picture_path(path: str | os.PathLike[str]) -> None:
    """Raise UsageError unless ``path`` ends in a picture format nsysq writes (:data:`PICTURE_SUFFIXES`)
    and its folder exists: checked before a plot's data is read."""
    check_output_path(path, PICTURE_SUFFIXES)


def parse_figsize(size: str | None) -> tuple[float, float] | None:
    """``WIDTHxHEIGHT`` in inches (``"12x6"``) as a figsize; None for None (the plot sizes itself).
    Raises UsageError for anything else, or a side outside (0, 100]."""
    if size is None:
        return None
    try:
        w, h = (float(p) for p in size.lower().split("x"))
    except ValueError:
        raise UsageError(f"--size must look like 12x6 (inches), not {size!r}.") from None
    if not (0 < w <= 100 and 0 < h <= 100):
        raise UsageError("--size must be between 0 and 100 inches each way.")
    return (w, h)


def sized_axes(size: str | None) -> Axes | None:
    """The Axes of a new figure of ``size`` (``"12x6"``, see :func:`parse_figsize`) for ``ax=`` of a
    plot, or None to let the plot size itself."""
    figsize = parse_figsize(size)
    return None if figsize is None else figure_axes(figsize)


def write_picture(
    ax: Axes, path: str | os.PathLike[str], *, dpi: int = 150, title: str | None = None
) -> None:
    """:func:`save_figure`, with a file that cannot be written raised as UsageError (one sentence)."""
    try:
        save_figure(ax, path, dpi=dpi, title=title)
    except OSError as exc:
        raise UsageError(f"could not write {os.fspath(path)}: {exc.strerror or exc}.") from None


def figure_svg(ax: Axes) -> str:
    """The figure holding ``ax`` as an SVG document (text kept as text, no external references,
    no date, ids stable from run to run), and close it: for pages that inline their pictures."""
    import io

    import matplotlib

    plt = mpl()
    from matplotlib.figure import Figure

    fig = ax.figure if isinstance(ax.figure, Figure) else ax.figure.figure
    buffer = io.StringIO()
    try:
        with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "nsysq"}):
            fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    finally:
        plt.close(fig)
    return buffer.getvalue()


# -- helpers ----------------------------------------------------------------------------------------
def _want_log(values: Iterable[float], log: bool | None) -> bool:
    if log is not None:
        return log
    positive = [v for v in values if v and v > 0]
    return bool(positive) and max(positive) / min(positive) > 300


def _bar_labels(
    ax: Axes, bars: Any, texts: Sequence[str], *, log: bool, color: str = "#222222", room: float = 0.3
) -> None:
    """Write each bar's value just past its end; keep ``room`` of the axes width free for the text."""
    for bar, text in zip(bars, texts, strict=True):
        width = bar.get_width()
        ax.annotate(
            text,
            xy=(max(width, 0), bar.get_y() + bar.get_height() / 2),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            ha="left",
            fontsize=8,
            color=color,
            clip_on=False,
        )
    widths = [b.get_width() for b in bars if b.get_width() > 0]
    if widths:
        hi = max(widths)
        if log:
            lo = min(widths) / 2
            decades = math.log10(hi / lo) if hi > lo else 1.0
            ax.set_xlim(lo, hi * 10 ** (decades * room / (1 - room)))
        else:
            ax.set_xlim(0, hi / (1 - room))


def _hbar_figsize(n: int, wrapped: bool = False) -> tuple[float, float]:
    return (10.0, max(2.5, (0.44 if wrapped else 0.32) * n + 1.4))


# -- census -----------------------------------------------------------------------------------------
class _CensusBars(NamedTuple):
    """What the census plot draws, one entry per bar (the folded "other" bar last), times in ``unit``."""

    labels: list[str]
    totals: list[float]
    calls: list[int]
    shares: list[float | None]
    colors: list[str]
    unit: str


def plot_census(
    data: Any,
    *,
    ax: Axes | None = None,
    top: int = 20,
    unit: str | None = None,
    log: bool | None = None,
    name_width: int = 44,
    title: str | None = None,
    fill: bool = False,
) -> Axes:
    """Horizontal bars of the top kernels by total time, plus one grey "other" bar.

    ``data`` is ``Trace.census()`` (any ``unit``). Rows beyond ``top`` (and an existing
    "other (K kernels)" row) are drawn as a single "other" bar so the picture adds up to the
    trace's kernel time. Each bar is labelled "total · share · calls". With ``fill``, the part of
    each bar spent in under-filled launches (``underfilled_pct``: fewer blocks than half the SMs)
    is overdrawn hatched in red.
    """
    df = frame_of(data)
    bars = _census_bars(df, top, name_width)
    shown_unit = pick_unit(bars.totals, bars.unit, unit)
    shown = [convert(v, bars.unit, shown_unit) for v in bars.totals]
    ax = new_axes(ax, _hbar_figsize(len(shown), any("\n" in lab for lab in bars.labels)))
    use_log = _want_log(shown, log)
    y = list(range(len(shown)))
    drawn = ax.barh(y, shown, color=bars.colors, height=0.7, log=use_log)
    ax.set_yticks(y, bars.labels, fontsize=8)
    ax.invert_yaxis()
    texts = [
        _census_text(v, shown_unit, s, c) for v, s, c in zip(shown, bars.shares, bars.calls, strict=True)
    ]
    _bar_labels(ax, drawn, texts, log=use_log)
    if fill:
        _underfilled_overlay(ax, y, shown, _census_fill(df, top), use_log)
    ax.set_xlabel(axis_label("total kernel time", shown_unit, use_log))
    footer = footer_of(df)
    if title is None:
        title = "census: where GPU time goes"
        if footer.get("total_kernels"):
            title += f" — {int(footer['total_kernels']):,} kernels"
    ax.set_title(title, loc="left", fontsize=11)
    tidy_axes(ax)
    return ax


def _census_bars(df: pd.DataFrame, top: int, name_width: int) -> _CensusBars:
    """The top ``top`` kernels, then one "other" bar for the rest (and any "other" row of ``df``)."""
    col, src = time_column(df, "total")
    names = list(df["name"]) if "name" in df.columns else [str(i) for i in range(len(df))]
    totals = [float(v or 0) for v in df[col]]
    calls = [int(v or 0) for v in df["instances"]] if "instances" in df.columns else [0] * len(df)
    share: list[float | None] = (
        [None if is_missing(v) else float(v) for v in df["share_pct"]]
        if "share_pct" in df.columns
        else [None] * len(df)
    )
    ranks = list(df["rank"]) if "rank" in df.columns else [None] * len(df)
    kept = [i for i in range(len(df)) if not _is_other_row(names[i], ranks[i])][: max(top, 0)]
    rest = [i for i in range(len(df)) if i not in set(kept)]
    bars = _CensusBars(
        labels=unique_labels([names[i] for i in kept], name_width),
        totals=[totals[i] for i in kept],
        calls=[calls[i] for i in kept],
        shares=[share[i] for i in kept],
        colors=[PLAIN_BAR] * len(kept),
        unit=src,
    )
    if rest:
        n_kernels = sum(_kernels_in_row(names[i]) for i in rest)
        rest_shares = [v for i in rest if (v := share[i]) is not None]
        bars.labels.append(f"other ({n_kernels} kernel{'s' if n_kernels != 1 else ''})")
        bars.totals.append(sum(totals[i] for i in rest))
        bars.calls.append(sum(calls[i] for i in rest))
        bars.shares.append(sum(rest_shares) if rest_shares else None)
        bars.colors.append(OTHER_BAR)
    return bars


def _census_fill(df: pd.DataFrame, top: int) -> list[float | None]:
    """Per bar of ``_census_bars``: the share (0-1) of its time in under-filled launches."""
    if "underfilled_pct" not in df.columns:
        return []
    col, _ = time_column(df, "total")
    names = list(df["name"]) if "name" in df.columns else [str(i) for i in range(len(df))]
    ranks = list(df["rank"]) if "rank" in df.columns else [None] * len(df)
    pct = [None if is_missing(v) else float(v) / 100 for v in df["underfilled_pct"]]
    totals = [float(v or 0) for v in df[col]]
    kept = [i for i in range(len(df)) if not _is_other_row(names[i], ranks[i])][: max(top, 0)]
    rest = [i for i in range(len(df)) if i not in set(kept)]
    out = [pct[i] for i in kept]
    if rest:
        known = [i for i in rest if pct[i] is not None]
        whole = sum(totals[i] for i in rest)
        share = sum(totals[i] * (pct[i] or 0) for i in known) / whole if known and whole else None
        out.append(share)
    return out


def _underfilled_overlay(
    ax: Axes, y: list[int], shown: list[float], shares: list[float | None], log: bool
) -> None:
    """Hatched red segments: the part of each bar in launches that fill under half the SMs."""
    widths = [v * s if s else 0.0 for v, s in zip(shown, shares, strict=False)]
    if not any(widths):
        return
    ax.barh(
        y[: len(widths)],
        widths,
        height=0.7,
        color="none",
        edgecolor=HIGHLIGHT,
        hatch="////",
        lw=0.8,
        log=log,
        label="in launches filling < 50% of the SMs",
    )
    ax.legend(fontsize=7, loc="lower right", frameon=True, framealpha=0.85)


def _is_other_row(name: Any, rank: Any) -> bool:
    """The "other (K kernels)" row ``--limit`` adds (it has no rank)."""
    return str(name).startswith("other (") and is_missing(rank)


def _kernels_in_row(name: Any) -> int:
    """How many kernels a census row stands for: K for "other (K kernels)", else 1."""
    m = re.match(r"other \((\d+) kernels?\)", str(name))
    return int(m.group(1)) if m else 1


def _census_text(total: float, unit: str, share: float | None, calls: int) -> str:
    """A census bar's label: "877 ms · 70.2% · 748 calls" (share and calls when known)."""
    parts = [fmt_in_unit(total, unit)]
    if share is not None:
        parts.append(_pct(share))
    if calls:
        parts.append(f"{calls:,} call{'s' if calls != 1 else ''}")
    return " · ".join(parts)


def _pct(value: float) -> str:
    return "<0.1%" if 0 < value < 0.05 else f"{value:.1f}%"


# -- lineup -----------------------------------------------------------------------------------------
def plot_lineup(
    data: Any,
    *,
    ax: Axes | None = None,
    unit: str | None = None,
    log: bool | None = None,
    title: str | None = None,
    show_top_kernel: bool = True,
) -> Axes:
    """One horizontal bar per category, coloured by category, labelled "total · share · calls".

    ``data`` is ``Trace.lineup()``. With ``show_top_kernel`` the label also names the category's
    biggest kernel (shortened).
    """
    df = frame_of(data)
    col, src = time_column(df, "total")
    cats = [str(c) for c in df["category"]]
    values = [float(v or 0) for v in df[col]]
    shown_unit = pick_unit(values, src, unit)
    shown = [convert(v, src, shown_unit) for v in values]
    ax = new_axes(ax, _hbar_figsize(len(shown)))
    use_log = _want_log(shown, log)
    y = list(range(len(shown)))
    bars = ax.barh(y, shown, color=[category_color(c) for c in cats], height=0.7, log=use_log)
    ax.set_yticks(y, cats, fontsize=9)
    ax.invert_yaxis()
    texts = [_lineup_text(df, i, fmt_in_unit(v, shown_unit), show_top_kernel) for i, v in enumerate(shown)]
    _bar_labels(ax, bars, texts, log=use_log, room=0.45 if show_top_kernel else 0.3)
    ax.set_xlabel(axis_label("total kernel time", shown_unit, use_log))
    footer = footer_of(df)
    if title is None:
        title = "lineup: kernel time by category"
        if footer.get("total_kernels"):
            title += f" — {int(footer['total_kernels']):,} kernels"
    ax.set_title(title, loc="left", fontsize=11)
    tidy_axes(ax)
    return ax


def _lineup_text(df: pd.DataFrame, i: int, total: str, show_top_kernel: bool) -> str:
    """A lineup bar's label: "1.20 ms · 0.1% · 392 calls · top: <kernel>" (what the frame has)."""
    parts = [total]
    if "share_pct" in df.columns and not is_missing(df["share_pct"].iloc[i]):
        parts.append(_pct(df["share_pct"].iloc[i]))
    if "instances" in df.columns:
        parts.append(f"{int(df['instances'].iloc[i]):,} calls")
    if show_top_kernel and "top_kernel" in df.columns and df["top_kernel"].iloc[i]:
        parts.append("top: " + shorten(df["top_kernel"].iloc[i], 30))
    return " · ".join(parts)


# -- stakeout ---------------------------------------------------------------------------------------
def _config_labels(df: pd.DataFrame) -> list[str] | None:
    dims = ["grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"]
    if not set(dims) <= set(df.columns):
        return None
    labels = []
    for row in df[dims].itertuples(index=False):
        g = "×".join(str(_int_or(v)) for v in row[:3])
        b = "×".join(str(_int_or(v)) for v in row[3:])
        labels.append(f"grid {g}, block {b}")
    return labels


def _int_or(value: Any) -> Any:
    return "?" if is_missing(value) else int(value)


def plot_stakeout(
    data: Any,
    *,
    ax: Axes | None = None,
    fig: Figure | None = None,
    unit: str | None = None,
    bins: int = 40,
    log: bool | None = None,
    title: str | None = None,
) -> Axes:
    """Duration of every launch in launch order (left) and their histogram (right, same y axis).

    ``data`` is ``Trace.stakeout(kernel)``. Points are coloured by launch configuration when it
    varies (else by kernel name when a ``--like`` pattern matched several); launches that fill
    fewer than half the GPU's SMs (``sm_fill_pct`` < 50) are ringed in red, and the legend says
    their grid and fill; a dashed line marks the median. Returns the main (launch-order) Axes; the
    histogram is ``ax.nsysq_hist``.
    """
    import numpy as np
    from mpl_toolkits.axes_grid1 import make_axes_locatable

    df = frame_of(data)
    col, src = time_column(df, "duration")
    dur_src = np.asarray([float(v or 0) for v in df[col]], dtype=float)
    median_ns = float(np.median(dur_src * time_factor(src, "ns"))) if len(dur_src) else 0.0
    shown_unit = unit or axis_unit(median_ns)
    dur = dur_src * time_factor(src, shown_unit)
    ax = _stakeout_axes(ax, fig)
    hist = make_axes_locatable(ax).append_axes("right", size="22%", pad=0.1, sharey=ax)
    use_log = bool(len(dur)) and _want_log(list(dur), log) if log is None else bool(log)
    edges = _duration_bins(ax, dur, int(min(bins, max(5, len(dur) // 2))), use_log)
    _draw_launches(ax, hist, dur, edges, _launch_groups(df))
    _mark_underfilled(ax, df, dur)
    if len(dur):
        med = float(np.median(dur))
        ax.axhline(med, color=HIGHLIGHT, ls="--", lw=1, label=f"median {fmt_in_unit(med, shown_unit)}")
        hist.axhline(med, color=HIGHLIGHT, ls="--", lw=1)
        ax.legend(fontsize=7, loc="best", frameon=True, framealpha=0.85, markerscale=2)
    ax.set_xlabel("launch # (in start order)")
    ax.set_ylabel(f"duration ({TIME_UNIT_LABELS[shown_unit]})")
    hist.set_xlabel("launches")
    hist.tick_params(axis="y", labelleft=False)
    for a in (ax, hist):
        a.spines[["top", "right"]].set_visible(False)
        a.grid(alpha=0.3)
        a.set_axisbelow(True)
    if title is None:
        title = _stakeout_title(df, float(dur.sum()) * time_factor(shown_unit, "ns"), len(dur))
    ax.set_title(title, loc="left", fontsize=11)
    ax.nsysq_hist = hist  # type: ignore[attr-defined]  # the histogram rides on the returned Axes
    return ax


def _mark_underfilled(ax: Axes, df: pd.DataFrame, dur: Any) -> None:
    """Red rings around the launches with ``sm_fill_pct`` < 50, labelled with their fill."""
    import numpy as np

    if "sm_fill_pct" not in df.columns or not len(dur):
        return
    fill = np.asarray([np.nan if is_missing(v) else float(v) for v in df["sm_fill_pct"]], dtype=float)
    mask = fill < 50
    if not mask.any():
        return
    order = np.arange(1, len(dur) + 1)
    size = float(max(6.0, min(36.0, 4000.0 / max(len(dur), 1))))
    sms = sorted({int(v) for v in df["sms"] if not is_missing(v)}) if "sms" in df.columns else []
    on = f" of {sms[0]} SMs" if len(sms) == 1 else ""
    label = f"under-filled: {fill[mask].min():.0f}-{fill[mask].max():.0f}%{on} busy ({int(mask.sum()):,})"
    if fill[mask].min() == fill[mask].max():
        label = f"under-filled: {fill[mask].min():.0f}%{on} busy ({int(mask.sum()):,})"
    ax.scatter(
        order[mask],
        dur[mask],
        s=size * 3,
        facecolors="none",
        edgecolors=HIGHLIGHT,
        lw=0.8,
        label=label,
        gid=UNDERFILLED_GID,
    )


def _stakeout_axes(ax: Axes | None, fig: Figure | None) -> Axes:
    """``ax``, else one filling ``fig``, else one on a new 11 x 4.5 in figure."""
    if ax is not None:
        return ax
    if fig is None:
        fig = mpl().figure(figsize=(11, 4.5), layout="constrained")
    return fig.add_subplot(1, 1, 1)


def _launch_groups(df: pd.DataFrame) -> list[str] | None:
    """A colour group per launch: its configuration when 2-8 differ, else its kernel name when a
    pattern matched 2-8 kernels, else None (one colour)."""
    configs = _config_labels(df)
    if configs and 1 < len(set(configs)) <= 8:
        return configs
    if "name" in df.columns and 1 < df["name"].nunique() <= 8:
        return [shorten(n, 40) for n in df["name"]]
    return None


def _duration_bins(ax: Axes, dur: Any, bins: int, log: bool) -> Any:
    """The histogram bin edges (log-spaced on a log axis, which this sets), or a bin count."""
    import numpy as np

    if log and len(dur) and (dur > 0).any():
        pos = dur[dur > 0]
        ax.set_yscale("log")
        return np.geomspace(pos.min(), pos.max() * 1.0001, bins + 1)
    return np.histogram_bin_edges(dur, bins) if len(dur) else bins


def _draw_launches(ax: Axes, hist: Axes, dur: Any, edges: Any, groups: list[str] | None) -> None:
    """One point per launch on ``ax`` and the duration histogram on ``hist``, coloured by group
    (the biggest group in the plain colour)."""
    import numpy as np

    order = np.arange(1, len(dur) + 1)
    size = float(max(6.0, min(36.0, 4000.0 / max(len(dur), 1))))  # few launches: bigger points
    if not groups:
        ax.scatter(order, dur, s=size, color=PLAIN_BAR, lw=0)
        hist.hist(dur, bins=edges, orientation="horizontal", color=PLAIN_BAR)
        return
    stacks, colours = [], []
    for k, group in enumerate(sorted(set(groups), key=lambda g: -groups.count(g))):
        mask = np.array([x == group for x in groups])
        colour = FALLBACK_COLORS[k % len(FALLBACK_COLORS)] if k else PLAIN_BAR
        ax.scatter(order[mask], dur[mask], s=size, color=colour, label=f"{group} ({mask.sum():,})", lw=0)
        stacks.append(dur[mask])
        colours.append(colour)
    hist.hist(stacks, bins=edges, orientation="horizontal", color=colours, stacked=True)


def _stakeout_title(df: pd.DataFrame, total_ns: float, launches: int) -> str:
    names = sorted({str(n) for n in df["name"]}) if "name" in df.columns else []
    subject = shorten(names[0], 60) if len(names) == 1 else f"{len(names)} kernels"
    total_unit = axis_unit(total_ns)
    total = fmt_in_unit(convert(total_ns, "ns", total_unit), total_unit)
    return f"stakeout: {subject} — {launches:,} launches, total {total}"


# -- nvtx -------------------------------------------------------------------------------------------
_CPU_BAR = "#9ecae1"
_GPU_BAR = "#2ca02c"


def plot_nvtx(
    data: Any,
    *,
    ax: Axes | None = None,
    top: int = 15,
    unit: str | None = None,
    log: bool | None = None,
    name_width: int = 44,
    title: str | None = None,
) -> Axes:
    """NVTX range names by GPU time: per name two bars side by side, CPU time (the ranges' summed
    durations) and GPU busy time (the union of the GPU work attributed to them, summed over
    instances), each labelled with its value; the GPU bar also with the kernel count.

    ``data`` is ``Trace.nvtx()`` (any ``unit``), in its order (by kernel time); the first ``top``
    rows are drawn. The title says how the work was attributed and how much GPU time no range got.
    """
    df = frame_of(data).head(top)
    cpu_col, src = time_column(df, "total")
    gpu_col, _ = time_column(df, "gpu_busy")
    cpu = [float(v or 0) for v in df[cpu_col]]
    gpu = [float(v or 0) for v in df[gpu_col]]
    shown_unit = pick_unit(cpu + gpu, src, unit)
    cpu = [convert(v, src, shown_unit) for v in cpu]
    gpu = [convert(v, src, shown_unit) for v in gpu]
    domains = list(df["domain"]) if "domain" in df.columns else [""] * len(df)
    names = [f"{n} @{d}" if d else str(n) for n, d in zip(df["name"], domains, strict=True)]
    labels = unique_labels(names, name_width)
    ax = new_axes(ax, _hbar_figsize(2 * len(df), any("\n" in lab for lab in labels)))
    use_log = _want_log(cpu + gpu, log)
    y = [2.4 * i for i in range(len(df))]
    cpu_bars = ax.barh(
        [v - 0.45 for v in y], cpu, height=0.85, color=_CPU_BAR, log=use_log, label="CPU (range)"
    )
    gpu_bars = ax.barh([v + 0.45 for v in y], gpu, height=0.85, color=_GPU_BAR, log=use_log, label="GPU busy")
    kernels = [int(v or 0) for v in df["kernels"]] if "kernels" in df.columns else [0] * len(df)
    gpu_texts = [
        f"{fmt_in_unit(v, shown_unit)} · {k:,} kernel{'s' if k != 1 else ''}"
        for v, k in zip(gpu, kernels, strict=True)
    ]
    _bar_labels(
        ax,
        list(cpu_bars) + list(gpu_bars),
        [fmt_in_unit(v, shown_unit) for v in cpu] + gpu_texts,
        log=use_log,
    )
    ax.set_yticks(y, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(axis_label("time", shown_unit, use_log))
    ax.legend(loc="lower right", fontsize=8, frameon=False)
    ax.set_title(title if title is not None else _nvtx_title(footer_of(df)), loc="left", fontsize=11)
    tidy_axes(ax)
    return ax


def _nvtx_title(footer: Mapping[str, Any]) -> str:
    """ "NVTX ranges by GPU time — launch attribution; 12.3% of GPU time in no range"."""
    title = "NVTX ranges by GPU time"
    if footer.get("attribution"):
        title += f" — {footer['attribution']} attribution"
    pct = footer.get("unattributed_pct")
    if pct is not None and not is_missing(pct):
        title += f"; {_pct(float(pct))} of GPU time in no range"
    return title
