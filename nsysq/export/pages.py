"""Integer columns of one SQLite table, decoded straight from its b-tree leaf pages.

DuckDB's sqlite scanner asks SQLite for every value (``sqlite3_step``, then ``sqlite3_column_*``
per cell): ~0.1 s per column per 5M rows on 2 cores, the floor of every first read. nsys writes its
event tables as plain rowid tables of small integer records, so their leaf pages can be decoded in
bulk: this module walks the table's b-tree to list its leaf pages, reads them in runs with
``preadv`` and has ``_pages.c`` (compiled at install, called through ctypes, so the GIL is released
and two threads decode at once) write every requested column into numpy arrays.

Two kinds of refusal. :class:`PagesUnsupported`: a valid file this reader does not handle -- no
compiled decoder, a WAL-mode file, a WITHOUT ROWID table or an INTEGER PRIMARY KEY, a record
spilling into overflow pages, a real/text/blob value in a requested column, a column missing from
old records whose default is not NULL; the caller then reads through SQLite as before.
:class:`PagesDamaged`: the table's pages contradict the SQLite file format (a page that is not the
b-tree page the tree says, a cell or value running past its page, a reserved serial type, rowids
out of order, an interior page's keys out of order or a rowid outside the key range its parent
page gives, a child page outside the file, a short read, a NULL in a NOT NULL column -- which
``PRAGMA integrity_check`` reports as "NULL value in T.C"); never a reason to fall back, since
DuckDB's scanner can answer a malformed b-tree with a quiet partial result. The decoder's error
codes, their messages and their class live once, in ``_pages.h``. The file is opened read-only and
never written.

:func:`check_tree` walks the same b-tree with the same checks, and reads each leaf's first and
last rowid, without the compiled decoder; :func:`verify_tree` is that check for a table DuckDB's
sqlite scanner reads (``nsysq.export.reader.ScannerGuard``, the cached copy's build): SQLite seeks
a rowid range by those keys, and its count, which the scanner's is compared with, never looks.
:func:`check_text` adds, in the compiled decoder's pass over the leaves, every cell's rowid and
record checks and the UTF-8 of the text columns, and counts the rows; :func:`verified_rows` is the
guard's one call (that pass, or SQLite's own reading where it cannot run). :func:`read_texts`
reads one text column in the same kind of pass, as codes into its distinct texts (each distinct
text hashed, checked and copied out once per chunk): the NVTX range names, without a Python object
per row.
"""

from __future__ import annotations

import ctypes
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nsysq.base import native
from nsysq.base.errors import DamagedTraceError
from nsysq.export.check import connect_readonly, sqlite_reading
from nsysq.export.progress import ProgressBar, progress_wanted

CHUNK_PAGES = 1024  # pages per read-and-decode step (4 MiB at the usual 4 KiB page size)
WORKERS = 2
_LEAF, _INTERIOR = 0x0D, 0x05
ABI_VERSION = 6  # NSYSQ_ABI_VERSION in _pages.h: a library built from another version is not used
# The functions _pages.h exports, as ctypes (restype, argtypes); tests/test_pages.py checks them
# against its prototypes. Pointers are passed as addresses (numpy's ``.ctypes.data``, ``byref``).
_PTR, _I64, _I32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32
SIGNATURES: native.Signatures = {
    "nsysq_decode_leaves": (
        _I64,
        [_PTR, _I64, _I64, _I64, _PTR, _I32, _PTR, _PTR, _PTR, _PTR, _I64, _I64]  # buffer .. cap
        + [_PTR, _PTR, _PTR, _PTR, _PTR]  # first, written, failed_page, first_rowid, last_rowid
        + [_PTR, _PTR],  # min_rowid, max_rowid
    ),
    "nsysq_check_text": (
        _I64,
        [_PTR, _I64, _I64, _I64, _PTR, _I32]  # buffer .. n_cols
        + [_PTR, _PTR, _PTR, _PTR, _PTR],  # failed_page, failed_rowid, failed_col, min_rowid, max_rowid
    ),
    "nsysq_intern_text": (
        _I64,
        [_PTR, _I64, _I64, _I64, _I32, ctypes.c_uint8, _PTR, _I64, _PTR, _I64]  # buffer .. n_slots
        + [_PTR, _PTR, _PTR, _PTR, _PTR, _PTR, _PTR],  # text_at, text_len, n_texts .. max_rowid
    ),
    "nsysq_error_message": (ctypes.c_char_p, [_I64]),
    "nsysq_error_class": (_I32, [_I64]),
    "nsysq_abi_version": (_I32, []),
}  # fmt: skip
# What nsysq_error_class says of a code (NSYSQ_UNSUPPORTED, NSYSQ_DAMAGED, NSYSQ_TOO_NARROW), and
# the codes whose report carries a rowid (NSYSQ_ERR_ROWID_ORDER, _BOUNDS); checked against _pages.h.
UNSUPPORTED, DAMAGED, TOO_NARROW = 0, 1, 2
ERR_ROWID_ORDER, ERR_ROWID_BOUNDS, ERR_TEXT = -17, -18, -19
ROWID_MIN, ROWID_MAX = -(1 << 63), (1 << 63) - 1  # a root page's rowid range: every int64
WROTE_VALUES, WROTE_NULLS, FIRST_NULL = 1, 2, 4  # the written[k] bits of nsysq_decode_leaves
MAX_DEPTH = 40  # SQLite itself stops at 20 levels
# Columns decoded as int32 (ids, launch dimensions, sizes); the rest are int64. A value that does
# not fit makes the read start again with every column int64.
NARROW = frozenset(
    "deviceId contextId greenContextId streamId correlationId nameId eventClass demangledName shortName "
    "mangledName launchType cacheConfig registersPerThread gridX gridY gridZ blockX blockY blockZ "
    "staticSharedMemory dynamicSharedMemory localMemoryPerThread sharedMemoryExecuted "
    "sharedMemoryLimitConfig".split()
)
_LIB_NAME = "_pages.so"


class PagesUnsupported(Exception):
    """The table (or this installation) needs SQLite's own reader; the message says why."""


class PagesDamaged(Exception):
    """The table's pages contradict the SQLite file format: the file is damaged. Never a reason to
    fall back to another reader (DuckDB's scanner can return a quiet partial answer on such a file)."""

    def __init__(self, table: str, page: int | None, detail: str) -> None:
        super().__init__(detail)
        self.table = table
        self.page = page
        self.detail = detail


class _TooWide(PagesUnsupported):
    """A value does not fit the int32 output chosen for its column: read again with int64."""


@dataclass(frozen=True)
class Columns:
    """Decoded columns: int64 ``values`` per name, and a NULL mask for the columns that have NULLs."""

    rows: int
    values: dict[str, Any]
    nulls: dict[str, Any]


@dataclass(frozen=True)
class _Layout:
    root: int
    names: tuple[str, ...]
    null_default: tuple[bool, ...]
    not_null: tuple[bool, ...]
    page_size: int
    usable: int
    page_count: int


@dataclass(frozen=True)
class _Library:
    """The loaded decoder: its entry point, and its error table read through its own functions."""

    decode: Any
    check_text: Any
    intern_text: Any
    message: Any
    error_class: Any

    def failure(self, code: int, table: str, page: int | None, rowid: int) -> Exception:
        """The exception for error ``code`` of nsysq_decode_leaves (``page``: the file page)."""
        raw = self.message(code)
        detail = raw.decode() if raw else f"decoder error {code}"
        kind = self.error_class(code)
        if kind == DAMAGED and code == ERR_ROWID_ORDER:
            return PagesDamaged(table, page, f"rowid {rowid} out of order")
        if kind == DAMAGED and code == ERR_ROWID_BOUNDS:
            return PagesDamaged(table, page, f"rowid {rowid} outside the key range its parent page gives")
        if kind == DAMAGED:
            return PagesDamaged(table, page, detail)
        if kind == TOO_NARROW:
            return _TooWide(detail)
        if kind == UNSUPPORTED:
            return PagesUnsupported(detail)
        return RuntimeError(f"the page decoder returned an unknown code {code}")


_lib_lock = threading.Lock()
_lib: _Library | None | bool = None


def _load(path: Path) -> _Library | None:
    """The decoder at ``path`` with its signatures set, or None when it is missing or stale."""
    lib = native.load(path, SIGNATURES, "nsysq_abi_version", ABI_VERSION)
    if lib is None:
        return None
    return _Library(
        lib.nsysq_decode_leaves,
        lib.nsysq_check_text,
        lib.nsysq_intern_text,
        lib.nsysq_error_message,
        lib.nsysq_error_class,
    )


def _decoder() -> _Library:
    """The compiled decoder (loaded once), or PagesUnsupported when not built (or stale)."""
    global _lib
    with _lib_lock:
        if _lib is None:
            _lib = _load(Path(__file__).with_name(_LIB_NAME)) or False
    if not isinstance(_lib, _Library):
        raise PagesUnsupported(f"the page decoder ({_LIB_NAME}) is not built for this version of nsysq")
    return _lib


def available() -> bool:
    """Whether the compiled decoder is installed and not turned off with NSYSQ_PAGE_READER=0
    (and the platform has positioned reads: ``os.pread``/``os.preadv``, not on Windows)."""
    if os.environ.get("NSYSQ_PAGE_READER", "1").strip().lower() in ("0", "no", "off", "false"):
        return False
    if not (hasattr(os, "pread") and hasattr(os, "preadv")):
        return False
    try:
        _decoder()
    except PagesUnsupported:
        return False
    return True


def _geometry(path: Path, table: str) -> tuple[int, int, int]:
    """The file's page size, usable bytes per page and page count, from its header."""
    with open(path, "rb") as fh:
        header = fh.read(100)
    if len(header) < 100 or not header.startswith(b"SQLite format 3\x00"):
        raise PagesUnsupported("not an SQLite 3 file")
    if header[18] != 1 or header[19] != 1:
        raise PagesUnsupported("a WAL-mode database (its newest pages may live in the -wal file)")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    usable = page_size - header[20]
    if page_size < 512 or page_size & (page_size - 1) or usable < 480:
        raise PagesDamaged(table, 1, "an invalid page size or reserved space in the file header")
    page_count = int.from_bytes(header[28:32], "big")
    if page_count * page_size != path.stat().st_size:
        page_count = path.stat().st_size // page_size  # header count stale (legacy writers)
    return page_size, usable, page_count


def _layout(path: Path, table: str) -> _Layout:
    layout, key = _table_layout(path, table)
    if key:
        raise PagesUnsupported("an INTEGER PRIMARY KEY column (stored as the rowid)")
    return layout


def _table_layout(path: Path, table: str) -> tuple[_Layout, bool]:
    """``table``'s layout, and whether it has an INTEGER PRIMARY KEY (a column stored as the rowid,
    NULL in its records)."""
    page_size, usable, page_count = _geometry(path, table)
    try:
        con = connect_readonly(path)
        try:
            row = con.execute(
                "SELECT rootpage, sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
            ).fetchone()
            info = con.execute("SELECT * FROM pragma_table_info(?)", (table,)).fetchall() if row else []
        finally:
            con.close()
    except (sqlite3.DatabaseError, ValueError) as exc:  # ValueError: undecodable text in the schema
        if isinstance(exc, ValueError) or any(w in str(exc) for w in ("malformed", "not a database")):
            raise PagesDamaged(table, None, f"SQLite could not read the schema ({exc})") from None
        raise PagesUnsupported(f"SQLite could not read the schema ({exc})") from None
    except sqlite3.Error as exc:
        raise PagesUnsupported(f"SQLite could not read the schema ({exc})") from None
    if not row or not row[0]:
        raise PagesUnsupported(f"no table {table}")
    if "WITHOUT ROWID" in (row[1] or "").upper():
        raise PagesUnsupported("a WITHOUT ROWID table")
    key = any(pk and str(ctype).strip().upper() == "INTEGER" for _, _, ctype, _, _, pk in info)
    layout = _Layout(
        root=int(row[0]),
        names=tuple(r[1] for r in info),
        null_default=tuple(r[4] is None or str(r[4]).upper() == "NULL" for r in info),
        not_null=tuple(bool(r[3]) for r in info),
        page_size=page_size,
        usable=usable,
        page_count=page_count,
    )
    return layout, key


def _page(fd: int, layout: _Layout, table: str, page: int) -> bytes:
    """File page ``page`` (its usable part) of ``table``'s b-tree; PagesDamaged on a short read."""
    data = os.pread(fd, layout.page_size, (page - 1) * layout.page_size)
    if len(data) != layout.page_size:
        raise PagesDamaged(table, page, "a short read (the file is truncated or changed while read)")
    return data[: layout.usable]


def _varints(raw: Any, at: Any) -> tuple[Any, Any]:
    """The varints starting at offsets ``at`` of ``raw`` (bytes as integers): their values (int64,
    two's complement like SQLite's rowids) and lengths. A varint running past ``raw`` reads its
    last byte again: the caller checks that offset + length stays inside the page."""
    import numpy as np

    b = raw[np.minimum(at[:, None] + np.arange(9), len(raw) - 1)].astype(np.uint64)
    ends = b[:, :8] < 0x80
    length = np.where(ends.any(axis=1), ends.argmax(axis=1) + 1, 9)
    value = np.zeros(len(at), dtype=np.uint64)
    for j in range(int(length.max()) if len(at) else 0):  # rowid keys: mostly 1 to 4 bytes
        shifted = (value << np.uint64(8)) | b[:, j] if j == 8 else (value << np.uint64(7)) | (b[:, j] & 0x7F)
        value = shifted if j == 0 else np.where(j < length, shifted, value)
    return value.view(np.int64), length


def _child_pages(
    data: bytes, layout: _Layout, table: str, page: int, bounds: tuple[int, int]
) -> tuple[list[int], Any, Any]:
    """Left children of interior table page ``page``, then its right-most child, and the inclusive
    rowid range the page's keys give each (lowest and highest rowid, int64 arrays). The page's own
    range is ``bounds``: its keys must increase within it (fileformat2: a left child holds the
    rowids up to its key, above the key before; the right-most child those above the last key), as
    ``PRAGMA integrity_check`` checks ("Rowid N out of order")."""
    import numpy as np

    n = int.from_bytes(data[3:5], "big")
    if 12 + 2 * n > len(data):
        raise PagesDamaged(table, page, "an interior page's cell pointer array does not fit the page")
    at = np.frombuffer(data, dtype=">u2", count=n, offset=12).astype(np.int64)
    if n and (int(at.min()) < 12 + 2 * n or int(at.max()) + 4 > len(data)):
        raise PagesDamaged(table, page, "an interior cell pointer points outside the cell content area")
    raw = np.frombuffer(data, dtype=np.uint8).astype(np.int64)
    kids = [*((raw[at] << 24) | (raw[at + 1] << 16) | (raw[at + 2] << 8) | raw[at + 3]).tolist()]
    kids.append(int.from_bytes(data[8:12], "big"))
    outside = next((k for k in kids if not 2 <= k <= layout.page_count), None)
    if outside is not None:
        raise PagesDamaged(table, page, f"child page {outside} outside the file (2..{layout.page_count})")
    keys, length = _varints(raw, at + 4)
    if n and int((at + 4 + length).max()) > len(data):
        raise PagesDamaged(table, page, "an interior cell's key runs past its page")
    lo, hi = bounds
    if n:  # keys increase, the first at or above the page's lowest rowid, the last below its highest
        wrong = np.concatenate(([keys[0] < lo], keys[1:] <= keys[:-1], [keys[-1] >= hi]))
        if wrong.any():
            at_fault = int(np.argmax(wrong))
            key = int(keys[min(at_fault, n - 1)])
            raise PagesDamaged(table, page, f"interior key {key} out of order")
    highs = np.append(keys, np.int64(hi))
    lows = np.empty_like(highs)
    lows[0], lows[1:] = lo, keys + 1  # keys < hi <= the largest int64: no overflow
    return kids, lows, highs


def _leaves(fd: int, layout: _Layout, table: str) -> tuple[list[int], Any, Any]:
    """The table's leaf page numbers in rowid order, with the inclusive rowid range its interior
    pages give each (the lowest and highest rowid a leaf may hold, int64 arrays).

    A b-tree is balanced: walk it a level at a time and stop at the first level made of leaves
    (reading only that level's first page to tell; the decoder checks that the others are leaves)."""
    if not 2 <= layout.root <= layout.page_count:
        raise PagesDamaged(table, layout.root, f"root page outside the file (2..{layout.page_count})")
    import numpy as np

    level = [layout.root]
    lows, highs = np.array([ROWID_MIN], dtype=np.int64), np.array([ROWID_MAX], dtype=np.int64)
    seen = {layout.root}
    for _depth in range(MAX_DEPTH):
        first = _page(fd, layout, table, level[0])
        if first[0] == _LEAF:
            return level, lows, highs
        children: list[int] = []
        child_lows, child_highs = [], []
        for page, lo, hi in zip(level, lows.tolist(), highs.tolist(), strict=True):
            data = first if page == level[0] else _page(fd, layout, table, page)
            if data[0] != _INTERIOR:
                raise PagesDamaged(table, page, "not an interior table page where the b-tree has one")
            kids, kid_lows, kid_highs = _child_pages(data, layout, table, page, (lo, hi))
            if not seen.isdisjoint(kids) or len(set(kids)) != len(kids):
                raise PagesDamaged(
                    table, page, "a child page the b-tree already holds (a loop or a 2nd reference)"
                )
            seen.update(kids)
            children.extend(kids)
            child_lows.append(kid_lows)
            child_highs.append(kid_highs)
        level = children
        lows, highs = np.concatenate(child_lows), np.concatenate(child_highs)
    raise PagesDamaged(table, layout.root, f"a b-tree deeper than {MAX_DEPTH} levels")


def _max_rows(fd: int, layout: _Layout, leaves: list[int]) -> int:
    """An upper bound on the row count: rowids are distinct integers, so at most max - min + 1.
    Falls back to the cell-capacity bound when the first/last cells cannot be read simply."""
    ps = layout.page_size
    capacity = len(leaves) * ((layout.usable - 8) // 4)

    def rowid(page: int, last: bool) -> int | None:
        data = os.pread(fd, ps, (page - 1) * ps)
        n = int.from_bytes(data[3:5], "big")
        if n == 0 or 8 + 2 * n > len(data):
            return None
        i = n - 1 if last else 0
        at = int.from_bytes(data[8 + 2 * i : 10 + 2 * i], "big")
        values = []
        for _ in range(2):  # payload size, then rowid
            x = 0
            for k in range(9):
                if at >= len(data):
                    return None
                b = data[at]
                at += 1
                if k == 8:
                    x = (x << 8) | b
                    break
                x = (x << 7) | (b & 0x7F)
                if b < 0x80:
                    break
            values.append(x)
        return values[1] - (1 << 64) if values[1] >= 1 << 63 else values[1]

    lo, hi = rowid(leaves[0], False), rowid(leaves[-1], True)
    if lo is None or hi is None or hi < lo:
        return capacity
    return min(capacity, hi - lo + 1)


@dataclass
class _Chunk:
    """A run of leaf pages read and decoded in one step, and what its decode reported."""

    pages: list[int]
    index: int = 0  # the index of its first page in the table's leaf list
    rows: int = 0
    first_page: int = 0  # file page of its first row
    first_rowid: int = 0
    last_rowid: int = 0
    row0: int = 0
    first: Any = None  # per column: the value of its first row
    written: Any = None  # per column: the WROTE_* and FIRST_NULL bits
    codes: Any = None  # read_texts: each row's code into ``texts`` (0: NULL)
    texts: list[str] | None = None  # read_texts: the chunk's distinct texts


def _read_chunk(fd: int, chunk: _Chunk, ps: int, local: threading.local, table: str) -> int:
    """Read ``chunk``'s pages into this thread's buffer (one preadv per run of consecutive pages);
    return how many cells their headers announce (and note the page of the first one)."""
    import numpy as np

    pages = chunk.pages
    buf = getattr(local, "buf", None)
    if buf is None:
        buf = local.buf = np.empty(CHUNK_PAGES * ps, dtype=np.uint8)
    view = buf.data  # a memoryview of the whole buffer
    run_start = 0
    for i in range(1, len(pages) + 1):
        if i == len(pages) or pages[i] != pages[i - 1] + 1:
            want = (i - run_start) * ps
            got = os.preadv(fd, [view[run_start * ps : i * ps]], (pages[run_start] - 1) * ps)
            if got != want:
                short = pages[run_start + got // ps]
                raise PagesDamaged(table, short, "a short read (the file is truncated or changed while read)")
            run_start = i
    heads = buf[: len(pages) * ps].reshape(len(pages), ps)
    cells = (heads[:, 3].astype(np.int64) << 8) | heads[:, 4]
    chunk.first_page = pages[int(np.argmax(cells > 0))]
    return int(cells.sum())


def verify_tree(path: Path, table: str) -> None:
    """:func:`check_tree` for a table read through SQLite: DamagedTraceError on damage, nothing
    when the pages cannot be checked here (a WAL-mode file, a WITHOUT ROWID table)."""
    try:
        check_tree(path, table)
    except PagesDamaged as exc:
        raise DamagedTraceError(path, exc.table, exc.page, exc.detail) from None
    except PagesUnsupported:
        return


def check_tree(path: Path, table: str) -> None:
    """Check ``table``'s b-tree as :func:`read_columns` does before decoding it, without the
    compiled decoder: child pages inside the file and each held once, interior keys increasing
    within the range their parent gives, every leaf a table leaf whose first and last rowid lie
    within the range its parent gives. PagesDamaged names the page; PagesUnsupported when the
    pages cannot be checked here (a WAL-mode file, a WITHOUT ROWID table)."""
    page_size, usable, page_count = _geometry(path, table)
    try:
        con = connect_readonly(path)
        try:
            row = con.execute(
                "SELECT rootpage, sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
            ).fetchone()
        finally:
            con.close()
    except (sqlite3.Error, ValueError) as exc:
        raise PagesUnsupported(f"SQLite could not read the schema ({exc})") from None
    if not row or not row[0]:
        raise PagesUnsupported(f"no table {table}")
    if "WITHOUT ROWID" in (row[1] or "").upper():
        raise PagesUnsupported("a WITHOUT ROWID table")
    layout = _Layout(int(row[0]), (), (), (), page_size, usable, page_count)
    local = threading.local()
    fd = os.open(path, os.O_RDONLY)
    try:
        leaves, lows, highs = _leaves(fd, layout, table)
        for i in range(0, len(leaves), CHUNK_PAGES):
            chunk = _Chunk(leaves[i : i + CHUNK_PAGES], i)
            _read_chunk(fd, chunk, page_size, local, table)
            n = len(chunk.pages)
            flat = local.buf[: n * page_size]
            _check_leaves(flat, chunk.pages, layout, lows[i : i + n], highs[i : i + n], table)
    finally:
        os.close(fd)


def verified_rows(path: Path, table: str, text_columns: Sequence[str]) -> int:
    """The row count of a table DuckDB's sqlite scanner is to read, once its b-tree is well formed
    and every value of ``text_columns`` is valid UTF-8 (DuckDB mangles or trips on invalid text):
    :func:`check_text` where it can (the decoder :func:`available`), else SQLite's own reading
    (``check.sqlite_reading``) and :func:`verify_tree`. DamagedTraceError otherwise."""
    if available():
        try:
            return check_text(path, table, text_columns)
        except PagesDamaged as exc:
            raise DamagedTraceError(path, exc.table or table, exc.page, exc.detail) from None
        except PagesUnsupported:
            pass
    rows = sqlite_reading(path, table, text_columns)
    verify_tree(path, table)
    return rows


def check_text(path: Path, table: str, columns: Sequence[str]) -> int:
    """:func:`check_tree`'s checks of ``table``, each leaf's rowids in order and within its range,
    and every text or blob value of ``columns`` valid UTF-8 (Python's strict decoding), in one pass
    of the compiled decoder over the leaves (``nsysq_check_text``; SQLite's GLOB over the same text
    takes ~8x longer): the table's row count. PagesDamaged names the page, and for invalid text the
    column and row; PagesUnsupported when it cannot be done here (check_tree's cases, no compiled
    decoder, a UTF-16 file, a record spilling into overflow pages)."""
    import numpy as np

    lib = _decoder()
    layout, _ = _table_layout(path, table)
    if _text_encoding(path) != 1:
        raise PagesUnsupported("a database whose text is not UTF-8")
    missing = [c for c in columns if c not in layout.names]
    if missing:
        raise PagesUnsupported(f"{table} has no column {missing[0]}")
    cols = np.asarray(sorted({layout.names.index(c) for c in columns}), dtype=np.int32)

    def step(chunk: _Chunk, cells: int, buf: Any, lows: Any, highs: Any) -> None:
        n, ps = len(chunk.pages), layout.page_size
        _check_leaves(buf[: n * ps], chunk.pages, layout, lows, highs, table)
        page, rowid, col = ctypes.c_int64(-1), ctypes.c_int64(0), ctypes.c_int32(-1)
        got = lib.check_text(
            buf.ctypes.data, n, ps, layout.usable, cols.ctypes.data, len(cols),
            ctypes.byref(page), ctypes.byref(rowid), ctypes.byref(col), lows.ctypes.data, highs.ctypes.data,
        )  # fmt: skip
        if got < 0:
            column = layout.names[col.value] if got == ERR_TEXT else ""
            raise _text_failure(lib, got, table, chunk.pages, page.value, rowid.value, column)
        chunk.rows = got

    return sum(c.rows for c in _leaf_chunks(path, layout, table, step))


def read_texts(path: Path, table: str, column: str) -> tuple[Any, list[str | None]]:
    """Each row's value of text ``column`` of ``table`` (rowid order) as an int32 code into the
    distinct texts (code 0 for NULL, the texts' list starting with None), in one pass of the
    compiled decoder over the leaves (``nsysq_intern_text``: each chunk's distinct texts found by
    hashing and copied out once, then numbered across chunks in order of first appearance).
    PagesDamaged names the page, and for invalid UTF-8 the row; PagesUnsupported when it cannot be
    done here (:func:`check_text`'s cases, an integer, real or blob value in the column)."""
    lib = _decoder()
    layout = _layout(path, table)
    if _text_encoding(path) != 1:
        raise PagesUnsupported("a database whose text is not UTF-8")
    if column not in layout.names:
        raise PagesUnsupported(f"{table} has no column {column}")
    col = layout.names.index(column)

    def step(chunk: _Chunk, cells: int, buf: Any, lows: Any, highs: Any) -> None:
        _intern_chunk(lib, buf, chunk, cells, layout, col, (lows, highs), table)

    return _numbered(_leaf_chunks(path, layout, table, step))


def _leaf_chunks(
    path: Path, layout: _Layout, table: str, step: Callable[[_Chunk, int, Any, Any, Any], None]
) -> list[_Chunk]:
    """``table``'s leaf pages read CHUNK_PAGES at a time (on WORKERS threads, each into its own
    buffer), ``step(chunk, cells, buffer, lows, highs)`` run on each (cells: how many its pages'
    headers announce; lows, highs: its pages' rowid ranges): the chunks, in leaf order."""
    local = threading.local()
    fd = os.open(path, os.O_RDONLY)
    try:
        leaves, lows, highs = _leaves(fd, layout, table)
        chunks = [_Chunk(leaves[i : i + CHUNK_PAGES], i) for i in range(0, len(leaves), CHUNK_PAGES)]

        def work(k: int) -> None:
            chunk = chunks[k]
            cells = _read_chunk(fd, chunk, layout.page_size, local, table)
            at, n = chunk.index, len(chunk.pages)
            step(chunk, cells, local.buf, lows[at : at + n], highs[at : at + n])

        _each_chunk(len(chunks), work)
    finally:
        os.close(fd)
    return chunks


def _text_failure(
    lib: _Library, code: int, table: str, pages: list[int], page: int, rowid: int, column: str
) -> Exception:
    """The exception for error ``code`` of a text pass over a chunk of ``pages`` (``page``: the
    index of the page at fault; ``column``: the column of invalid UTF-8)."""
    where = pages[page] if 0 <= page < len(pages) else None
    if code == ERR_TEXT:
        return PagesDamaged(table, where, f"the {column} value of row {rowid} is not valid UTF-8")
    return lib.failure(code, table, where, rowid)


def _intern_chunk(
    lib: _Library, buf: Any, chunk: _Chunk, cells: int, layout: _Layout, col: int, bounds: Any, table: str
) -> None:
    """nsysq_intern_text over one chunk's pages in ``buf``: its codes and its distinct texts."""
    import numpy as np

    codes = np.empty(cells, dtype=np.int32)
    slots = np.empty(1 << max(2 * cells - 1, 1).bit_length(), dtype=np.int32)
    at, size = np.empty(cells, dtype=np.int64), np.empty(cells, dtype=np.int64)
    count, page, rowid = ctypes.c_int64(0), ctypes.c_int64(-1), ctypes.c_int64(0)
    lows, highs = bounds
    absent_null = int(layout.null_default[col])
    got = lib.intern_text(
        buf.ctypes.data, len(chunk.pages), layout.page_size, layout.usable, col, absent_null,
        codes.ctypes.data, cells, slots.ctypes.data, len(slots), at.ctypes.data, size.ctypes.data,
        ctypes.byref(count), ctypes.byref(page), ctypes.byref(rowid), lows.ctypes.data, highs.ctypes.data,
    )  # fmt: skip
    if got < 0:
        raise _text_failure(lib, got, table, chunk.pages, page.value, rowid.value, layout.names[col])
    if got != cells:
        raise RuntimeError(f"the page decoder decoded {got} rows of {cells} cells")
    chunk.codes = codes
    view = buf.data
    texts = zip(at[: count.value].tolist(), size[: count.value].tolist(), strict=True)
    chunk.texts = [str(view[a : a + s], "utf-8") for a, s in texts]


def _numbered(chunks: list[_Chunk]) -> tuple[Any, list[str | None]]:
    """Every chunk's codes renumbered into the texts of all of them (in order of first appearance)."""
    import numpy as np

    index: dict[str | None, int] = {None: 0}
    rows = sum(len(c.codes) for c in chunks)
    out = np.empty(rows, dtype=np.int32)
    row = 0
    for chunk in chunks:
        texts = chunk.texts or []
        lut = np.zeros(len(texts) + 1, dtype=np.int32)
        lut[1:] = [index.setdefault(t, len(index)) for t in texts]
        np.take(lut, chunk.codes, out=out[row : row + len(chunk.codes)])
        row += len(chunk.codes)
    return out, list(index)


def _text_encoding(path: Path) -> int:
    """The file's text encoding from its header: 1 UTF-8, 2 UTF-16le, 3 UTF-16be."""
    with open(path, "rb") as fh:
        fh.seek(56)
        return int.from_bytes(fh.read(4), "big")


def _check_leaves(flat: Any, leaves: list[int], layout: _Layout, lows: Any, highs: Any, table: str) -> None:
    """The leaf checks of :func:`check_tree` on the pages ``leaves`` read one after another into
    ``flat`` (uint8): a table leaf page, its cell pointer array and first and last cell in the page, and
    those cells' rowids within [lows[i], highs[i]] (and increasing)."""
    import numpy as np

    ps, usable = layout.page_size, layout.usable
    base = np.arange(len(leaves), dtype=np.int64) * ps
    pages = np.asarray(leaves)

    def fail(mask: Any, detail: str, rowids: Any = None) -> None:
        if mask.any():
            at = int(np.argmax(mask))
            text = detail if rowids is None else detail.format(int(rowids[at]))
            raise PagesDamaged(table, int(pages[at]), text)

    def u16(at: Any) -> Any:
        return (flat[at].astype(np.int64) << 8) | flat[at + 1]

    fail(flat[base] != _LEAF, "a page the b-tree lists as a leaf is not a table leaf page")
    ncell = u16(base + 3)
    fail(8 + 2 * ncell > usable, "a leaf page's cell pointer array does not fit the page")
    keep = ncell > 0
    base, ncell, pages = base[keep], ncell[keep], pages[keep]
    lo, hi = lows[keep], highs[keep]
    rowids = []
    for index in (np.zeros_like(ncell), ncell - 1):  # the first cell, then the last
        slot = base + 8 + 2 * index
        ptr = u16(slot)
        outside = (ptr < 8 + 2 * ncell) | (ptr >= usable)
        fail(outside, "a cell pointer points outside its page's cell content area")
        _, payload_len = _varints(flat, base + ptr)
        rowid, rowid_len = _varints(flat, base + ptr + payload_len)
        fail(ptr + payload_len + rowid_len > usable, "a varint runs past its page or record")
        rowids.append(rowid)
    first, last = rowids
    fail((ncell > 1) & (last <= first), "rowid {} out of order", last)
    fail(first < lo, "rowid {} outside the key range its parent page gives", first)
    fail(last > hi, "rowid {} outside the key range its parent page gives", last)


def read_columns(
    path: Path,
    table: str,
    columns: Sequence[str],
    *,
    progress: bool | None = None,
    cancel: threading.Event | None = None,
) -> Columns:
    """Decode the integer ``columns`` of every row of ``table`` (rowid order) into numpy arrays.
    ``progress``: show a bar on stderr if decoding takes over a second (default: on a terminal).
    ``cancel``: once set, the read stops at the next chunk with PagesUnsupported."""
    layout = _layout(path, table)
    stop = cancel or threading.Event()
    try:
        return _read(path, layout, table, columns, narrow=True, progress=progress, cancel=stop)
    except _TooWide:
        return _read(path, layout, table, columns, narrow=False, progress=progress, cancel=stop)


def _read(
    path: Path,
    layout: _Layout,
    table: str,
    columns: Sequence[str],
    *,
    narrow: bool,
    progress: bool | None,
    cancel: threading.Event,
) -> Columns:
    import numpy as np

    lib = _decoder()
    names = list(dict.fromkeys(columns))
    missing = [c for c in names if c not in layout.names]
    if missing:
        raise PagesUnsupported(f"{table} has no column {missing[0]}")
    order = sorted(layout.names.index(c) for c in names)
    ps = layout.page_size
    fd = os.open(path, os.O_RDONLY)
    try:
        leaves, min_rowid, max_rowid = _leaves(fd, layout, table)
        cap = _max_rows(fd, layout, leaves)
        wide = [not (narrow and layout.names[j] in NARROW) for j in order]
        values = [np.empty(cap, dtype=np.int64 if w else np.int32) for w in wide]
        nulls = [None if layout.not_null[j] else np.empty(cap, dtype=np.uint8) for j in order]
        cols = np.asarray(order, dtype=np.int32)
        absent_null = np.asarray([layout.null_default[j] for j in order], dtype=np.uint8)
        wide_flags = np.asarray(wide, dtype=np.uint8)
        value_ptrs = (ctypes.c_void_p * len(order))(*[v.ctypes.data for v in values])
        null_ptrs = (ctypes.c_void_p * len(order))(*[None if v is None else v.ctypes.data for v in nulls])
        chunks = [_Chunk(leaves[i : i + CHUNK_PAGES], i) for i in range(0, len(leaves), CHUNK_PAGES)]
        starts: list[int | None] = [0] + [None] * len(chunks)
        ready = threading.Condition()
        local = threading.local()
        failed: list[BaseException] = []  # every chunk's failure
        unread: list[BaseException] = []  # failures before a chunk's position was known

        def work(index: int) -> None:
            chunk = chunks[index]
            try:
                if cancel.is_set():
                    raise PagesUnsupported("cancelled")
                n = _read_chunk(fd, chunk, ps, local, table)
            except BaseException as exc:  # let the chunks waiting on this one's position stop too
                with ready:
                    failed.append(exc)
                    unread.append(exc)
                    ready.notify_all()
                raise
            with ready:  # rows land in rowid order: wait for the previous chunk's position
                ready.wait_for(lambda: starts[index] is not None or bool(unread) or _stop(failed))
                row0 = starts[index]
                if row0 is None or _stop(failed):
                    raise _Stopped("an earlier chunk failed")
                starts[index + 1] = row0 + n
                ready.notify_all()
            page, first, last = ctypes.c_int64(-1), ctypes.c_int64(0), ctypes.c_int64(0)
            chunk.first, chunk.written = np.zeros(len(order), np.int64), np.zeros(len(order), np.uint8)
            got = lib.decode(
                local.buf.ctypes.data, len(chunk.pages), ps, layout.usable, cols.ctypes.data,
                len(order), absent_null.ctypes.data, wide_flags.ctypes.data, value_ptrs, null_ptrs,
                row0, cap, chunk.first.ctypes.data, chunk.written.ctypes.data,
                ctypes.byref(page), ctypes.byref(first), ctypes.byref(last),
                min_rowid.ctypes.data + 8 * chunk.index, max_rowid.ctypes.data + 8 * chunk.index,
            )  # fmt: skip
            if got < 0:
                at = chunk.pages[page.value] if 0 <= page.value < len(chunk.pages) else None
                error = lib.failure(got, table, at, last.value)
                with ready:
                    failed.append(error)
                    ready.notify_all()
                raise error
            if got != n:
                raise RuntimeError(f"the page decoder decoded {got} rows of {n} cells")
            chunk.rows, chunk.first_rowid, chunk.last_rowid, chunk.row0 = got, first.value, last.value, row0
            bar.advance(len(chunk.pages))

        label = f"nsysq: reading {table} ({', '.join(names)})"
        with ProgressBar(label, {table: float(len(leaves))}, progress_wanted(progress)) as bar:
            _each_chunk(len(chunks), work)
    finally:
        os.close(fd)
    _check_rowid_order(chunks, table)
    decoded = [c for c in chunks if c.rows]
    names = [layout.names[j] for j in order]
    rows = starts[-1] or 0
    return _gathered(names, *_filled(decoded, values, nulls, rows), rows)


def _each_chunk(count: int, work: Callable[[int], None]) -> None:
    """Run ``work`` on chunks 0 .. count-1: on WORKERS threads when there are several, and then
    raise the error that explains the failure (:func:`_first_cause`) once every chunk has stopped."""
    if count <= 1:
        for i in range(count):
            work(i)
        return
    with ThreadPoolExecutor(WORKERS) as pool:
        futures = [pool.submit(work, i) for i in range(count)]
        errors = [e for e in (f.exception() for f in futures) if e is not None]
    if errors:
        raise _first_cause(errors)


def _filled(
    chunks: list[_Chunk], values: list[Any], nulls: list[Any], rows: int
) -> tuple[list[Any], list[Any]]:
    """Each column's first ``rows`` values and NULL mask once the decoder's lazy writes are
    completed: a column (or mask) holding one value in every row becomes a read-only array of that
    value with no memory of its own (zero strides, see :func:`is_constant`; the decoder never wrote
    it); otherwise the rows a chunk did not write get that chunk's first value."""
    out_values, out_nulls = [], []
    for k, (vals, mask) in enumerate(zip(values, nulls, strict=True)):
        out_values.append(_completed(chunks, k, vals, [int(c.first[k]) for c in chunks], WROTE_VALUES, rows))
        first_null = [int(c.written[k] & FIRST_NULL != 0) for c in chunks]
        out_nulls.append(None if mask is None else _completed(chunks, k, mask, first_null, WROTE_NULLS, rows))
    return out_values, out_nulls


def _completed(chunks: list[_Chunk], k: int, array: Any, firsts: list[int], bit: int, rows: int) -> Any:
    """``array``'s first ``rows``, every chunk's unwritten rows set to its first value; or that
    value broadcast when no chunk wrote and all agree."""
    import numpy as np

    wrote = [bool(c.written[k] & bit) for c in chunks]
    if chunks and not any(wrote) and len(set(firsts)) == 1:
        return np.broadcast_to(np.array(firsts[0], dtype=array.dtype), (rows,))
    for chunk, done, first in zip(chunks, wrote, firsts, strict=True):
        if not done:
            array[chunk.row0 : chunk.row0 + chunk.rows] = first
    return array[:rows]


def _gathered(names: list[str], values: list[Any], nulls: list[Any], rows: int) -> Columns:
    """The decoded ``values`` of each column ``names``, and the null mask of each column that has a
    NULL among them."""
    import numpy as np

    out_nulls = {name: mask.view(np.bool_) for name, mask in zip(names, nulls, strict=True) if _any(mask)}
    return Columns(rows=rows, values=dict(zip(names, values, strict=True)), nulls=out_nulls)


def _any(mask: Any) -> bool:
    return mask is not None and len(mask) > 0 and bool(mask[0] if is_constant(mask) else mask.any())


def is_constant(values: Any) -> bool:
    """Whether a decoded column holds one value in every row (kept as that value, not an array)."""
    return len(values) > 0 and values.strides == (0,)


class _Stopped(PagesUnsupported):
    """A chunk that stopped because another one failed (never the error reported)."""


def _stop(failed: list[BaseException]) -> bool:
    """Whether the chunks not decoded yet can stop after these failures: not when all are plain
    PagesUnsupported (a later chunk may hold damage, which must be reported rather than fall back)."""
    return any(not isinstance(e, PagesUnsupported) or isinstance(e, _TooWide) for e in failed)


def _first_cause(errors: list[BaseException]) -> BaseException:
    """The error to report from the chunks' errors (in chunk order): damage first (one chunk's
    unsupported value must not hide another's damage), then the first that is not a _Stopped."""
    damaged = [e for e in errors if isinstance(e, PagesDamaged)]
    causes = [e for e in errors if not isinstance(e, _Stopped)]
    return (damaged or causes or errors)[0]


def _check_rowid_order(chunks: list[_Chunk], table: str) -> None:
    """Rowids strictly increase in leaf order (the decoder checks within each chunk; here, across
    chunks). SQLite's integrity_check reports a violation as "Rowid N out of order"."""
    last: int | None = None
    for chunk in chunks:
        if not chunk.rows:
            continue
        if last is not None and chunk.first_rowid <= last:
            raise PagesDamaged(table, chunk.first_page, f"rowid {chunk.first_rowid} out of order")
        last = chunk.last_rowid
