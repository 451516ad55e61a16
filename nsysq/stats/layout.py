"""nsys's own output layouts for a report: its CSV (``--format csv``) and its console table
(``--format column``).

* CSV: nsys's header cells, one line per row, no digit grouping, full names (quoted when they
  hold a comma or a quote, as Python's csv module and nsys do); floats with their fixed decimals
  (``0.0``, ``4.194``), integers as integers, a missing value as an empty cell.
* Column: a leading space, columns two spaces apart, each as wide as its widest cell or header;
  headers centred (an odd space on the right), a line of dashes under each, numbers right-aligned with
  their integer part grouped by three (nsys groups by the user's locale), text left-aligned and
  padded; names longer than ``NAME_WIDTH`` cut with ``…``."""

from __future__ import annotations

import csv
import io
from typing import Any

from nsysq.stats.model import COUNT, INT, MB, PCT, STAT, TEXT, TIME, Column, StatsReport
from nsysq.stats.numbers import group_digits

#: Names longer than this are cut in the console layout (nsys cuts near 100 characters).
NAME_WIDTH = 100
_DECIMALS = {PCT: 1, STAT: 1, MB: 3}


def plain_cell(column: Column, value: Any) -> str:
    """One value as nsys's CSV writes it."""
    if value is None:
        return ""
    if column.kind == TEXT:
        return str(value)
    if column.kind in _DECIMALS:
        return f"{float(value):.{_DECIMALS[column.kind]}f}"
    if column.kind in (TIME, COUNT, INT) and isinstance(value, float):
        return f"{value:.1f}"  # a time in another unit than ns (rounded to 1 decimal)
    return str(int(value)) if column.kind in (TIME, COUNT, INT) else str(value)


def csv_text(report: StatsReport) -> str:
    """The report as nsys's CSV: the header line, then one line per row."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(report.headers)
    table = report.table
    for row in table.rows if table is not None else []:
        writer.writerow([plain_cell(c, v) for c, v in zip(report.columns, row, strict=True)])
    return out.getvalue()


def _console_cell(column: Column, value: Any) -> str:
    text = plain_cell(column, value)
    if column.kind == TEXT:
        return text if len(text) <= NAME_WIDTH else text[: NAME_WIDTH - 1] + "…"
    if column.kind in (PCT, INT) or not text:
        return text
    return group_digits(text)


def _center(text: str, width: int) -> str:
    """``text`` centred in ``width``, an odd space on the right (as nsys does; Python's
    ``str.center`` sometimes puts it on the left)."""
    left = (width - len(text)) // 2
    return " " * left + text + " " * (width - len(text) - left)


def column_text(report: StatsReport) -> str:
    """The report's table as nsys's console prints it (header, dashes, rows; no title)."""
    table = report.table
    rows = table.rows if table is not None else []
    cells = [[_console_cell(c, v) for c, v in zip(report.columns, row, strict=True)] for row in rows]
    headers = report.headers
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    lines = [
        " " + "  ".join(_center(h, w) for h, w in zip(headers, widths, strict=True)),
        " " + "  ".join("-" * w for w in widths),
    ]
    for row in cells:
        parts = [
            text.ljust(w) if column.kind == TEXT else text.rjust(w)
            for column, text, w in zip(report.columns, row, widths, strict=True)
        ]
        lines.append(" " + "  ".join(parts))
    return "\n".join(lines) + "\n"
