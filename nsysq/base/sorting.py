"""Row orders by several integer keys: numpy's lexsort, in fewer passes over event data.

``np.lexsort`` sorts once per key. Event columns rarely need that: a thread or stream key holds a
few values, a timestamp spans far less than 64 bits, and rows seldom tie on a timestamp. The
leading keys are packed into one int64 (each key's offset from its minimum, or its rank among its
distinct values when those are few) and sorted once, stably; the keys that did not fit order only
the rows that tie on the packed ones. The order is exactly ``np.lexsort``'s (stable: rows equal on
every key keep their order). When the packed key leaves room for the row number beside it, the two
are sorted together in place by numpy's vectorized (unstable) sort, the row number making every
key distinct; keys already in a few ascending runs keep numpy's merge sort, which meets them in one
pass.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

_LIMIT = 1 << 62  # the packed key's range stays below this (no int64 overflow)
_FEW = 1 << 16  # a key of this many distinct values or fewer is packed by rank
_RUN = 1 << 20  # rows gathered at a time to compare neighbours
_SAMPLE = 4096  # the leading rows looked at before counting a key's distinct values
_FEW_RUNS = 10  # at most n >> this descents: numpy's merge sort, which meets ascending runs in one pass


def ascending(values: Any) -> bool:
    """Whether ``values`` (a 1-d array) never decrease from one row to the next (True for fewer
    than two rows)."""
    import numpy as np

    return bool(np.all(values[1:] >= values[:-1]))


def lexsorted(keys: Sequence[Any]) -> Any:
    """The order of the rows sorted by ``keys`` (integer or bool arrays of one length, the most
    significant first): ``np.lexsort(keys[::-1])``."""
    import numpy as np

    columns = [np.asarray(k) for k in keys]
    if not columns or not len(columns[0]):
        return np.zeros(0, dtype=np.intp)
    packed, used, span = _packed(columns)
    if span is not None and _fits_beside_rows(span, len(packed)):
        order, tie = _sorted_with_rows(packed, need_ties=used < len(columns))
    else:
        order = np.argsort(packed, kind="stable")
        tie = None if used == len(columns) else _ties(packed, order)
    del packed
    if tie is None or not tie.any():
        return order
    _order_ties(order, tie, columns[used:])
    return order


def _fits_beside_rows(span: int, n: int) -> bool:
    return span << max(n - 1, 1).bit_length() < _LIMIT


def _sorted_with_rows(key: Any, *, need_ties: bool) -> tuple[Any, Any]:
    """The stable order of ``key`` (int64 offsets from 0 whose span leaves room for the row
    number beside them; overwritten) and, with ``need_ties``, whether each pair of neighbours in
    that order ties on it. Keys already in order (or in a few ascending runs, which numpy's merge
    sort meets in one pass) keep numpy's stable argsort."""
    import numpy as np

    n = len(key)
    descents = int(np.count_nonzero(key[1:] < key[:-1]))
    if descents <= n >> _FEW_RUNS:
        order = np.arange(n) if descents == 0 else np.argsort(key, kind="stable")
        return order, (_ties(key, order) if need_ties else None)
    bits = max(n - 1, 1).bit_length()
    key <<= bits
    _or_rows(key)
    key.sort()  # numpy's vectorized sort: the row number makes every key distinct, so order is stable
    tie = _shifted_ties(key, bits) if need_ties else None
    key &= (1 << bits) - 1
    return key, tie


def _row_runs(n: int, dtype: Any) -> Iterator[tuple[slice, Any]]:
    """The row numbers 0..n-1 (``dtype``) _RUN at a time: per run its slice and its numbers, in one
    reused buffer (valid until the next run). An arange as long as the rows would be fresh memory,
    and first touches of fresh memory cost more than the passes that use it."""
    import numpy as np

    rows = np.arange(min(_RUN, n), dtype=dtype)
    buf = np.empty_like(rows)
    for a in range(0, n, _RUN):
        b = min(a + _RUN, n)
        yield slice(a, b), np.add(rows[: b - a], a, out=buf[: b - a], dtype=dtype)


def _or_rows(key: Any) -> None:
    """``key |= np.arange(len(key))`` a run at a time (_row_runs)."""
    import numpy as np

    for run, numbers in _row_runs(len(key), np.int64):
        np.bitwise_or(key[run], numbers, out=key[run])


def place_rows(out: Any, at: Any, *, low: int = 0) -> None:
    """``out[at - low] = np.arange(len(at))`` (in ``out``'s type) a run at a time (_row_runs: no
    temporary as long as ``at``). With ``at`` an order, ``out`` becomes its inverse (each row's rank)."""
    for run, numbers in _row_runs(len(at), out.dtype):
        out[at[run] - low if low else at[run]] = numbers


def _shifted_ties(key: Any, bits: int) -> Any:
    """Per pair of neighbours in the sorted ``key``, whether they are equal above the low ``bits``
    (_RUN rows at a time, in one reused buffer: no temporary as long as the key)."""
    import numpy as np

    tie = np.empty(max(len(key) - 1, 0), dtype=bool)
    buf = np.empty(min(_RUN, len(key)) + 1, dtype=np.int64)
    for a in range(0, len(tie), _RUN):
        b = min(a + _RUN, len(tie))
        value = np.right_shift(key[a : b + 1], bits, out=buf[: b + 1 - a])
        np.equal(value[1:], value[:-1], out=tie[a:b])
    return tie


def _ties(packed: Any, order: Any) -> Any:
    """Per pair of neighbours in ``order``, whether their packed keys are equal (gathered _RUN rows
    at a time: no sorted copy of the key, memory)."""
    import numpy as np

    tie = np.empty(max(len(order) - 1, 0), dtype=bool)
    for a in range(0, len(tie), _RUN):
        b = min(a + _RUN, len(tie))
        ordered = packed[order[a : b + 1]]
        np.equal(ordered[1:], ordered[:-1], out=tie[a:b])
    return tie


def _packed(columns: list[Any]) -> tuple[Any, int, int | None]:
    """The leading keys as one int64 key whose order is theirs, how many were packed (at least
    one) and the packed key's span (its values lie in [0, span)); a first key that fits no packing
    is returned as it is, with span None."""

    import numpy as np

    packed: Any = None
    scale = 1
    for used, column in enumerate(columns):
        part, span = _offsets(column, _LIMIT // scale)
        if span == 1:  # one value: orders nothing, and is not copied (memory)
            continue
        if part is None:
            if packed is None:
                return column, used + 1, None
            return packed, used, scale
        if packed is None:
            packed = part
        else:
            packed *= span
            packed += part
        scale *= span
    if packed is None:  # every key of one value
        packed = np.zeros(len(columns[0]), dtype=np.int64)
    return packed, len(columns), scale


def _offsets(column: Any, room: int) -> tuple[Any, int]:
    """``column`` as int64 codes from 0 in its order, and their span: offsets from its minimum, or
    ranks among its distinct values when they are few; (None, 1) for a column of one value, (None,
    0) when neither fits in ``room``."""
    import numpy as np

    if column.dtype == np.bool_:
        if column.all() or not column.any():
            return None, 1
        return column.astype(np.int64), 2
    lo, hi = int(column.min()), int(column.max())
    if lo == hi:
        return None, 1
    if hi - lo + 1 <= room:
        if column.dtype.kind == "u" and column.dtype.itemsize == 8:  # may not fit int64 before the offset
            return (column - np.uint64(lo)).astype(np.int64), hi - lo + 1
        part = column.astype(np.int64)  # a copy: packed in place
        part -= lo
        return part, hi - lo + 1
    return _ranks(column, min(room, _FEW))


def coded(values: Any) -> tuple[Any, Any]:
    """Each value's index into the sorted distinct values, and those values: by binary search into
    the distinct values found (threads and processes hold few; uint16 codes when they fit), by
    np.unique when they are many."""
    import numpy as np

    column = np.asarray(values)
    found = _distinct_codes(column, _FEW)
    if found is not None:
        return found
    distinct, inverse = np.unique(column, return_inverse=True)
    return inverse.astype(np.int64, copy=False), distinct


def _ranks(column: Any, most: int) -> tuple[Any, int]:
    """Each value's rank among the distinct values of ``column`` (int64) and their count, when
    there are ``most`` or fewer ((None, 0) otherwise)."""
    import numpy as np

    found = _distinct_codes(column, most)
    if found is None:
        return None, 0
    codes, distinct = found
    return codes.astype(np.int64, copy=False), len(distinct)


def _distinct_codes(column: Any, most: int) -> tuple[Any, Any] | None:
    """Each value's index into the sorted distinct values of ``column`` (uint16 when they fit) and
    those values, when there are ``most`` or fewer (None otherwise): the distinct values of the
    leading rows, completed by those any row misses, located by binary search _RUN values at a time
    (no hash table, no sort of the column, no temporary as long as it)."""
    import numpy as np

    distinct = np.unique(column[:_SAMPLE])
    if len(distinct) > _SAMPLE // 4:  # a timestamp, not a thread: not worth a pass
        return None
    while len(distinct) <= most:
        codes = np.empty(len(column), dtype=np.uint16 if len(distinct) <= 65536 else np.int64)
        for a in range(0, len(column), _RUN):
            part = column[a : a + _RUN]
            at = np.minimum(np.searchsorted(distinct, part), max(len(distinct) - 1, 0))
            missing = distinct[at] != part
            if missing.any():  # a value the leading rows did not hold: start again with it
                distinct = np.union1d(distinct, part[missing])
                break
            codes[a : a + len(part)] = at
        else:
            return codes, distinct
    return None


def _order_ties(order: Any, tie: Any, rest: list[Any]) -> None:
    """Reorder, in place, each run of ``order`` that ties on the packed keys by the ``rest``
    (work in the tied rows alone: they are seldom many)."""
    import numpy as np

    pos = np.flatnonzero(tie)
    at = np.union1d(pos, pos + 1)  # the sorted rows in a tie, in order
    after_tie = np.zeros(len(at), dtype=bool)  # a row that ties with the one before it: same run
    later = at > 0
    after_tie[later] = tie[at[later] - 1]
    run = np.cumsum(~after_tie)
    rows = order[at]
    sub = np.lexsort((*[k[rows] for k in rest[::-1]], run))
    order[at] = rows[sub]


class KeyIndex:
    """Where values lie among sorted distinct integer ``keys``: by a direct table of positions when
    the keys are dense (their range at most _DENSE times their count: one gather per value), else
    by binary search (a search per value, cache-missing on millions)."""

    def __init__(self, keys: Any, *, dense: bool = True) -> None:
        """``dense`` False: binary search always (no table: memory)."""
        import numpy as np

        self.keys = keys
        self.low = 0
        self.table: Any = None
        n = len(keys)
        if n and dense:
            low, high = int(keys[0]), int(keys[-1])
            if high - low + 1 <= _DENSE * n:
                self.low = low
                self.table = np.full(high - low + 1, -1, dtype=np.int32 if n < (1 << 31) else np.int64)
                place_rows(self.table, np.asarray(keys, dtype=np.int64), low=low)

    def find(self, wanted: Any) -> Any:
        """Per value of ``wanted`` (int64), the position of the key equal to it (-1: none), int64."""
        import numpy as np

        values = np.asarray(wanted, dtype=np.int64)
        if not len(self.keys):
            return np.full(len(values), -1, dtype=np.int64)
        if self.table is None:
            at = np.searchsorted(self.keys, searchable(values, self.keys.dtype))
            np.minimum(at, len(self.keys) - 1, out=at)
            at[self.keys[at] != values] = -1
            return at
        found = np.empty(len(values), dtype=np.int64)
        for a in range(0, len(values), _RUN):  # no temporary as long as the values (memory)
            offset = values[a : a + _RUN] - self.low
            outside = (offset < 0) | (offset >= len(self.table))
            np.clip(offset, 0, len(self.table) - 1, out=offset)
            part = found[a : a + _RUN]
            part[:] = self.table[offset]
            part[outside] = -1
        return found


_DENSE = 4  # KeyIndex's table: at most this many entries per key


def searchable(values: Any, dtype: Any) -> Any:
    """int64 ``values`` to search for among keys of ``dtype``: clipped to its range and cast to it,
    so that numpy does not convert the keys to int64 per search (a value out of range lands beside
    the ends, where the equality check after the search rejects it)."""
    import numpy as np

    if dtype == values.dtype or dtype.kind not in "iu":
        return values
    info = np.iinfo(dtype)
    return np.clip(values, info.min, info.max).astype(dtype)
