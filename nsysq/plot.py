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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from nsysq.errors import UsageError
from nsysq.output_path import check_output_path
from nsysq.units import TIME_UNIT_LABELS, TIME_UNITS, axis_unit, convert, fmt_in_unit, is_missing, time_factor

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.container import BarContainer
    from matplotlib.figure import Figure
    from numpy.typing import NDArray

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
_PLAIN_BAR = "#4c72b0"  # a bar with no category to colour it
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
PICTURE_SUFFIXES = (".png", ".svg", ".pdf")  # what nsysq plot writes (the suffix picks the format)
UNDERFILLED_GID = "nsysq-underfilled"  # the rings plot_stakeout draws around under-filled launches


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

    plt = _mpl()
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
    new: Axes = _mpl().subplots(figsize=size, layout="constrained")[1]
    return new


def _frame(data: Any) -> pd.DataFrame:
    """Accept a DataFrame or an nsysq Table."""
    if hasattr(data, "to_pandas") and not hasattr(data, "iloc"):
        return data.to_pandas()
    return data


def _footer(df: pd.DataFrame) -> dict[str, Any]:
    """The footer an analysis attached to its frame (empty for a frame built by hand)."""
    footer: dict[str, Any] = df.attrs.get("footer", {}) if hasattr(df, "attrs") else {}
    return footer


def _time_column(df: pd.DataFrame, stem: str) -> tuple[str, str]:
    """The column ``{stem}_{unit}`` present in ``df`` and its unit."""
    for unit in TIME_UNITS:
        if f"{stem}_{unit}" in df.columns:
            return f"{stem}_{unit}", unit
    raise ValueError(f"expected a column {stem}_ns (or _us, _ms, _s); the frame has {list(df.columns)}")


def _shown_unit(values: Sequence[float], src: str, unit: str | None) -> str:
    """``unit`` when asked for, else the axis unit for the largest of ``values`` (given in ``src``)."""
    return unit or axis_unit(max([convert(v, src, "ns") for v in values] or [0]))


def _axis_label(what: str, unit: str, log: bool) -> str:
    return f"{what} ({TIME_UNIT_LABELS[unit]}{', log scale' if log else ''})"


def _tidy_axes(ax: Axes) -> None:
    """No top/right frame, a light vertical grid behind the bars."""
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)


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
    df = _frame(data)
    bars = _census_bars(df, top, name_width)
    shown_unit = _shown_unit(bars.totals, bars.unit, unit)
    shown = [convert(v, bars.unit, shown_unit) for v in bars.totals]
    ax = _new_axes(ax, _hbar_figsize(len(shown), any("\n" in lab for lab in bars.labels)))
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
    ax.set_xlabel(_axis_label("total kernel time", shown_unit, use_log))
    footer = _footer(df)
    if title is None:
        title = "census: where GPU time goes"
        if footer.get("total_kernels"):
            title += f" — {int(footer['total_kernels']):,} kernels"
    ax.set_title(title, loc="left", fontsize=11)
    _tidy_axes(ax)
    return ax


def _census_bars(df: pd.DataFrame, top: int, name_width: int) -> _CensusBars:
    """The top ``top`` kernels, then one "other" bar for the rest (and any "other" row of ``df``)."""
    col, src = _time_column(df, "total")
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
        labels=_unique_labels([names[i] for i in kept], name_width),
        totals=[totals[i] for i in kept],
        calls=[calls[i] for i in kept],
        shares=[share[i] for i in kept],
        colors=[_PLAIN_BAR] * len(kept),
        unit=src,
    )
    if rest:
        n_kernels = sum(_kernels_in_row(names[i]) for i in rest)
        rest_shares = [v for i in rest if (v := share[i]) is not None]
        bars.labels.append(f"other ({n_kernels} kernel{'s' if n_kernels != 1 else ''})")
        bars.totals.append(sum(totals[i] for i in rest))
        bars.calls.append(sum(calls[i] for i in rest))
        bars.shares.append(sum(rest_shares) if rest_shares else None)
        bars.colors.append(_OTHER_BAR)
    return bars


def _census_fill(df: pd.DataFrame, top: int) -> list[float | None]:
    """Per bar of ``_census_bars``: the share (0-1) of its time in under-filled launches."""
    if "underfilled_pct" not in df.columns:
        return []
    col, _ = _time_column(df, "total")
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
        edgecolor=_HIGHLIGHT,
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
    df = _frame(data)
    col, src = _time_column(df, "total")
    cats = [str(c) for c in df["category"]]
    values = [float(v or 0) for v in df[col]]
    shown_unit = _shown_unit(values, src, unit)
    shown = [convert(v, src, shown_unit) for v in values]
    ax = _new_axes(ax, _hbar_figsize(len(shown)))
    use_log = _want_log(shown, log)
    y = list(range(len(shown)))
    bars = ax.barh(y, shown, color=[category_color(c) for c in cats], height=0.7, log=use_log)
    ax.set_yticks(y, cats, fontsize=9)
    ax.invert_yaxis()
    texts = [_lineup_text(df, i, fmt_in_unit(v, shown_unit), show_top_kernel) for i, v in enumerate(shown)]
    _bar_labels(ax, bars, texts, log=use_log, room=0.45 if show_top_kernel else 0.3)
    ax.set_xlabel(_axis_label("total kernel time", shown_unit, use_log))
    footer = _footer(df)
    if title is None:
        title = "lineup: kernel time by category"
        if footer.get("total_kernels"):
            title += f" — {int(footer['total_kernels']):,} kernels"
    ax.set_title(title, loc="left", fontsize=11)
    _tidy_axes(ax)
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

    df = _frame(data)
    col, src = _time_column(df, "duration")
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
        ax.axhline(med, color=_HIGHLIGHT, ls="--", lw=1, label=f"median {fmt_in_unit(med, shown_unit)}")
        hist.axhline(med, color=_HIGHLIGHT, ls="--", lw=1)
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
        edgecolors=_HIGHLIGHT,
        lw=0.8,
        label=label,
        gid=UNDERFILLED_GID,
    )


def _stakeout_axes(ax: Axes | None, fig: Figure | None) -> Axes:
    """``ax``, else one filling ``fig``, else one on a new 11 x 4.5 in figure."""
    if ax is not None:
        return ax
    if fig is None:
        fig = _mpl().figure(figsize=(11, 4.5), layout="constrained")
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
        ax.scatter(order, dur, s=size, color=_PLAIN_BAR, lw=0)
        hist.hist(dur, bins=edges, orientation="horizontal", color=_PLAIN_BAR)
        return
    stacks, colours = [], []
    for k, group in enumerate(sorted(set(groups), key=lambda g: -groups.count(g))):
        mask = np.array([x == group for x in groups])
        colour = _FALLBACK[k % len(_FALLBACK)] if k else _PLAIN_BAR
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


@dataclass(frozen=True)
class _Window:
    """The drawn time window: every event's start ``x0`` and end ``x1`` (arrays) and the window's
    ends ``lo`` and ``hi``, all in ``unit``."""

    x0: NDArray[np.float64]
    x1: NDArray[np.float64]
    lo: float
    hi: float
    unit: str

    @property
    def min_width(self) -> float:
        """About a pixel and a half: no event is drawn narrower, so nothing vanishes."""
        return (self.hi - self.lo) / 1000.0

    @property
    def axis_lo(self) -> float:
        """Where the axis starts: ``lo``, or 0 when ``lo`` is a rounding hair below the trace start."""
        return 0.0 if self.lo < 0 and abs(self.lo) < (self.hi - self.lo) / 1000 else self.lo

    def width(self, row: int) -> float:
        return max(float(self.x1[row] - self.x0[row]), self.min_width)


_Stream = tuple[int | None, int | None]  # (device, stream); None where the export has no id


@dataclass(frozen=True)
class _Lanes:
    """Where each row is drawn: NVTX ranges in ``n_nvtx`` lanes on top (by nesting depth), then one
    lane per (device, stream) in ``streams`` order."""

    device_rows: list[int]
    stream_of: dict[int, _Stream]
    streams: list[_Stream]
    nvtx_rows: list[int]
    nvtx_depth: list[int]  # per NVTX row; depths from n_nvtx on are not drawn
    n_nvtx: int

    @property
    def nvtx_y(self) -> list[float]:
        return [k * 0.62 for k in range(self.n_nvtx)]

    @property
    def lane_y(self) -> list[float]:
        base = self.n_nvtx * 0.62 + (0.45 if self.n_nvtx else 0.0)
        return [base + j for j in range(len(self.streams))]

    @property
    def y_max(self) -> float:
        lane_y, nvtx_y = self.lane_y, self.nvtx_y
        return (lane_y[-1] if lane_y else (nvtx_y[-1] if nvtx_y else 0.0)) + 0.5


class _LegendEntry(NamedTuple):
    colour: str
    time: float  # drawn time, for ordering kernel categories
    memory_ops: int  # > 0 for memcpy/memset entries


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
    footer = _footer(df)
    win = _timeline_window(df, footer, unit)
    lanes = _timeline_lanes(df, win, nvtx, max_nvtx_lanes)
    if ax is None:
        ax = _new_axes(None, (14.0, max(2.6, 0.42 * lanes.y_max + 1.9)))
    legend_items = _draw_device_events(ax, df, win, lanes, categories)
    if lanes.nvtx_rows:
        _draw_nvtx(ax, df, win, lanes)
        legend_items["NVTX range"] = _LegendEntry(_NVTX_COLOR, 0.0, 0)
    _timeline_axis(ax, win, lanes)
    if legend and legend_items:
        _timeline_legend(ax, legend_items)
    if title is None:
        title = _timeline_title(win, lanes, footer, len(df))
    ax.set_title(title, loc="left", fontsize=11)
    return ax


def _timeline_window(df: pd.DataFrame, footer: Mapping[str, Any], unit: str | None) -> _Window:
    """The window the query asked for (``from``/``to`` in the footer), else the events' extent."""
    start_col, src = _time_column(df, "start")
    end_col, _ = _time_column(df, "end")
    starts = df[start_col].astype(float)
    ends = df[end_col].astype(float)
    lo = float(starts.min()) if len(df) else 0.0
    hi = float(ends.max()) if len(df) else 1.0
    if not is_missing(footer.get(f"from_{src}")):
        lo = float(footer[f"from_{src}"])
    if not is_missing(footer.get(f"to_{src}")):
        hi = float(footer[f"to_{src}"])
    if hi <= lo:
        hi = lo + 1.0
    shown_unit = unit or axis_unit(convert(hi - lo, src, "ns") / 10)
    factor = time_factor(src, shown_unit)
    return _Window(starts.to_numpy() * factor, ends.to_numpy() * factor, lo * factor, hi * factor, shown_unit)


def _timeline_lanes(df: pd.DataFrame, win: _Window, nvtx: bool, max_nvtx_lanes: int) -> _Lanes:
    is_nvtx = [kind == "nvtx" for kind in _kinds(df)]
    device_rows = [i for i in range(len(df)) if not is_nvtx[i]]
    devices, streams = _column(df, "device_id"), _column(df, "stream_id")
    stream_of = {i: (_optional_int(devices[i]), _optional_int(streams[i])) for i in device_rows}
    nvtx_rows = [i for i in range(len(df)) if is_nvtx[i]] if nvtx else []
    depth = _pack([(win.x0[i], win.x1[i]) for i in nvtx_rows]) if nvtx_rows else []
    return _Lanes(
        device_rows=device_rows,
        stream_of=stream_of,
        streams=sorted(set(stream_of.values()), key=_stream_order),
        nvtx_rows=nvtx_rows,
        nvtx_depth=depth,
        n_nvtx=min(max(depth) + 1, max_nvtx_lanes) if depth else 0,
    )


def _stream_order(stream: _Stream) -> tuple[bool, int, bool, int]:
    """Devices then streams by number; an unknown id after the known ones."""
    device, number = stream
    return (device is None, device or 0, number is None, number or 0)


def _column(df: pd.DataFrame, name: str, default: Any = None) -> list[Any]:
    """A column's values as a list (``default`` for each row when the frame has no such column)."""
    return list(df[name]) if name in df.columns else [default] * len(df)


def _kinds(df: pd.DataFrame) -> list[str]:
    """Each row's event kind (kernel, memcpy, memset, nvtx); a frame without kinds is all kernels."""
    return [str(kind) for kind in _column(df, "kind", "kernel")]


def _optional_int(value: Any) -> int | None:
    return None if is_missing(value) else int(value)


class _Event(NamedTuple):
    """What the timeline needs to know of one GPU event row to draw it."""

    kind: str
    name: Any
    category: Any
    copy_kind: Any


def _events(df: pd.DataFrame) -> list[_Event]:
    columns = (_kinds(df), _column(df, "name", ""), _column(df, "category"), _column(df, "copy_kind"))
    return [_Event(*values) for values in zip(*columns, strict=True)]


GRAPH_CATEGORY = "CUDA graph (traced whole)"  # the lineup category of whole-graph executions


def _event_style(event: _Event, categories: Mapping[str, str] | None) -> tuple[str, str, bool]:
    """(legend label, colour, half height) of a GPU event: kernels by category (from the frame, else
    from ``categories`` by short name), whole-graph executions as their lineup category, memcpys by
    copy kind, memsets black."""
    if event.kind == "memcpy":
        label = "memcpy" if is_missing(event.copy_kind) else f"memcpy {event.copy_kind}"
        return label, copy_kind_color(event.copy_kind), True
    if event.kind == "graph":  # an execution of a CUDA graph traced whole: its kernels are not known
        return GRAPH_CATEGORY, category_color(GRAPH_CATEGORY), False
    if event.kind != "kernel":
        return "memset", _MEMSET_COLOR, True
    if not is_missing(event.category):
        category = str(event.category)
    else:
        category = (categories or {}).get(str(event.name), "Other" if categories else "kernel")
    return category, (_PLAIN_BAR if category == "kernel" else category_color(category)), False


def _draw_device_events(
    ax: Axes, df: pd.DataFrame, win: _Window, lanes: _Lanes, categories: Mapping[str, str] | None
) -> dict[str, _LegendEntry]:
    """Kernels, memcpys and memsets, one bar collection per (lane, colour, height)."""
    groups: dict[tuple[int, str, bool], list[tuple[float, float]]] = {}
    legend_items: dict[str, _LegendEntry] = {}
    lane_of = {stream: j for j, stream in enumerate(lanes.streams)}
    events = _events(df)
    for i in lanes.device_rows:
        label, colour, half = _event_style(events[i], categories)
        groups.setdefault((lane_of[lanes.stream_of[i]], colour, half), []).append((win.x0[i], win.width(i)))
        prev = legend_items.get(label, _LegendEntry(colour, 0.0, 0))
        legend_items[label] = _LegendEntry(
            colour, prev.time + (win.x1[i] - win.x0[i]), prev.memory_ops + (1 if half else 0)
        )
    lane_y = lanes.lane_y
    for (lane, colour, half), spans in groups.items():
        y = lane_y[lane]
        ax.broken_barh(spans, (y, 0.4) if half else (y - 0.4, 0.8), facecolors=colour, linewidth=0)
    return legend_items


def _draw_nvtx(ax: Axes, df: pd.DataFrame, win: _Window, lanes: _Lanes) -> None:
    """NVTX ranges, one bar collection per nesting depth shown, labelled where the text fits."""
    spans_by_lane: dict[int, list[tuple[float, float]]] = {}
    for i, depth in zip(lanes.nvtx_rows, lanes.nvtx_depth, strict=True):
        if depth < lanes.n_nvtx:
            spans_by_lane.setdefault(depth, []).append((win.x0[i], win.width(i)))
    nvtx_y = lanes.nvtx_y
    for depth, spans in spans_by_lane.items():
        ax.broken_barh(
            spans, (nvtx_y[depth] - 0.27, 0.54), facecolors=_NVTX_COLOR, edgecolors="#6b8fb5", linewidth=0.5
        )
    _label_nvtx(ax, df, win, lanes)


def _label_nvtx(ax: Axes, df: pd.DataFrame, win: _Window, lanes: _Lanes, most: int = 80) -> None:
    """Name the longest NVTX ranges (at most ``most``) whose drawn part is wide enough for the text."""
    px_per_unit = ax.figure.bbox.width * 0.8 / (win.hi - win.lo)
    nvtx_y = lanes.nvtx_y
    labelled = 0
    ranges = zip(lanes.nvtx_rows, lanes.nvtx_depth, strict=True)
    for i, depth in sorted(ranges, key=lambda p: win.x0[p[0]] - win.x1[p[0]]):
        if depth >= lanes.n_nvtx or labelled >= most:
            continue
        a, b = max(win.x0[i], win.lo), min(win.x1[i], win.hi)
        text = shorten(df["name"].iloc[i], 40)
        if (b - a) * px_per_unit < len(text) * 6.0 + 6:
            continue
        ax.text((a + b) / 2, nvtx_y[depth], text, ha="center", va="center", fontsize=7, clip_on=True)
        labelled += 1


def _timeline_axis(ax: Axes, win: _Window, lanes: _Lanes) -> None:
    """Lane names on the y axis (NVTX on top), the window on the x axis, a light grid."""
    ticks = [f"NVTX {k + 1}" if lanes.n_nvtx > 1 else "NVTX" for k in range(lanes.n_nvtx)]
    for d, s in lanes.streams:
        gpu = "GPU ?" if d is None else f"GPU {d}"
        ticks.append(f"{gpu} · stream {s if s is not None else '?'}")
    ax.set_yticks(lanes.nvtx_y + lanes.lane_y, ticks, fontsize=8)
    ax.set_ylim(lanes.y_max, -0.5 if not lanes.n_nvtx else -0.4)
    ax.set_xlim(win.axis_lo, win.hi)
    ax.set_xlabel(f"time from trace start ({TIME_UNIT_LABELS[win.unit]})")
    _tidy_axes(ax)


def _timeline_legend(ax: Axes, items: Mapping[str, _LegendEntry]) -> None:
    """Kernel categories by drawn time, then memory ops by name, then NVTX, right of the axes."""
    from matplotlib.patches import Patch

    kernels = sorted(
        ((k, v) for k, v in items.items() if v.memory_ops == 0 and k != "NVTX range"),
        key=lambda kv: -kv[1].time,
    )
    memory = sorted((k, v) for k, v in items.items() if v.memory_ops > 0)
    nvtx = [(k, v) for k, v in items.items() if k == "NVTX range"]
    ax.legend(
        handles=[Patch(facecolor=v.colour, label=k) for k, v in kernels + memory + nvtx],
        loc="upper left",
        bbox_to_anchor=(1.005, 1.0),
        fontsize=8,
        frameon=False,
        title="kernels by category · memory ops",
        title_fontsize=8,
    )


def _timeline_title(win: _Window, lanes: _Lanes, footer: Mapping[str, Any], rows: int) -> str:
    """ "timeline 95.0 ms – 110 ms: 1,234 GPU events on 2 streams", and what was cut."""
    n_streams = len(lanes.streams)
    title = (
        f"timeline {fmt_in_unit(win.axis_lo, win.unit)} – {fmt_in_unit(win.hi, win.unit)}: "
        f"{len(lanes.device_rows):,} GPU events on {n_streams} stream{'s' if n_streams != 1 else ''}"
    )
    if footer.get("truncated"):
        title += f" (first {int(footer.get('shown_rows', rows)):,} rows only: raise --limit)"
    if lanes.nvtx_depth and max(lanes.nvtx_depth) + 1 > lanes.n_nvtx:
        title += f"; NVTX deeper than {lanes.n_nvtx} levels not drawn"
    return title


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
    ax = _new_axes(ax, (10.5, max(3.0, 0.55 * n + 1.6)))
    bars = _draw_pairs(ax, a_shown, b_shown, rows.colours, (la, lb), log)
    ax.set_yticks(list(range(n)), _unique_labels(rows.names, name_width), fontsize=9)
    ax.invert_yaxis()
    _mark_outliers(ax, rows.outlier)
    for side_bars, values in zip(bars, (a_shown, b_shown), strict=True):
        _write_pair_values(ax, side_bars, values, shown_unit)
    _write_ratios(ax, rows)
    _diff_axis(ax, a_shown + b_shown, shown_unit, log)
    _diff_legend(ax, la, lb)
    _tidy_axes(ax)
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
    colours = [category_color(c) for c in rows["category"]] if has_category else [_PLAIN_BAR] * n
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
            ax.axhspan(i - 0.5, i + 0.5, color=_HIGHLIGHT, alpha=0.08, lw=0)
    for tick, flagged in zip(ax.get_yticklabels(), outlier, strict=True):
        if flagged:
            tick.set_color(_HIGHLIGHT)
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
            color=_HIGHLIGHT if flagged else "#222222",
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
    ax.set_xlabel(_axis_label("kernel time", unit, log))
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
            Patch(facecolor=_HIGHLIGHT, alpha=0.15, label="outlier"),
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
    return _frame(frame)


def _side_columns(df: pd.DataFrame) -> tuple[str, str, str]:
    """The time columns of sides A and B (``a_ns`` and ``b_ns``, or both in another unit, as
    ``DiffResult.section(name, unit)`` names them) and their unit."""
    a_col, unit = _time_column(df, "a")
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
    df = _frame(data).head(top)
    cpu_col, src = _time_column(df, "total")
    gpu_col, _ = _time_column(df, "gpu_busy")
    cpu = [float(v or 0) for v in df[cpu_col]]
    gpu = [float(v or 0) for v in df[gpu_col]]
    shown_unit = _shown_unit(cpu + gpu, src, unit)
    cpu = [convert(v, src, shown_unit) for v in cpu]
    gpu = [convert(v, src, shown_unit) for v in gpu]
    domains = list(df["domain"]) if "domain" in df.columns else [""] * len(df)
    names = [f"{n} @{d}" if d else str(n) for n, d in zip(df["name"], domains, strict=True)]
    labels = _unique_labels(names, name_width)
    ax = _new_axes(ax, _hbar_figsize(2 * len(df), any("\n" in lab for lab in labels)))
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
    ax.set_xlabel(_axis_label("time", shown_unit, use_log))
    ax.legend(loc="lower right", fontsize=8, frameon=False)
    ax.set_title(title if title is not None else _nvtx_title(_footer(df)), loc="left", fontsize=11)
    _tidy_axes(ax)
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
