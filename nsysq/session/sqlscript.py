"""``--show-sql``: the SQL behind a result as one script that runs as printed in the ``duckdb`` CLI.

A :class:`~nsysq.session.Session` records every statement it runs as a :class:`Statement` (the
packaged query, the temp tables nsysq builds, the lineup rules as literal rows). :func:`script_for`
(``Session.script()``) puts in front of them what the session set up when it opened the export:
DuckDB's sqlite extension loaded from the installed package's file (no INSTALL, nothing from the
network), the export attached read-only, the canonical views (``nsysq.export.schema``: every nsys
version looks the same), the macros and derived views of ``queries/``; and writes each parameter as
an SQL literal. The last statement's rows are the command's result.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from nsysq import catalog
from nsysq.base.errors import QueryError
from nsysq.export import schema
from nsysq.export.schema import quote

if TYPE_CHECKING:
    import duckdb

    from nsysq.export.check import SourceSchema

SOURCE_ALIAS = "src"
# A $parameter, or a comment / string / quoted identifier to copy unchanged.
_TOKEN = re.compile(r"""--[^\n]*|'(?:[^']|'')*'|"(?:[^"]|"")*"|\$([A-Za-z_][A-Za-z0-9_]*)""")


@dataclass(frozen=True)
class Statement:
    """One statement a Trace ran: its SQL (``$name`` parameters bound from ``params``) and the
    ``name@version`` label of the packaged file it runs ("" for nsysq's own glue SQL)."""

    sql: str
    params: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""
    note: str = ""

    def filled(self) -> str:
        """The SQL with every parameter written as a literal."""
        return fill(self.sql, self.params)

    def comment(self) -> str:
        """One comment line: the label and the parameters (or the note for glue SQL)."""
        what = self.label or "nsysq"
        if self.note:
            what += f": {self.note}"
        if self.params:
            what += " with " + ", ".join(f"{k} = {literal(v)}" for k, v in self.params.items())
        return "-- " + what.replace("\n", " ")


def literal(value: Any) -> str:
    """``value`` as a DuckDB SQL literal of the type it binds as (floats as DOUBLE, not DECIMAL)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = repr(value) if math.isfinite(value) else f"'{value}'"
        return f"CAST({text} AS DOUBLE)"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, list | tuple):  # a DuckDB list; an empty one needs the caller's CAST
        return "[" + ", ".join(literal(item) for item in value) + "]"
    raise QueryError(f"cannot write a {type(value).__name__} parameter as an SQL literal.")


def fill(sql: str, params: Mapping[str, Any]) -> str:
    """``sql`` with each ``$name`` outside comments, strings and quoted names replaced by the
    literal of ``params[name]``; raise QueryError for a parameter with no value."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return match.group(0)
        if name not in params:
            raise QueryError(f"the SQL uses ${name} but no value was given for it.")
        return literal(params[name])

    return _TOKEN.sub(replace, sql)


def rows_table(name: str, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[Any]]) -> str:
    """A statement creating temp table ``name`` from literal rows; ``columns``: (name, SQL type)."""
    names = ", ".join(quote(c) for c, _ in columns)
    if not rows:
        typed = ", ".join(f"CAST(NULL AS {t}) AS {quote(c)}" for c, t in columns)
        return f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT {typed} WHERE false"
    typed = ", ".join(f"CAST({quote(c)} AS {t}) AS {quote(c)}" for c, t in columns)
    values = ",\n    ".join("(" + ", ".join(literal(v) for v in row) + ")" for row in rows)
    return (
        f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT {typed}\nFROM (VALUES\n    {values}\n) AS t({names})"
    )


def macro_statements() -> list[Statement]:
    """The packaged macro definitions, defined on every connection before a query runs."""
    return [Statement(q.sql, label=q.label, note=f"queries/{q.filename}") for q in catalog.macros()]


def derived_view_statements() -> list[Statement]:
    """The views derived from the canonical ones by a packaged query (``schema.DERIVED``)."""
    return [
        Statement(
            f"CREATE OR REPLACE VIEW main.{view} AS\n{catalog.get(name).sql.rstrip()}",
            label=catalog.get(name).label,
            note=f"the view {view}",
        )
        for view, name in schema.DERIVED.items()
    ]


class _Recorder:
    """Stands in for a DuckDB connection to collect the statements ``schema.create_views`` runs."""

    def __init__(self) -> None:
        self.statements: list[str] = []

    def execute(self, sql: str) -> None:
        self.statements.append(sql)


def canonical_view_statements(source: SourceSchema) -> list[str]:
    """The ``CREATE VIEW`` statements that present the attached export's canonical tables, exactly
    as ``schema.create_views`` runs them when a Trace opens the file."""
    recorder = _Recorder()
    schema.create_views(cast("duckdb.DuckDBPyConnection", recorder), source, SOURCE_ALIAS)
    return recorder.statements


def _string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def preamble(path: Path, source: SourceSchema) -> list[str]:
    """Load the sqlite extension from the installed package, attach the export read-only, create
    the canonical views, the macros and the derived views (each entry one statement or comment)."""
    import duckdb

    from nsysq.export import engine

    out = [
        f"-- nsysq --show-sql for {path.name}: runs as printed in the duckdb CLI of DuckDB",
        f"-- {duckdb.__version__} (the version nsysq uses), e.g. duckdb < script.sql.",
        "-- The last statement's rows are the result.",
        "-- DuckDB's sqlite extension from the installed package's file (no INSTALL, no network):",
        f"LOAD {_string(engine.extension_path().as_posix())};",
        "-- The export, read-only (after another script in the same session: in place of its export):",
        f"DETACH DATABASE IF EXISTS {SOURCE_ALIAS};",
        f"ATTACH {_string(str(path.resolve()))} AS {SOURCE_ALIAS} (TYPE sqlite, READ_ONLY);",
        "-- The canonical views nsysq reads (nsysq/export/schema.py: every nsys version looks the same):",
        *(sql + ";" for sql in canonical_view_statements(source)),
    ]
    for statement in [*macro_statements(), *derived_view_statements()]:
        out += [statement.comment(), _terminated(statement.filled())]
    return out


def script_for(path: Path, source: SourceSchema, statements: Sequence[Statement]) -> str:
    """The whole script: :func:`preamble`, then each statement with its parameters filled in."""
    lines = preamble(path, source)
    lines.append("-- What the command ran, in order:")
    for statement in statements:
        lines += [statement.comment(), _terminated(statement.filled())]
    return "\n".join(lines) + "\n"


def _terminated(sql: str) -> str:
    """``sql`` ending in exactly one ``;``, on a line of its own when the last line has a comment."""
    body = sql.rstrip().rstrip(";").rstrip()
    return body + ("\n;" if "--" in body.rsplit("\n", 1)[-1] else ";")
