"""Row orders by several integer keys: numpy's lexsort, in fewer passes over event data.

``np.lexsort`` sorts once per key. Event columns rarely need that: a thread or stream key holds a
few values, a timestamp spans far less than 64 bits, and rows seldom tie on a timestamp. The
leading keys are packed into one int64 (each key's offset from its minimum, or its rank among its
distinct values when those are few) and sorted once, stably; the keys that did not fit order only
the rows that tie on the packed ones. The order is exactly ``np.lexsort``'s (stable: rows equal on
every key keep their order).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

_LIMIT = 1 << 62  # the packed key's range stays below this (no int64 overflow)
_FEW = 1 << 16  # a key of this many distinct values or fewer is packed by rank
_RUN = 1 << 20  # rows gathered at a time to compare neighbours
_SAMPLE = 4096  # the leading rows looked at before counting a key's distinct values


def lexsorted(keys: Sequence[Any]) -> Any:
    """The order of the rows sorted by ``keys`` (integer or bool arrays of one length, the most
    significant first): ``np.lexsort(keys[::-1])``."""
    import numpy as np

    columns = [np.asarray(k) for k in keys]
    if not columns or not len(columns[0]):
        return np.zeros(0, dtype=np.intp)
    packed, used = _packed(columns)
    order = np.argsort(packed, kind="stable")
    if used == len(columns):
        return order
    tie = _ties(packed, order)
    del packed
    if not tie.any():
        return order
    _order_ties(order, tie, columns[used:])
    return order


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


def _packed(columns: list[Any]) -> tuple[Any, int]:
    """The leading keys as one int64 key whose order is theirs, and how many were packed (at
    least one: a first key that fits no packing is sorted as it is)."""

    packed: Any = None
    scale = 1
    for used, column in enumerate(columns):
        part, span = _offsets(column, _LIMIT // scale)
        if part is None:
            if packed is None:
                return column, 1
            return packed, used
        if packed is None:
            packed = part
        else:
            packed *= span
            packed += part
        scale *= span
    return packed, len(columns)


def _offsets(column: Any, room: int) -> tuple[Any, int]:
    """``column`` as int64 codes from 0 in its order, and their span: offsets from its minimum, or
    ranks among its distinct values when they are few; (None, 0) when neither fits in ``room``."""
    import numpy as np

    if column.dtype == np.bool_:
        return column.astype(np.int64), 2
    lo, hi = int(column.min()), int(column.max())
    if hi - lo + 1 <= room:
        if column.dtype.kind == "u" and column.dtype.itemsize == 8:  # may not fit int64 before the offset
            return (column - np.uint64(lo)).astype(np.int64), hi - lo + 1
        part = column.astype(np.int64)  # a copy: packed in place
        part -= lo
        return part, hi - lo + 1
    return _ranks(column, min(room, _FEW))


def _ranks(column: Any, most: int) -> tuple[Any, int]:
    """Each value's rank among the distinct values of ``column`` and their count, when there are
    ``most`` or fewer ((None, 0) otherwise): the distinct values of the leading rows, completed
    by those any row misses, located by binary search (no hash table, no sort of the column)."""
    import numpy as np

    distinct = np.unique(column[:_SAMPLE])
    if len(distinct) > _SAMPLE // 4:  # a timestamp, not a thread: not worth a pass
        return None, 0
    while len(distinct) <= most:
        rank = np.searchsorted(distinct, column)
        np.minimum(rank, len(distinct) - 1, out=rank)
        missing = distinct[rank] != column
        if not missing.any():
            return rank.astype(np.int64, copy=False), len(distinct)
        distinct = np.union1d(distinct, column[missing])
    return None, 0


def _order_ties(order: Any, tie: Any, rest: list[Any]) -> None:
    """Reorder, in place, each run of ``order`` that ties on the packed keys by the ``rest``."""
    import numpy as np

    run = np.cumsum(np.concatenate([[True], ~tie]))  # each sorted row's run of equal packed keys
    in_tie = np.zeros(len(order), dtype=bool)
    in_tie[1:] = tie
    in_tie[:-1] |= tie
    at = np.flatnonzero(in_tie)
    rows = order[at]
    sub = np.lexsort((*[k[rows] for k in rest[::-1]], run[at]))
    order[at] = rows[sub]
