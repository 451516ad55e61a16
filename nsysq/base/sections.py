"""Render a result made of several named tables (``nsysq gaps``, ``nsysq overlap``, ``nsysq fleet``, and
the sections of ``nsysq diff`` in table, markdown and CSV).

JSON is one document holding every section's rows (or, for one ``section``, that table's own
document); CSV is one section (the first unless told); table and markdown print every section
(or the one asked for) under its title, through :func:`nsysq.base.render.render`.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import IO, Any

from nsysq.base.errors import UsageError
from nsysq.base.render import render, to_json
from nsysq.base.table import Table
from nsysq.base.terminal import several_tables


def check_section(section: str | None, names: Mapping[str, str]) -> None:
    if section is not None and section not in names:
        raise UsageError(f"unknown section {section!r}; use one of {', '.join(names)}.")


def sections_document(kind: str, tables: Mapping[str, Table]) -> dict[str, Any]:
    """``{"kind", "unit", "queries", <section>: [rows], ..., "footer", "notes"}``: footer and notes
    are the first table's (documented per command in docs/json.md)."""
    first = next(iter(tables.values()))
    doc: dict[str, Any] = {"kind": kind, "unit": first.unit, "queries": list(first.queries)}
    for name, table in tables.items():
        doc[name] = to_json(table)["rows"]
    doc["footer"] = to_json(first)["footer"]
    doc["notes"] = list(first.notes)
    return doc


def render_sections(
    kind: str,
    tables: Mapping[str, Table],
    titles: Mapping[str, str],
    fmt: str,
    out: IO[str],
    *,
    section: str | None = None,
    optional: Collection[str] | None = None,
) -> None:
    """Write ``tables`` (already in their output unit) to ``out`` in ``fmt``. In table and markdown
    output, the sections named in ``optional`` are left out when they have no rows (None: every
    section but the first)."""
    check_section(section, titles)
    if fmt == "json":
        if section is None:
            json.dump(sections_document(kind, tables), out, indent=2, default=str, ensure_ascii=False)
        else:
            json.dump(to_json(tables[section]), out, indent=2, default=str, ensure_ascii=False)
        out.write("\n")
        return
    if fmt == "csv":
        render(tables[section or next(iter(tables))], "csv", out)
        return
    skipped = list(tables)[1:] if optional is None else optional
    with several_tables():
        for name in [section] if section else list(tables):
            table = tables[name]
            if not table.rows and name in skipped:
                continue
            render(table, fmt, out, title=titles[name])
            if fmt == "markdown":
                out.write("\n")
