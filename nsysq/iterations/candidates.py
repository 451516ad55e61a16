"""The candidate step ranges as arrays: queries/iters/candidates.sql's groups, from the sweep's stacks.

A group is the kept ranges of one (domain, step name) at one nesting level on one thread and
domain (every ProfilerStep#N counts as the one name 'ProfilerStep#N'), numbered by that key with no
sort of the ranges. Its ranges overlap when one starts before the previous one (by start, then rid)
ended, which is the query's test (a range that starts before some earlier one ended) for being
none: sorted by start, a sequence with no range starting before the previous one's end has every
range start at or after every earlier end. Push/pop ranges at one level of nested stacks never
overlap, so only the groups holding a start/end range are sorted (:func:`_overlaps`). The levels
come from nsysq.analyses.nvtx_sweep's stacks, the names from queries/iters/range_codes.sql and
range_names.sql, so no join of the ranges with their stack and no window over them is run."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from nsysq.analyses import nvtx_ranges
from nsysq.base.sorting import ascending

if TYPE_CHECKING:
    from nsysq.analyses.nvtx_sweep import Stacks
    from nsysq.session import Session


@dataclass(frozen=True)
class Ranges:
    """The kept ranges of the groups, in rid order: their ``rows`` in the stacks, ``group`` (index
    into the groups as :func:`groups` numbers them) and thread (``tid_code``: index into ``tids``,
    the threads sorted)."""

    stacks: Stacks
    rows: Any
    group: Any
    tids: Any
    tid_code: Any

    def on_thread(self, picked: Any, tid: int) -> Any:
        """The positions (into ``rows``) of the ranges ``picked`` (a mask per range) on thread
        ``tid``, in rid order."""
        at = int(np.searchsorted(self.tids, tid))
        if at == len(self.tids) or int(self.tids[at]) != tid:
            return np.zeros(0, dtype=np.int64)
        return np.flatnonzero(picked & (self.tid_code == at))


def groups(trace: Session, stacks: Stacks, min_instances: int) -> tuple[list[dict[str, Any]], Ranges] | None:
    """candidates.sql's rows (its columns, but ``overlaps`` as a count of ranges starting before
    the previous one ended; same order; ``group`` numbers them) and the ranges by group; None when
    the group keys do not fit in 64 bits or two step names share a hash. ``stacks`` nest (the
    sweep's, with no unnested push/pop range)."""
    coded = _step_codes(trace)
    if coded is None:
        names = trace.run("iters_range_names").records()
        hashes = np.array([int(r["h"]) for r in names], dtype=np.uint64)
        if len(np.unique(hashes)) < len(hashes):  # two names share a hash: candidates.sql groups them
            return None
        kept, code, profiler = _hashed_codes(trace, names, hashes)
    else:
        names, (kept, code, profiler) = coded
    rows = np.flatnonzero(stacks.kept & kept)
    tids, tid_code = _codes(stacks.tid[rows])
    doms, dom_code = _codes(stacks.dom[rows])
    width = int(stacks.lvl[rows].max()) + 1 if len(rows) else 1
    shape = (len(tids), len(doms), max(len(names), 1), width)
    if shape[0] * shape[1] * shape[2] * shape[3] >= 1 << 62:
        return None
    key = ((tid_code * shape[1] + dom_code) * shape[2] + code[rows]) * shape[3] + stacks.lvl[rows]
    keys, group = _codes(key)
    del key
    group = group.astype(np.int32 if len(keys) < 1 << 31 else np.int64)  # memory
    ranges = Ranges(stacks, rows, group, tids, tid_code)
    labels = _labels(keys, shape, tids, doms)
    return _rows(names, labels, ranges, profiler[rows], min_instances), ranges


_Label = tuple[int, int, int, int]


def _labels(keys: Any, shape: _Label, tids: Any, doms: Any) -> list[_Label]:
    """Each group's (tid, dom, name position, level) from its key (thread, domain, name and level
    codes, mixed radix ``shape``)."""
    out = []
    for k in keys.tolist():
        k, lvl = divmod(k, shape[3])
        k, name = divmod(k, shape[2])
        t, d = divmod(k, shape[1])
        out.append((int(tids[t]), int(doms[d]), name, lvl))
    return out


NOTE = (
    "computed from the ranges' name and domain codes (nsysq.iterations.candidates); this query gives "
    "the same rows"
)
PROFILER_STEP = re.compile(
    r"ProfilerStep#[0-9]+"
)  # range_codes.sql's regexp_matches(name, '^ProfilerStep#[0-9]+$')


def _step_codes(trace: Session) -> tuple[list[dict[str, Any]], tuple[Any, Any, Any]] | None:
    """queries/iters/range_names.sql's rows (code, domain, name: no hash) and range_codes.sql's
    columns as each range's position among them, from the codes of the ranges' names and domains
    kept with the ranges (nsysq.analyses.nvtx_ranges): (kept, code, profiler) per range in rid
    order. The distinct (domain, step name) pairs are sorted as DuckDB sorts VARCHARs (by code
    point). None when the ranges were not kept so (then the queries are run)."""
    state = nvtx_ranges.kept(trace, "nsysq_nvtx_ranges")
    if state is None or state.codes is None:
        return None
    coded = state.codes
    width, pairs = len(coded.names), len(coded.domains) * len(coded.names)
    if pairs > 4 * len(coded.name_code) + 1024:  # a table too large
        return None
    profiler_name = np.array([PROFILER_STEP.fullmatch(n) is not None for n in coded.names], dtype=bool)
    step = ["ProfilerStep#N" if p else n for n, p in zip(coded.names, profiler_name.tolist(), strict=True)]
    pair = coded.domain_code.astype(np.int64) * width + coded.name_code
    kept = np.asarray(state.columns["dropped"]) == 0
    seen = np.flatnonzero(np.bincount(pair[kept], minlength=pairs)).tolist()
    label = {p: (coded.domains[p // width], step[p % width]) for p in seen}
    distinct = sorted(set(label.values()))
    position = {k: i for i, k in enumerate(distinct)}
    lut = np.zeros(pairs, dtype=np.int64)
    for p in seen:
        lut[p] = position[label[p]]
    code = np.where(kept, lut[pair], 0)
    trace.note_query("iters_range_names", NOTE)
    trace.note_query("iters_range_codes", NOTE)
    names = [{"code": i, "domain": d, "name": n} for i, (d, n) in enumerate(distinct)]
    return names, (kept, code, profiler_name[coded.name_code])


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
    if ascending(values):
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
    names: list[dict[str, Any]],
    labels: list[_Label],
    ranges: Ranges,
    profiler: Any,
    least: int,
) -> list[dict[str, Any]]:
    """One dict per group, in candidates.sql's order (``profiler`` per range of ``ranges``;
    ``least``: the fewest instances of a fit one)."""
    group, n = ranges.group, len(labels)
    instances = np.bincount(group, minlength=n)
    profiled = np.zeros(n, dtype=bool)
    profiled[group[profiler]] = True
    overlaps = _overlaps(ranges, n)
    out = []
    for g, (tid, dom, name, lvl) in enumerate(labels):
        label = names[name]
        out.append({
            "tid": tid, "dom": dom, "domain": label["domain"], "name": label["name"], "lvl": lvl,
            "profiler": bool(profiled[g]), "instances": int(instances[g]), "overlaps": int(overlaps[g]),
            "group": g, "fit": bool(not profiled[g] and instances[g] >= least and overlaps[g] == 0),
        })  # fmt: skip
    out.sort(key=lambda r: (not r["profiler"], -r["instances"], r["lvl"], r["tid"], r["dom"], r["name"]))
    return out


def _overlaps(ranges: Ranges, n: int) -> Any:
    """Per group 0..n-1, its ranges that start before the previous one (by start, then rid) ended.
    Push/pop ranges at one level of one stack never overlap when the stacks nest: a range still
    open at a push puts the push a level deeper (nsysq.analyses.nvtx_sweep's levels, where a range
    ending at the push's instant is closed). So only the groups holding a start/end range are
    sorted and compared."""
    st, rows, group = ranges.stacks, ranges.rows, ranges.group
    out = np.zeros(n, dtype=np.int64)
    mixed = np.zeros(n, dtype=bool)
    mixed[group[~st.pushpop[rows]]] = True
    if not mixed.any():
        return out
    pos = np.flatnonzero(mixed[group])
    sub, grp = rows[pos], group[pos]
    order = np.lexsort((sub, st.start[sub], grp))
    sub, grp = sub[order], grp[order]
    same = grp[1:] == grp[:-1]
    out += np.bincount(grp[1:][same & (st.start[sub][1:] < st.end[sub][:-1])], minlength=n)
    return out
