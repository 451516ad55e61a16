"""``nsysq iters``: one row per iteration of a training or serving loop (docs/iters.md).

The iterations and their launches come from nsysq.iterations.source; their GPU ops are the rows of
queries/iters/ops.sql (each op of an iteration's launches, with its device and kernel names),
summed with numpy (no loop over ops). Per iteration, per device and then summed over devices:
``gpu_span_ns`` (first op start to last op end), ``gpu_busy_ns`` (the union of its ops),
``gpu_idle_ns`` = span - busy; ``kernels`` and ``kernel_ns`` (the sum of kernel durations);
``comm_ns`` (the union of its communication kernels: the lineup's "NCCL / communication" category,
as ``nsysq overlap`` reads it) and ``comm_exposed_ns`` (that union minus the time a compute kernel of
the same iteration ran: overlap's exposed_ns). Warm-up, outliers, scores and causes:
nsysq.iterations.scoring.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from nsysq import catalog
from nsysq.base.errors import NoDataError
from nsysq.base.sums import sum_by
from nsysq.base.table import Table
from nsysq.base.threads import Background, side_by_side
from nsysq.gputime import gpu_ops
from nsysq.gputime.intervals import Coverage, Sorted, groups, islands
from nsysq.gputime.overlap import COMM_CATEGORY, load_kind_rules
from nsysq.iterations import launches, scoring
from nsysq.iterations.params import THRESHOLD
from nsysq.iterations.source import Iterations, find_iterations
from nsysq.session.scope import stamp

if TYPE_CHECKING:
    from nsysq.session import Session

COLUMNS = (
    "iteration", "name", "start_ns", "duration_ns", "gpu_span_ns", "gpu_busy_ns", "gpu_idle_ns",
    "kernels", "kernel_ns", "comm_ns", "comm_exposed_ns", "warmup", "outlier", "score", "cause",
)  # fmt: skip
_QUERIES = (
    "iters_candidates", "iters_shares", "iters_ranges", "iters_nvtx_launches", "iters_streams",
    "iters_stream_kernels", "iters_period_launches", "iters_ops", "iters_unattributed", "kernel_comm_pairs",
)  # fmt: skip


_OTHER_KINDS = {
    gpu_ops.MEMCPY: "memcpy time",
    gpu_ops.MEMSET: "memset time",
    gpu_ops.GRAPH: "CUDA graph time",
}
CAUSE_SAMPLE = 256
"""The steady iterations a cause is measured against (evenly spaced; all of them when fewer)."""


@dataclass(frozen=True)
class _Ops:
    """The iterations' GPU ops as arrays: iteration position, kind, device, start, end, name ids,
    communication flag."""

    it: Any
    kind: Any
    dev: Any
    s: Any
    e: Any
    sid: Any
    comm: Any


def iters(
    trace: Session,
    *,
    nvtx: str | None = None,
    source: str | None = None,
    threshold: float = THRESHOLD,
    unit: str = "ns",
) -> Table:
    """One row per iteration (COLUMNS). ``nvtx``: the range whose instances are the iterations
    (default: detected); ``source``: "nvtx" or "period" forces where iterations come from;
    ``threshold``: the robust score that makes an iteration an outlier (or warm-up)."""
    trace.require_kernels()
    classes = _Classes(trace)  # read while the launching calls are joined, if they are
    found = find_iterations(trace, nvtx=nvtx, source=source, meanwhile=classes.get)
    if not len(found):
        raise NoDataError(f"{trace.path.name}: {found.why}, but there are no such iterations.")
    # Launched during an iteration from another thread: NVTX ranges only (a period's window is GPU time).
    order = np.argsort(found.starts, kind="stable") if found.source == "nvtx" else np.arange(0)
    scoring_job = Background(partial(scoring.score, found.ends - found.starts, threshold=threshold))
    rows_of = partial(_rows, trace, found, scoring_job, classes)
    if found.kept is not None:  # from the calls (nsysq.iterations.launches), as the query counts
        left = partial(found.kept.unattributed, found.starts[order], found.ends[order])
        (rows, scores), unattributed = side_by_side(rows_of, left)  # the count on the second core
    else:
        rows, scores = rows_of()
        starts, ends = [int(v) for v in found.starts[order]], [int(v) for v in found.ends[order]]
        unattributed = trace.run("iters_unattributed", starts=starts, ends=ends).records()[0]
    footer = _footer(found, scores, unattributed, threshold, trace.t0)
    labels = tuple(catalog.get(q).label for q in _QUERIES) + (scoring.query_label(),)
    table = Table(
        kind="iters",
        columns=COLUMNS,
        rows=rows,
        queries=labels,
        footer=footer,
        notes=_notes(found, unattributed),
    )
    return stamp(table, trace.scope).in_unit(unit)


def _rows(
    trace: Session, found: Iterations, scoring_job: Background[scoring.Scores], classes: _Classes
) -> tuple[list[tuple[Any, ...]], scoring.Scores]:
    """The iterations' rows (COLUMNS) and their scores (``scoring_job``: being scored beside)."""
    ops = _read_ops(trace, found, classes.get())
    metrics = _metrics(ops, len(found))
    durations = found.ends - found.starts
    scores = scoring_job.result()
    cause = _causes(trace, found, ops, metrics, scores, durations)
    sums = ("span", "busy", "idle", "kernels", "kernel_ns", "comm", "exposed")
    # column by column (Python ints, floats and bools), then one tuple per row
    columns = (
        found.numbers, found.names, (found.starts - trace.t0).tolist(), durations.tolist(),
        *(metrics[k].astype(np.int64).tolist() for k in sums), scores.warmup.astype(bool).tolist(),
        scores.outlier.astype(bool).tolist(), scores.score, [cause.get(i) for i in range(len(found))],
    )  # fmt: skip
    return list(zip(*columns, strict=True)), scores


class _Classes:
    """Each kernel name pair's class (1: communication, else gpu_ops.COMPUTE) by the lineup's rules
    (queries/kernel/comm_pairs.sql), read once, when first asked for."""

    def __init__(self, trace: Session) -> None:
        self._trace = trace
        self._classes: dict[tuple[int, int], int] | None = None

    def get(self) -> dict[tuple[int, int], int]:
        if self._classes is None:
            self._trace.use_rules()
            kind_rules = load_kind_rules()
            pairs = self._trace.run(
                "kernel_comm_pairs", comm_category=COMM_CATEGORY, kind_names=[r.kind for r in kind_rules],
                kind_patterns=[r.like for r in kind_rules],
            ).rows  # fmt: skip
            self._classes = {(int(s), int(d)): 1 if comm else gpu_ops.COMPUTE for s, d, comm, _ in pairs}
        return self._classes


def _read_ops(trace: Session, found: Iterations, classes: dict[tuple[int, int], int]) -> _Ops:
    """queries/iters/ops.sql's rows, each kernel classed compute or communication (``classes``: by
    name pair): from the calls the iterations hold when they were read as arrays
    (launches.Kept.ops), else by the query."""
    kept = found.kept.ops(trace) if found.kept is not None else None
    if kept is not None:
        trace.note_query("iters_ops", launches.DECODED_NOTE)
    queried = trace.run_arrays("iters_ops") if kept is None else kept
    rows = {
        k: np.ma.getdata(v).astype(np.int64, copy=False) for k, v in queried.items()
    }  # copies none of Kept.ops'
    kind, sid = rows["kind"], rows["sid"]
    comm = np.zeros(len(kind), dtype=bool)
    kernels = kind == gpu_ops.KERNEL
    comm[kernels] = gpu_ops.pair_classes(sid[kernels], rows["did"][kernels], classes) != 0
    return _Ops(
        it=rows["it"], kind=kind, dev=rows["dev"], s=rows["s"], e=rows["e"], sid=sid, comm=comm,
    )  # fmt: skip


def _metrics(ops: _Ops, n: int) -> dict[str, Any]:
    """Per iteration: span, busy, idle, kernels, kernel_ns, comm, exposed (summed over devices)."""
    out: dict[str, Any] = {k: np.zeros(n, dtype=np.int64) for k in ("span", "busy", "comm", "exposed")}
    kernels = ops.kind == gpu_ops.KERNEL
    out["kernels"] = np.bincount(ops.it[kernels], minlength=n).astype(np.int64)
    out["kernel_ns"] = sum_by(ops.it[kernels], (ops.e - ops.s)[kernels], n)
    if len(ops.it):
        devices = groups(ops.dev)
        lookup = np.zeros(devices[-1] - devices[0] + 1, dtype=np.int64)
        lookup[np.array(devices) - devices[0]] = np.arange(len(devices))
        group = ops.it * len(devices) + lookup[ops.dev - devices[0]]  # one group per (iteration, device)
        m = n * len(devices)
        low = np.full(m, np.iinfo(np.int64).max, dtype=np.int64)
        high = np.full(m, np.iinfo(np.int64).min, dtype=np.int64)
        np.minimum.at(low, group, ops.s)
        np.maximum.at(high, group, ops.e)
        present = high >= low
        span = np.where(present, high - low, 0)
        out["span"] = span.reshape(n, len(devices)).sum(axis=1)
        # Groups laid end to end on one axis: each group's own clock from its first start, one
        # group every `width` ns, so the unions of all groups are one union (sorted arrays).
        width = int(span.max()) + 1
        offset = np.where(present, np.arange(m, dtype=np.int64) * width - low, 0)
        s, e = ops.s + offset[group], ops.e + offset[group]
        busy = _union_by(s, e, width, m)
        compute = kernels & ~ops.comm
        comm_rows = kernels & ops.comm
        comm = _union_by(s[comm_rows], e[comm_rows], width, m)
        covered = _covered_by(s[compute], e[compute], s[comm_rows], e[comm_rows], width, m)
        for key, value in (("busy", busy), ("comm", comm), ("exposed", comm - covered)):
            out[key] = value.reshape(n, len(devices)).sum(axis=1)
    out["idle"] = out["span"] - out["busy"]
    return out


def _union_by(s: Any, e: Any, width: int, m: int) -> Any:
    """The union's length of the intervals of each group (groups ``width`` apart on one axis)."""
    if not len(s):
        return np.zeros(m, dtype=np.int64)
    starts, ends = islands(_sorted(s, e))
    return sum_by(starts // width, ends - starts, m)


def _sorted(s: Any, e: Any) -> Sorted:
    """Starts and ends sorted: a stable sort (timsort/radix), fast on the nearly sorted arrays of
    queries/iters/ops.sql (by iteration and start)."""
    return Sorted(np.sort(s, kind="stable"), np.sort(e, kind="stable"))


def _covered_by(cs: Any, ce: Any, s: Any, e: Any, width: int, m: int) -> Any:
    """Per group: how long the union of ``cs..ce`` covers the union of ``s..e``."""
    if not len(s) or not len(cs):
        return np.zeros(m, dtype=np.int64)
    starts, ends = islands(_sorted(s, e))
    return sum_by(starts // width, Coverage.of(_sorted(cs, ce)).between(starts, ends), m)


def _causes(
    trace: Session,
    found: Iterations,
    ops: _Ops,
    metrics: dict[str, Any],
    scores: scoring.Scores,
    durations: Any,
) -> dict[int, str]:
    """The cause of each outlier: its kernel-name times against those of the steady iterations (at
    most CAUSE_SAMPLE of them, evenly spaced, so the name x iteration matrix stays small)."""
    outliers = np.flatnonzero(scores.outlier)
    if not len(outliers):
        return {}
    steady = ~scores.warmup & ~scores.outlier
    if not steady.any():
        steady = ~scores.warmup
    typical = np.flatnonzero(steady)
    typical = typical[np.linspace(0, len(typical) - 1, min(len(typical), CAUSE_SAMPLE)).astype(np.int64)]
    rows = np.union1d(outliers, typical)  # the iterations read, in order
    position = np.full(len(found), -1, dtype=np.int64)
    position[rows] = np.arange(len(rows))
    kernels = (ops.kind == gpu_ops.KERNEL) & (position[ops.it] >= 0)
    ids, code = np.unique(ops.sid[kernels], return_inverse=True)
    at = position[ops.it[kernels]] * len(ids) + code
    matrix = sum_by(at, (ops.e - ops.s)[kernels], len(rows) * len(ids)).reshape(len(rows), len(ids))
    by_name = {int(k): matrix[:, j] for j, k in enumerate(ids)}
    names = {
        int(r["id"]): str(r["value"]) for r in trace.run("iters_names", ids=[int(k) for k in ids]).records()
    }
    for kind, label in _OTHER_KINDS.items():  # the other ops' time, one candidate per kind
        chosen = (ops.kind == kind) & (position[ops.it] >= 0)
        if chosen.any():
            key = -1 - kind  # never a string id
            by_name[key] = sum_by(position[ops.it[chosen]], (ops.e - ops.s)[chosen], len(rows))
            names[key] = label
    faster = [bool(durations[i] < scores.median) for i in outliers]
    found_rows = scoring.causes(
        [int(position[i]) for i in outliers], np.isin(rows, typical), by_name, names,
        metrics["idle"][rows], faster,
    )  # fmt: skip
    return {int(rows[r]): text for r, text in found_rows.items()}


def _footer(
    found: Iterations, scores: scoring.Scores, unattributed: dict[str, Any], threshold: float, t0: int
) -> dict[str, Any]:
    return {
        "iterations": len(found),
        "source": found.source,
        "source_name": found.label,
        "why": found.why,
        "regular_pct": None if found.regular is None else 100.0 * found.regular,
        "steady_median_ns": scores.median,
        "steady_spread_ns": scores.spread,
        "warmup": int(np.count_nonzero(scores.warmup)),
        "outliers": int(np.count_nonzero(scores.outlier)),
        "threshold": threshold,
        "unattributed_ops": int(unattributed["ops"]),
        "unattributed_gpu_ns": int(unattributed["gpu_ns"]),
        "unattributed_during_ops": int(unattributed["during_ops"]),
        "unattributed_during_gpu_ns": int(unattributed["during_gpu_ns"]),
        "t0_ns": t0,
    }


def _notes(found: Iterations, unattributed: dict[str, Any]) -> tuple[str, ...]:
    notes: list[str] = []
    if int(unattributed["ops"]):
        notes.append(
            f"{int(unattributed['ops']):,} GPU ops ({int(unattributed['gpu_ns']) / 1e6:,.3f} ms) belong "
            "to no iteration (launched outside them, or from another thread): unattributed_ops."
            + (
                " The periods are those of one stream's process and device: --pid or --device reads another."
                if found.source == "period"
                else ""
            )
        )
    during = int(unattributed["during_ops"])
    if during and found.source == "nvtx":
        notes.append(
            f"{during:,} of them ({int(unattributed['during_gpu_ns']) / 1e6:,.3f} ms) were launched "
            "during an iteration from another thread (PyTorch launches the backward pass from its "
            "autograd thread): an iteration holds what its own thread launches, as nsysq nvtx "
            "attributes (docs/iters.md)."
        )
    return tuple(notes)
