"""The versioned SQL files in ``queries/``: parse their headers, load them once, check their params.

Each file starts with a comment header::

    -- name: census
    -- version: 1
    -- returns: one row per kernel name ...
    -- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, shortName), StringIds(id, value)
    -- params: names ('short' or 'demangled'); limit (integer, 0 = all rows)
    -- dialect: duckdb

``dialect: portable`` marks a file that also runs unchanged in the sqlite3 CLI. Files in
subfolders (``queries/diff/kernels.sql``) are named after their path (``diff_kernels``); every name is
unique. ``Query.label`` (``name@version``) is the only way nsysq labels a result with its SQL.

A file whose body is ``CREATE ... MACRO name(...)`` defines a DuckDB macro that other queries call
(one definition of an expression used in several files); nsysq defines every such macro on each
connection before it runs a query (:func:`macros`).
"""

from __future__ import annotations

import functools
import importlib.resources
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from pathlib import Path

from nsysq.base.errors import QueryError

_HEADER = re.compile(r"^--\s*(name|version|returns|tables|params|dialect):\s*(.*)$")
_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_STRIP = re.compile(r"--[^\n]*|'(?:[^']|'')*'")
_MACRO = re.compile(r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP\s+|TEMPORARY\s+)?MACRO\s+(\w+)", re.I | re.M)


@dataclass(frozen=True)
class Query:
    """One SQL file from ``queries/`` with its parsed header."""

    name: str
    version: int
    returns: str
    tables: str
    params: tuple[str, ...]
    dialect: str
    sql: str
    filename: str

    @property
    def label(self) -> str:
        """``name@version``: how every result names the SQL file behind it."""
        return f"{self.name}@{self.version}"

    @functools.cached_property
    def macro(self) -> str | None:
        """The name of the macro this file defines, or None for a query (parsed once per query:
        every query run asks for the macros to define first)."""
        match = _MACRO.search(_STRIP.sub("", self.sql))
        return match.group(1) if match else None

    @functools.cached_property
    def table_names(self) -> tuple[str, ...]:
        """The table names the header's ``tables:`` line lists (column lists and notes dropped)."""
        if self.tables.strip() == "none":
            return ()
        names, depth, word = [], 0, ""
        for ch in self.tables + ",":
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            elif depth == 0 and ch == ",":
                token = word.strip().split(" ")[0]
                if token:
                    names.append(token)
                word = ""
            elif depth == 0:
                word += ch
        return tuple(names)

    def columns_of(self, table: str) -> tuple[str, ...]:
        """The columns the header lists for ``table`` (``TABLE(a, b)``); empty when none are listed."""
        match = re.search(re.escape(table) + r"\(([^)]*)\)", self.tables)
        return tuple(c.strip() for c in match.group(1).split(",") if c.strip()) if match else ()

    @property
    def declared_columns(self) -> dict[str, tuple[str, ...]]:
        """Each table the header lists, with the columns listed for it (empty when none are): a new
        dict each time, made from the header parsed once."""
        return dict(self._declared)

    @functools.cached_property
    def _declared(self) -> dict[str, tuple[str, ...]]:
        return {table: self.columns_of(table) for table in self.table_names}

    def __post_init__(self) -> None:
        used = sorted(set(_PARAM.findall(_STRIP.sub("", self.sql))))
        if used != sorted(self.params):
            raise QueryError(
                f"queries/{self.filename} declares params {sorted(self.params)} "
                f"but its SQL uses {used}; fix the header."
            )


def parse(text: str, filename: str) -> Query:
    """Parse one query file; raise QueryError when the header is incomplete."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        match = _HEADER.match(line.strip())
        if match:
            fields.setdefault(match.group(1), match.group(2).strip())
        elif line.strip() and not line.strip().startswith("--"):
            break
    missing = {"name", "version", "returns", "tables", "params", "dialect"} - set(fields)
    if missing:
        raise QueryError(f"queries/{filename} lacks header fields {sorted(missing)}.")
    params = tuple(
        p.split("(")[0].strip().lstrip("$")
        for p in fields["params"].split(";")
        if p.strip() and p.strip() != "none"
    )
    return Query(
        name=fields["name"],
        version=int(fields["version"]),
        returns=fields["returns"],
        tables=fields["tables"],
        params=params,
        dialect=fields["dialect"],
        sql=text,
        filename=filename,
    )


def _sql_files(folder: Traversable, prefix: str = "") -> Iterator[tuple[str, Traversable]]:
    """(path relative to queries/, file) of every .sql file under ``folder``, subfolders included."""
    if isinstance(folder, Path):  # an installed package's folder: listed by os.scandir (~10x faster)
        yield from _sql_paths(folder, prefix)
        return
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.is_dir():
            yield from _sql_files(entry, f"{prefix}{entry.name}/")
        elif entry.name.endswith(".sql"):
            yield prefix + entry.name, entry


def _sql_paths(folder: Path, prefix: str) -> Iterator[tuple[str, Path]]:
    """:func:`_sql_files` of a folder on disk, in the same order."""
    with os.scandir(folder) as listing:
        entries = sorted(listing, key=lambda e: e.name)
    for entry in entries:
        if entry.is_dir():
            yield from _sql_paths(Path(entry.path), f"{prefix}{entry.name}/")
        elif entry.name.endswith(".sql"):
            yield prefix + entry.name, Path(entry.path)


@functools.cache
def all_queries() -> dict[str, Query]:
    """Every packaged query under queries/ (subfolders included) by name, read through
    importlib.resources; raise QueryError when two files share a name."""
    out: dict[str, Query] = {}
    for filename, entry in _sql_files(importlib.resources.files("nsysq") / "queries"):
        query = parse(entry.read_text(encoding="utf-8"), filename)
        if query.name in out:
            raise QueryError(
                f"queries/{filename} and queries/{out[query.name].filename} are both named "
                f"{query.name!r}; rename one."
            )
        out[query.name] = query
    return out


def macros() -> list[Query]:
    """The packaged files that define a macro, in name order."""
    return list(_macros())


@functools.cache
def _macros() -> tuple[Query, ...]:
    return tuple(q for q in all_queries().values() if q.macro is not None)


def get(name: str) -> Query:
    """The packaged query called ``name``."""
    try:
        return all_queries()[name]
    except KeyError:
        raise QueryError(f"no packaged query named {name!r}; see nsysq queries.") from None


def declared(names: str | tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """The columns packaged queries ``names`` (one name or several) declare, per table, merged: what
    one decoding pass reads for all of them."""
    merged: dict[str, tuple[str, ...]] = {}
    for name in (names,) if isinstance(names, str) else names:
        for table, columns in get(name).declared_columns.items():
            merged[table] = tuple(dict.fromkeys((*merged.get(table, ()), *columns)))
    return merged
