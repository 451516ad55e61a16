"""The timeline plot: one lane per stream (kernels coloured by lineup category, copies by kind,
memsets dark) with NVTX ranges above, over the window a timeline query returned. Pure like every
nsysq plot (:mod:`nsysq.plot`, which re-exports :func:`plot_timeline`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from nsysq.base.units import TIME_UNIT_LABELS, axis_unit, convert, fmt_in_unit, is_missing, time_factor

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    from matplotlib.axes import Axes
    from numpy.typing import NDArray

from nsysq.plot.style import (
    MEMSET_COLOR,
    NVTX_COLOR,
    PLAIN_BAR,
    category_color,
    copy_kind_color,
    footer_of,
    frame_of,
    new_axes,
    shorten,
    tidy_axes,
    time_column,
)


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
    ``nsysq.trace.notebook.kernel_category_map``), memcpys are half-height bars coloured by copy kind,
    memsets half-height and black. Bars are drawn as one collection per lane and colour
    (``broken_barh``) and never narrower than about a pixel, so windows of thousands of events
    stay fast and nothing vanishes. NVTX ranges are stacked by nesting and labelled where they fit.
    """
    df = frame_of(data)
    footer = footer_of(df)
    win = _timeline_window(df, footer, unit)
    lanes = _timeline_lanes(df, win, nvtx, max_nvtx_lanes)
    if ax is None:
        ax = new_axes(None, (14.0, max(2.6, 0.42 * lanes.y_max + 1.9)))
    legend_items = _draw_device_events(ax, df, win, lanes, categories)
    if lanes.nvtx_rows:
        _draw_nvtx(ax, df, win, lanes)
        legend_items["NVTX range"] = _LegendEntry(NVTX_COLOR, 0.0, 0)
    _timeline_axis(ax, win, lanes)
    if legend and legend_items:
        _timeline_legend(ax, legend_items)
    if title is None:
        title = _timeline_title(win, lanes, footer, len(df))
    ax.set_title(title, loc="left", fontsize=11)
    return ax


def _timeline_window(df: pd.DataFrame, footer: Mapping[str, Any], unit: str | None) -> _Window:
    """The window the query asked for (``from``/``to`` in the footer), else the events' extent."""
    start_col, src = time_column(df, "start")
    end_col, _ = time_column(df, "end")
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
        return "memset", MEMSET_COLOR, True
    if not is_missing(event.category):
        category = str(event.category)
    else:
        category = (categories or {}).get(str(event.name), "Other" if categories else "kernel")
    return category, (PLAIN_BAR if category == "kernel" else category_color(category)), False


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
            spans, (nvtx_y[depth] - 0.27, 0.54), facecolors=NVTX_COLOR, edgecolors="#6b8fb5", linewidth=0.5
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
    tidy_axes(ax)


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
