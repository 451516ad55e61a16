"""Notebook helpers: the HTML summary a ``Trace`` shows in Jupyter, and small glue for the plots.

``Trace._repr_html_`` calls :func:`trace_html` with its session; :func:`kernel_category_map` gives
:func:`nsysq.plot.plot_timeline` each kernel short name's lineup category;
:func:`timeline_frame` is ``Trace.timeline`` with a ``category`` column added
(:func:`timeline_table_frame` the same for a timeline already read).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from nsysq.analyses.info import info
from nsysq.analyses.timeline import EVENTS_TO_DRAW, timeline
from nsysq.base.errors import NsysqError
from nsysq.base.units import fmt_file_size, fmt_ms

if TYPE_CHECKING:
    import pandas as pd

    from nsysq.base.table import Table
    from nsysq.session import Session


class HasSession(Protocol):
    """What a notebook helper takes besides a Session: an open ``nsysq.Trace`` (its ``session``)."""

    @property
    def session(self) -> Session: ...


def session_of(trace: Session | HasSession) -> Session:
    """The session of ``trace``: a Trace's, or the Session itself."""
    return trace.session if hasattr(trace, "session") else trace


_COUNT_LABELS = {
    "kernels": "kernels",
    "memcpys": "memcpy",
    "memsets": "memset",
    "nvtx_events": "NVTX events",
    "cuda_api_calls": "CUDA API calls",
}


def trace_html(trace: Session | HasSession) -> str:
    """A short HTML card: file, nsys version, GPUs, span, event counts, kernel time, warnings."""
    trace = session_of(trace)
    esc = html.escape
    try:
        data = info(trace)
    except NsysqError as exc:  # show what went wrong rather than an empty cell
        return f"<b>nsysq.Trace</b> <code>{esc(str(trace.path))}</code>: {esc(str(exc))}"
    gpus = data.get("gpus") or []
    gpu_text = (
        ", ".join(
            esc(f"{g.get('name')}" + (f" ({g['sm_count']} SMs)" if g.get("sm_count") else "")) for g in gpus
        )
        or "unknown"
    )
    counts = data.get("counts", {})
    count_cells = "".join(
        f"<td style='padding:0 10px 0 0'><b>{int(counts[k]):,}</b> {esc(label)}</td>"
        for k, label in _COUNT_LABELS.items()
        if k in counts
    )
    rows = [
        ("file", f"<code>{esc(Path(data['path']).name)}</code> ({fmt_file_size(int(data['size_bytes']))})"),
        ("nsys", esc(f"{data['nsys_version']} (schema {data['schema_version']})")),
        ("GPUs", gpu_text),
        ("span", esc(fmt_ms(data.get("span_ns")))),
        ("kernel time", esc(fmt_ms(data.get("kernel_ns")))),
    ]
    if "cache" in data:
        rows.append(("cache", esc(str(data["cache"]))))
    body = "".join(
        f"<tr><th style='text-align:left;padding-right:12px'>{k}</th>"
        f"<td style='text-align:left'>{v}</td></tr>"
        for k, v in rows
    )
    warnings = "".join(f"<li style='color:#a15c00'>{esc(w)}</li>" for w in data.get("warnings", []))
    return (
        "<div class='nsysq-trace'>"
        f"<b>nsysq.Trace</b> <span style='color:#666'>{esc(str(data['path']))}</span>"
        f"<table>{body}</table>"
        f"<table><tr>{count_cells}</tr></table>"
        + (f"<ul style='margin:4px 0'>{warnings}</ul>" if warnings else "")
        + "<span style='color:#666'>try .census(), .lineup(), .stakeout(name), "
        ".timeline(start_ms=, end_ms=); plots in nsysq.plot</span></div>"
    )


def kernel_category_map(trace: Session | HasSession, *, rules: str | Path | None = None) -> dict[str, str]:
    """Each kernel short name's lineup category (when one short name spans several categories,
    the one with most launches). Empty when the trace recorded no kernels."""
    from nsysq.analyses.lineup import kernel_categories

    trace = session_of(trace)
    try:
        pairs = kernel_categories(trace, rules=rules).records()
    except NsysqError:
        return {}
    by_name: dict[str, set[str]] = {}
    for row in pairs:
        by_name.setdefault(str(row["short_name"]), set()).add(str(row["category"]))
    out = {name: next(iter(cats)) for name, cats in by_name.items() if len(cats) == 1}
    ambiguous = [name for name, cats in by_name.items() if len(cats) > 1]
    if ambiguous:
        table = trace.run("category_launches")
        for name, category, _n in table.rows:
            if str(name) in ambiguous and str(name) not in out:
                out[str(name)] = str(category)
    return out


def timeline_frame(
    trace: Session | HasSession,
    *,
    rules: str | Path | None = None,
    limit: int = EVENTS_TO_DRAW,
    **kwargs: Any,
) -> pd.DataFrame:
    """``trace.timeline(limit=limit, **kwargs)`` with a ``category`` column (kernels only) for
    plotting; by default as many events as a plot draws (``nsysq.analyses.timeline.EVENTS_TO_DRAW``)."""
    unit = kwargs.pop("unit", "ns")
    table = timeline(session_of(trace), limit=limit, **kwargs).in_unit(unit)
    return timeline_table_frame(trace, table, rules=rules)


def timeline_table_frame(
    trace: Session | HasSession, table: Table, *, rules: str | Path | None = None
) -> pd.DataFrame:
    """``timeline_frame`` of a timeline already read (:func:`nsysq.analyses.timeline.timeline`, ns), so a
    caller that shows the table too reads the window once."""
    df = table.to_pandas()
    mapping = kernel_category_map(trace, rules=rules)
    attrs = dict(df.attrs)
    df["category"] = [
        mapping.get(str(n), "Other") if k == "kernel" else None
        for k, n in zip(df["kind"], df["name"], strict=True)
    ]
    df.attrs.update(attrs)
    return df
