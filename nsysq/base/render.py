"""Render a Table as a rich table, CSV, JSON or markdown. rich is imported only for ``table``."""

from __future__ import annotations

import csv
import json
import math
import os
from decimal import Decimal
from typing import IO, Any

from nsysq.base.errors import UsageError
from nsysq.base.table import Table

FORMATS = ("table", "csv", "json", "markdown")
_DECIMALS = {"ns": 0, "us": 1, "ms": 3, "s": 6}
_NAME_WIDTH = 72


def check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}.")
    return fmt


def _plain(value: Any) -> Any:
    """JSON-safe value: ints stay ints, NaN becomes null, Decimals become floats."""
    if isinstance(value, Decimal):
        value = float(value)
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    return value


def cell(column: str, value: Any, unit: str) -> str:
    """Human text for one value in table and markdown output."""
    value = _plain(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if column.endswith(("_pct", "_percent")):
        return f"{value:.1f}%"
    if column == "ratio" or column.endswith("_ratio"):
        return f"{value:.2f}x"
    if isinstance(value, float):
        if column.endswith("_" + unit):
            return f"{value:,.{_DECIMALS[unit]}f}"
        if value.is_integer() and abs(value) < 1e15:
            return f"{int(value):,}"
        return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}" if "id" not in column else str(value)
    text = str(value)
    if column in ("name", "demangled_name", "value") and len(text) > _NAME_WIDTH:
        return text[: _NAME_WIDTH - 1] + "…"
    return text


def _footer_lines(table: Table) -> list[str]:
    lines = []
    for key, value in table.footer.items():
        if isinstance(value, (list, dict)):
            continue
        lines.append(f"{key}: {cell(key, value, table.unit)}")
    return lines


def to_json(table: Table) -> dict[str, Any]:
    """The stable JSON document for a table (documented in docs/json.md)."""
    return {
        "kind": table.kind,
        "queries": list(table.queries),
        "unit": table.unit,
        "columns": list(table.columns),
        "rows": [{k: _plain(v) for k, v in zip(table.columns, row, strict=True)} for row in table.rows],
        "footer": json.loads(json.dumps(table.footer, default=_plain)),
        "notes": list(table.notes),
    }


def render(table: Table, fmt: str, out: IO[str], *, title: str | None = None) -> None:
    """Write ``table`` to ``out`` in ``fmt``."""
    check_format(fmt)
    if fmt == "json":
        json.dump(to_json(table), out, indent=2, default=str, ensure_ascii=False)
        out.write("\n")
    elif fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(table.columns)
        for row in table.rows:
            writer.writerow(["" if _plain(v) is None else _plain(v) for v in row])
    elif fmt == "markdown":
        if title:
            out.write(f"**{title}**\n\n")
        out.write("| " + " | ".join(table.columns) + " |\n")
        out.write("|" + "|".join("---" for _ in table.columns) + "|\n")
        for row in table.rows:
            cells = [
                cell(c, v, table.unit).replace("|", "\\|") for c, v in zip(table.columns, row, strict=True)
            ]
            out.write("| " + " | ".join(cells) + " |\n")
        lines = _footer_lines(table)
        if lines:
            out.write("\n" + "; ".join(lines) + "\n")
    else:
        _rich(table, out, title)


def _rich(table: Table, out: IO[str], title: str | None) -> None:
    """A rich table that never mangles a number: only name-like columns shrink (with an ellipsis),
    headers wrap at underscores, and if the numbers alone are wider than the terminal the table is
    printed wider rather than cropped."""
    from rich import box
    from rich.console import Console
    from rich.table import Table as RichTable

    probe = Console(file=out)
    width = probe.width if probe.is_terminal else int(os.environ.get("COLUMNS") or 200)
    cells = [[cell(c, v, table.unit) for c, v in zip(table.columns, row, strict=True)] for row in table.rows]
    caption = "  ".join(_footer_lines(table)) or None
    rt = RichTable(
        title=title, caption=caption, box=box.SIMPLE_HEAD, caption_justify="left", title_justify="left"
    )
    specs = []
    for i, column in enumerate(table.columns):
        values = [_plain(r[i]) for r in table.rows[:200] if _plain(r[i]) is not None]
        numeric = bool(values) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in values
        )
        header = column.replace("_", " ")
        natural = max([len(c[i]) for c in cells] + [max(len(w) for w in header.split())])
        specs.append((header, numeric, natural, not numeric and natural > 40))
    fixed = sum(natural + 3 for _, _, natural, wide in specs if not wide)
    n_wide = sum(1 for *_, wide in specs if wide)
    share = max(40, (width - fixed) // n_wide - 3) if n_wide else 0
    needed = fixed + sum(min(natural, share) + 3 for _, _, natural, wide in specs if wide)
    for header, numeric, natural, wide in specs:
        rt.add_column(
            header,
            justify="right" if numeric else "left",
            no_wrap=wide,
            overflow="ellipsis" if wide else "fold",
            min_width=min(natural, share) if wide else natural,
            max_width=min(natural, share) if wide else max(natural, len(header)),
        )
    for row in cells:
        rt.add_row(*row)
    # markup/emoji off: kernel names such as "k<[with T=float]>" or "a::fire::b" print as they are
    console = Console(
        file=out,
        soft_wrap=False,
        width=max(width, needed + 2 * len(specs)),
        markup=False,
        emoji=False,
        highlight=False,
    )
    console.print(rt, crop=False)
