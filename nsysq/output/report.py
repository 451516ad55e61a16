"""``nsysq report``: one self-contained HTML page of one trace, or of what changed between two.

A report is a list of sections; each section calls the library's analyses and plot functions (the
ones ``nsysq <command>`` and ``nsysq plot <command>`` call) and turns their results into HTML
through :mod:`nsysq.output.report_html`. Every table says which command prints the same rows as JSON
(``data-command``, ``data-rows``), and its cells hold those raw values, so a test can check the
report against the commands. A new analysis joins a report with one line in ``TRACE_SECTIONS``
(or ``DIFF_SECTIONS``): ``ReportSection("key", "Title", build)`` where ``build(context) -> str``
returns the section's HTML (``result_html`` and ``figure_html`` do the work).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nsysq.base.errors import NoDataError, UsageError
from nsysq.base.units import condensed
from nsysq.output.report_html import PageSection, esc, figure_html, footer_html, page_html, table_html

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from nsysq.base.table import Table
    from nsysq.diffing.result import DiffResult
    from nsysq.export.reader import CacheMode
    from nsysq.session import Session
    from nsysq.session.scope import Scope

__all__ = [
    "DIFF_SECTIONS",
    "TRACE_SECTIONS",
    "DiffContext",
    "Report",
    "ReportSection",
    "TraceContext",
    "diff_report",
    "result_html",
    "trace_report",
    "write_report",
]

CENSUS_ROWS = 20
"""Kernels in the report's census (``nsysq census --limit 20``): the top 20 and one 'other' row."""
STAKEOUT_KERNELS = 3
"""Kernels staked out: the top ones of the census."""
LAUNCHES_DRAWN = 2000
"""Launches of the top kernel drawn in the stakeout plot (the first ones in start order)."""
TIMELINE_ROWS = 100
"""Events in the timeline excerpt."""
NVTX_ROWS = 20
"""Range names in the report's NVTX table (``nsysq nvtx --limit 20``, the command's default)."""
NVTX_UNNESTED_LIMIT = 50_000
"""Above this many NVTX ranges, a trace whose push/pop ranges do not nest gets a note instead of
the NVTX section: its attribution takes the plain interval join (quadratic per thread; nsysq.analyses.nvtx),
which on a 5M-kernel trace with 1.25M such ranges ran for more than 10 minutes."""
NVTX_DRAWN = 15
"""Range names drawn in the NVTX plot (``nsysq plot nvtx``'s default)."""
GAPS_TOP = 10
GAPS_BINS = 300
DIFF_KERNEL_ROWS = 200
"""Rows of the diff's kernel table shown (outliers first); the command prints every row."""
DIFF_PLOT_ROWS = 25


@dataclass
class TraceContext:
    """What the sections of a one-trace report share: the trace and results computed once."""

    trace: Session
    kept: dict[str, Any] = field(default_factory=dict)

    def once(self, key: str, compute: Callable[[], Any]) -> Any:
        if key not in self.kept:
            self.kept[key] = compute()
        return self.kept[key]


@dataclass
class DiffContext:
    """What the sections of a diff report share: the diff result."""

    result: DiffResult


@dataclass(frozen=True)
class ReportSection:
    """One section: anchor ``key``, heading ``title``, and ``build(context) -> HTML``."""

    key: str
    title: str
    build: Callable[[Any], str]


@dataclass(frozen=True)
class Report:
    """A finished page and the warnings to print beside it."""

    html: str
    warnings: tuple[str, ...] = ()


# -- shared pieces -------------------------------------------------------------------------------
def result_html(
    table: Table,
    argv: Sequence[str],
    rows_path: str,
    *,
    footer_path: str | None = None,
    shown_rows: int | None = None,
    row_class: Sequence[str] | None = None,
    cards: bool = False,
    people: Table | None = None,
) -> str:
    """A table with the command that prints it as JSON: ``argv`` (after ``nsysq``; the trace
    arguments as TRACE, A, B), ``rows_path`` (where its rows are in that JSON, dotted) and
    ``footer_path`` (where the footer shown under it is)."""
    attrs = {"command": json.dumps(list(argv)), "json": rows_path}
    shown = " ".join(_shell_word(a) for a in argv)
    out = f'<p class="cmd">$ nsysq {esc(shown)} --format json</p>'
    out += table_html(
        table, attrs=attrs, shown_rows=shown_rows, row_class=row_class, cards=cards, people=people
    )
    if footer_path is not None:
        out += footer_html(table.footer, footer_path)
    data = f" data-command='{esc(json.dumps(list(argv)))}'"
    return f'<div class="result"{data}>{out}</div>'


def _shell_word(word: str) -> str:
    if word and all(c.isalnum() or c in "-_./:=%" for c in word):
        return word
    return "'" + word.replace("'", "'\\''") + "'"


def svg(ax: Axes) -> str:
    from nsysq.plot import figure_svg

    return figure_svg(ax)


def _guarded(build: Callable[[Any], str], context: Any) -> str:
    """A section's HTML, or the reason it has none (the trace lacks the events it needs). Any
    other error (a damaged table, a query that fails) fails the whole report: never a quiet hole."""
    try:
        return build(context)
    except NoDataError as exc:
        return f'<p class="nodata">{esc(exc)}</p>'


# -- one trace -----------------------------------------------------------------------------------
def _info(ctx: TraceContext) -> str:
    from nsysq.analyses.info import info
    from nsysq.base.units import fmt_file_size, fmt_ms

    data: dict[str, Any] = ctx.once("info", lambda: info(ctx.trace))
    items: list[tuple[str, str, Any, str]] = [
        ("file", "path", data["path"], Path(data["path"]).name),
        ("size", "size_bytes", data["size_bytes"], fmt_file_size(int(data["size_bytes"]))),
        ("nsys", "nsys_version", data["nsys_version"], str(data["nsys_version"])),
        ("span", "span_ns", data["span_ns"], fmt_ms(data["span_ns"])),
        ("kernel time", "kernel_ns", data["kernel_ns"], fmt_ms(data["kernel_ns"])),
    ]
    for i, gpu in enumerate(data["gpus"]):
        about = [f"{gpu['sm_count']} SMs" if gpu.get("sm_count") else ""]
        about.append(f"compute {gpu['compute_capability']}" if gpu.get("compute_capability") else "")
        shown = ", ".join(a for a in about if a)
        text = f"{gpu['name']} ({shown})" if shown else str(gpu["name"])
        items.append((f"GPU {gpu['id']}", f"gpus.{i}.name", gpu["name"], text))
    for key, value in data["counts"].items():
        items.append((key.replace("_", " "), f"counts.{key}", value, f"{value:,}"))
    for key in ("unresolved_kernel_names", "zero_length_kernels"):
        items.append((key.replace("_", " "), key, data[key], f"{data[key]:,}"))
    card = "".join(
        f"<dt>{esc(label)}</dt><dd data-key=\"{esc(key)}\" data-value='{esc(json.dumps(raw))}'>"
        f"{esc(text)}</dd>"
        for label, key, raw, text in items
    )
    warnings = "".join(
        f'<li class="warn" data-key="warnings.{i}" data-value=\'{esc(json.dumps(w))}\'>{esc(w)}</li>'
        for i, w in enumerate(data["warnings"])
    )
    body = '<p class="cmd">$ nsysq info TRACE --format json</p>'
    body += f"<div class=\"info\" data-command='{esc(json.dumps(['info', 'TRACE']))}'>"
    body += f'<dl class="card">{card}</dl>'
    body += f"<ul>{warnings}</ul>" if warnings else '<p class="note">No warnings.</p>'
    return body + "</div>"


def _census(ctx: TraceContext) -> Table:
    from nsysq.analyses.census import census

    table: Table = ctx.once("census", lambda: census(ctx.trace, limit=CENSUS_ROWS))
    return table


def _census_section(ctx: TraceContext) -> str:
    from nsysq.plot import plot_census

    table = _census(ctx)
    picture = figure_html(svg(plot_census(table.to_pandas(), top=CENSUS_ROWS)), "nsysq plot census")
    argv = ["census", "TRACE", "--limit", str(CENSUS_ROWS)]
    return picture + result_html(table, argv, "rows", footer_path="footer")


def _lineup_section(ctx: TraceContext) -> str:
    from nsysq.analyses.lineup import lineup
    from nsysq.plot import plot_lineup

    table = lineup(ctx.trace)
    picture = figure_html(svg(plot_lineup(table.to_pandas())), "nsysq plot lineup")
    return picture + result_html(table, ["lineup", "TRACE"], "rows", footer_path="footer")


def _nvtx_section(ctx: TraceContext) -> str:
    from nsysq.analyses.nvtx import nvtx
    from nsysq.base.errors import NoDataError
    from nsysq.export import schema
    from nsysq.plot import plot_nvtx

    try:
        skipped = _unnested_note(ctx.trace)
        if skipped:
            return skipped
        # Not within Session.bounded_memory as gaps is: the attribution's temp tables (every GPU op
        # with its call, the stacks, the pairs) are read again step after step, and at 5M kernels /
        # 1.25M ranges a 300 MB bound made them spill and reload for over 10 minutes (bench/README).
        table = nvtx(ctx.trace, limit=NVTX_ROWS)
        ctx.trace.release_columns(schema.NVTX)  # no later section reads NVTX events
    except NoDataError:
        return (
            '<p class="nodata">No NVTX ranges in this trace: annotate the program with NVTX '
            "(torch.cuda.nvtx.range, nvtx.annotate, nvtxRangePush) and profile with "
            "nsys profile --trace=cuda,nvtx to see GPU time per range here.</p>"
        )
    frame = table.to_pandas()
    picture = figure_html(
        svg(plot_nvtx(frame, top=NVTX_DRAWN)), f"nsysq plot nvtx TRACE --limit {NVTX_DRAWN}"
    )
    argv = ["nvtx", "TRACE", "--limit", str(NVTX_ROWS)]
    return picture + result_html(table, argv, "rows", footer_path="footer")


def _unnested_note(trace: Session) -> str:
    """The note shown instead of the NVTX section when its attribution would take the quadratic
    fallback on many ranges ("" when the section is computed)."""
    from nsysq.analyses.nvtx import stack_check

    unnested, ranges = stack_check(trace)  # NVTX tables only; NoDataError without NVTX ranges
    if not unnested or ranges <= NVTX_UNNESTED_LIMIT:
        return ""
    return (
        f'<p class="nodata">NVTX ranges not computed for this report: {unnested:,} push/pop ranges '
        f"overlap without nesting on their thread (a real NVTX stack cannot), so the attribution "
        f"takes the plain interval join, quadratic per thread, and this trace has {ranges:,} ranges. "
        "<code>nsysq nvtx TRACE</code> computes it (slowly).</p>"
    )


def _top_kernels(ctx: TraceContext) -> list[str]:
    """The census's top kernels with a real name (not 'other', not an unresolved id)."""
    names = []
    for row in _census(ctx).records():
        name = str(row["name"])
        if row.get("rank") is not None and not name.startswith("<"):
            names.append(name)
    return names[:STAKEOUT_KERNELS]


def _launches(ctx: TraceContext, name: str, limit: int) -> Table:
    """``nsysq stakeout TRACE name --limit limit``, run once per report (the stakeout section and
    the timeline excerpt both read the top kernel's launches)."""
    from nsysq.analyses.stakeout import stakeout

    table: Table = ctx.once(f"stakeout {limit} {name}", lambda: stakeout(ctx.trace, name, limit=limit))
    return table


def _stakeout_section(ctx: TraceContext) -> str:
    from nsysq.analyses.stakeout import summary_table
    from nsysq.plot import plot_stakeout

    ctx.trace.require_kernels()
    body = ""
    for i, name in enumerate(_top_kernels(ctx)):
        launches = _launches(ctx, name, LAUNCHES_DRAWN if i == 0 else 1)
        body += f"<h3>{esc(name)}</h3>"
        if i == 0:
            drawn = len(launches.rows)
            caption = f"nsysq plot stakeout TRACE {name} --limit {LAUNCHES_DRAWN}"
            if drawn < int(launches.footer["launches"]):
                caption += f" (the first {drawn:,} of {int(launches.footer['launches']):,} launches)"
            body += figure_html(svg(plot_stakeout(launches.to_pandas())), caption)
        body += result_html(summary_table(launches), ["stakeout", "TRACE", name], "footer.summary")
    return body or '<p class="nodata">No named kernel to stake out.</p>'


def _first_launch_ms(ctx: TraceContext) -> float:
    """Where the timeline excerpt starts: the first launch of the census's top named kernel (the
    launches are in start order)."""
    names = _top_kernels(ctx)
    if not names:
        return 0.0
    launches = _launches(ctx, names[0], LAUNCHES_DRAWN)
    return int(launches.rows[0][launches.columns.index("start_ns")]) / 1e6


def _timeline_section(ctx: TraceContext) -> str:
    from nsysq.analyses.timeline import timeline
    from nsysq.plot import plot_timeline
    from nsysq.trace.notebook import timeline_table_frame

    ctx.trace.require_kernels()
    start_ms = _first_launch_ms(ctx)
    table = timeline(ctx.trace, start_ms=start_ms, limit=TIMELINE_ROWS)
    frame = timeline_table_frame(ctx.trace, table)
    argv = ["timeline", "TRACE", "--from", repr(start_ms), "--limit", str(TIMELINE_ROWS)]
    note = (
        f'<p class="note">The first {TIMELINE_ROWS} events from the first launch of the top kernel '
        f"({start_ms:,.3f} ms from the trace start).</p>"
    )
    picture = figure_html(svg(plot_timeline(frame)), "nsysq plot timeline (same window)")
    return note + picture + result_html(table, argv, "rows", footer_path="footer")


def _gaps_section(ctx: TraceContext) -> str:
    from nsysq.gputime.gaps import gaps
    from nsysq.plot.gaps import PLOT_TOP, gaps_result_frame, plot_gaps

    every = gaps(ctx.trace, top=PLOT_TOP)  # once: the plot colours every gap, the table lists the top
    picture = figure_html(svg(plot_gaps(gaps_result_frame(every), bins=GAPS_BINS)), "nsysq plot gaps")
    result = every.top(GAPS_TOP)
    del every
    argv = ["gaps", "TRACE", "--top", str(GAPS_TOP)]
    body = picture + result_html(result.devices, argv, "devices", footer_path="footer")
    body += "<h3>Busy per stream</h3>" + result_html(result.streams, argv, "streams")
    body += "<h3>Longest idle gaps</h3>" + result_html(result.gaps, argv, "gaps")
    return body


def _overlap_section(ctx: TraceContext) -> str:
    from nsysq.gputime.overlap import overlap
    from nsysq.plot.gaps import overlap_result_frame, plot_overlap

    result = overlap(ctx.trace)
    picture = figure_html(svg(plot_overlap(overlap_result_frame(result))), "nsysq plot overlap")
    body = picture + result_html(result.devices, ["overlap", "TRACE"], "devices", footer_path="footer")
    body += "<h3>Per collective kind</h3>" + result_html(
        result.collectives, ["overlap", "TRACE"], "collectives"
    )
    return body


TRACE_SECTIONS: list[ReportSection] = [
    ReportSection("info", "The trace", _info),
    ReportSection("census", "Census: GPU time per kernel", _census_section),
    ReportSection("lineup", "Lineup: GPU time per category", _lineup_section),
    ReportSection("nvtx", "NVTX ranges: GPU time per range name", _nvtx_section),
    ReportSection("gaps", "Gaps: when the GPU waited, and why", _gaps_section),
    ReportSection("overlap", "Overlap: communication and copies behind compute", _overlap_section),
    ReportSection("stakeout", "Stakeout of the top kernels", _stakeout_section),
    ReportSection("timeline", "Timeline excerpt", _timeline_section),
]
"""The sections of a one-trace report, in order. Add one line to add a section."""


def trace_report(trace: Session, sections: Sequence[ReportSection] | None = None) -> Report:
    """The report of one trace."""
    from nsysq.base.version import __version__

    ctx = TraceContext(trace)
    built = [PageSection(s.key, s.title, _guarded(s.build, ctx)) for s in sections or TRACE_SECTIONS]
    from nsysq.analyses.info import info

    data = ctx.kept.get("info") or info(trace)
    gpus = condensed(str(g["name"]) for g in data["gpus"]) or "unknown GPU"
    subtitle = [f"{gpus} · nsys {data['nsys_version']} · {Path(data['path']).name}"]
    html = page_html(f"nsysq report: {trace.path.name}", subtitle, built, f"nsysq {__version__}")
    return Report(html, tuple(data["warnings"]))


# -- two traces ----------------------------------------------------------------------------------
_DIFF_ARGV = ("diff", "A", "B")


def _board(ctx: DiffContext) -> str:
    from nsysq.base.table import Table

    findings = ctx.result.to_dict()["findings"]
    columns = ("kind", "severity", "clue", "evidence", "verdict")
    table = Table(kind="diff_board", columns=columns, rows=[tuple(f[c] for c in columns) for f in findings])
    if not findings:
        return (
            '<p class="note">No findings: nothing out of line at the default --threshold and --min-time.</p>'
        )
    classes = [str(f["severity"]) for f in findings]
    return result_html(table, _DIFF_ARGV, "findings", row_class=classes, cards=True)


def _diff_table(name: str, shown_rows: int | None = None) -> Callable[[DiffContext], str]:
    def build(ctx: DiffContext) -> str:
        table = ctx.result.section(name)
        if not table.rows:
            return '<p class="note">Nothing in this section.</p>'
        body = ""
        if name in ("categories", "kernels"):
            from nsysq.plot import plot_diff

            ax = plot_diff(ctx.result, section=name, top=DIFF_PLOT_ROWS)
            body += figure_html(svg(ax), f"nsysq plot diff A B --section {name}")
        people = ctx.result.section(name, "ms")
        return body + result_html(table, _DIFF_ARGV, name, shown_rows=shown_rows, people=people)

    return build


DIFF_SECTIONS: list[ReportSection] = [
    ReportSection("board", "Evidence board", _board),
    ReportSection("totals", "Totals (B/A)", _diff_table("totals")),
    ReportSection("categories", "Categories", _diff_table("categories")),
    ReportSection("kernels", "Kernels", _diff_table("kernels", DIFF_KERNEL_ROWS)),
    ReportSection("variants", "Kernels in only one trace, grouped", _diff_table("variants")),
    ReportSection("launch_config", "Launch configuration changes", _diff_table("launch_config")),
    ReportSection("danger", "Danger kernels (can change numerics)", _diff_table("danger")),
    ReportSection("copies", "Memory operations", _diff_table("copies")),
]
"""The sections of a diff report, in order: the evidence board first."""


def diff_report(
    a: Path,
    b: Path,
    *,
    cache: CacheMode = True,
    sections: Sequence[ReportSection] | None = None,
    nsys: str | Path | None = None,
    scope: Scope | None = None,
) -> Report:
    """The report of what changed from the trace at ``a`` to the one at ``b`` (``nsysq diff`` with its
    defaults; ``cache`` and ``nsys`` as ``nsysq.open`` takes them; ``scope``: the GPU work read on
    each side, e.g. ``--iteration``)."""
    from nsysq.base.version import __version__
    from nsysq.diffing import diff
    from nsysq.diffing.report import header

    result = diff(a, b, cache=cache, nsys=nsys, scope=scope)
    ctx = DiffContext(result)
    built = [PageSection(s.key, s.title, _guarded(s.build, ctx)) for s in sections or DIFF_SECTIONS]
    title = f"nsysq report: {a.name} → {b.name}"
    subtitle = [header(result).removeprefix("nsysq diff").strip()]
    subtitle += [f"warning: {w}" for w in result.warnings]
    return Report(page_html(title, subtitle, built, f"nsysq {__version__}"), tuple(result.warnings))


def write_report(report: Report, path: Path) -> int:
    """Write the page to ``path``; return its size in bytes."""
    try:
        path.write_text(report.html, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"could not write {path}: {exc.strerror or exc}.") from None
    return path.stat().st_size
