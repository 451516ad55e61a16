"""CLI commands for diff, registered on the shared app (imported at the end of nsysq.cli)."""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import IO, TYPE_CHECKING, Annotated

import typer

from nsysq.cli import (
    DangerRulesOpt,
    Format,
    FormatOpt,
    MinTimeOpt,
    NoCacheOpt,
    RulesOpt,
    ThresholdOpt,
    TraceAArg,
    TraceBArg,
    Unit,
    UnitOpt,
    _err,
    _open,
    _unit,
    app,
)

if TYPE_CHECKING:
    from nsysq.diffing import DiffResult
    from nsysq.table import Table

FAIL_EXIT_CODE = 3


class Section(StrEnum):
    board = "board"
    totals = "totals"
    categories = "categories"
    kernels = "kernels"
    variants = "variants"
    launch_config = "launch_config"
    danger = "danger"
    copies = "copies"


_TITLES = {
    "totals": "Totals (B/A)",
    "categories": "Categories",
    "kernels": "Kernels",
    "variants": "Kernels in only one trace, grouped",
    "launch_config": "Launch configuration changes (kernels in both)",
    "danger": "Danger kernels (can change numerics)",
    "copies": "Memory operations",
}
# Columns shown in table/markdown output; JSON and CSV carry every column.
_SHOW: dict[str, tuple[str, ...]] = {
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


def _project(table: Table, section: str, unit: str, limit: int) -> Table:
    from dataclasses import replace

    rows = table.rows
    if section == "kernels" and limit > 0 and len(rows) > limit:
        rows = rows[:limit]
    wanted = [c.format(u=unit) for c in _SHOW.get(section, table.columns)]
    idx = [table.columns.index(c) for c in wanted if c in table.columns]
    return replace(
        table,
        columns=tuple(table.columns[i] for i in idx),
        rows=[tuple(r[i] for i in idx) for r in rows],
    )


def _header(result: DiffResult) -> str:
    def side(label: str, about: dict[str, object]) -> str:
        gpus = ", ".join(str(g) for g in about["gpus"]) or "unknown GPU"  # type: ignore[attr-defined]
        return f"{label}: {about['name']} ({gpus}, nsys {about['nsys_version']})"

    return f"nsysq diff   {side('A', result.a)}   →   {side('B', result.b)}"


def _board_rich(result: DiffResult, out: IO[str]) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table as RichTable

    probe = Console(file=out)
    console = Console(  # markup/emoji off: kernel names print as they are
        file=out, width=probe.width if probe.is_terminal else 160, markup=False, emoji=False, highlight=False
    )
    console.print(_header(result), markup=False, highlight=False)
    board = RichTable(title="Evidence board", title_justify="left", box=box.SIMPLE_HEAD, show_lines=True)
    for col, ratio in (("#", 0), ("clue", 3), ("evidence", 5), ("verdict", 4)):
        board.add_column(col, ratio=ratio or None, overflow="fold", no_wrap=(col == "#"))
    style = {"high": "bold red", "medium": "yellow", "low": "dim"}
    for i, f in enumerate(result.findings, start=1):
        board.add_row(str(i), f.clue, f.evidence, f.verdict, style=style.get(f.severity))
    if not result.findings:
        board.add_row("-", "no findings", "nothing out of line at the current --threshold and --min-time", "")
    console.print(board)


def _board_markdown(result: DiffResult, out: IO[str]) -> None:
    out.write(f"**{_header(result)}**\n\n")
    out.write("**Evidence board**\n\n| # | Clue | Evidence | Verdict |\n|---|---|---|---|\n")
    for i, f in enumerate(result.findings, start=1):
        cells = [str(i), f.clue, f.evidence, f.verdict]
        out.write("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |\n")
    if not result.findings:
        out.write("| - | no findings | | |\n")
    out.write("\n")


@app.command()
def diff(
    a: TraceAArg,
    b: TraceBArg,
    fmt: FormatOpt = Format.table,
    unit: UnitOpt = None,
    min_time: MinTimeOpt = 0.5,
    threshold: ThresholdOpt = 3.0,
    rules: RulesOpt = None,
    danger_rules: DangerRulesOpt = None,
    limit: Annotated[
        int, typer.Option("--limit", "-n", help="Kernel rows to show (outliers first); 0 = all.")
    ] = 20,
    fail_on: Annotated[
        str | None,
        typer.Option(
            "--fail-on",
            help="Exit with code 3 when a finding of these kinds exists: a comma list of outlier, "
            "danger, new_variants (new), removed_variants (removed), variants, copy_change (copy), "
            "launch_config (launch), any.",
        ),
    ] = None,
    section: Annotated[
        Section | None,
        typer.Option(
            "--section",
            help="Print only this section (csv prints the kernels section unless told otherwise).",
        ),
    ] = None,
    no_cache: NoCacheOpt = False,
) -> None:
    """Compare two traces: totals, categories, kernels, variants, copies, and which change is out of line."""
    from nsysq.diffing import diff as compute
    from nsysq.diffing import parse_fail_on
    from nsysq.render import render

    kinds = parse_fail_on(fail_on) if fail_on else ()
    if limit < 0:
        from nsysq.errors import UsageError

        raise UsageError("--limit must be 0 (every kernel) or a positive number of rows.")

    with (  # A's kernel pass starts decoding now; B's once A's rows are freed (nsysq.diffing)
        _open(a, no_cache=no_cache, prefetch="kernel_groups") as ta,
        _open(b, no_cache=no_cache, prefetch=None) as tb,
    ):
        result: DiffResult = compute(
            ta, tb, rules=rules, danger_rules=danger_rules, min_time_ms=min_time, threshold=threshold
        )

    for warning in result.warnings:
        _err("warning: " + warning)

    u = _unit(fmt, unit)
    out = sys.stdout
    if fmt == Format.json:
        if section is None:
            out.write(result.to_json(u) + "\n")
        else:
            import json

            doc = result.to_dict(u)
            key = "findings" if section == Section.board else section.value
            out.write(json.dumps(doc[key], indent=2, ensure_ascii=False) + "\n")
    elif fmt == Format.csv:
        name = (section or Section.kernels).value
        table = result.board_table() if name == "board" else result.section(name, u)
        render(table, "csv", out)
    else:
        names = [section.value] if section else ["board", *(_TITLES)]
        for name in names:
            if name == "board":
                if fmt == Format.markdown:
                    _board_markdown(result, out)
                else:
                    _board_rich(result, out)
                continue
            table = result.section(name, u)
            if not table.rows and name in ("variants", "launch_config", "danger"):
                continue
            shown = _project(table, name, u, limit)
            title = _TITLES[name]
            if name == "kernels" and len(shown.rows) < len(table.rows):
                title += f" (top {len(shown.rows)} of {len(table.rows)}; --limit 0 for all)"
            render(shown, fmt.value, out, title=title)
            if fmt == Format.markdown:
                out.write("\n")

    if kinds:
        hits = result.fails_on(kinds)
        if hits:
            _err(
                f"--fail-on: {len(hits)} finding(s) of kind "
                + ", ".join(sorted({h.kind for h in hits}))
                + f"; exiting with code {FAIL_EXIT_CODE}."
            )
            raise typer.Exit(FAIL_EXIT_CODE)


__all__ = ["FAIL_EXIT_CODE", "Unit", "diff"]
