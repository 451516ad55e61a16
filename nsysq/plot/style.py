"""What every nsysq plot shares: the colours (one per lineup category and copy kind, the same in
census, lineup, timeline and diff), long kernel names shortened in the middle, and the small axes
helpers (matplotlib imported lazily, the frame and footer of a result, its time column and unit).

The plot functions live in :mod:`nsysq.plot` (census, lineup, stakeout, nvtx), :mod:`nsysq.plot.timeline`
and :mod:`nsysq.plot.diff`; ``nsysq.plot`` re-exports them all.
"""

from __future__ import annotations

import math
import os
import sys
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nsysq.base.units import TIME_UNIT_LABELS, TIME_UNITS, axis_unit, convert

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes


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
FALLBACK_COLORS = [
    "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#5254a3", "#8ca252",
    "#bd9e39", "#ad494a", "#a55194", "#6b6ecf", "#b5cf6b", "#e7ba52", "#d6616b",
]  # fmt: skip
OTHER_BAR = "#b0b0b0"
PLAIN_BAR = "#4c72b0"  # a bar with no category to colour it
_COPY_COLORS = {
    "Host-to-Device": "#e6550d",
    "Device-to-Host": "#756bb1",
    "Device-to-Device": "#f2c500",
    "Host-to-Host": "#a6761d",
    "Peer-to-Peer": "#636363",
}
MEMSET_COLOR = "#252525"
NVTX_COLOR = "#c6dbef"
HIGHLIGHT = "#d62728"


def mpl() -> Any:
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


def new_axes(ax: Axes | None, size: tuple[float, float]) -> Axes:
    if ax is not None:
        return ax
    new: Axes = mpl().subplots(figsize=size, layout="constrained")[1]
    return new


def frame_of(data: Any) -> pd.DataFrame:
    """Accept a DataFrame or an nsysq Table."""
    if hasattr(data, "to_pandas") and not hasattr(data, "iloc"):
        return data.to_pandas()
    return data


def footer_of(df: pd.DataFrame) -> dict[str, Any]:
    """The footer an analysis attached to its frame (empty for a frame built by hand)."""
    footer: dict[str, Any] = df.attrs.get("footer", {}) if hasattr(df, "attrs") else {}
    return footer


def time_column(df: pd.DataFrame, stem: str) -> tuple[str, str]:
    """The column ``{stem}_{unit}`` present in ``df`` and its unit."""
    for unit in TIME_UNITS:
        if f"{stem}_{unit}" in df.columns:
            return f"{stem}_{unit}", unit
    raise ValueError(f"expected a column {stem}_ns (or _us, _ms, _s); the frame has {list(df.columns)}")


def pick_unit(values: Sequence[float], src: str, unit: str | None) -> str:
    """``unit`` when asked for, else the axis unit for the largest of ``values`` (given in ``src``)."""
    return unit or axis_unit(max([convert(v, src, "ns") for v in values] or [0]))


def axis_label(what: str, unit: str, log: bool) -> str:
    return f"{what} ({TIME_UNIT_LABELS[unit]}{', log scale' if log else ''})"


def tidy_axes(ax: Axes) -> None:
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


def unique_labels(names: Sequence[Any], width: int, lines: int = 2) -> list[str]:
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
        return OTHER_BAR
    return FALLBACK_COLORS[zlib.crc32(text.encode()) % len(FALLBACK_COLORS)]


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
    return FALLBACK_COLORS[zlib.crc32(text.encode()) % len(FALLBACK_COLORS)]
