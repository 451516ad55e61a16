"""The candidate step ranges as arrays: queries/iters/candidates.sql's groups, from the sweep's stacks.

A group is the kept ranges of one (domain, step name) at one nesting level on one thread and
domain (every ProfilerStep#N counts as the one name 'ProfilerStep#N'); its ranges overlap when one
starts before the previous one (by start, then rid) ended, which is the query's test (a range that
starts before some earlier one ended) for being none: sorted by start, a sequence with no range
starting before the previous one's end has every range start at or after every earlier end. The
levels come from nsysq.analyses.nvtx_sweep's stacks, the names from queries/iters/range_codes.sql
and range_names.sql, so no join of the ranges with their stack and no window over them is run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from nsysq.analyses import nvtx_ranges

if TYPE_CHECKING:
    from nsysq.analyses.nvtx_sweep import Stacks
    from nsysq.session import Session


@dataclass(frozen=True)
class Ranges:
    """The kept ranges sorted by group, then start and rid: their group (index into the groups as
    :func:`groups` numbers them), thread, start, end and kind."""

    group: Any
    tid: Any
    start: Any
    end: Any
    pushpop: Any


def groups(trace: Session, stacks: Stacks, min_instances: int) -> tuple[list[dict[str, Any]], Ranges] | None:
    """candidates.sql's rows (its columns, but ``overlaps`` as a count of ranges starting before
    the previous one ended; same order; ``group`` numbers them) and the ranges by group; None when
    the group keys do not fit in 64 bits or two step names share a hash."""
    names = trace.run("iters_range_names").records()
    hashes = np.array([int(r["h"]) for r in names], dtype=np.uint64)
    if len(np.unique(hashes)) < len(hashes):  # two names share a hash: candidates.sql groups them
        return None
    found = _step_codes(trace, names)
    if found is None:
        found = _hashed_codes(trace, names, hashes)
    kept, code, profiler = found
    rows = np.flatnonzero(stacks.kept & kept)
    tids, tid_code = _codes(stacks.tid[rows])
    doms, dom_code = _codes(stacks.dom[rows])
    lvl = stacks.lvl[rows]
    width = int(lvl.max()) + 1 if len(rows) else 1
    if len(tids) * len(doms) * max(len(names), 1) * width >= 1 << 62:
        return None
    key = ((tid_code * len(doms) + dom_code) * len(names) + code[rows]) * width + lvl
    _, group = _codes(key)
    order = np.argsort(group, kind="stable")  # rid order: by thread, domain and start already
    rows, group = rows[order], group[order]
    start = stacks.start[rows]
    if np.any((group[1:] == group[:-1]) & (start[1:] < start[:-1])):  # not in start order: sort it
        again = np.lexsort((rows, start, group))
        rows, group = rows[again], group[again]
    ranges = Ranges(group, stacks.tid[rows], stacks.start[rows], stacks.end[rows], stacks.pushpop[rows])
    return _rows(stacks, names, code, rows, ranges, profiler[rows], min_instances), ranges


NOTE = (
    "computed from the ranges' name and domain codes (nsysq.iterations.candidates); this query gives "
    "the same rows"
)
_STEP = re.compile(r"ProfilerStep#[0-9]+")  # range_codes.sql's regexp_matches(name, '^ProfilerStep#[0-9]+$')


def _step_codes(trace: Session, names: list[dict[str, Any]]) -> tuple[Any, Any, Any] | None:
    """queries/iters/range_codes.sql's columns as each range's position among ``names``
    (range_names.sql's rows), from the codes of the ranges' names and domains kept with the ranges
    (nsysq.analyses.nvtx_ranges): (kept, code, profiler) per range in rid order. None when the
    ranges were not kept so (then the query's hashes are read)."""
    state = nvtx_ranges.kept(trace, "nsysq_nvtx_ranges")
    if state is None or state.codes is None:
        return None
    coded = state.codes
    if len(coded.domains) * len(coded.names) > 4 * len(coded.name_code) + 1024:  # a table too large
        return None
    profiler_name = np.array([_STEP.fullmatch(n) is not None for n in coded.names], dtype=bool)
    step = ["ProfilerStep#N" if p else n for n, p in zip(coded.names, profiler_name.tolist(), strict=True)]
    position = {(r["domain"], r["name"]): i for i, r in enumerate(names)}
    width = len(coded.names)
    pair = coded.domain_code.astype(np.int64) * width + coded.name_code
    kept = np.asarray(state.columns["dropped"]) == 0
    seen = np.unique(pair[kept])
    lut = np.zeros(len(coded.domains) * width, dtype=np.int64)
    for p in seen.tolist():
        where = position.get((coded.domains[p // width], step[p % width]))
        if where is None:  # not a name range_names.sql gives: the query decides
            return None
        lut[p] = where
    code = np.where(kept, lut[pair], 0)
    trace.note_query("iters_range_codes", NOTE)
    return kept, code, profiler_name[coded.name_code]


def _hashed_codes(trace: Session, names: list[dict[str, Any]], hashes: Any) -> tuple[Any, Any, Any]:
    """(kept, code, profiler) per range from queries/iters/range_codes.sql's hashes."""
    by_hash = np.argsort(hashes)
    codes = trace.run_arrays("iters_range_codes")
    kept = np.asarray(np.ma.getdata(codes["kept"]), dtype=bool)
    found = np.searchsorted(hashes[by_hash], np.asarray(np.ma.getdata(codes["h"]), dtype=np.uint64))
    code = np.where(kept, by_hash[np.minimum(found, max(len(names) - 1, 0))], 0)
    return kept, code, np.asarray(np.ma.getdata(codes["profiler"]), dtype=bool)


def _codes(values: Any) -> tuple[Any, Any]:
    """``np.unique(values, return_inverse=True)`` without its sort when it can: sorted values (the
    threads, in rid order) by their change points, small non-negative ones by a lookup table."""
    if not len(values):
        return np.unique(values, return_inverse=True)
    if bool(np.all(values[1:] >= values[:-1])):
        new = np.empty(len(values), dtype=bool)
        new[0] = True
        np.not_equal(values[1:], values[:-1], out=new[1:])
        return values[new], np.cumsum(new) - 1
    low, high = int(values.min()), int(values.max())
    if low < 0 or high >= 4 * len(values) + 1024:
        return np.unique(values, return_inverse=True)
    present = np.zeros(high + 1, dtype=bool)
    present[values] = True
    return np.flatnonzero(present), (np.cumsum(present) - 1)[values]


def _rows(
    stacks: Stacks,
    names: list[dict[str, Any]],
    code: Any,
    rows: Any,
    ranges: Ranges,
    profiler: Any,
    least: int,
) -> list[dict[str, Any]]:
    """One dict per group, in candidates.sql's order (``least``: the fewest instances of a fit one)."""
    group = ranges.group
    n = int(group[-1]) + 1 if len(group) else 0
    same = group[1:] == group[:-1]
    overlaps = np.bincount(group[1:][same & (ranges.start[1:] < ranges.end[:-1])], minlength=n)
    instances = np.bincount(group, minlength=n)
    profiled = np.bincount(group, weights=profiler, minlength=n) > 0
    first = rows[np.concatenate([[0], np.flatnonzero(~same) + 1])] if n else rows[:0]
    out = []
    for g, r in enumerate(first):
        label = names[int(code[r])]
        out.append({
            "tid": int(stacks.tid[r]), "dom": int(stacks.dom[r]), "domain": label["domain"],
            "name": label["name"], "lvl": int(stacks.lvl[r]), "profiler": bool(profiled[g]),
            "instances": int(instances[g]), "overlaps": int(overlaps[g]), "group": g,
            "fit": bool(not profiled[g] and instances[g] >= least and overlaps[g] == 0),
        })  # fmt: skip
    out.sort(key=lambda r: (not r["profiler"], -r["instances"], r["lvl"], r["tid"], r["dom"], r["name"]))
    return out
