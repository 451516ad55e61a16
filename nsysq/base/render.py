"""Render a Table as a rich table, CSV, JSON or markdown. rich is imported only for ``table``, and
only when the table cannot be written by hand (at a terminal, a cell that wraps)."""

from __future__ import annotations

import builtins
import csv
import json
import math
import os
import sys
import textwrap
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import IO, Any

from nsysq.base import json_text
from nsysq.base.errors import UsageError
from nsysq.base.table import Table
from nsysq.base.terminal import (
    ELLIPSIS,
    PROSE,
    UNKNOWN,
    Column,
    choose_columns,
    fit_widths,
    footer_lines,
    middle_ellipsis,
    table_width,
    view_in_force,
)

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


def cell(column: str, value: Any, unit: str, *, cut: bool = True) -> str:
    """Human text for one value in table and markdown output; a long name ends in an ellipsis
    unless not ``cut`` (the terminal table shortens names itself, to fit)."""
    value = _plain(value)
    if value is None:
        return "" if column == "rank" else UNKNOWN  # a rank-less row is the "other" row
    if isinstance(value, bool):
        return "yes" if value else "no"
    special = _special_format(column)
    if special is not None:
        return special.format(value)
    if isinstance(value, float):
        return _float_text(value, column.endswith("_" + unit), _DECIMALS[unit])
    if isinstance(value, int):
        return _int_text(value, column.endswith("id"))
    return _name_text(str(value), cut and column in _CUT_NAMES)


_CUT_NAMES = ("name", "demangled_name", "value")
"""The columns whose long texts :func:`cell` ends in an ellipsis."""


def _float_text(value: float, in_unit: bool, decimals: int) -> str:
    if in_unit:
        return f"{value:,.{decimals}f}"
    if value.is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.1f}"


def _int_text(value: int, is_id: bool) -> str:
    return str(value) if is_id else f"{value:,}"


def _name_text(text: str, cut: bool) -> str:
    return text[: _NAME_WIDTH - 1] + "…" if cut and len(text) > _NAME_WIDTH else text


def _special_format(column: str) -> str | None:
    """The format :func:`cell` gives a number of ``column`` by its name (None: by its type)."""
    if column.endswith(("_pct", "_percent")):
        return "{:.1f}%"
    if column == "score" or column.endswith("_score"):
        return "{:+.2f}"
    if column == "ratio" or column.endswith("_ratio"):
        return "{:.2f}x"
    return None


def column_cells(column: str, values: list[Any], unit: str, *, cut: bool = True) -> list[str]:
    """``[cell(column, v, unit, cut=cut) for v in values]``, the usual values (None, bool, int,
    str, finite float) formatted without the per-value checks of the column's name."""
    special = _special_format(column)
    number = special.format if special is not None else None
    is_id = column.endswith("id")
    in_unit = column.endswith("_" + unit)
    decimals = _DECIMALS[unit]
    cut_names = cut and column in _CUT_NAMES
    none_text = "" if column == "rank" else UNKNOWN
    fast = _one_kind_cells(values, number, is_id, in_unit, decimals)
    if fast is not None:
        return fast
    out: list[str] = []
    append = out.append
    for v in values:
        t = type(v)
        if t is int:
            append(number(v) if number is not None else str(v) if is_id else f"{v:,}")
        elif t is str and number is None:
            append(_name_text(v, cut_names))
        elif t is float and math.isfinite(v):
            append(number(v) if number is not None else _float_text(v, in_unit, decimals))
        elif v is None:
            append(none_text)
        elif t is bool:
            append("yes" if v else "no")
        else:
            append(cell(column, v, unit, cut=cut))
    return out


def _one_kind_cells(
    values: list[Any], number: Callable[[Any], str] | None, is_id: bool, in_unit: bool, decimals: int
) -> list[str] | None:
    """column_cells' texts of a column of ints alone, or of finite floats alone, by one format
    mapped over it (the usual numeric column); None for any other column."""
    kinds = set(map(type, values))
    if kinds == {int}:
        return list(map(number or (str if is_id else "{:,}".format), values))
    if kinds != {float} or not all(map(math.isfinite, values)):
        return None
    if number is not None:
        return list(map(number, values))
    if in_unit:
        return list(map(f"{{:,.{decimals}f}}".format, values))
    return None


def _footer_pairs(table: Table, *, labels: bool = True) -> list[tuple[str, str]]:
    """The footer's scalar entries as (label, text), the label the key with spaces for a person
    (``labels``) or the key itself; lists and tables are JSON only."""
    return [
        (key.replace("_", " ") if labels else key, cell(key, value, table.unit))
        for key, value in table.footer.items()
        if not isinstance(value, (list, dict))
    ]


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
        out.write(json_text.dumps(to_json(table)) + "\n")
    elif fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        columns = _asked_columns(table)
        writer.writerow([c.name for c in columns])
        for row in table.rows:
            writer.writerow(["" if _plain(v) is None else _plain(v) for v in (c.value(row) for c in columns)])
    elif fmt == "markdown":
        if title:
            out.write(f"**{title}**\n\n")
        columns = _asked_columns(table)
        out.write("| " + " | ".join(c.name for c in columns) + " |\n")
        out.write("|" + "|".join("---" for _ in columns) + "|\n")
        for row in table.rows:
            cells = [cell(c.source, c.value(row), table.unit).replace("|", "\\|") for c in columns]
            out.write("| " + " | ".join(cells) + " |\n")
        pairs = _footer_pairs(table, labels=False)  # markdown keeps the footer's keys as they are
        if pairs:
            out.write("\n" + "; ".join(f"{label}: {value}" for label, value in pairs) + "\n")
    else:
        _rich(table, out, title)


def _asked_columns(table: Table) -> list[Column]:
    """CSV and markdown: every column, or the ones ``--columns`` picks."""
    return choose_columns(table.kind, table.columns, table.rows, table.unit, at_terminal=False)[0]


def _rich(table: Table, out: IO[str], title: str | None) -> None:
    """A rich table that fits the terminal it is printed in (:mod:`nsysq.base.terminal`): the
    kind's compact columns (or ``--wide``/``--columns``), names shortened in the middle, numbers
    never cut, no row wrapped. Not at a terminal, every column, as wide as it needs; there a table
    of one-line cells is written by hand, as rich writes it, without importing rich
    (:func:`_by_hand`)."""
    plain = _plain_stream(out)
    probe = None
    if not plain:
        from rich.console import Console

        probe = Console(file=out)
    at_terminal = probe is not None and probe.is_terminal
    width = probe.width if probe is not None and at_terminal else int(os.environ.get("COLUMNS") or 200)
    columns, hidden = choose_columns(
        table.kind, table.columns, table.rows, table.unit, at_terminal=at_terminal
    )
    asked = view_in_force()  # --wide and --columns: what was asked is printed, however wide
    drop = at_terminal and not (asked.wide or asked.columns)
    shown, widths, numeric, texts = _fitted(table, columns, width, drop=drop, hidden=hidden)
    fitted = [_fit_column(c, col, w) for c, col, w in zip(shown, texts, widths, strict=True)]
    rows = [list(row) for row in zip(*fitted, strict=True)] or [[] for _ in table.rows]
    lines = footer_lines(_footer_pairs(table), width)
    if hidden:
        names = ", ".join(h.replace("_", " ") for h in hidden)
        lines += textwrap.wrap(f"not shown (--wide): {names}", width - 1, subsequent_indent="  ")
    heading = middle_ellipsis(title, width - 1) if title else None
    drawn = _by_hand(heading, shown, widths, numeric, rows, lines) if plain else None
    if drawn is not None:
        out.write(drawn)
    else:
        _rich_print(out, width, heading, (shown, widths, numeric, rows), lines)


def _rich_print(
    out: IO[str],
    width: int,
    heading: str | None,
    grid: tuple[list[Column], list[int], list[bool], list[list[str]]],
    lines: list[str],
) -> None:
    """The title, the table and the footer ``lines`` printed by rich."""
    from rich.console import Console

    shown, widths, numeric, rows = grid
    # markup/emoji off: kernel names such as "k<[with T=float]>" or "a::fire::b" print as they are
    console = Console(
        file=out,
        soft_wrap=False,
        width=max(width, table_width(widths) + 1),
        markup=False,
        emoji=False,
        highlight=False,
    )
    if heading is not None:
        console.print(heading, style="italic")
    if not _print_plain_rows(console, out, shown, widths, numeric, rows):
        console.print(_rich_table(shown, widths, numeric, rows), crop=False)
    for line in lines:
        console.print(line, style="dim")


_RICH_ENVIRONMENT = ("FORCE_COLOR", "TTY_COMPATIBLE")
"""Variables that make rich take a pipe or a file for a terminal (or decide it itself)."""


def _plain_stream(out: IO[str]) -> bool:
    """True when rich would see ``out`` as no terminal, writing UTF-8, without a notebook or Windows'
    legacy console: then its tables carry no style or colour, and can be written by hand."""
    if any(name in os.environ for name in _RICH_ENVIRONMENT) or sys.platform == "win32":
        return False
    if "IPython" in sys.modules or "idlelib" in sys.modules or hasattr(builtins, "get_ipython"):
        return False
    encoding = getattr(out, "encoding", "utf-8") or "utf-8"
    if not (isinstance(encoding, str) and encoding.lower().startswith("utf")):
        return False
    isatty = getattr(out, "isatty", None)
    try:
        return isatty is not None and not isatty()
    except ValueError:  # a closed file: rich's own answer, written by rich
        return False


def _by_hand(
    heading: str | None,
    shown: list[Column],
    widths: list[int],
    numeric: list[bool],
    rows: list[list[str]],
    lines: list[str],
) -> str | None:
    """The text rich prints for the title, the table (box SIMPLE_HEAD, edges padded) and the footer
    ``lines`` on a console that is no terminal, when every cell fits its column on one line and
    every header splits at its spaces; None (rich draws) otherwise. tests/test_render.py compares
    the two over many tables."""
    console_width = max(int(os.environ.get("COLUMNS") or 200), table_width(widths) + 1)
    texts = [heading, *lines] if heading is not None else lines
    if not shown or not all(len(t) <= console_width and _printable(t) for t in texts):
        return None
    body_rows = _body_lines(rows, widths, [c.source in PROSE for c in shown])
    head = [_header_lines(c.name.replace("_", " "), w) for c, w in zip(shown, widths, strict=True)]
    if body_rows is None or any(h is None for h in head):
        return None
    height = max(len(h) for h in head if h is not None)
    stacked = [[""] * (height - len(h)) + h for h in head if h is not None]  # headers sit at the bottom
    edge = " " * table_width(widths)
    rule = " " + "\u2500" * (table_width(widths) - 2) + " "
    body = [_plain_row(list(cells), widths, numeric) for cells in zip(*stacked, strict=True)]
    body += [rule, *_plain_rows(body_rows, widths, numeric), edge]
    return "".join(line + "\n" for line in [*([heading] if heading is not None else []), edge, *body, *lines])


def _body_lines(rows: list[list[str]], widths: list[int], prose: list[bool]) -> list[tuple[str, ...]] | None:
    """The body's lines: each cell on one line, but a sentence (:data:`PROSE`) longer than its
    column folded at its spaces as rich folds it, the row's other cells at the top (rich's default);
    None when a cell cannot be written so (rich draws the table). Checked a column at a time."""
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in widths]
    fits = [_one_line_each(col, w) for col, w in zip(columns, widths, strict=True)]
    if all(fits):
        return [tuple(cells) for cells in rows]
    if not all(fit or is_prose for fit, is_prose in zip(fits, prose, strict=True)):
        return None
    folding = [i for i, fit in enumerate(fits) if not fit]
    long_rows = {k for i in folding for k in _long_cells(columns[i], widths[i])}
    lines: list[tuple[str, ...]] = []
    for k, cells in enumerate(rows):
        if k not in long_rows:  # every cell on one line (most rows of a long table)
            lines.append(tuple(cells))
            continue
        parts = [[t] for t in cells]
        for i in folding:
            folded = [cells[i]] if _one_line(cells[i], widths[i]) else _words_folded(cells[i], widths[i])
            if folded is None:
                return None
            parts[i] = folded
        height = max(len(p) for p in parts)
        lines += zip(*(p + [""] * (height - len(p)) for p in parts), strict=True)
    return lines


def _long_cells(texts: tuple[str, ...], width: int) -> list[int]:
    """The cells of a column that are not :func:`_one_line`: those longer than ``width`` when the
    others pass :func:`_one_line_each` together (the usual: a sentence too long), else a check each."""
    longer = [k for k, t in enumerate(texts) if len(t) > width]
    skip = set(longer)
    if _one_line_each(tuple(t for k, t in enumerate(texts) if k not in skip), width):
        return longer
    return [k for k, t in enumerate(texts) if not _one_line(t, width)]


def _one_line_each(texts: tuple[str, ...], width: int) -> bool:
    """Whether every text of a column is :func:`_one_line` in ``width``, in a few passes over the
    column joined (a cell never holds NUL: it is not printable)."""
    if not texts:
        return True
    if max(map(len, texts)) > width:
        return False
    joined = "\x00".join(texts)
    edges = joined[:1] == " " or joined[-1:] == " " or " \x00" in joined or "\x00 " in joined
    return not edges and "  " not in joined and _printable(joined.replace("\x00", ""))


def _words_folded(text: str, width: int) -> list[str] | None:
    """``text`` folded into ``width`` at its single spaces, as many words to a line as fit (rich's
    wrap of a cell); None when a word is longer than the column or the text is odd."""
    words = text.split(" ")
    if not _printable(text) or not all(0 < len(w) <= width for w in words):
        return None
    lines = [words[0]]
    for word in words[1:]:
        if len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def _header_lines(name: str, width: int) -> list[str] | None:
    """A column's header as rich folds it into ``width`` (:func:`_words_folded`, ASCII only); None
    when a word is longer than the column (rich would cut it) or the spacing is odd."""
    return _words_folded(name, width) if name.isascii() else None


def _rich_table(shown: list[Column], widths: list[int], numeric: list[bool], rows: list[list[str]]) -> Any:
    from rich import box
    from rich.table import Table as RichTable

    rt = RichTable(box=box.SIMPLE_HEAD, pad_edge=True)
    for column, w, is_number in zip(shown, widths, numeric, strict=True):
        rt.add_column(
            column.name.replace("_", " "),
            justify="right" if is_number else "left",
            overflow="fold",  # headers wrap at their spaces; cells are cut to ``w`` already
            min_width=w,
            max_width=w,
        )
    for cells in rows:
        rt.add_row(*cells)
    return rt


PLAIN_ROWS = 40
"""From this many rows, the rows whose every cell fits its column on one line (plain printable
ASCII, no leading, trailing or double spaces) are written as rich writes them, without rich: rich
lays out each of 3,405 rows of a fleet's collectives in 2.5 s of CPU, and 12,500 iterations in 10 s.
rich still draws the header, the first such row (which must be the one written by hand, else rich
draws everything) and, one at a time, each row that wraps; when most rows wrap, rich draws all."""


def _print_plain_rows(
    console: Any,
    out: IO[str],
    shown: list[Column],
    widths: list[int],
    numeric: list[bool],
    rows: list[list[str]],
) -> bool:
    """Print the table with its one-line rows written by hand, when that gives rich's output (see
    PLAIN_ROWS); False, having printed nothing, when it might not."""
    if len(rows) < PLAIN_ROWS:
        return False
    plain = _plain_flags(rows, widths)
    if 2 * plain.count(True) < len(rows):
        return False

    def drawn(one: list[str]) -> list[str]:
        with console.capture() as captured:
            console.print(_rich_table(shown, widths, numeric, [one]), crop=False)
        return list(captured.get().split("\n"))

    lines = drawn(rows[plain.index(True)])
    first = _plain_row(rows[plain.index(True)], widths, numeric)
    if lines.count(first) != 1:
        return False
    at = lines.index(first)
    head, tail = lines[:at], lines[at + 1 :]
    body: list[str] = []
    for cells, one_line, text in zip(rows, plain, _plain_rows(rows, widths, numeric), strict=True):
        if one_line:
            body.append(text)
            continue
        own = drawn(cells)  # a row that wraps: rich's own lines for it, between the same head and tail
        if own[:at] != head or own[len(own) - len(tail) :] != tail or len(own) <= len(head) + len(tail):
            return False
        body.extend(own[at : len(own) - len(tail)])
    out.write("\n".join([*head, *body, *tail]))
    return True


def _plain_flags(rows: list[list[str]], widths: list[int]) -> list[bool]:
    """Per row: every cell is :func:`_one_line` in its column (a column whose every cell is, as a
    whole, by joined texts: printable ASCII throughout, none too long, none with a leading,
    trailing or double space; the others cell by cell)."""
    flags = [True] * len(rows)
    for k, width in enumerate(widths):
        texts = [cells[k] for cells in rows]
        if _column_one_line(texts, width):
            continue
        flags = [f and _one_line(t, width) for f, t in zip(flags, texts, strict=True)]
    return flags


def _column_one_line(texts: list[str], width: int) -> bool:
    if not texts or max(map(len, texts)) > width:
        return False
    joined = "".join(texts).replace(ELLIPSIS, ".").replace(UNKNOWN, "-")
    if not (joined.isascii() and joined.isprintable()):
        return False
    spaced = "\x00" + "\x00".join(texts) + "\x00"  # printable ASCII: the only whitespace is " "
    return " \x00" not in spaced and "\x00 " not in spaced and "  " not in spaced


def _one_line(text: str, width: int) -> bool:
    return len(text) <= width and _printable(text) and text == text.strip() and "  " not in text


def _printable(text: str) -> bool:
    """Printable ASCII, or the ellipsis and the unknown's dash: one cell each, as rich counts them."""
    ascii_ = text.replace(ELLIPSIS, ".").replace(UNKNOWN, "-")
    return ascii_.isascii() and ascii_.isprintable()


def _plain_rows(rows: Sequence[Sequence[str]], widths: list[int], numeric: list[bool]) -> list[str]:
    """``[_plain_row(list(cells), widths, numeric) for cells in rows]``: one format call a row (a
    pad per cell and a join per row cost twice as much on a 12,500-row table)."""
    line = _row_format(widths, numeric)
    return [line(*cells) for cells in rows]


def _plain_row(cells: list[str], widths: list[int], numeric: list[bool]) -> str:
    """One body row as rich's SIMPLE_HEAD box draws it: an edge and a pad each side, three spaces
    between columns."""
    return _row_format(widths, numeric)(*cells)


def _row_format(widths: list[int], numeric: list[bool]) -> Callable[..., str]:
    """The format of a row of ``widths``: numbers padded on the left, text on the right."""
    cells = "   ".join(f"{{:{'>' if num else '<'}{w}}}" for w, num in zip(widths, numeric, strict=True))
    return f"  {cells}  ".format


def _fitted(
    table: Table, columns: list[Column], width: int, *, drop: bool, hidden: list[str]
) -> tuple[list[Column], list[int], list[bool], list[list[str]]]:
    """The columns that fit ``width``, their widths, which are numbers, and their cells' texts
    (uncut). Text columns shrink first; at a terminal (``drop``) the rightmost columns are then left
    out (added to ``hidden``) until the rest fit."""
    unit = table.unit
    by_index = list(zip(*table.rows, strict=True)) if table.rows else []  # the table's columns

    def values(c: Column) -> list[Any]:
        return (
            list(by_index[c.index]) if c.index is not None and by_index else [c.value(r) for r in table.rows]
        )

    texts = [column_cells(c.source, values(c), unit, cut=False) for c in columns]
    numeric = [_is_numeric([c.value(r) for r in table.rows[:200]]) for c in columns]
    floors = [max(len(w) for w in c.name.split("_")) for c in columns]
    naturals = [max(max(map(len, col), default=0), floor) for col, floor in zip(texts, floors, strict=True)]
    limit = width - 1 if drop else max(width - 1, table_width(naturals))
    if not drop:  # a pipe or a file: today's full table, the long names capped
        naturals = [
            n if num else min(n, max(40, limit // 3)) for n, num in zip(naturals, numeric, strict=True)
        ]
    keep = list(range(len(columns)))
    while True:
        widths = _widths(keep, naturals, floors, numeric, limit)
        if table_width(widths) <= limit or len(keep) <= _ALWAYS_SHOWN:
            break
        hidden.insert(0, columns[keep.pop()].name)
    return [columns[i] for i in keep], widths, [numeric[i] for i in keep], [texts[i] for i in keep]


_ALWAYS_SHOWN = 3  # columns never left out to fit (their names shrink further instead)


def _widths(
    keep: list[int], naturals: list[int], floors: list[int], numeric: list[bool], limit: int
) -> list[int]:
    """Widths of the ``keep`` columns: names no shorter than comfortable, unless only the first
    few columns are left, when they shrink as far as they must."""
    args = ([naturals[i] for i in keep], [floors[i] for i in keep], [not numeric[i] for i in keep], limit)
    return fit_widths(*args, tight=len(keep) <= _ALWAYS_SHOWN)


def _is_numeric(values: list[Any]) -> bool:
    present = [_plain(v) for v in values if _plain(v) is not None]
    return bool(present) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present)


def _fit_column(column: Column, texts: list[str], width: int) -> list[str]:
    """A column's ``texts``, names cut in the middle to ``width``; a sentence (:data:`PROSE`)
    whole, rich wraps it."""
    if column.source in PROSE or not texts or max(map(len, texts)) <= width:
        return texts
    return [middle_ellipsis(text, width) for text in texts]
