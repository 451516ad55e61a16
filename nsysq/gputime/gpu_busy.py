"""GPU busy, idle and exposed communication time per device: nsysq diff's GPU totals.

The op intervals are the rows of ``queries/gpu_ops.sql`` read by nsysq.gputime.gpu_ops (kernels, memcpys,
memsets and executions of CUDA graphs traced whole, with a start and an end; each kernel marked
communication or compute by its name pair's row of ``queries/kernel/comm_pairs.sql``). Per device:

* ``busy_ns``: the length of the union of every op, graph executions included (the device rows of
  ``nsysq gaps``); ``idle_ns`` = ``span_ns`` - ``busy_ns``; ``idle_gaps`` the maximal idle intervals;
* ``comm_exposed_ns``: communication time during which no compute kernel ran (``exposed_ns`` of
  ``nsysq overlap``), as |comm| - |comm ∩ compute| (the compute union's coverage of the
  communication islands, nsysq.gputime.intervals.Coverage), 0 on a device without communication kernels.
  A graph execution is neither communication nor compute (its kernels are not in the export; docs/gaps.md).

Each union comes from its starts and ends sorted (nsysq.gputime.intervals): compute, communication and copy
intervals are sorted once each, and the union of every op is a merge of those sorted runs.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from nsysq.base.table import Table
from nsysq.base.threads import before_threads
from nsysq.gputime import gpu_ops
from nsysq.gputime.intervals import Coverage, Sorted, union

if TYPE_CHECKING:
    from nsysq.session import Session

COLUMNS = ("device_id", "ops", "span_ns", "busy_ns", "idle_ns", "idle_gaps", "comm_exposed_ns")
ANALYSIS = "gpu_busy/2"
"""This computation's name and version: part of the key its kept answers are stored under."""


def gpu_busy(trace: Session, comm_category: str) -> Table:
    """One row per device with GPU ops (COLUMNS; device_id None for ops without a deviceId); kept
    like a query's answer, so asking again (the same trace and rules) reads it back."""
    columns, rows = trace.kept(
        "gpu_ops", ANALYSIS, {"comm_category": comm_category}, lambda: (COLUMNS, _rows(trace, comm_category))
    )
    return Table(kind="gpu_busy", columns=columns, rows=rows, queries=gpu_ops.labels())


def _rows(trace: Session, comm_category: str) -> list[tuple[Any, ...]]:
    from nsysq.gputime.overlap import load_kind_rules

    kind_rules = load_kind_rules()
    ops = gpu_ops.read(trace, comm_category, [r.kind for r in kind_rules], [r.like for r in kind_rules])
    # Devices are independent: two threads (numpy's sorts and ufuncs release the GIL).
    before_threads()  # numpy imported here, not by the thread (a cached copy imports none first)
    with ThreadPoolExecutor(2) as pool:
        rows = list(pool.map(lambda d: _device_row(d, ops), ops.devices()))
    rows.sort(key=lambda r: (r[0] is None, r[0] or 0))
    return rows


def _device_row(device: int, ops: gpu_ops.GpuOps) -> tuple[Any, ...]:
    kernels = ops.kernels
    on = kernels.dev == device
    comm_on = on & (kernels.cls != gpu_ops.COMPUTE)
    if comm_on.any():
        compute, comm = _sorted(kernels, on & ~comm_on), _sorted(kernels, comm_on)
    else:
        compute, comm = _sorted(kernels, on), Sorted.of(kernels.s[:0], kernels.e[:0])
    others = [_sorted(o, o.dev == device) for o in (ops.memcpys, ops.memsets, ops.graphs)]
    # |comm \ compute| = |comm U| - |comm U ∩ compute U|: the compute union's coverage of the
    # communication islands, without a second merge of the compute rows (fresh memory is dear).
    exposed = union(comm).busy - Coverage.of(compute).under(comm) if len(comm) else 0
    every = compute.merged(comm, *others)
    whole = union(every)
    device_id = None if device == -1 else device
    return (device_id, len(every), whole.span, whole.busy, whole.idle, whole.gaps, exposed)


def _sorted(ops: gpu_ops.Ops, chosen: Any) -> Sorted:
    """The ``chosen`` rows of ``ops`` as one interval set (sorted in place: the rows are copies)."""
    return Sorted.owned(ops.s[chosen], ops.e[chosen])
