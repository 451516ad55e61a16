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
import sys
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "CATEGORY_COLORS",
    "category_color",
    "copy_kind_color",
    "figure_axes",
    "plot_census",
    "plot_diff",
    "plot_lineup",
    "plot_stakeout",
    "plot_timeline",
    "save_figure",
    "shorten",
]

_UNITS: dict[str, float] = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
_UNIT_LABEL = {"ns": "ns", "us": "µs", "ms": "ms", "s": "s"}

#: Fixed colours for the packaged lineup categories: GEMMs in blues, attention in reds, ...
CATEGORY_COLORS: dict[str, str] = {
    "Persistent GEMM (nvjet)": "#1f77b4",
    "cuBLAS GEMM": "#6baed6",
    "CUTLASS GEMM": "#08519c",
    "CUTLASS (other)": "#4292c6",
    "GEMM (other)": "#9ecae1",
    "Flash attention": "#d62728",
    "Attention (other)": "#ff9896",
    "Softmax": "#e7969c",
    "Elementwise": "#2ca02c",
    "Reduction": "#98df8a",
    "Normalization": "#9467bd",
    "torch.compile (Triton)": "#ff7f0e",
    "nvFuser": "#ffbb78",
    "Memory / copy": "#8c564b",
    "NCCL / communication": "#e377c2",
    "Convolution": "#17becf",
    "Pooling": "#9edae5",
    "OpenMP / OpenACC offload": "#bcbd22",
    "Other": "#a0a0a0",
}
_FALLBACK = [
    "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#5254a3", "#8ca252",
    "#bd9e39", "#ad494a", "#a55194", "#6b6ecf", "#b5cf6b", "#e7ba52", "#d6616b",
]  # fmt: skip
_OTHER_BAR = "#b0b0b0"
_COPY_COLORS = {
    "Host-to-Device": "#e6550d",
    "Device-to-Host": "#756bb1",
    "Device-to-Device": "#f2c500",
    "Host-to-Host": "#a6761d",
    "Peer-to-Peer": "#636363",
}
_MEMSET_COLOR = "#252525"
_NVTX_COLOR = "#c6dbef"
_HIGHLIGHT = "#d62728"


# -- figures, for callers that size or save a plot themselves (nsysq plot) ---------------------
def figure_axes(figsize: tuple[float, float]) -> Axes:
    """The Axes of a new figure of ``figsize`` inches (constrained layout), for ``ax=`` of a plot."""
    return _new_axes(None, figsize)


def save_figure(ax: Axes, path: str | os.PathLike[str], *, dpi: int = 150, title: str | None = None) -> None:
    """Write the figure holding ``ax`` to ``path`` (the suffix picks png, svg, pdf, ...) and close
    it; ``title`` replaces the plot's title. Raises OSError when the file cannot be written."""
    plt = _mpl()
    from matplotlib.figure import Figure

    if title is not None:
        ax.set_title(title, loc="left", fontsize=11)
    fig = ax.figure if isinstance(ax.figure, Figure) else ax.figure.figure  # a SubFigure's root
    try:
        suffix = os.path.splitext(os.fspath(path))[1].lstrip(".").lower()
        fig.savefig(path, dpi=dpi, format=suffix or None, bbox_inches="tight")
    finally:
        plt.close(fig)


# -- helpers ----------------------------------------------------------------------------------------
def _mpl() -> Any:
    """Import pyplot, choosing Agg when there is no display and no backend was asked for."""
    import matplotlib

    if (
        "matplotlib.pyplot" not in sys.modules
        and not os.environ.get("MPLBACKEND")
        and sys.platform.startswith("linux")
        and not os.environ.get("DISPLAY")
        and not os.environ.get("WAYLAND_DISPLAY")
    ):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _new_axes(ax: Axes | None, size: tuple[float, float]) -> Axes:
    if ax is not None:
        return ax
    plt = _mpl()
    _, new = plt.subplots(figsize=size, layout="constrained")
    return new


def _frame(data: Any) -> pd.DataFrame:
    """Accept a DataFrame or an nsysq Table."""
    if hasattr(data, "to_pandas") and not hasattr(data, "iloc"):
        return data.to_pandas()
    return data


def _time_column(df: pd.DataFrame, stem: str) -> tuple[str, str]:
    """The column ``{stem}_{unit}`` present in ``df`` and its unit."""
    for unit in _UNITS:
        if f"{stem}_{unit}" in df.columns:
            return f"{stem}_{unit}", unit
    raise ValueError(f"expected a column {stem}_ns (or _us, _ms, _s); the frame has {list(df.columns)}")


def _pick_unit(max_ns: float) -> str:
    if max_ns >= 10e9:
        return "s"
    if max_ns >= 1e6:
        return "ms"
    if max_ns >= 1e3:
        return "us"
    return "ns"


def _convert(values: Any, src: str, dst: str) -> Any:
    return values * (_UNITS[src] / _UNITS[dst])


def fmt_time(value: float, unit: str) -> str:
    """``877 ms``, ``6.17 ms``, ``0.85 µs``: three significant digits, thousands separated."""
    label = _UNIT_LABEL[unit]
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    v = abs(value)
    if v >= 100:
        text = f"{value:,.0f}"
    elif v >= 10:
        text = f"{value:.1f}"
    elif v >= 0.01 or v == 0:
        text = f"{value:.2f}"
    else:
        text = f"{value:.2g}"
    return f"{text} {label}"


def _strip_args(name: str) -> str:
    """Drop a demangled name's return type and top-level argument list."""
    text = name.strip()
    if text.startswith("void "):
        text = text[5:]
    depth = 0
    for i, ch in enumerate(text):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif ch == "(" and depth == 0 and i > 0:
            return text[:i]
    return text


def _collapse_templates(name: str, keep_depth: int = 1) -> str:
    """Replace template arguments nested deeper than ``keep_depth`` with an ellipsis."""
    out: list[str] = []
    depth = 0
    for ch in name:
        if ch == "<":
            depth += 1
            if depth <= keep_depth + 1:
                out.append(ch)
            if depth == keep_depth + 1:
                out.append("…")
            continue
        if ch == ">":
            if depth <= keep_depth + 1:
                out.append(ch)
            depth = max(0, depth - 1)
            continue
        if depth <= keep_depth:
            out.append(ch)
    return "".join(out)


def shorten(name: Any, width: int = 44) -> str:
    """A readable label of at most ``width`` characters for a (possibly demangled) kernel name.

    Demangled names lose their argument list and deep template arguments; what is still too long
    is cut in the middle, keeping the start (the family) and the end (the tile/variant suffix).
    """
    text = str(name)
    if len(text) <= width:
        return text
    if "<" in text or "(" in text:
        text = _collapse_templates(_strip_args(text))
        if len(text) <= width:
            return text
    head = max(1, math.ceil((width - 1) * 0.6))
    tail = max(1, width - 1 - head)
    return text[:head] + "…" + text[-tail:]


def _wrap(text: str, width: int) -> str:
    """Break ``text`` into lines of at most ``width`` characters at ``_``/``::``/space boundaries."""
    lines: list[str] = []
    rest = text
    while len(rest) > width:
        cut = max(
            (rest.rfind(sep, 0, width + 1 - len(sep)) + len(sep) for sep in ("_", "::", " ", ",")),
            default=0,
        )
        cut = cut if cut > width // 3 else width
        lines.append(rest[:cut])
        rest = rest[cut:]
    lines.append(rest)
    return "\n".join(lines)


def _compact(text: str, common: set[str]) -> str:
    """Drop the ``_``-separated tokens most names share (runs become one ``…``); keep the first."""
    tokens = text.split("_")
    out: list[str] = []
    for k, tok in enumerate(tokens):
        if k == 0 or k == len(tokens) - 1 or tok not in common or not tok:
            out.append(tok)
        elif out and out[-1] != "…":
            out.append("…")
    return "_".join(out)


def _unique_labels(names: Sequence[Any], width: int, lines: int = 2) -> list[str]:
    """Readable, distinct tick labels: at most ``lines`` lines of ``width`` characters each.

    Demangled names lose argument lists and deep template arguments. Names still longer than the
    room drop the ``_`` tokens that most of the long names share (so what tells them apart
    survives), then are cut in the middle; the rest is wrapped. Repeats get " (2)", " (3)".
    """
    room = width * lines
    texts = [str(n) for n in names]
    texts = [
        _collapse_templates(_strip_args(t)) if len(t) > width and ("<" in t or "(" in t) else t for t in texts
    ]
    long_ones = [t for t in texts if len(t) > room]
    if len(long_ones) >= 2:
        freq: dict[str, int] = {}
        for t in long_ones:
            for tok in set(t.split("_")):
                freq[tok] = freq.get(tok, 0) + 1
        common = {tok for tok, n in freq.items() if n * 2 >= len(long_ones) and len(tok) > 0}
        texts = [_compact(t, common) if len(t) > room else t for t in texts]
    texts = [shorten(t, room) if len(t) > room else t for t in texts]
    labels = [_wrap(t, width) if len(t) > width else t for t in texts]
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label} ({seen[label]})")
    return out


def category_color(category: Any) -> str:
    """The colour of a lineup category (fixed for the packaged ones, stable for any other)."""
    text = str(category)
    if text in CATEGORY_COLORS:
        return CATEGORY_COLORS[text]
    if text.startswith("other ("):
        return _OTHER_BAR
    return _FALLBACK[zlib.crc32(text.encode()) % len(_FALLBACK)]


def copy_kind_color(kind: Any) -> str:
    """The colour of a memcpy kind (``Host-to-Device`` ..., or nsys's ``copyKind=N`` fallback)."""
    text = str(kind)
    if text in _COPY_COLORS:
        return _COPY_COLORS[text]
    lowered = text.lower().replace(" ", "")
    for key, colour in (
        ("peer", _COPY_COLORS["Peer-to-Peer"]),
        ("htod", _COPY_COLORS["Host-to-Device"]),
        ("host-to-device", _COPY_COLORS["Host-to-Device"]),
        ("dtoh", _COPY_COLORS["Device-to-Host"]),
        ("device-to-host", _COPY_COLORS["Device-to-Host"]),
        ("dtod", _COPY_COLORS["Device-to-Device"]),
        ("device-to-device", _COPY_COLORS["Device-to-Device"]),
        ("htoh", _COPY_COLORS["Host-to-Host"]),
        ("host-to-host", _COPY_COLORS["Host-to-Host"]),
    ):
        if key in lowered:
            return colour
    return _FALLBACK[zlib.crc32(text.encode()) % len(_FALLBACK)]


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
def plot_census(
    data: Any,
    *,
    ax: Axes | None = None,
    top: int = 20,
    unit: str | None = None,
    log: bool | None = None,
    name_width: int = 44,
    title: str | None = None,
) -> Axes:
    """Horizontal bars of the top kernels by total time, plus one grey "other" bar.

    ``data`` is ``Trace.census()`` (any ``unit``). Rows beyond ``top`` (and an existing
    "other (K kernels)" row) are drawn as a single "other" bar so the picture adds up to the
    trace's kernel time. Each bar is labelled "total · share · calls".
    """
    df = _frame(data)
    col, src = _time_column(df, "total")
    names = list(df["name"]) if "name" in df.columns else [str(i) for i in range(len(df))]
    totals = [float(v or 0) for v in df[col]]
    calls = [int(v or 0) for v in df["instances"]] if "instances" in df.columns else [0] * len(df)
    share = list(df["share_pct"]) if "share_pct" in df.columns else [None] * len(df)
    is_other = [
        (str(n).startswith("other (") and (("rank" not in df.columns) or _isnull(r)))
        for n, r in zip(names, df["rank"] if "rank" in df.columns else names, strict=True)
    ]
    kept = [i for i in range(len(df)) if not is_other[i]][: max(top, 0)]
    rest = [i for i in range(len(df)) if i not in set(kept)]
    labels = _unique_labels([names[i] for i in kept], name_width)
    values = [totals[i] for i in kept]
    counts = [calls[i] for i in kept]
    shares = [share[i] for i in kept]
    colors = ["#4c72b0"] * len(kept)
    if rest:
        n_kernels = 0
        for i in rest:
            m = re.match(r"other \((\d+) kernels?\)", str(names[i]))
            n_kernels += int(m.group(1)) if m else 1
        labels.append(f"other ({n_kernels} kernel{'s' if n_kernels != 1 else ''})")
        values.append(sum(totals[i] for i in rest))
        counts.append(sum(calls[i] for i in rest))
        rest_share = [share[i] for i in rest if not _isnull(share[i])]
        shares.append(sum(rest_share) if rest_share else None)
        colors.append(_OTHER_BAR)
    shown_unit = unit or _pick_unit(max([_convert(v, src, "ns") for v in values] or [0]))
    shown = [_convert(v, src, shown_unit) for v in values]
    ax = _new_axes(ax, _hbar_figsize(len(shown), any("\n" in lab for lab in labels)))
    use_log = _want_log(shown, log)
    y = list(range(len(shown)))
    bars = ax.barh(y, shown, color=colors, height=0.7, log=use_log)
    ax.set_yticks(y, labels, fontsize=8)
    ax.invert_yaxis()
    texts = []
    for v, s, c in zip(shown, shares, counts, strict=True):
        parts = [fmt_time(v, shown_unit)]
        if not _isnull(s):
            parts.append(_pct(s))
        if c:
            parts.append(f"{c:,} call{'s' if c != 1 else ''}")
        texts.append(" · ".join(parts))
    _bar_labels(ax, bars, texts, log=use_log)
    ax.set_xlabel(f"total kernel time ({_UNIT_LABEL[shown_unit]}{', log scale' if use_log else ''})")
    footer = df.attrs.get("footer", {}) if hasattr(df, "attrs") else {}
    if title is None:
        title = "census: where GPU time goes"
        if footer.get("total_kernels"):
            title += f" — {int(footer['total_kernels']):,} kernels"
    ax.set_title(title, loc="left", fontsize=11)
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    return ax


def _pct(value: float) -> str:
    return "<0.1%" if 0 < value < 0.05 else f"{value:.1f}%"


def _isnull(value: Any) -> bool:
    if value is None:
        return True
    try:
        return bool(math.isnan(value))
    except (TypeError, ValueError):
        return False


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
    df = _frame(data)
    col, src = _time_column(df, "total")
    cats = [str(c) for c in df["category"]]
    values = [float(v or 0) for v in df[col]]
    shown_unit = unit or _pick_unit(max([_convert(v, src, "ns") for v in values] or [0]))
    shown = [_convert(v, src, shown_unit) for v in values]
    ax = _new_axes(ax, _hbar_figsize(len(shown)))
    use_log = _want_log(shown, log)
    y = list(range(len(shown)))
    bars = ax.barh(y, shown, color=[category_color(c) for c in cats], height=0.7, log=use_log)
    ax.set_yticks(y, cats, fontsize=9)
    ax.invert_yaxis()
    texts = []
    for i, v in enumerate(shown):
        parts = [fmt_time(v, shown_unit)]
        if "share_pct" in df.columns and not _isnull(df["share_pct"].iloc[i]):
            parts.append(_pct(df["share_pct"].iloc[i]))
        if "instances" in df.columns:
            parts.append(f"{int(df['instances'].iloc[i]):,} calls")
        if show_top_kernel and "top_kernel" in df.columns and df["top_kernel"].iloc[i]:
            parts.append("top: " + shorten(df["top_kernel"].iloc[i], 30))
        texts.append(" · ".join(parts))
    _bar_labels(ax, bars, texts, log=use_log, room=0.45 if show_top_kernel else 0.3)
    ax.set_xlabel(f"total kernel time ({_UNIT_LABEL[shown_unit]}{', log scale' if use_log else ''})")
    footer = df.attrs.get("footer", {}) if hasattr(df, "attrs") else {}
    if title is None:
        title = "lineup: kernel time by category"
        if footer.get("total_kernels"):
            title += f" — {int(footer['total_kernels']):,} kernels"
    ax.set_title(title, loc="left", fontsize=11)
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    return ax


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
    return "?" if _isnull(value) else int(value)


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
    varies (else by kernel name when a ``--like`` pattern matched several); a dashed line marks the
    median. Returns the main (launch-order) Axes; the histogram is ``ax.nsysq_hist``.
    """
    import numpy as np
    from mpl_toolkits.axes_grid1 import make_axes_locatable

    df = _frame(data)
    col, src = _time_column(df, "duration")
    dur_src = np.asarray([float(v or 0) for v in df[col]], dtype=float)
    shown_unit = unit or _pick_unit(float(np.median(_convert(dur_src, src, "ns"))) if len(dur_src) else 0)
    dur = _convert(dur_src, src, shown_unit)
    if ax is None:
        if fig is None:
            plt = _mpl()
            fig = plt.figure(figsize=(11, 4.5), layout="constrained")
        ax = fig.add_subplot(1, 1, 1)
    divider = make_axes_locatable(ax)
    hist = divider.append_axes("right", size="22%", pad=0.1, sharey=ax)
    order = np.arange(1, len(dur) + 1)
    size = float(max(6.0, min(36.0, 4000.0 / max(len(dur), 1))))  # few launches: bigger points
    bins = int(min(bins, max(5, len(dur) // 2)))
    groups: list[str] | None = None
    configs = _config_labels(df)
    if configs and 1 < len(set(configs)) <= 8:
        groups = configs
    elif "name" in df.columns and 1 < df["name"].nunique() <= 8:
        groups = [shorten(n, 40) for n in df["name"]]
    use_log = bool(len(dur)) and _want_log(list(dur), log) if log is None else bool(log)
    if use_log and len(dur) and (dur > 0).any():
        pos = dur[dur > 0]
        edges = np.geomspace(pos.min(), pos.max() * 1.0001, bins + 1)
        ax.set_yscale("log")
    else:
        edges = np.histogram_bin_edges(dur, bins) if len(dur) else bins
    if groups:
        uniq = sorted(set(groups), key=lambda g: -groups.count(g))
        stacks, colours = [], []
        for k, g in enumerate(uniq):
            mask = np.array([x == g for x in groups])
            colour = _FALLBACK[k % len(_FALLBACK)] if k else "#4c72b0"
            ax.scatter(order[mask], dur[mask], s=size, color=colour, label=f"{g} ({mask.sum():,})", lw=0)
            stacks.append(dur[mask])
            colours.append(colour)
        hist.hist(stacks, bins=edges, orientation="horizontal", color=colours, stacked=True)
    else:
        ax.scatter(order, dur, s=size, color="#4c72b0", lw=0)
        hist.hist(dur, bins=edges, orientation="horizontal", color="#4c72b0")
    if len(dur):
        med = float(np.median(dur))
        ax.axhline(med, color=_HIGHLIGHT, ls="--", lw=1, label=f"median {fmt_time(med, shown_unit)}")
        hist.axhline(med, color=_HIGHLIGHT, ls="--", lw=1)
        ax.legend(fontsize=7, loc="best", frameon=True, framealpha=0.85, markerscale=2)
    ax.set_xlabel("launch # (in start order)")
    ax.set_ylabel(f"duration ({_UNIT_LABEL[shown_unit]})")
    hist.set_xlabel("launches")
    hist.tick_params(axis="y", labelleft=False)
    for a in (ax, hist):
        a.spines[["top", "right"]].set_visible(False)
        a.grid(alpha=0.3)
        a.set_axisbelow(True)
    if title is None:
        names = sorted({str(n) for n in df["name"]}) if "name" in df.columns else []
        subject = shorten(names[0], 60) if len(names) == 1 else f"{len(names)} kernels"
        total_ns = float(_convert(dur.sum(), shown_unit, "ns")) if len(dur) else 0.0
        total = fmt_time(_convert(total_ns, "ns", _pick_unit(total_ns)), _pick_unit(total_ns))
        title = f"stakeout: {subject} — {len(dur):,} launches, total {total}"
    ax.set_title(title, loc="left", fontsize=11)
    ax.nsysq_hist = hist  # type: ignore[attr-defined]
    return ax


# -- timeline ---------------------------------------------------------------------------------------
def _pack(intervals: Sequence[tuple[float, float]]) -> list[int]:
    """Greedy lane assignment: each interval goes to the first row free at its start."""
    ends: list[float] = []
    rows = []
    for start, end in intervals:
        for r, last in enumerate(ends):
            if last <= start:
                ends[r] = end
                rows.append(r)
                break
        else:
            ends.append(end)
            rows.append(len(ends) - 1)
    return rows


def plot_timeline(
    data: Any,
    *,
    ax: Axes | None = None,
    categories: Mapping[str, str] | None = None,
    unit: str | None = None,
    nvtx: bool = True,
    max_nvtx_lanes: int = 6,
    legend: bool = True,
    title: str | None = None,
) -> Axes:
    """A Gantt chart: one lane per (device, stream), plus NVTX lanes on top.

    ``data`` is ``Trace.timeline(...)``. Kernels are full-height bars coloured by category (from a
    ``category`` column, else ``categories`` mapping short name → category; see
    ``nsysq.notebook.kernel_category_map``), memcpys are half-height bars coloured by copy kind,
    memsets half-height and black. Bars are drawn as one collection per lane and colour
    (``broken_barh``) and never narrower than about a pixel, so windows of thousands of events
    stay fast and nothing vanishes. NVTX ranges are stacked by nesting and labelled where they fit.
    """
    df = _frame(data)
    start_col, src = _time_column(df, "start")
    end_col, _ = _time_column(df, "end")
    ax = None if ax is None else ax
    kinds = df["kind"].astype(str) if "kind" in df.columns else None
    starts = df[start_col].astype(float)
    ends = df[end_col].astype(float)
    footer = df.attrs.get("footer", {}) if hasattr(df, "attrs") else {}
    lo_src = float(starts.min()) if len(df) else 0.0
    hi_src = float(ends.max()) if len(df) else 1.0
    for key, is_lo in (("from", True), ("to", False)):
        bound = footer.get(f"{key}_{src}")
        if bound is not None and not _isnull(bound):
            lo_src, hi_src = (float(bound), hi_src) if is_lo else (lo_src, float(bound))
    if hi_src <= lo_src:
        hi_src = lo_src + 1.0
    shown_unit = unit or _pick_unit(_convert(hi_src - lo_src, src, "ns") / 10)
    x0 = _convert(starts.to_numpy(), src, shown_unit)
    x1 = _convert(ends.to_numpy(), src, shown_unit)
    lo, hi = _convert(lo_src, src, shown_unit), _convert(hi_src, src, shown_unit)
    min_w = (hi - lo) / 1000.0  # about a pixel and a half: nothing vanishes

    is_nvtx = (kinds == "nvtx").to_numpy() if kinds is not None else None
    device_rows = [i for i in range(len(df)) if is_nvtx is None or not is_nvtx[i]]
    lanes: dict[tuple[Any, Any], int] = {}
    dev = df["device_id"] if "device_id" in df.columns else None
    strm = df["stream_id"] if "stream_id" in df.columns else None
    keys = {}
    for i in device_rows:
        d = None if dev is None or _isnull(dev.iloc[i]) else int(dev.iloc[i])
        s = None if strm is None or _isnull(strm.iloc[i]) else int(strm.iloc[i])
        keys[i] = (d, s)
    nvtx_rows = [i for i in range(len(df)) if is_nvtx is not None and is_nvtx[i]] if nvtx else []
    nvtx_lane = _pack([(x0[i], x1[i]) for i in nvtx_rows]) if nvtx_rows else []
    n_nvtx = min(max(nvtx_lane) + 1, max_nvtx_lanes) if nvtx_lane else 0
    ordered = sorted(set(keys.values()), key=lambda k: (k[0] is None, k[0] or 0, k[1] is None, k[1] or 0))
    nvtx_y = [k * 0.62 for k in range(n_nvtx)]
    base = n_nvtx * 0.62 + (0.45 if n_nvtx else 0.0)
    for j, k in enumerate(ordered):
        lanes[k] = j
    lane_y = [base + j for j in range(len(ordered))]
    y_max = (lane_y[-1] if lane_y else (nvtx_y[-1] if nvtx_y else 0.0)) + 0.5
    if ax is None:
        ax = _new_axes(None, (14.0, max(2.6, 0.42 * y_max + 1.9)))

    # kernels by category, memory ops by kind: (lane, colour, half) -> [(x, w)]
    groups: dict[tuple[int, str, bool], list[tuple[float, float]]] = {}
    legend_items: dict[str, tuple[str, float, int]] = {}
    has_cat = "category" in df.columns
    for i in device_rows:
        kind = kinds.iloc[i] if kinds is not None else "kernel"
        width = max(x1[i] - x0[i], min_w)
        if kind == "kernel":
            name = str(df["name"].iloc[i]) if "name" in df.columns else ""
            if has_cat and not _isnull(df["category"].iloc[i]):
                cat = str(df["category"].iloc[i])
            else:
                cat = (categories or {}).get(name, "Other" if categories else "kernel")
            colour = category_color(cat) if cat != "kernel" else "#4c72b0"
            label, half = cat, False
        elif kind == "memcpy":
            ck = df["copy_kind"].iloc[i] if "copy_kind" in df.columns else None
            label = f"memcpy {ck}" if not _isnull(ck) else "memcpy"
            colour, half = copy_kind_color(ck), True
        else:
            label, colour, half = "memset", _MEMSET_COLOR, True
        groups.setdefault((lanes[keys[i]], colour, half), []).append((x0[i], width))
        prev = legend_items.get(label, (colour, 0.0, 0))
        legend_items[label] = (colour, prev[1] + (x1[i] - x0[i]), prev[2] + (1 if half else 0))
    for (lane, colour, half), spans in groups.items():
        yl = lane_y[lane]
        yrange = (yl, 0.4) if half else (yl - 0.4, 0.8)
        ax.broken_barh(spans, yrange, facecolors=colour, linewidth=0)

    # NVTX ranges, stacked by nesting, labelled where the text fits
    if nvtx_rows:
        spans_by_lane: dict[int, list[tuple[float, float]]] = {}
        for i, lane in zip(nvtx_rows, nvtx_lane, strict=True):
            if lane >= n_nvtx:
                continue
            spans_by_lane.setdefault(lane, []).append((x0[i], max(x1[i] - x0[i], min_w)))
        for lane, spans in spans_by_lane.items():
            ax.broken_barh(
                spans,
                (nvtx_y[lane] - 0.27, 0.54),
                facecolors=_NVTX_COLOR,
                edgecolors="#6b8fb5",
                linewidth=0.5,
            )
        fig_w_px = ax.figure.get_figwidth() * ax.figure.dpi * 0.8
        px_per_unit = fig_w_px / (hi - lo)
        labelled = 0
        for i, lane in sorted(zip(nvtx_rows, nvtx_lane, strict=True), key=lambda p: x0[p[0]] - x1[p[0]]):
            if lane >= n_nvtx or labelled >= 80:
                continue
            a, b = max(x0[i], lo), min(x1[i], hi)
            text = shorten(df["name"].iloc[i], 40)
            if (b - a) * px_per_unit < len(text) * 6.0 + 6:
                continue
            ax.text((a + b) / 2, nvtx_y[lane], text, ha="center", va="center", fontsize=7, clip_on=True)
            labelled += 1
        legend_items["NVTX range"] = (_NVTX_COLOR, 0.0, 0)

    ticks = [f"NVTX {k + 1}" if n_nvtx > 1 else "NVTX" for k in range(n_nvtx)]
    for d, s in ordered:
        gpu = "GPU ?" if d is None else f"GPU {d}"
        ticks.append(f"{gpu} · stream {s if s is not None else '?'}")
    ax.set_yticks(nvtx_y + lane_y, ticks, fontsize=8)
    ax.set_ylim(y_max, -0.5 if not n_nvtx else -0.4)
    if lo < 0 and abs(lo) < (hi - lo) / 1000:
        lo = 0.0
    ax.set_xlim(lo, hi)
    ax.set_xlabel(f"time from trace start ({_UNIT_LABEL[shown_unit]})")
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    ax.spines[["top", "right"]].set_visible(False)
    if legend and legend_items:
        from matplotlib.patches import Patch

        kernel_items = [(k, v) for k, v in legend_items.items() if v[2] == 0 and k != "NVTX range"]
        kernel_items.sort(key=lambda kv: -kv[1][1])
        memory = sorted((k, v) for k, v in legend_items.items() if v[2] > 0)
        extra = [(k, v) for k, v in legend_items.items() if k == "NVTX range"]
        handles = [Patch(facecolor=v[0], label=k) for k, v in kernel_items + memory + extra]
        ax.legend(
            handles=handles,
            loc="upper left",
            bbox_to_anchor=(1.005, 1.0),
            fontsize=8,
            frameon=False,
            title="kernels by category · memory ops",
            title_fontsize=8,
        )
    if title is None:
        n_events = int((~is_nvtx).sum()) if is_nvtx is not None else len(df)
        title = (
            f"timeline {fmt_time(lo, shown_unit)} – {fmt_time(hi, shown_unit)}: "
            f"{n_events:,} GPU events on {len(ordered)} stream{'s' if len(ordered) != 1 else ''}"
        )
        if footer.get("truncated"):
            title += f" (first {int(footer.get('shown_rows', len(df))):,} rows only: raise --limit)"
        if nvtx_lane and max(nvtx_lane) + 1 > n_nvtx:
            title += f"; NVTX deeper than {n_nvtx} levels not drawn"
    ax.set_title(title, loc="left", fontsize=11)
    return ax


# -- diff -------------------------------------------------------------------------------------------
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
    df = _diff_frame(data, section)
    a_col, a_src = _side_column(df, "a")
    b_col, _ = _side_column(df, "b")
    order = ("category", "name") if section == "categories" else ("name", "kernel", "category", "subject")
    name_col = next((c for c in order if c in df.columns), df.columns[0])
    rows = df.copy()
    rows["_a"] = [float(v) if not _isnull(v) else 0.0 for v in rows[a_col]]
    rows["_b"] = [float(v) if not _isnull(v) else 0.0 for v in rows[b_col]]
    rows["_key"] = rows[["_a", "_b"]].max(axis=1)
    rows["_out"] = [bool(v) and not _isnull(v) for v in rows.get("outlier", [False] * len(rows))]
    rows = rows.sort_values("_key", ascending=False)
    if len(rows) > top:  # the biggest rows, and every outlier whatever its size
        flagged = rows[rows["_out"]].head(top)
        rest = rows[~rows["_out"]].head(max(top - len(flagged), 0))
        rows = rows.loc[[i for i in rows.index if i in set(flagged.index) | set(rest.index)]]
    names = [str(n) for n in rows[name_col]]
    a_vals, b_vals = list(rows["_a"]), list(rows["_b"])
    shown_unit = _pick_unit(_convert(max(a_vals + b_vals + [0.0]), a_src, "ns"))
    a_sh = [_convert(v, a_src, shown_unit) for v in a_vals]
    b_sh = [_convert(v, a_src, shown_unit) for v in b_vals]
    outlier = [bool(v) if not _isnull(v) else False for v in rows.get("outlier", [False] * len(rows))]
    ratios = (
        list(rows["ratio"])
        if "ratio" in rows.columns
        else [(b / a if a else math.inf) for a, b in zip(a_vals, b_vals, strict=True)]
    )
    la, lb = (shorten(x, 28) for x in (labels or _diff_labels(data)))
    n = len(names)
    ax = _new_axes(ax, (10.5, max(3.0, 0.55 * n + 1.6)))
    y = list(range(n))
    h = 0.38
    a_plot = [v if v > 0 else math.nan for v in a_sh]
    b_plot = [v if v > 0 else math.nan for v in b_sh]
    colours = [category_color(c) for c in rows["category"]] if "category" in rows.columns else ["#4c72b0"] * n
    bars_a = ax.barh([v - h / 2 for v in y], a_plot, height=h, color=colours, alpha=0.45, label=la)
    bars_b = ax.barh([v + h / 2 for v in y], b_plot, height=h, color=colours, label=lb)
    if log:
        ax.set_xscale("log")
    tick_labels = _unique_labels(names, name_width)
    ax.set_yticks(y, tick_labels, fontsize=9)
    ax.invert_yaxis()
    for i in range(n):
        if outlier[i]:
            ax.axhspan(i - 0.5, i + 0.5, color=_HIGHLIGHT, alpha=0.08, lw=0)
    for t, o in zip(ax.get_yticklabels(), outlier, strict=True):
        if o:
            t.set_color(_HIGHLIGHT)
            t.set_fontweight("bold")
    # A and B values at the bar ends, ratio in a column on the right
    for bars, vals in ((bars_a, a_sh), (bars_b, b_sh)):
        for bar, v in zip(bars, vals, strict=True):
            if v > 0:
                ax.annotate(
                    fmt_time(v, shown_unit),
                    xy=(v, bar.get_y() + bar.get_height() / 2),
                    xytext=(3, 0),
                    textcoords="offset points",
                    va="center",
                    fontsize=7,
                    color="#444444",
                )
    status = list(rows["status"]) if "status" in rows.columns else [None] * n
    for i, (r, o) in enumerate(zip(ratios, outlier, strict=True)):
        if status[i] in ("new", "removed"):
            text = str(status[i])
        elif _isnull(r):
            text = "new" if a_vals[i] == 0 and b_vals[i] > 0 else ("removed" if b_vals[i] == 0 else "–")
        elif math.isinf(r):
            text = "new"
        else:
            text = f"{float(r):.2f}×"
        if o:
            text += "  outlier"
        ax.annotate(
            text,
            xy=(1.0, i),
            xycoords=("axes fraction", "data"),
            xytext=(8, 0),
            textcoords="offset points",
            va="center",
            ha="left",
            fontsize=9,
            color=_HIGHLIGHT if o else "#222222",
            fontweight="bold" if o else "normal",
            annotation_clip=False,
        )
    positive = [v for v in a_sh + b_sh if v > 0]
    if positive:
        if log:
            ax.set_xlim(min(positive) / 2, max(positive) * 5)
        else:
            ax.set_xlim(0, max(positive) * 1.3)
    ax.set_xlabel(f"kernel time ({_UNIT_LABEL[shown_unit]}{', log scale' if log else ''})")
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
    from matplotlib.patches import Patch
    from matplotlib.transforms import offset_copy

    ax.legend(
        handles=[
            Patch(facecolor="#808080", alpha=0.45, label=f"A: {la}"),
            Patch(facecolor="#808080", label=f"B: {lb}"),
            Patch(facecolor=_HIGHLIGHT, alpha=0.15, label="outlier"),
        ],
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        bbox_transform=offset_copy(ax.transAxes, fig=ax.figure, y=-30, units="points"),
        ncol=3,
        fontsize=8,
        frameon=False,
    )
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    if title is None:
        flagged = [names[i] for i in range(n) if outlier[i]]
        title = f"diff by {section.rstrip('s') if section != 'categories' else 'category'}: {la} → {lb}"
        facts = []
        if "typical_log_ratio" in rows.columns and rows["typical_log_ratio"].notna().any():
            typical = math.exp(float(rows["typical_log_ratio"].dropna().iloc[0]))
            facts.append(f"typical change {typical:.2f}×")
        if flagged:
            facts.append("out of line: " + ", ".join(shorten(f, 30) for f in flagged[:3]))
        if facts:
            title += "\n" + "; ".join(facts)
    ax.set_title(title, loc="left", fontsize=11)
    return ax


def _diff_frame(data: Any, section: str) -> pd.DataFrame:
    if hasattr(data, "iloc"):
        return data
    frame = getattr(data, section, None)
    if frame is None and isinstance(data, Mapping):
        frame = data.get(section)
    if frame is None:
        raise ValueError(f"the diff result has no {section!r} section")
    return _frame(frame)


def _side_column(df: pd.DataFrame, side: str) -> tuple[str, str]:
    """The total-time column of side ``a`` or ``b`` (``a_total_ns``, ``total_ns_a``, ``a_ns``, ...)."""
    for unit in _UNITS:
        for name in (
            f"{side}_total_{unit}",
            f"total_{unit}_{side}",
            f"total_{side}_{unit}",
            f"{side}_time_{unit}",
            f"time_{side}_{unit}",
            f"{side}_{unit}",
        ):
            if name in df.columns:
                return name, unit
    raise ValueError(f"no total-time column for side {side!r} in {list(df.columns)}")


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
