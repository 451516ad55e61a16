"""nsysq_nvtx_ranges from the export's pages, without DuckDB's sqlite scanner or its sort.

queries/nvtx/ranges_sorted.sql and ranges.sql read NVTX_EVENTS through the scanner (every column,
its text too), sort the range rows and number them. On a direct, unscoped read this module gives
the same rows: the integer columns decoded from the pages (nsysq.export.pages), the ``text``
column alone read through SQLite (the names nsys stores inline), each name resolved once, the
rows sorted in numpy in the order ranges_sorted.sql gives (thread, domain, start, longer first,
kind, name) and kept as a view over the arrays (``Session.keep_arrays``: --show-sql prints both
queries and its script builds the same rows). Anything this path does not handle -- no page
decoder, a scoped read, a range row without a thread or a start, a value SQLite or the decoder
refuses -- returns False: the SQL path then reads (and guards) the table as before.
"""

from __future__ import annotations

import re
import sqlite3
import weakref
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from nsysq.base.sorting import lexsorted
from nsysq.base.threads import Background
from nsysq.export import pages, schema
from nsysq.export.check import connect_readonly

if TYPE_CHECKING:
    from nsysq.session import Session

NOTE = (
    "read from the export's pages and sorted in numpy (nsysq.analyses.nvtx_ranges); this query gives the "
    "same rows"
)
_INTS = ("start", "end", "eventType", "textId", "globalTid", "endGlobalTid", "domainId")
_RANGE_TYPES = (59, 60, 70, 71)
_PUSH_POP = (59, 70)
_DOMAIN_CREATE = 75
_UNNAMED = "<unnamed range>"
_PID_MASK = ~((1 << 24) - 1)
#: queries/nvtx/totals.sql's test of a PyTorch emit_nvtx name (DuckDB's regexp_matches: a search).
_SEP, _NULL = "\x1f", "\x1e"  # _texts' separator and NULL marker (SQLite's char(31), char(30))
_EMIT_NVTX = re.compile(r", (seq|op_id) = [0-9]+")


@dataclass
class _Kept:
    """The arrays nsysq_nvtx_ranges was kept from, for the scope and choice it was built in."""

    key: str
    columns: dict[str, Any]
    names: list[str]  # the distinct names of the range rows
    codes: Coded | None = None  # each row's name and domain as codes (rid order)


@dataclass
class Coded:
    """Each range row's name and domain (rid order) as a code into a list of strings."""

    name_code: Any
    names: list[str]
    domain_code: Any
    domains: list[str]


_KEPT: weakref.WeakKeyDictionary[Session, _Kept] = weakref.WeakKeyDictionary()
#: The columns of queries/nvtx/ranges.sql from the arrays keep_decoded registers.
SELECT = (
    f"rid, tid & {_PID_MASK} AS pid, tid, dom, domain, name, "
    "CASE WHEN pushpop THEN 'push/pop' ELSE 'start/end' END AS kind, "
    'start, CASE WHEN ended THEN "end" END AS "end", extended, '
    "CASE dropped WHEN 1 THEN 'other thread' WHEN 2 THEN 'never ended' END AS dropped"
)


#: The reads whose NVTX rows come from the export's pages: a direct one (whose kernels the decoder
#: reads), and one from the cached copy (the export beside it is the one the copy was made of).
_PAGES_READ = ("pages", "cached copy")


def keep_decoded(trace: Session, table: str, sorted_table: str, *, extend_unended: bool) -> bool:
    """Keep nsysq_nvtx_ranges (``table``) from the pages when this read allows it; False otherwise
    (nothing kept: build it with SQL)."""
    _KEPT.pop(trace, None)
    if trace.scope.active or trace.kernel_reader not in _PAGES_READ or not pages.available():
        return False
    events = _read_events(trace)
    if events is None:
        return False
    ranges = _ranges(events, extend_unended)
    if ranges is None:
        return False
    columns, names, codes = ranges
    trace.note_materialized("nvtx_ranges_sorted", sorted_table, NOTE, extend_unended=extend_unended)
    strings = {"name": codes.names, "domain": codes.domains}  # the name and domain columns hold codes
    extend = {"extend_unended": extend_unended}
    trace.keep_arrays("nvtx_ranges", table, columns, select=SELECT, note=NOTE, strings=strings, **extend)
    _KEPT[trace] = _Kept(_key(trace, extend_unended), columns, names, codes)
    return True


def forget(trace: Session) -> None:
    """Let go of the arrays :func:`keep_decoded` kept for ``trace`` (its table is dropped too)."""
    _KEPT.pop(trace, None)


def _key(trace: Session, extend_unended: bool) -> str:
    return f"{trace.scope.key()}|{extend_unended}"


def kept(trace: Session, table: str) -> _Kept | None:
    """What ``table`` (nsysq_nvtx_ranges) was kept from, when it is as :func:`keep_decoded` kept it
    (None: built by SQL)."""
    state = _KEPT.get(trace)
    if state is None:
        return None
    for extend_unended in (False, True):
        if state.key == _key(trace, extend_unended) and trace.is_materialized(
            table, extend_unended=extend_unended
        ):
            return state
    return None


def stack_arrays(columns: dict[str, Any]) -> dict[str, Any]:
    """queries/nvtx/range_arrays.sql's columns from the kept arrays (rid order, tid never NULL)."""
    import numpy as np

    ended = columns["ended"]
    end = columns["end"] if ended.all() else np.where(ended, columns["end"], columns["start"])
    return {
        "rid": columns["rid"], "tid": columns["tid"], "dom": columns["dom"], "pushpop": columns["pushpop"],
        "start": columns["start"], "end": end, "kept": columns["dropped"] == 0,
    }  # fmt: skip


def range_totals(state: _Kept) -> dict[str, int]:
    """queries/nvtx/totals.sql's columns over the ranges, from the kept arrays."""
    import numpy as np

    columns = state.columns
    dropped = columns["dropped"]
    return {
        "ranges": int(np.count_nonzero(dropped == 0)),
        "ignored_other_thread": int(np.count_nonzero(dropped == 1)),
        "ignored_never_ended": int(np.count_nonzero(dropped == 2)),
        "extended_ranges": int(np.count_nonzero(columns["extended"])),
        "emit_nvtx_names": sum(1 for n in state.names if _EMIT_NVTX.search(n)),
    }


def _read_events(trace: Session) -> dict[str, Any] | None:
    """NVTX_EVENTS' integer columns (a missing column all NULL) with each row's name text (None
    where NULL) and the StringIds the rows name; None when the decoder or SQLite refuses."""
    import numpy as np

    present = set(trace.schema.columns.get(schema.NVTX, ()))
    try:
        decoded = pages.read_columns(trace.path, schema.NVTX, [c for c in _INTS if c in present])
        text = _page_texts(trace, decoded.rows) if "text" in present else None
        untexted = text is None or (not isinstance(text, bool) and bool((text[0] == 0).any()))
        strings = _strings(trace) if untexted and trace.schema.has(schema.STRINGS) else {}
    except (pages.PagesUnsupported, pages.PagesDamaged, sqlite3.Error, UnicodeDecodeError):
        return None  # the SQL path reads it, and its guard names any damage
    if text is False:
        return None
    n = decoded.rows
    out: dict[str, Any] = {"rows": n, "text": text, "strings": strings}
    for column in _INTS:
        if column in decoded.values:
            values = np.asarray(decoded.values[column], dtype=np.int64)
            nulls = decoded.nulls.get(column)
            out[column] = np.broadcast_to(values, (n,))
            out[column + "?"] = np.zeros(n, bool) if nulls is None else np.broadcast_to(nulls != 0, (n,))
        else:
            out[column], out[column + "?"] = np.zeros(n, np.int64), np.ones(n, bool)
    return out


def _page_texts(trace: Session, rows: int) -> tuple[Any, list[str | None]] | bool:
    """Each row's text as a code into a list of the distinct texts (code 0: NULL), decoded from the
    pages (nsysq.export.pages.read_texts); through SQLite (:func:`_texts`) where the page decoder
    cannot read the column (a long text in overflow pages, a value that is not text). False when
    the rows are not the integer columns' rows."""
    try:
        codes, texts = pages.read_texts(trace.path, schema.NVTX, "text")
    except pages.PagesUnsupported:
        return _texts(trace, rows)
    return (codes, texts) if len(codes) == rows else False


def _texts(trace: Session, rows: int) -> tuple[Any, list[str | None]] | bool:
    """Each row's text as a code into a list of the distinct texts (code 0: NULL), read through
    SQLite in rowid order; False when SQLite's rows are not the decoder's. SQLite joins every row's
    text into one string (NULL as a marker character), split in one call: no Python object per row
    but the pieces. A text holding the separator, or equal to the marker, falls back to a read per
    row."""
    import numpy as np

    con = connect_readonly(trace.path)
    try:
        table = schema.quote(schema.NVTX)
        count, texts, joined = con.execute(  # NOT INDEXED: the table's own b-tree, in rowid order
            f"SELECT count(*), count(text), group_concat(IFNULL(text, char(30)), char(31)) "
            f"FROM {table} NOT INDEXED"
        ).fetchone()
        pieces = joined.split(_SEP) if joined is not None else []
        coded = _coded(pieces, _NULL) if len(pieces) == count else None
        if coded is None or int(np.count_nonzero(coded[0] == 0)) != count - texts:  # ambiguous
            cursor = con.execute(f"SELECT text FROM {table} ORDER BY rowid")
            coded = _coded([t for (t,) in cursor], None)
    finally:
        con.close()
    if len(coded[0]) != rows:
        return False
    return coded[0], [None, *coded[1][1:]]


def _coded(pieces: list[Any], null: str | None) -> tuple[Any, list[Any]]:
    """Each piece's code into the distinct pieces in order of first appearance, ``null`` first."""
    import numpy as np

    first: dict[Any, int] = {null: -1}  # each piece's first row
    at = np.fromiter(map(first.setdefault, pieces, range(len(pieces))), dtype=np.int64, count=len(pieces))
    return np.searchsorted(np.fromiter(first.values(), dtype=np.int64), at), list(first)  # firsts increase


def _strings(trace: Session) -> dict[int, str]:
    con = connect_readonly(trace.path)
    try:
        rows = con.execute(f"SELECT id, value FROM {schema.quote(schema.STRINGS)} WHERE value IS NOT NULL")
        return {int(i): str(v) for i, v in rows if i is not None}
    finally:
        con.close()


def _ranges(ev: dict[str, Any], extend_unended: bool) -> tuple[dict[str, Any], list[str], Coded] | None:
    """The columns of nsysq_nvtx_ranges in rid order and the distinct names (None: a range row
    without a thread or a start)."""
    import numpy as np

    etype = _or_null(ev, "eventType", -1)
    is_range = _any_of(etype, _RANGE_TYPES)
    rows: Any = slice(None) if is_range.all() else np.flatnonzero(is_range)  # a slice: no copies
    if ev["globalTid?"][rows].any() or ev["start?"][rows].any():
        return None
    names, name_of = _names(ev, rows)
    tid, start = ev["globalTid"][rows], ev["start"][rows]
    end, ended = ev["end"][rows], ~ev["end?"][rows]
    dom = _or_null(ev, "domainId", 0)[rows]
    other = ~ev["endGlobalTid?"][rows] & (ev["endGlobalTid"][rows] != tid)
    extended = ~ended & ~other & extend_unended
    if extended.any():
        last = np.where(ev["end?"], ev["start"], ev["end"])
        end = np.where(extended, last.max(), end)
        ended = ended | extended
    pushpop = _any_of(etype[rows], _PUSH_POP)
    # ORDER BY tid, dom, start, end DESC NULLS FIRST (-end; NULL the least), kind, name
    end_key = np.negative(end) if ended.all() else np.where(ended, -end, np.iinfo(np.int64).min)
    order = lexsorted((tid, dom, start, end_key, ~pushpop, _rank(names)[name_of]))
    dropped = np.where(other, 1, np.where(ended, 0, 2)).astype(np.int8)
    unsorted = {
        "tid": tid, "start": start, "end": end if ended.all() else np.where(ended, end, 0), "ended": ended,
        "extended": extended,
        "dropped": dropped, "pushpop": pushpop,
    }  # fmt: skip
    taken = Background(partial(_taken, unsorted, order))  # numpy's gathers, on the second core
    del unsorted, end, ended, extended, dropped, pushpop
    dom = dom[order]
    domain_code, domains = _domains(ev, tid, order, dom)
    code = np.int32 if max(len(names), len(domains)) < (1 << 31) else np.int64  # memory
    name_code, domain_code = name_of[order].astype(code), domain_code.astype(code, copy=False)
    rid = np.arange(1, len(order) + 1, dtype=np.int64)
    rest = taken.result()
    columns = {
        "rid": rid, "tid": rest["tid"], "dom": dom, "domain": domain_code, "name": name_code,
        "pushpop": rest["pushpop"], "start": rest["start"], "end": rest["end"], "ended": rest["ended"],
        "extended": rest["extended"], "dropped": rest["dropped"],
    }  # fmt: skip
    used = np.flatnonzero(np.bincount(name_of, minlength=len(names)))
    return columns, [names[i] for i in used.tolist()], Coded(name_code, names, domain_code, domains)


def _or_null(ev: dict[str, Any], column: str, null: int) -> Any:
    """Column ``column`` of the events with ``null`` where it is NULL (the column itself when it
    holds none: no copy)."""
    import numpy as np

    nulls = ev[column + "?"]
    return ev[column] if not nulls.any() else np.where(nulls, null, ev[column])


def _taken(columns: dict[str, Any], order: Any) -> dict[str, Any]:
    """Each column's values in ``order`` (numpy alone: it runs beside the main thread)."""
    return {name: values[order] for name, values in columns.items()}


def _any_of(values: Any, wanted: tuple[int, ...]) -> Any:
    import numpy as np

    out = np.zeros(len(values), dtype=bool)
    for w in wanted:
        out |= values == w
    return out


def _names(ev: dict[str, Any], rows: Any) -> tuple[list[str], Any]:
    """The distinct names of ``rows`` (indexes, or a slice of every row): text, else the registered
    string of textId, else '<unnamed range>'; and each row's index into them."""
    import numpy as np

    index: dict[str, int] = {}
    if ev["text"] is not None:
        codes, texts = ev["text"]
        text_code = codes[rows]
        text_name = np.asarray([index.setdefault(t, len(index)) if t is not None else -1 for t in texts])
        name_of = text_name[text_code]
    else:
        name_of = np.full(ev["rows"] if isinstance(rows, slice) else len(rows), -1, np.int64)
    todo = np.flatnonzero(name_of < 0)
    if len(todo):
        at = todo if isinstance(rows, slice) else rows[todo]  # rows: every row, or their indexes
        ids = np.where(ev["textId?"][at], -1, ev["textId"][at])
        unique, back = np.unique(ids, return_inverse=True)
        strings = ev["strings"]
        code = [
            index.setdefault(strings.get(int(i), _UNNAMED) if i >= 0 else _UNNAMED, len(index))
            for i in unique
        ]
        name_of[todo] = np.asarray(code, dtype=np.int64)[back]
    return list(index), name_of


def _rank(names: list[str]) -> Any:
    """Each name's position in DuckDB's order of VARCHARs (byte order of UTF-8: code points)."""
    import numpy as np

    rank = np.empty(len(names), dtype=np.int64)
    rank[sorted(range(len(names)), key=names.__getitem__)] = np.arange(len(names), dtype=np.int64)
    return rank


def _domains(ev: dict[str, Any], tid: Any, order: Any, dom: Any) -> tuple[Any, list[str]]:
    """ranges_sorted.sql's domain of each row (``tid[order]``, ``dom``: the rows in rid order) as a
    code into the distinct domains, which follow: '' for domain 0, the name its process's
    DomainCreate row gives (the least, when several), else 'domain N'."""
    import numpy as np

    etype = _or_null(ev, "eventType", -1)
    rows = np.flatnonzero((etype == _DOMAIN_CREATE) & ~ev["domainId?"])
    named: dict[tuple[int, int], str] = {}
    for r in rows[~ev["globalTid?"][rows]]:  # a NULL process matches no range
        key = (int(ev["globalTid"][r] & _PID_MASK), int(ev["domainId"][r]))
        name = _row_name(ev, int(r))
        if name is not None:
            named[key] = min(named.get(key, name), name)
    code = np.zeros(len(dom), dtype=np.int32 if len(dom) < (1 << 31) else np.int64)  # memory
    labels = {"": 0}
    in_domain = np.flatnonzero(dom != 0)
    if len(in_domain):  # each distinct (process, domain) pair labelled once
        p, d = tid[order[in_domain]] & np.int64(_PID_MASK), dom[in_domain]  # the process of each
        order = lexsorted((p, d))
        p, d = p[order], d[order]
        first = np.concatenate([[True], (p[1:] != p[:-1]) | (d[1:] != d[:-1])])
        pair = np.cumsum(first) - 1
        lut = np.empty(int(pair[-1]) + 1, dtype=code.dtype)
        for i, (pp, dd) in enumerate(zip(p[first].tolist(), d[first].tolist(), strict=True)):
            label = named.get((pp, dd))
            lut[i] = labels.setdefault(label if label is not None else f"domain {dd}", len(labels))
        code[in_domain[order]] = lut[pair]
    return code, list(labels)


def _row_name(ev: dict[str, Any], r: int) -> str | None:
    """COALESCE(text, StringIds.value) of row ``r``."""
    if ev["text"] is not None:
        codes, texts = ev["text"]
        if texts[codes[r]] is not None:
            return str(texts[codes[r]])
    if ev["textId?"][r]:
        return None
    strings: dict[int, str] = ev["strings"]
    return strings.get(int(ev["textId"][r]))
