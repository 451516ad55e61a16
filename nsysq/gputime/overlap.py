"""Overlap: how much of each GPU's communication (and memcpy) time ran while compute kernels ran.

Communication kernels are the lineup's "NCCL / communication" category (``queries/rules/lineup_rules.toml``
or your ``--rules``); every other kernel is compute. The collective kind (AllReduce, AllGather, ...)
comes from the kernel's short name by the rules in ``queries/rules/collective_rules.toml``, per name pair
(``queries/kernel/comm_pairs.sql``). The op rows are those of ``queries/gpu_ops.sql`` (nsysq.gputime.gpu_ops:
decoded columns on a direct read); the unions and intersections are arithmetic on sorted arrays
(nsysq.gputime.intervals). docs/gaps.md explains it.
"""

from __future__ import annotations

import functools
import json
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from nsysq import catalog
from nsysq.base.errors import NoDataError
from nsysq.base.table import Table
from nsysq.catalog import rules as rules_mod
from nsysq.gputime import gpu_ops
from nsysq.gputime.intervals import Coverage, Sorted, groups, union
from nsysq.session.scope import stamp

if TYPE_CHECKING:
    from nsysq.session import Session

COMM_CATEGORY = "NCCL / communication"
"""The lineup category whose kernels count as communication."""
ANALYSIS = "overlap/3"
"""This computation's name and version: part of the key its kept answers are stored under."""
GRAPH_NOTE = (
    "{executions:,} execution(s) of CUDA graphs traced whole ({ms:,.3f} ms, graph_ns) count as neither "
    "communication nor compute: their kernels are not in the export. overlap_ns and memcpy_overlap_ns are "
    "then lower bounds and the exposed times upper bounds (graph_overlap_ns and memcpy_graph_overlap_ns of "
    "them ran beside a graph execution), and communication inside the graphs is not seen; profile with "
    "nsys profile --cuda-graph-trace=node to see inside them."
)
"""The note of a result with whole-graph executions: the overlap is then a bound (docs/gaps.md)."""
UNKNOWN_KIND = "unknown"
"""The collective kind of a communication kernel no kind rule matches."""
_KIND_RE = re.compile(r"[A-Za-z][A-Za-z0-9]*")

DEVICE_COLUMNS = (
    "device_id", "kernels", "comm_kernels", "comm_ns", "compute_ns", "overlap_ns", "exposed_ns",
    "overlap_pct", "memcpys", "memcpy_ns", "memcpy_overlap_ns", "memcpy_exposed_ns",
    "memcpy_overlap_pct", "graph_executions", "graph_ns", "graph_overlap_ns", "memcpy_graph_overlap_ns",
)  # fmt: skip
COLLECTIVE_COLUMNS = (
    "device_id",
    "collective",
    "kernels",
    "comm_ns",
    "overlap_ns",
    "exposed_ns",
    "overlap_pct",
)


@dataclass(frozen=True)
class KindRule:
    """A communication kernel whose lower-cased short name is LIKE ``like`` performs ``kind``."""

    order: int
    kind: str
    like: str
    note: str = ""


@dataclass(frozen=True)
class OverlapResult:
    """What ``nsysq overlap`` prints: per device, and per device and collective kind."""

    devices: Table
    collectives: Table

    def in_unit(self, unit: str) -> OverlapResult:
        return OverlapResult(self.devices.in_unit(unit), self.collectives.in_unit(unit))

    def tables(self) -> dict[str, Table]:
        return {"devices": self.devices, "collectives": self.collectives}


@functools.cache
def load_kind_rules(path: str | None = None) -> tuple[KindRule, ...]:
    """The collective-kind rules (packaged ``collective_rules.toml`` unless ``path``), validated."""

    def refused(kind: str) -> str | None:
        if _KIND_RE.fullmatch(kind) and kind != UNKNOWN_KIND:
            return None
        return (
            "use a word of letters and digits such as 'AllReduce' "
            f"(not {UNKNOWN_KIND!r}, which means no rule matched)"
        )

    rules = rules_mod.load_like_rules("collective_rules.toml", path, "kind", "short", refused)
    return tuple(KindRule(r.order, r.label, r.like, r.note) for r in rules)


def collective_kind(short_name: str | None, rules: tuple[KindRule, ...] | None = None) -> str:
    """The collective kind the first matching rule gives a communication kernel's short name."""
    if short_name is not None:
        for rule in rules if rules is not None else load_kind_rules():
            if rules_mod.like_to_regex(rule.like).fullmatch(short_name.lower()):
                return rule.kind
    return UNKNOWN_KIND


def overlap(trace: Session, *, rules: str | Path | None = None) -> OverlapResult:
    """Communication vs compute and memcpy vs compute overlap per device (and per collective kind).

    ``rules``: a lineup rules file replacing the packaged one (its "NCCL / communication" category
    decides which kernels communicate). Raises NoDataError when the trace has no kernels."""
    trace.require_kernels()
    if rules is None:
        trace.use_rules()
        source = "packaged lineup_rules.toml"
    else:
        trace.use_rules(rules_mod.load_lineup_rules(rules), source=str(rules))
        source = str(rules)
    kind_rules = load_kind_rules()
    params = {
        "comm_category": COMM_CATEGORY,
        "kind_names": [r.kind for r in kind_rules],
        "kind_patterns": [r.like for r in kind_rules],
    }
    _, rows = trace.kept("gpu_ops", ANALYSIS, params, lambda: _kept_rows(trace, params))
    records = [(section, json.loads(record)) for section, record in rows]
    if not any(section == "device" for section, _ in records):
        raise NoDataError(
            f"{trace.path.name} recorded no kernel, memcpy or CUDA graph execution with a start and an end."
        )
    category = catalog.get("kernel_category")
    queries = (*gpu_ops.labels(), category.label)
    base = Table(kind="overlap", columns=(), rows=[], queries=queries)
    devices = [_with_pcts(r) for section, r in records if section == "device"]
    collectives = [_with_pcts(r) for section, r in records if section == "collective"]
    footer = _footer(devices, source)
    notes: tuple[str, ...] = ()
    if not footer["comm_kernels"]:
        notes = (f"no kernel is in the {COMM_CATEGORY!r} category ({source}): nothing to overlap.",)
    if footer["graph_executions"]:
        notes = (
            *notes,
            GRAPH_NOTE.format(executions=footer["graph_executions"], ms=footer["graph_ns"] / 1e6),
        )
    return OverlapResult(
        devices=stamp(_table(base, "overlap", DEVICE_COLUMNS, devices, footer, notes), trace.scope),
        collectives=_table(base, "overlap_collectives", COLLECTIVE_COLUMNS, collectives, {}, ()),
    )


def _kept_rows(trace: Session, params: dict[str, Any]) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    """The device and collective records as (section, JSON) rows: what a kept answer holds."""
    ops = gpu_ops.read(trace, **params)
    every = (ops.kernels.dev, ops.memcpys.dev, ops.graphs.dev)
    devices = groups(np.concatenate([d.astype(np.int64) for d in every]))
    # Devices are independent: two threads (numpy's sorts and ufuncs release the GIL).
    with ThreadPoolExecutor(2) as pool:
        per_device = list(pool.map(lambda d: _device(ops, d), devices))
    device_rows = [record for record, _ in per_device]
    kind_rows = [record for _, kinds in per_device for record in kinds]
    device_rows.sort(key=lambda r: _nulls_last(r["device_id"]))
    kind_rows.sort(key=lambda r: (*_nulls_last(r["device_id"]), -r["comm_ns"], r["collective"]))
    rows = [("device", json.dumps(r)) for r in device_rows] + [
        ("collective", json.dumps(r)) for r in kind_rows
    ]
    return ("section", "record"), rows


def _nulls_last(device: int | None) -> tuple[bool, int]:
    return device is None, device or 0


def _on(ops: gpu_ops.Ops, device: int) -> Sorted:
    """The ops of ``device`` as one interval set."""
    chosen = ops.dev == device
    return Sorted.owned(ops.s[chosen], ops.e[chosen])


def _device(ops: gpu_ops.GpuOps, device: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One device's record and its collective kinds' records."""
    kernels = ops.kernels
    on = kernels.dev == device
    cls = kernels.cls[on]
    starts, ends = kernels.s[on], kernels.e[on]
    compute_rows = cls == gpu_ops.COMPUTE
    compute = Sorted.owned(starts[compute_rows], ends[compute_rows])
    behind = Coverage.of(compute)
    comm = Sorted.owned(starts[~compute_rows], ends[~compute_rows])
    copies, graphs = _on(ops.memcpys, device), _on(ops.graphs, device)
    comm_ns, copy_ns = union(comm).busy, union(copies).busy
    overlap_ns, copy_overlap_ns = behind.under(comm), behind.under(copies)
    device_id = None if device == -1 else device
    record = {
        "device_id": device_id,
        "kernels": len(cls),
        "comm_kernels": len(comm),
        "comm_ns": comm_ns,
        "compute_ns": union(compute).busy,
        "overlap_ns": overlap_ns,
        "exposed_ns": comm_ns - overlap_ns,
        "memcpys": len(copies),
        "memcpy_ns": copy_ns,
        "memcpy_overlap_ns": copy_overlap_ns,
        "memcpy_exposed_ns": copy_ns - copy_overlap_ns,
        "graph_executions": len(graphs),
        "graph_ns": union(graphs).busy,
        "graph_overlap_ns": 0,
        "memcpy_graph_overlap_ns": 0,
    }
    if len(graphs) and (len(comm) or len(copies)):  # exposed time a graph execution ran beside
        behind_either = Coverage.of(compute.merged(graphs))
        record["graph_overlap_ns"] = behind_either.under(comm) - overlap_ns
        record["memcpy_graph_overlap_ns"] = behind_either.under(copies) - copy_overlap_ns
    return record, _kinds(ops.kinds, device_id, cls, starts, ends, comm, behind)


def _kinds(
    kinds: tuple[str, ...],
    device_id: int | None,
    cls: Any,
    starts: Any,
    ends: Any,
    comm: Sorted,
    behind: Coverage,
) -> list[dict[str, Any]]:
    """One record per collective kind of the device's communication kernels."""
    out = []
    counts = np.bincount(cls, minlength=len(kinds) + 1)
    for code in np.flatnonzero(counts[1:]) + 1:
        rows = cls == code
        one = comm if counts[code] == len(comm) else Sorted.owned(starts[rows], ends[rows])
        ns, hidden = union(one).busy, behind.under(one)
        out.append(
            {
                "device_id": device_id,
                "collective": kinds[code - 1],
                "kernels": int(counts[code]),
                "comm_ns": ns,
                "overlap_ns": hidden,
                "exposed_ns": ns - hidden,
            }
        )
    return out


def _with_pcts(record: dict[str, Any]) -> dict[str, Any]:
    out = dict(record)
    out["overlap_pct"] = _pct(record["overlap_ns"], record["comm_ns"])
    if "memcpy_ns" in record:  # a device's record
        out["memcpy_overlap_pct"] = _pct(record["memcpy_overlap_ns"], record["memcpy_ns"])
    return out


def _pct(part: Any, whole: Any) -> float | None:
    return 100.0 * float(part) / float(whole) if part is not None and whole else None


def _footer(devices: list[dict[str, Any]], source: str) -> dict[str, Any]:
    def total(key: str) -> int:
        return sum(int(r[key]) for r in devices)

    return {
        "devices": len(devices),
        "comm_kernels": total("comm_kernels"),
        "comm_ns": total("comm_ns"),
        "overlap_ns": total("overlap_ns"),
        "exposed_ns": total("exposed_ns"),
        "memcpy_ns": total("memcpy_ns"),
        "memcpy_overlap_ns": total("memcpy_overlap_ns"),
        "memcpy_exposed_ns": total("memcpy_exposed_ns"),
        "graph_executions": total("graph_executions"),
        "graph_ns": total("graph_ns"),
        "graph_overlap_ns": total("graph_overlap_ns"),
        "memcpy_graph_overlap_ns": total("memcpy_graph_overlap_ns"),
        "comm_category": COMM_CATEGORY,
        "rules": source,
    }


def _table(
    base: Table,
    kind: str,
    columns: tuple[str, ...],
    records: list[dict[str, Any]],
    footer: dict[str, Any],
    notes: tuple[str, ...],
) -> Table:
    rows = [tuple(_plain(c, r[c]) for c in columns) for r in records]
    return replace(base, kind=kind, columns=columns, rows=rows, footer=footer, notes=notes)


def _plain(column: str, value: Any) -> Any:
    """Sums come back from DuckDB as HUGEINT/Decimal: hand out plain ints."""
    if value is not None and (
        column.endswith("_ns") or column in ("kernels", "comm_kernels", "memcpys", "graph_executions")
    ):
        return int(value)
    return value
