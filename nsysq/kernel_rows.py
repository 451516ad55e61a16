"""The kernel table of a first (direct) read, decoded from the file's pages a column at a time.

On the direct path the ``CUPTI_ACTIVITY_KIND_KERNEL`` view normally reads through DuckDB's sqlite
scanner. When the page decoder (:mod:`nsysq.pages`) is available it reads over numpy arrays instead,
registered in DuckDB as ``nsysq_kernel_rows``. Columns are decoded on first use: the view lists every
canonical column, and one not decoded yet is ``error('nsysq-unloaded:<name>')``, which DuckDB only
evaluates when a query really reads it (before the first decode, any scan of the view raises).
:meth:`KernelRows.run` loads the columns a query declares up front and, should it read another,
loads that one and runs it again. Any table the decoder
cannot handle puts the view back on the sqlite scanner for good (same rows, same answers).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import duckdb

from nsysq import extension, pages, schema
from nsysq.source import SourceSchema

T = TypeVar("T")
ARRAYS = "nsysq_kernel_rows"
_SENTINEL = "nsysq-unloaded:"
_UNLOADED = re.compile(re.escape(_SENTINEL) + r"([A-Za-z_][A-Za-z0-9_]*)")
# Read together on first use: what census, lineup and most questions need, in one pass.
CORE = ("start", "end", "shortName", "demangledName")


def _q(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


class KernelRows:
    """Decoded kernel columns for one connection; ``mode`` is "pages" or "sqlite (<reason>)"."""

    def __init__(self, con: duckdb.DuckDBPyConnection, path: Path, source: SourceSchema) -> None:
        self._con = con
        self._path = path
        self._present = set(source.columns.get(schema.KERNEL, ()))
        self._source = source
        self._values: dict[str, Any] = {}
        self._nulls: dict[str, Any] = {}
        self.mode = "pages"
        if not source.has(schema.KERNEL):
            self.mode = "sqlite (no kernel table)"
        elif not pages.available():
            self.mode = "sqlite (page decoder not available)"
        else:
            self._create_view()

    @property
    def active(self) -> bool:
        return self.mode == "pages"

    @property
    def loaded(self) -> tuple[str, ...]:
        return tuple(self._values)

    def _create_view(self) -> None:
        items = []
        for column, ctype in schema.CANONICAL[schema.KERNEL]:
            if column not in self._present:
                items.append(f"CAST(NULL AS {ctype}) AS {_q(column)}")
            elif column in self._nulls:
                mask = _q(column + "__null")
                items.append(f"CASE WHEN {mask} THEN NULL ELSE {_q(column)} END AS {_q(column)}")
            elif column in self._values:
                items.append(_q(column))
            else:
                items.append(f"CAST(error('{_SENTINEL}{column}') AS {ctype}) AS {_q(column)}")
        # Nothing decoded yet: any scan of the view raises, so even count(*) decodes the core first.
        gate = f"(SELECT CAST(error('{_SENTINEL}start') AS BIGINT) AS g) WHERE g = 0"
        source = ARRAYS if self._values else gate
        self._set_view(f"SELECT {', '.join(items)} FROM {source}")

    def _set_view(self, select: str) -> None:
        self._con.execute(f"CREATE OR REPLACE VIEW main.{_q(schema.KERNEL)} AS {select}")

    def _fall_back(self, reason: str) -> None:
        self.mode = f"sqlite ({reason})"
        self.release()
        self._set_view(schema.view_sql(schema.KERNEL, self._source))

    def load(self, columns: Iterable[str]) -> None:
        """Decode ``columns`` not decoded yet (on the first load, the core ones as well)."""
        if not self.active:
            return
        need = [c for c in dict.fromkeys(columns) if c in self._present and c not in self._values]
        if self._values and not need:
            return
        wanted = [c for c in dict.fromkeys((*CORE, *need)) if c in self._present and c not in self._values]
        if not wanted:  # nothing decodable: an empty view would hide the table's rows
            self._fall_back("none of its columns can be decoded")
            return
        try:
            decoded = pages.read_columns(self._path, schema.KERNEL, wanted)
        except pages.PagesUnsupported as exc:
            self._fall_back(str(exc))
            return
        self._values.update(decoded.values)
        self._nulls.update(decoded.nulls)
        frame = dict(self._values)
        frame.update({f"{c}__null": mask for c, mask in self._nulls.items()})
        with extension.pandas_free_binding():
            self._con.register(ARRAYS, frame)
        self._create_view()

    def release(self) -> None:
        """Drop the decoded arrays (memory); the next query that needs them decodes them again."""
        if self._values:
            self._con.unregister(ARRAYS)
        self._values.clear()
        self._nulls.clear()
        if self.active:
            self._create_view()

    def run(self, call: Callable[[], T], columns: Iterable[str] = ()) -> T:
        """Run ``call`` (a DuckDB execution) with ``columns`` decoded; decode and retry any other
        kernel column it turns out to read."""
        if columns:
            self.load(columns)
        while True:
            try:
                return call()
            except duckdb.Error as exc:
                match = _UNLOADED.search(str(exc))
                if not match or not self.active or match.group(1) in self._values:
                    raise
                self.load([match.group(1)])
