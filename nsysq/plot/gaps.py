"""``plot_gaps``: per GPU a utilization strip over time, idle time coloured by cause.

``gaps_frame(trace)`` computes what the plot needs (the longest gaps, with the per-device totals in
``df.attrs``); ``plot_gaps(df, ax=None)`` draws it, importing matplotlib only then.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nsysq.base.table import TIME_UNITS
from nsysq.gputime.gaps import CAUSES, GapsResult, gaps

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

    from nsysq.gputime.overlap import OverlapResult
    from nsysq.session import Session

PLOT_TOP = 10**9
"""Gaps ``gaps_frame`` lists by default: all of them."""
BUSY_COLOR = "#b7dfb0"
CAUSE_COLORS: dict[str, str] = {
    "host_wait": "#d62728",
    "launch_bound": "#ff7f0e",
    "host_busy": "#1f77b4",
    "unknown": "#7f7f7f",
}


def gaps_frame(trace: Session, *, top: int = PLOT_TOP) -> pd.DataFrame:
    """The ``top`` longest idle gaps (ns) as a DataFrame; ``df.attrs["devices"]`` holds the
    per-device rows of :func:`nsysq.gputime.gaps.gaps` and ``df.attrs["footer"]`` its footer."""
    return gaps_result_frame(gaps(trace, top=top))


def gaps_result_frame(result: GapsResult) -> pd.DataFrame:
    """``gaps_frame`` of a result already computed (:func:`nsysq.gputime.gaps.gaps` with the ``top`` wanted),
    so a caller that shows the gaps tables too runs the analysis once."""
    df = result.gaps.to_pandas()
    df.attrs["devices"] = result.devices.records()
    df.attrs["footer"] = dict(result.devices.footer)
    return df


def _unit(span_ns: float) -> str:
    for unit in ("s", "ms", "us"):
        if span_ns >= 10 * TIME_UNITS[unit]:
            return unit
    return "ns"


def plot_gaps(
    data: pd.DataFrame,
    *,
    ax: Axes | None = None,
    unit: str | None = None,
    bins: int = 800,
    legend: bool = True,
) -> Axes:
    """One lane per device from its first to its last GPU op, cut into ``bins`` slices of time;
    each slice is a stacked bar of the share of it the GPU was busy (green) and idle by cause
    (each gap's time by cause spread evenly over the gap). Gaps ``gaps_frame`` did not list count
    as busy. The legend gives each cause's idle time over all devices, each lane's label its busy
    share."""
    import numpy as np

    devices: list[dict[str, Any]] = list(data.attrs.get("devices", []))
    if not devices:
        raise ValueError("plot_gaps() takes the DataFrame nsysq.plot.gaps.gaps_frame() returns.")
    if ax is None:
        from nsysq.plot import figure_axes

        ax = figure_axes((11.0, 1.2 + 0.7 * len(devices)))
    shown = unit or _unit(max(float(d["start_ns"] + d["span_ns"]) for d in devices))
    scale = 1.0 / TIME_UNITS[shown]
    for y, device in enumerate(devices):
        rows = data[data["device_id"] == device["device_id"]].sort_values("start_ns") if len(data) else data
        lo, hi = float(device["start_ns"]), float(device["start_ns"] + max(device["span_ns"], 1))
        edges = np.linspace(lo, hi, bins + 1)
        width = np.diff(edges)
        bottom = np.full(bins, y - 0.35)
        shares = {c: _idle_per_bin(rows, c, edges) / width for c in CAUSE_COLORS}
        busy = np.clip(1.0 - sum(shares.values()), 0.0, 1.0)
        for color, share in ((BUSY_COLOR, busy), *((CAUSE_COLORS[c], shares[c]) for c in CAUSE_COLORS)):
            if share.any():
                ax.bar(edges[:-1] * scale, share * 0.7, width=width * scale, bottom=bottom, align="edge",
                       color=color, linewidth=0)  # fmt: skip
                bottom = bottom + share * 0.7
    ax.set_yticks(range(len(devices)))
    ax.set_yticklabels([_lane_label(d) for d in devices])
    ax.set_ylim(len(devices) - 0.5, -0.5)
    ax.set_xlabel(f"time since trace start ({shown})")
    ax.set_title(_title(data), loc="left", fontsize=11)
    if legend:
        _legend(ax, devices)
    return ax


def _idle_per_bin(rows: pd.DataFrame, cause: str, edges: Any) -> Any:
    """Idle ns of ``cause`` in each slice between ``edges``, from gaps sorted by start (disjoint):
    the cumulative idle time of that cause up to each edge, differenced."""
    import numpy as np

    if not len(rows):
        return np.zeros(len(edges) - 1)
    starts = rows["start_ns"].to_numpy(dtype=float)
    lengths = rows["gap_ns"].to_numpy(dtype=float)
    amounts = rows[f"{cause}_ns"].to_numpy(dtype=float)
    before = np.concatenate(([0.0], np.cumsum(amounts)))
    i = np.searchsorted(starts, edges, side="right") - 1
    inside = np.clip(edges - starts[np.maximum(i, 0)], 0.0, lengths[np.maximum(i, 0)])
    density = np.where(lengths > 0, amounts / np.where(lengths > 0, lengths, 1.0), 0.0)
    cumulative = np.where(i >= 0, before[np.maximum(i, 0)] + density[np.maximum(i, 0)] * inside, 0.0)
    return np.diff(cumulative)


def _lane_label(device: dict[str, Any]) -> str:
    busy = 100.0 * device["busy_ns"] / device["span_ns"] if device["span_ns"] else 0.0
    return f"GPU {device['device_id']}\n{busy:.1f}% busy"


def _title(data: pd.DataFrame) -> str:
    footer = data.attrs.get("footer", {})
    total, listed = int(footer.get("idle_gaps", 0)), len(data)
    title = "GPU busy and idle time by cause"
    if listed < total:
        share = (
            100.0 * float(data["gap_ns"].sum()) / float(footer["idle_ns"]) if footer.get("idle_ns") else 0.0
        )
        title += f" (the {listed:,} longest of {total:,} gaps: {share:.1f}% of idle time)"
    return title


def _legend(ax: Axes, devices: list[dict[str, Any]]) -> None:
    from matplotlib.patches import Patch

    handles = [Patch(color=BUSY_COLOR, label="busy")]
    for cause, color in CAUSE_COLORS.items():
        total_ms = sum(int(d[f"{cause}_ns"]) for d in devices) / TIME_UNITS["ms"]
        handles.append(Patch(color=color, label=f"{CAUSES[cause]} ({total_ms:,.3g} ms)"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


OVERLAP_COLOR = "#2ca02c"
EXPOSED_COLOR = "#d62728"
GRAPH_COLOR = "#7f7f7f"
"""Exposed time during which a CUDA graph traced whole ran (its kernels, maybe compute, unseen)."""


def overlap_frame(trace: Session, *, rules: str | None = None) -> pd.DataFrame:
    """The bars ``plot_overlap`` draws, one per device and subject (all communication, each
    collective kind, memcpy): ``device_id``, ``subject``, ``overlap_ns``, ``exposed_ns`` and
    ``graph_overlap_ns`` (the part of the exposed time beside an execution of a CUDA graph traced
    whole: overlap's ``graph_overlap_ns`` / ``memcpy_graph_overlap_ns``; 0 for the kinds' bars)."""
    from nsysq.gputime.overlap import overlap

    return overlap_result_frame(overlap(trace, rules=rules))


def overlap_result_frame(result: OverlapResult) -> pd.DataFrame:
    """``overlap_frame`` of a result already computed (:func:`nsysq.gputime.overlap.overlap`), so a caller
    that shows the overlap tables too runs the analysis once."""
    import pandas as pd

    rows: list[dict[str, Any]] = []
    for d in result.devices.records():
        dev = d["device_id"]
        if d["comm_ns"]:
            rows.append(_bar(dev, "communication", d["overlap_ns"], d["exposed_ns"], d["graph_overlap_ns"]))
            rows += [
                _bar(dev, f"  {k['collective']}", k["overlap_ns"], k["exposed_ns"], 0)
                for k in result.collectives.records()
                if k["device_id"] == dev
            ]
        if d["memcpy_ns"]:
            graph_ns = d["memcpy_graph_overlap_ns"]
            rows.append(_bar(dev, "memcpy", d["memcpy_overlap_ns"], d["memcpy_exposed_ns"], graph_ns))
    df = pd.DataFrame(rows, columns=["device_id", "subject", "overlap_ns", "exposed_ns", "graph_overlap_ns"])
    df.attrs["footer"] = dict(result.devices.footer)
    return df


def _bar(device_id: Any, subject: str, overlap_ns: int, exposed_ns: int, graph_ns: int) -> dict[str, Any]:
    return {
        "device_id": device_id,
        "subject": subject,
        "overlap_ns": overlap_ns,
        "exposed_ns": exposed_ns,
        "graph_overlap_ns": graph_ns,
    }


def plot_overlap(data: pd.DataFrame, *, ax: Axes | None = None, unit: str | None = None) -> Axes:
    """Horizontal bars per device: communication (and each collective kind) and memcpy time,
    split into the part hidden behind compute kernels (green) and the exposed part (red), of which
    the part beside an execution of a CUDA graph traced whole is grey (``graph_overlap_ns``: hidden
    or not is unknown, the graph's kernels are not in the export)."""
    if ax is None:
        from nsysq.plot import figure_axes

        ax = figure_axes((9.0, 1.0 + 0.35 * max(len(data), 1)))
    totals = (data["overlap_ns"] + data["exposed_ns"]) if len(data) else data.get("overlap_ns", [])
    shown = unit or _unit(float(max(totals, default=0)) if len(data) else 0.0)
    scale = 1.0 / TIME_UNITS[shown]
    labels = [f"GPU {d}  {s}" for d, s in zip(data["device_id"], data["subject"], strict=True)]
    y = list(range(len(data)))
    hidden = data["overlap_ns"].astype(float) * scale
    beside = data["graph_overlap_ns"].astype(float) * scale if "graph_overlap_ns" in data else hidden * 0
    exposed = data["exposed_ns"].astype(float) * scale - beside
    ax.barh(y, hidden, color=OVERLAP_COLOR, label="overlapped with compute")
    if bool((beside > 0).any()):
        ax.barh(y, beside, left=hidden, color=GRAPH_COLOR, label="beside a CUDA graph execution (unknown)")
    ax.barh(y, exposed, left=hidden + beside, color=EXPOSED_COLOR, label="exposed")
    ax.set_yticks(y)
    ax.set_yticklabels(labels)
    ax.invert_yaxis()
    ax.set_xlabel(f"time ({shown})")
    title = "communication and memcpy: hidden behind compute or exposed"
    if not len(data):
        title += " (no communication kernel or memcpy)"
    ax.set_title(title, loc="left", fontsize=11)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return ax
