"""Integer columns of one SQLite table, decoded straight from its b-tree leaf pages.

DuckDB's sqlite scanner asks SQLite for every value (``sqlite3_step``, then ``sqlite3_column_*``
per cell): ~0.1 s per column per 5M rows on 2 cores, the floor of every first read. nsys writes its
event tables as plain rowid tables of small integer records, so their leaf pages can be decoded in
bulk: this module walks the table's b-tree to list its leaf pages, reads them in runs with
``preadv`` and has ``_pages.c`` (compiled at install, called through ctypes, so the GIL is released
and two threads decode at once) write every requested column into numpy arrays.

Anything outside what the reader handles -- no compiled decoder, a WAL-mode file, a WITHOUT ROWID
table or an INTEGER PRIMARY KEY, a record spilling into overflow pages, a real or text value in a
requested column, a malformed page -- raises :class:`PagesUnsupported`; the caller then reads
through SQLite as before. The file is opened read-only and never written.
"""

from __future__ import annotations

import ctypes
import os
import sqlite3
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from nsysq.progress import ProgressBar, progress_wanted

CHUNK_PAGES = 1024  # pages per read-and-decode step (4 MiB at the usual 4 KiB page size)
WORKERS = 2
_LEAF, _INTERIOR = 0x0D, 0x05
_ERRORS = {
    -2: "a page listed as a leaf is not a table leaf page",
    -3: "a cell pointer array does not fit its page",
    -4: "a cell pointer points outside its page",
    -5: "a varint runs past its page or record",
    -6: "a record spills into overflow pages",
    -7: "a record runs past its page",
    -9: "more rows than the b-tree's rowid range allows",
    -11: "a reserved serial type",
    -12: "a column missing from a record has a non-NULL default",
    -13: "a value runs past its record",
    -14: "a requested column holds a real, text or blob value",
    -15: "a value too large for its 32-bit column",
    -16: "a NULL in a NOT NULL column",
}
# Columns decoded as int32 (ids, launch dimensions, sizes); the rest are int64. A value that does
# not fit makes the read start again with every column int64.
NARROW = frozenset(
    "deviceId contextId greenContextId streamId demangledName shortName mangledName launchType "
    "cacheConfig registersPerThread gridX gridY gridZ blockX blockY blockZ staticSharedMemory "
    "dynamicSharedMemory localMemoryPerThread sharedMemoryExecuted sharedMemoryLimitConfig".split()
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


_lib_lock = threading.Lock()
_lib: Any = None


def _decoder() -> Any:
    """The compiled decoder's entry point (loaded once), or PagesUnsupported when not built."""
    global _lib
    with _lib_lock:
        if _lib is None:
            path = Path(__file__).with_name(_LIB_NAME)
            try:
                lib = ctypes.CDLL(str(path))
            except OSError:
                _lib = False
            else:
                fn = lib.nsysq_decode_leaves
                fn.restype = ctypes.c_int64
                fn.argtypes = [
                    ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                    ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p,
                    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                ]  # fmt: skip
                _lib = fn
    if _lib is False:
        raise PagesUnsupported(f"the page decoder ({_LIB_NAME}) was not built with this installation")
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


def _layout(path: Path, table: str) -> _Layout:
    with open(path, "rb") as fh:
        header = fh.read(100)
    if len(header) < 100 or not header.startswith(b"SQLite format 3\x00"):
        raise PagesUnsupported("not an SQLite 3 file")
    if header[18] != 1 or header[19] != 1:
        raise PagesUnsupported("a WAL-mode database (its newest pages may live in the -wal file)")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    usable = page_size - header[20]
    if page_size < 512 or usable < 480:
        raise PagesUnsupported("an invalid page size")
    page_count = int.from_bytes(header[28:32], "big")
    if page_count * page_size != path.stat().st_size:
        page_count = path.stat().st_size // page_size  # header count stale (legacy writers)
    uri = f"file:{quote(str(path))}?mode=ro&immutable=1"
    try:
        con = sqlite3.connect(uri, uri=True)
        try:
            row = con.execute(
                "SELECT rootpage, sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
            ).fetchone()
            info = con.execute("SELECT * FROM pragma_table_info(?)", (table,)).fetchall() if row else []
        finally:
            con.close()
    except (sqlite3.Error, ValueError) as exc:  # ValueError: undecodable text in a damaged schema
        raise PagesUnsupported(f"SQLite could not read the schema ({exc})") from None
    if not row or not row[0]:
        raise PagesUnsupported(f"no table {table}")
    if "WITHOUT ROWID" in (row[1] or "").upper():
        raise PagesUnsupported("a WITHOUT ROWID table")
    if any(pk and str(ctype).strip().upper() == "INTEGER" for _, _, ctype, _, _, pk in info):
        raise PagesUnsupported("an INTEGER PRIMARY KEY column (stored as the rowid)")
    return _Layout(
        root=int(row[0]),
        names=tuple(r[1] for r in info),
        null_default=tuple(r[4] is None or str(r[4]).upper() == "NULL" for r in info),
        not_null=tuple(bool(r[3]) for r in info),
        page_size=page_size,
        usable=usable,
        page_count=page_count,
    )


def _child_pages(data: bytes, hdr: int) -> list[int]:
    """Left children of an interior table page, then its right-most child."""
    import numpy as np

    n = int.from_bytes(data[hdr + 3 : hdr + 5], "big")
    if hdr + 12 + 2 * n > len(data):
        raise PagesUnsupported("an interior page's cell count does not fit the page")
    at = np.frombuffer(data, dtype=">u2", count=n, offset=hdr + 12).astype(np.int64)
    if n and int(at.max()) + 4 > len(data):
        raise PagesUnsupported("an interior cell points outside its page")
    raw = np.frombuffer(data, dtype=np.uint8).astype(np.int64)
    kids = (raw[at] << 24) | (raw[at + 1] << 16) | (raw[at + 2] << 8) | raw[at + 3]
    return [*kids.tolist(), int.from_bytes(data[hdr + 8 : hdr + 12], "big")]


def _leaves(fd: int, layout: _Layout) -> list[int]:
    """The table's leaf page numbers in rowid order.

    A b-tree is balanced: walk it a level at a time and stop at the first level made of leaves
    (reading only that level's first page to tell)."""
    ps = layout.page_size
    level = [layout.root]
    for _depth in range(40):
        if any(not 1 <= p <= layout.page_count for p in level):
            raise PagesUnsupported("a b-tree page number outside the file")
        first = os.pread(fd, ps, (level[0] - 1) * ps)
        kind = first[100 if level[0] == 1 else 0] if len(first) == ps else -1
        if kind == _LEAF:
            return level
        children: list[int] = []
        for page in level:
            data = first if page == level[0] else os.pread(fd, ps, (page - 1) * ps)
            hdr = 100 if page == 1 else 0
            if len(data) != ps or data[hdr] != _INTERIOR:
                raise PagesUnsupported(f"page {page} is not an interior table page")
            children.extend(_child_pages(data, hdr))
            if len(children) > layout.page_count:
                raise PagesUnsupported("a b-tree with more pages than the file")
        level = children
    raise PagesUnsupported("a b-tree deeper than 40 levels")


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


def _read_chunk(fd: int, pages: list[int], ps: int, local: threading.local) -> int:
    """Read ``pages`` into this thread's buffer (one preadv per run of consecutive pages); return
    how many cells their headers announce."""
    import numpy as np

    buf = getattr(local, "buf", None)
    if buf is None:
        buf = local.buf = np.empty(CHUNK_PAGES * ps, dtype=np.uint8)
    view = memoryview(buf)
    run_start = 0
    for i in range(1, len(pages) + 1):
        if i == len(pages) or pages[i] != pages[i - 1] + 1:
            want = (i - run_start) * ps
            if os.preadv(fd, [view[run_start * ps : i * ps]], (pages[run_start] - 1) * ps) != want:
                raise PagesUnsupported("a short read (the file changed or is truncated)")
            run_start = i
    heads = buf[: len(pages) * ps].reshape(len(pages), ps)
    return int(((heads[:, 3].astype(np.int64) << 8) | heads[:, 4]).sum())


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

    decode = _decoder()
    names = list(dict.fromkeys(columns))
    missing = [c for c in names if c not in layout.names]
    if missing:
        raise PagesUnsupported(f"{table} has no column {missing[0]}")
    order = sorted(layout.names.index(c) for c in names)
    ps = layout.page_size
    fd = os.open(path, os.O_RDONLY)
    try:
        leaves = _leaves(fd, layout)
        cap = _max_rows(fd, layout, leaves)
        wide = [not (narrow and layout.names[j] in NARROW) for j in order]
        values = [np.empty(cap, dtype=np.int64 if w else np.int32) for w in wide]
        nulls = [None if layout.not_null[j] else np.empty(cap, dtype=np.uint8) for j in order]
        cols = np.asarray(order, dtype=np.int32)
        absent_null = np.asarray([layout.null_default[j] for j in order], dtype=np.uint8)
        wide_flags = np.asarray(wide, dtype=np.uint8)
        value_ptrs = (ctypes.c_void_p * len(order))(*[v.ctypes.data for v in values])
        null_ptrs = (ctypes.c_void_p * len(order))(*[None if v is None else v.ctypes.data for v in nulls])
        chunks = [leaves[i : i + CHUNK_PAGES] for i in range(0, len(leaves), CHUNK_PAGES)]
        starts: list[int | None] = [0] + [None] * len(chunks)
        ready = threading.Condition()
        local = threading.local()
        failed: list[BaseException] = []

        def work(index: int) -> None:
            try:
                if cancel.is_set():
                    raise PagesUnsupported("cancelled")
                n = _read_chunk(fd, chunks[index], ps, local)
            except BaseException as exc:  # let the chunks waiting on this one's position stop too
                with ready:
                    failed.append(exc)
                    ready.notify_all()
                raise
            with ready:  # rows land in rowid order: wait for the previous chunk's position
                ready.wait_for(lambda: starts[index] is not None or bool(failed))
                if failed:
                    raise PagesUnsupported("an earlier chunk failed")
                row0 = starts[index]
                assert row0 is not None
                starts[index + 1] = row0 + n
                ready.notify_all()
            if row0 + n > cap:
                raise PagesUnsupported(_ERRORS[-9])
            got = decode(
                local.buf.ctypes.data, len(chunks[index]), ps, layout.usable, cols.ctypes.data,
                len(order), absent_null.ctypes.data, wide_flags.ctypes.data, value_ptrs, null_ptrs,
                row0, cap,
            )  # fmt: skip
            if got != n:
                error = _TooWide if got == -15 else PagesUnsupported
                raise error(_ERRORS.get(got, f"decoder error {got}"))
            bar.advance(len(chunks[index]))

        label = f"nsysq: reading {table} ({', '.join(names)})"
        with ProgressBar(label, {table: float(len(leaves))}, progress_wanted(progress)) as bar:
            if len(chunks) > 1:
                with ThreadPoolExecutor(WORKERS) as pool:
                    futures = [pool.submit(work, i) for i in range(len(chunks))]
                    errors = [f.exception() for f in futures]
                first = next((e for e in errors if e is not None), None)
                if first is not None:
                    raise first
            else:
                for i in range(len(chunks)):
                    work(i)
    finally:
        os.close(fd)
    rows = starts[-1] or 0
    out_values: dict[str, Any] = {}
    out_nulls: dict[str, Any] = {}
    for j, vals, mask in zip(order, values, nulls, strict=True):
        name = layout.names[j]
        out_values[name] = vals[:rows]
        if mask is not None and rows and mask[:rows].any():
            out_nulls[name] = mask[:rows].view(np.bool_)
    return Columns(rows=rows, values=out_values, nulls=out_nulls)
