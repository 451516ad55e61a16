"""Which recorded statements a result comes from, read off the record itself.

A Session records every statement it runs (``Session.executed``, a list of
:class:`~nsysq.session.sqlscript.Statement`), and so does the diff's scratch database
(``nsysq.diffing.combine``). A statement's *lineage* is the statement itself and, for every table
it reads (its SQL names, past the ``CREATE ... AS`` of the table it makes), the latest earlier
statement that created that table, followed back the same way; its labels (``name@version``;
nsysq's own glue SQL has none), in the order the statements ran, are the result's ``queries``.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from nsysq.session.sqlscript import Statement

_CREATES = re.compile(
    r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP\s+|TEMPORARY\s+)?(?:TABLE|VIEW)\s+(\w+)", re.IGNORECASE
)


def created(statement: Statement) -> str | None:
    """The table (or view) ``statement`` creates, or None."""
    match = _CREATES.match(statement.sql)
    return match.group(1) if match else None


def reads(statement: Statement, table: str) -> bool:
    """Whether ``statement`` reads ``table``: its SQL, past the table it creates, names it."""
    return names(_CREATES.sub("", statement.sql, count=1), table)


def names(sql: str, table: str) -> bool:
    """Whether ``sql`` names ``table`` (as a whole word)."""
    return re.search(rf"\b{re.escape(table)}\b", sql, re.IGNORECASE) is not None


def lineage(
    statements: Sequence[Statement],
    *indices: int,
    sources: Mapping[str, tuple[str, ...]] | None = None,
    base: Collection[str] = (),
) -> tuple[str, ...]:
    """The labels behind ``statements[i]`` for each ``i`` in ``indices``, each once: first those of
    the ``sources`` tables they read (tables loaded from rows read elsewhere: table -> labels), then
    the recorded ones in the order they ran. Tables in ``base`` are read as they are, not followed
    (a session's scoped views: the scope filters the trace's own tables, it is no part of a result)."""
    chosen: set[int] = set()
    loaded: dict[str, None] = {}
    for index in indices:
        _follow(statements, index, chosen, loaded, _Reading(sources or {}, frozenset(base)))
    recorded = (statements[i].label for i in sorted(chosen))
    return tuple(dict.fromkeys((*loaded, *(label for label in recorded if label))))


@dataclass(frozen=True)
class _Reading:
    """How lineage reads tables: the labels behind loaded ones, and the ones not followed."""

    sources: Mapping[str, tuple[str, ...]]
    base: frozenset[str]


def _follow(
    statements: Sequence[Statement], index: int, chosen: set[int], loaded: dict[str, None], how: _Reading
) -> None:
    """Add ``index`` and, recursively, the builders of the tables its statement reads."""
    if index in chosen:
        return
    chosen.add(index)
    statement = statements[index]
    builders = _builders(statements, index)
    for table, builder in builders.items():
        if table not in how.base and reads(statement, table):
            _follow(statements, builder, chosen, loaded, how)
    for table, labels in how.sources.items():
        if table not in builders and reads(statement, table):
            loaded.update(dict.fromkeys(labels))


def _builders(statements: Sequence[Statement], index: int) -> dict[str, int]:
    """Each table created before ``statements[index]``, with the position of its latest creation."""
    found: dict[str, int] = {}
    for position, statement in enumerate(statements[:index]):
        table = created(statement)
        if table is not None:
            found[table] = position
    return found
