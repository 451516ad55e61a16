"""Render a :class:`~nsysq.diffing.DiffResult` for people and programs: the header line, the
evidence board and the section tables, as a rich table, markdown, CSV or JSON.

``render_diff`` writes what ``nsysq diff`` prints; ``render_board`` writes the header and the
evidence board alone. The sections print through :func:`nsysq.base.sections.render_sections`, as
the other commands' sections do; JSON is the diff's own document (docs/diff.md). rich is imported
only for the ``table`` format.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import IO, TYPE_CHECKING

from nsysq.base.errors import UsageError
from nsysq.base.render import render
from nsysq.base.sections import render_sections
from nsysq.base.units import condensed

if TYPE_CHECKING:
    from nsysq.base.table import Table
    from nsysq.diffing.result import DiffResult
    from nsysq.diffing.side import SideInfo

__all__ = [
    "BOARD",
    "DEFAULT_KERNEL_ROWS",
    "SECTION_TITLES",
    "check_options",
    "header",
    "render_board",
    "render_diff",
]

BOARD = "board"
"""The name of the evidence board among the sections (``--section board``)."""
DEFAULT_KERNEL_ROWS = 20
"""Kernel rows shown in table and markdown output (outliers first); 0 shows every row."""

SECTION_TITLES = {
    "totals": "Totals (B/A)",
    "categories": "Categories",
    "kernels": "Kernels",
    "variants": "Kernels in only one trace, grouped",
    "launch_config": "Launch configuration changes (kernels in both)",
    "danger": "Danger kernels (can change numerics)",
    "copies": "Memory operations",
}
_SKIP_WHEN_EMPTY = ("variants", "launch_config", "danger")
# Columns shown in table/markdown output; JSON and CSV carry every column.
_SHOWN_COLUMNS: dict[str, tuple[str, ...]] = {
    "categories": (
        "category",
        "status",
        "calls_a",
        "calls_b",
        "a_{u}",
        "b_{u}",
        "avg_a_{u}",
        "avg_b_{u}",
        "ratio",
        "score",
        "outlier",
        "top_kernel",
    ),
    "kernels": (
        "name",
        "category",
        "status",
        "calls_a",
        "calls_b",
        "a_{u}",
        "b_{u}",
        "ratio",
        "score",
        "outlier",
        "pattern",
    ),
    "variants": (
        "category",
        "family",
        "new_kernels",
        "new_{u}",
        "removed_kernels",
        "removed_{u}",
        "new_names",
        "removed_names",
    ),
    "launch_config": (
        "name",
        "calls_a",
        "calls_b",
        "grid_a",
        "grid_b",
        "block_a",
        "block_b",
        "registers_a",
        "registers_b",
        "smem_a",
        "smem_b",
        "configs_a",
        "configs_b",
        "changed",
    ),
    "danger": ("kind", "name", "calls_a", "calls_b", "a_{u}", "b_{u}", "presence", "reason"),
    "copies": (
        "operation",
        "kind",
        "ops_a",
        "ops_b",
        "ops_ratio",
        "bytes_a",
        "bytes_b",
        "bytes_ratio",
    ),
}
_SEVERITY_STYLE = {"high": "bold red", "medium": "yellow", "low": "dim"}
_NO_FINDINGS = "nothing out of line at the current --threshold and --min-time"


def header(result: DiffResult) -> str:
    """One line naming both sides: ``nsysq diff   A: name (GPU, nsys v)   →   B: ...``."""

    def side(label: str, info: SideInfo) -> str:
        gpus = condensed(info.gpus) or "unknown GPU"
        scope = f", scope {info.scope}" if info.scope else ""
        return f"{label}: {info.name} ({gpus}, nsys {info.nsys_version}{scope})"

    return f"nsysq diff   {side('A', result.a)}   →   {side('B', result.b)}"


def render_board(result: DiffResult, fmt: str, out: IO[str]) -> None:
    """Write the header and the evidence board: a rich table (``table``), markdown, or in CSV and
    JSON the board's rows (one per finding)."""
    if fmt == "table":
        _board_rich(result, out)
    elif fmt == "markdown":
        _board_markdown(result, out)
    elif fmt == "json":
        out.write(json.dumps(result.to_dict()["findings"], indent=2, ensure_ascii=False) + "\n")
    else:
        render(result.board_table(), fmt, out)


def render_diff(
    result: DiffResult,
    fmt: str,
    out: IO[str],
    *,
    unit: str = "ns",
    section: str | None = None,
    limit: int = DEFAULT_KERNEL_ROWS,
) -> None:
    """Write what ``nsysq diff`` prints: the whole result, or one ``section`` (``board`` or a name
    in SECTION_TITLES). JSON is the full document; CSV one section (kernels unless told); table and
    markdown the board then every section, kernels cut to ``limit`` rows (0 = all)."""
    check_options(section, limit)
    if fmt == "json":
        _diff_json(result, out, unit, section)
        return
    if fmt == "csv":
        shown = section or "kernels"
        table = result.board_table() if shown == BOARD else result.section(shown, unit)
        render_sections("diff", {shown: table}, {shown: shown}, "csv", out)
        return
    names = [section] if section else [BOARD, *SECTION_TITLES]
    if BOARD in names:
        render_board(result, fmt, out)
    tables, titles = _for_people(result, [n for n in names if n != BOARD], unit, limit)
    if tables:
        render_sections("diff", tables, titles, fmt, out, optional=_SKIP_WHEN_EMPTY)


def check_options(section: str | None, limit: int) -> None:
    """Raise UsageError unless ``section`` is None or a section name and ``limit`` is 0 or more
    (callers check before the diff runs, so a typo costs nothing)."""
    if section is not None and section != BOARD and section not in SECTION_TITLES:
        choices = ", ".join((BOARD, *SECTION_TITLES))
        raise UsageError(f"unknown diff section {section!r}; use one of {choices}.")
    if limit < 0:
        raise UsageError("--limit must be 0 (every kernel) or a positive number of rows.")


def _diff_json(result: DiffResult, out: IO[str], unit: str, section: str | None) -> None:
    if section is None:
        out.write(result.to_json(unit) + "\n")
        return
    key = "findings" if section == BOARD else section
    out.write(json.dumps(result.to_dict(unit)[key], indent=2, ensure_ascii=False) + "\n")


def _for_people(
    result: DiffResult, names: list[str], unit: str, limit: int
) -> tuple[dict[str, Table], dict[str, str]]:
    """The sections ``names`` as table and markdown show them (_shown), with their titles."""
    tables: dict[str, Table] = {}
    titles: dict[str, str] = {}
    for name in names:
        table = result.section(name, unit)
        tables[name] = _shown(table, name, unit, limit)
        titles[name] = SECTION_TITLES[name]
        if len(tables[name].rows) < len(table.rows):
            titles[name] += f" (top {len(tables[name].rows)} of {len(table.rows)}; --limit 0 for all)"
    return tables, titles


def _shown(table: Table, section: str, unit: str, limit: int) -> Table:
    """The columns people read for ``section``; kernels cut to the first ``limit`` rows."""
    rows = table.rows
    if section == "kernels" and 0 < limit < len(rows):
        rows = rows[:limit]
    wanted = [c.format(u=unit) for c in _SHOWN_COLUMNS.get(section, table.columns)]
    idx = [table.columns.index(c) for c in wanted if c in table.columns]
    return replace(
        table,
        columns=tuple(table.columns[i] for i in idx),
        rows=[tuple(r[i] for i in idx) for r in rows],
    )


def _board_rich(result: DiffResult, out: IO[str]) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table as RichTable

    probe = Console(file=out)
    console = Console(  # markup/emoji off: kernel names print as they are
        file=out, width=probe.width if probe.is_terminal else 160, markup=False, emoji=False, highlight=False
    )
    console.print(header(result), markup=False, highlight=False)
    board = RichTable(title="Evidence board", title_justify="left", box=box.SIMPLE_HEAD, show_lines=True)
    for col, ratio in (("#", 0), ("clue", 3), ("evidence", 5), ("verdict", 4)):
        board.add_column(col, ratio=ratio or None, overflow="fold", no_wrap=(col == "#"))
    for i, f in enumerate(result.findings, start=1):
        board.add_row(str(i), f.clue, f.evidence, f.verdict, style=_SEVERITY_STYLE.get(f.severity))
    if not result.findings:
        board.add_row("-", "no findings", _NO_FINDINGS, "")
    console.print(board)


def _board_markdown(result: DiffResult, out: IO[str]) -> None:
    out.write(f"**{header(result)}**\n\n")
    out.write("**Evidence board**\n\n| # | Clue | Evidence | Verdict |\n|---|---|---|---|\n")
    for i, f in enumerate(result.findings, start=1):
        cells = [str(i), f.clue, f.evidence, f.verdict]
        out.write("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |\n")
    if not result.findings:
        out.write("| - | no findings | | |\n")
    out.write("\n")
