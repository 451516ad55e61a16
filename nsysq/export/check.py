"""Check that a path is a readable nsys SQLite export, and read its schema without changing it."""

from __future__ import annotations

import os
import sqlite3
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from nsysq.base.errors import CorruptTraceError, DamagedTraceError, NotNsysExportError, TraceInputError

SQLITE_MAGIC = b"SQLite format 3\x00"


def check_path(path: str | os.PathLike[str]) -> Path:
    """Return the resolved path of an nsys SQLite export, or raise a TraceInputError saying why not.
    (A ``.nsys-rep`` report is exported first: :func:`nsysq.export.nsys_rep.resolve` opens any path.)"""
    p = Path(path).expanduser()
    if not p.exists():
        raise TraceInputError(f"{p}: no such file; give the path of an nsys SQLite export (.sqlite).")
    if p.is_dir():
        raise TraceInputError(
            f"{p} is a directory; give the path of an nsys SQLite export (.sqlite) inside it."
        )
    try:
        size = p.stat().st_size
        with p.open("rb") as fh:
            header = fh.read(100)
    except PermissionError:
        raise TraceInputError(f"{p}: permission denied; make the file readable.") from None
    except OSError as exc:
        raise TraceInputError(f"{p}: cannot be read ({exc.strerror}).") from None
    if size == 0:
        raise TraceInputError(
            f"{p} is empty (0 bytes); export the report again with nsys export --type=sqlite."
        )
    if not header.startswith(SQLITE_MAGIC):
        raise TraceInputError(
            f"{p} is not a SQLite file; nsysq reads the output of nsys export --type=sqlite."
        )
    if len(header) < 100:
        raise CorruptTraceError(f"{p} is truncated ({size} bytes); copy or export the trace again.")
    page_size = struct.unpack(">H", header[16:18])[0]
    page_size = 65536 if page_size == 1 else page_size
    pages = struct.unpack(">I", header[28:32])[0]
    valid_for = struct.unpack(">I", header[92:96])[0]
    change_counter = struct.unpack(">I", header[24:28])[0]
    if page_size < 512 or page_size & (page_size - 1):
        raise CorruptTraceError(f"{p} has a damaged SQLite header; copy or export the trace again.")
    if pages and valid_for == change_counter and size < pages * page_size:
        raise CorruptTraceError(
            f"{p} is truncated ({size} of {pages * page_size} bytes); copy or export the trace again."
        )
    return p.resolve()


def connect_readonly(path: Path) -> sqlite3.Connection:
    """Open with SQLite's read-only, immutable URI: no journal, no lock file, nothing written."""
    uri = f"file:{quote(str(path))}?mode=ro&immutable=1"
    return sqlite3.connect(uri, uri=True)


@dataclass(frozen=True)
class SourceSchema:
    """The tables of an export and their column names, read from sqlite_master / PRAGMA."""

    path: Path
    columns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # (source, value) of each CUDA_VISIBLE_DEVICES the export records: source 1 the launched
    # processes' environment (META_DATA_CAPTURE, nsys 2023.3+), 2 the environment nsys ran in.
    visible_devices: tuple[tuple[int, str], ...] = ()

    def has(self, table: str) -> bool:
        return table in self.columns

    @property
    def tables(self) -> list[str]:
        return sorted(self.columns)


def read_schema(path: Path) -> SourceSchema:
    """Read every table's columns; raise if the file is damaged or not an nsys export."""
    try:
        con = connect_readonly(path)
        try:
            names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            columns = {
                name: tuple(r[1] for r in con.execute(f'PRAGMA table_info("{name}")')) for name in names
            }
            visible = _visible_devices(con, columns)
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        raise CorruptTraceError(
            f"{path} is a damaged SQLite file ({exc}); copy or export the trace again."
        ) from None
    if "StringIds" not in columns:
        raise NotNsysExportError(
            f"{path} is a SQLite file but not an nsys export (it has no StringIds table); "
            "create one with nsys export --type=sqlite."
        )
    return SourceSchema(path=path, columns=columns, visible_devices=visible)


_VISIBLE = "CUDA_VISIBLE_DEVICES="


def _visible_devices(
    con: sqlite3.Connection, columns: dict[str, tuple[str, ...]]
) -> tuple[tuple[int, str], ...]:
    """The CUDA_VISIBLE_DEVICES values the export records (queries/launch/devices.sql maps process
    ordinals through them). Environment dumps may hold bytes that are not UTF-8: read as bytes."""
    found: list[tuple[int, str]] = []
    con.text_factory = bytes
    try:
        if {"name", "value"} <= set(columns.get("META_DATA_CAPTURE", ())):
            rows = con.execute(
                "SELECT value FROM META_DATA_CAPTURE WHERE name LIKE 'PROCESS%:ENVIRONMENT_VARIABLE' "
                "AND substr(value, 1, ?) = ?",
                (len(_VISIBLE), _VISIBLE),
            )
            found += [(1, _text(v)[len(_VISIBLE) :].strip().strip('"')) for (v,) in rows]
        if {"name", "value"} <= set(columns.get("TARGET_INFO_SYSTEM_ENV", ())):
            rows = con.execute(
                "SELECT value FROM TARGET_INFO_SYSTEM_ENV "
                "WHERE name = 'DeviceEnvironment' AND instr(value, ?) > 0",
                (_VISIBLE,),
            )
            for (v,) in rows:
                found += [
                    (2, item[len(_VISIBLE) :].strip().strip('"'))
                    for item in _text(v).split(";")
                    if item.startswith(_VISIBLE)
                ]
    finally:
        con.text_factory = str
    return tuple(sorted(set(found)))


def _text(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


# -- damage: SQLite's own reading is the reference --------------------------------------------
_DAMAGE_WORDS = ("malformed", "corrupt", "invalid unicode", "utf-8", "utf8")


def damage_message(text: str) -> bool:
    """Whether a DuckDB/SQLite error says the file's pages are damaged (not a query mistake)."""
    lowered = text.lower()
    return any(word in lowered for word in _DAMAGE_WORDS)


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def sqlite_reading(path: Path, table: str, text_columns: Sequence[str]) -> int:
    """SQLite's own reading of ``table`` (one thread walking the whole b-tree): its row count, once
    every value of ``text_columns`` is valid UTF-8 (DuckDB mangles or trips on invalid text, and an
    internal error there invalidates the whole connection). Raises DamagedTraceError otherwise."""
    con = connect_readonly(path)
    con.text_factory = bytes
    try:
        for column in text_columns:  # only values with a byte outside ASCII need decoding
            name = _quote(column)
            wide = f"SELECT rowid, CAST({name} AS BLOB) FROM {_quote(table)} WHERE {name} GLOB ?"
            for rowid, value in con.execute(wide, (_NON_ASCII,)):
                _check_utf8(path, table, column, rowid, value)
        row = con.execute(f"SELECT count(*) FROM {_quote(table)}").fetchone()
    except sqlite3.DatabaseError as exc:
        raise DamagedTraceError(path, table, None, f"SQLite cannot read it ({exc})") from None
    finally:
        con.close()
    return int(row[0]) if row else 0


_NON_ASCII = "*[^\x01-\x7f]*"  # a value with a byte outside ASCII (GLOB, in C)


def _check_utf8(path: Path, table: str, column: str, rowid: int, value: bytes | None) -> None:
    try:
        (value or b"").decode("utf-8")
    except UnicodeDecodeError:
        raise DamagedTraceError(
            path, table, None, f"the {column} value of row {rowid} is not valid UTF-8"
        ) from None


def checked_count(path: Path, table: str, expected: int, counted: int, reader: str) -> None:
    """Raise DamagedTraceError unless ``reader`` returned SQLite's own count of rows."""
    if counted != expected:
        raise DamagedTraceError(
            path, table, None, f"{reader} returned {counted:,} rows where SQLite counts {expected:,}"
        )
