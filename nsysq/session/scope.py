"""Scopes: one restriction of the GPU work every analysis reads (a device, a stream, a process, a set
of launches), applied in one place so census, lineup, stakeout, timeline, diff, gaps, overlap and
the plots all honour it the same way.

How it works. A :class:`Scope` that restricts anything makes the :class:`~nsysq.session.Session` create
one temp view per table of GPU work (``nsysq_scope_kernel`` over ``CUPTI_ACTIVITY_KIND_KERNEL``,
and the same for memcpys, memsets and whole-graph executions) holding only the rows in scope, and
``nsysq_scope_runtime`` / ``nsysq_scope_nvtx`` / ``nsysq_scope_osrt`` holding the CUDA API calls,
NVTX events and OS runtime calls of the processes in scope. Every packaged query then runs with
those names in place of the canonical ones (:func:`rewrite`), so the queries themselves never
change and ``--show-sql`` prints the views and the rewritten queries as they ran. Per-name
statistics, which the unscoped census reads precomputed (``nsysq_kernel_name_stats``, stored in
the cached copy), are computed from the scoped kernels into ``nsysq_scope_kernel_name_stats``. An
unscoped session runs the packaged queries as written: no view, no rewrite, no cost.

What each field keeps (all that are set must hold):

* ``device``: GPU ops with ``deviceId = N`` (the CUDA device of the op; ``nsysq info`` lists them).
* ``stream``: GPU ops with ``streamId = N``. Stream ids are numbered per process and device: add
  ``--device``/``--pid`` to name one stream of a multi-process trace.
* ``pid``: GPU ops of process N (``(globalPid >> 24) & 0xFFFFFF``, the operating-system pid) and
  that process's CUDA API calls and NVTX events (``(globalTid >> 24) & 0xFFFFFF``).
* ``ops``: an :class:`OpFilter`, GPU ops given as a set of launches (see below).
* ``nvtx``: an :class:`NvtxSelection`, the GPU work of some NVTX ranges: when the trace opens, the
  session turns it into the ``ops`` of those ranges' launches (``nsysq.analyses.nvtx`` attributes
  them; device, stream and pid apply to that attribution too).
* ``iterations``: an :class:`IterationSelection`, the GPU work of some iterations of the loop
  (``--iteration N|A:B``): turned into ``ops`` the same way, by ``nsysq.iterations.scope``.

Device and stream do not restrict CUDA API calls or NVTX events (a call has no device); the pid
does. A row whose deviceId, streamId or globalPid is NULL is in no scope of that dimension (nsys
fills them in every export seen so far, so the scopes of one dimension add up to the whole trace;
tests/test_scope.py checks it on the fixtures and every real export). The trace's time origin
(``t0``) stays the unscoped one, so ``--from/--to`` mean the same window in every scope. A device,
stream or pid with no GPU op in the trace is a UsageError that lists the ones there are.

Plugging in another filter (NVTX attribution, a time window, ...). Build an :class:`OpFilter`
whose ``sql`` is one SELECT returning the columns ``globalPid`` and ``correlationId`` (BIGINT)
of the launches to keep, and pass ``Scope(..., ops=OpFilter(label, sql, declared))`` (or
``dataclasses.replace(scope, ops=f)``) to ``nsysq.open(path, scope=...)``. The session runs
``CREATE TEMP TABLE nsysq_scope_ops AS SELECT DISTINCT globalPid, correlationId FROM (<sql>)``
once, then keeps a GPU op (kernel, memcpy, memset, graph execution) when its
``(globalPid, correlationId)`` pair is in that table, on top of device/stream/pid. The SELECT reads
the canonical tables (NVTX_EVENTS, CUPTI_ACTIVITY_KIND_RUNTIME, ...) unscoped; ``declared`` names
the columns it reads per canonical table, so a direct read decodes them first. Why launches and
not rowids: rowids differ between the export and its cached copy (which stores kernels sorted
by name), while a launch's ``(globalPid, correlationId)`` pair is the same in both, and it is
exactly what NVIDIA's projection attributes (the launching API call's correlation id within its
process; in node-traced graphs every kernel of one launch shares the ``cudaGraphLaunch`` id).
A filter that must keep some ops of a launch and not others (NVTX's time-window attribution)
sets ``keys=OP_KEYS``: its SELECT then returns ``globalPid, correlationId, start, "end"`` and an
op is kept when those four match. ``label`` says what the filter is ("nvtx decoder_layer_%") in
footers (``scope`` key) and ``--show-sql``, and is part of the scope's key (kept answers): two
selections can share one SELECT over helper tables built for each. A filter that selects nothing
is the filter's own error to raise (with the names that do exist) before it builds the Scope; the
session does not check ``ops``.

Wiring it into the CLI: the trace options are declared once, as the fields of
``nsysq.cli.common.TraceOptions`` (each annotated with its typer option and tagged with the
``Takes`` member that brings it); ``@trace_options(...)`` puts them on every command that reads GPU
work, and the property ``TraceOptions.scope`` builds the Scope that ``open_trace`` opens each trace
in (``diff`` and ``plot diff`` give the same options to both traces). A new option is one field of
TraceOptions, tagged ``Takes.SCOPE`` and placed after ``pid`` (fields are listed in ``--help`` in
their order), which ``TraceOptions.scope`` passes on (``Scope(device, stream, pid,
ops=OpFilter(...))``): every command that takes --device then takes it. Nothing else changes but
docs/cli.md, which ``python docs/gen_cli.py`` regenerates.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from nsysq.base.errors import UsageError
from nsysq.export import schema
from nsysq.session.sqlscript import Statement

if TYPE_CHECKING:
    from nsysq.base.table import Table

OPS_TABLE = "nsysq_scope_ops"
NAME_STATS = "nsysq_kernel_name_stats"
#: The scoped relation each canonical relation is read as under an active scope.
SCOPED: Mapping[str, str] = {
    schema.KERNEL: "nsysq_scope_kernel",
    schema.MEMCPY: "nsysq_scope_memcpy",
    schema.MEMSET: "nsysq_scope_memset",
    schema.GRAPH_TRACE: "nsysq_scope_graph_trace",
    schema.RUNTIME: "nsysq_scope_runtime",
    schema.NVTX: "nsysq_scope_nvtx",
    schema.OSRT: "nsysq_scope_osrt",
    NAME_STATS: "nsysq_scope_kernel_name_stats",
}
#: Tables of GPU work: rows carry deviceId, streamId, globalPid and correlationId.
GPU_TABLES: tuple[str, ...] = (schema.KERNEL, schema.MEMCPY, schema.MEMSET, schema.GRAPH_TRACE)
#: Tables of host events: rows carry globalTid (the pid restricts them, nothing else does).
THREAD_TABLES: tuple[str, ...] = (schema.RUNTIME, schema.NVTX, schema.OSRT)
_PID_BITS = "& 16777215"
#: The columns an OpFilter keeps by default: launches (every op of one launch shares them).
LAUNCH_KEYS: tuple[str, ...] = ("globalPid", "correlationId")
#: Per-operation keys, for a filter that keeps some ops of a launch and not others.
OP_KEYS: tuple[str, ...] = ("globalPid", "correlationId", "start", '"end"')


@dataclass(frozen=True)
class OpFilter:
    """A set of launches to keep: ``sql`` selects ``globalPid, correlationId`` (see the module doc);
    with ``keys=OP_KEYS`` a set of operations: ``globalPid, correlationId, start, "end"``."""

    label: str
    sql: str
    declared: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    keys: tuple[str, ...] = LAUNCH_KEYS


#: How an NVTX selection gives GPU work to its ranges (``--nvtx-mode``): as ``nsysq nvtx``,
#: ``--innermost`` and ``--window`` do. ``launch`` is the default.
NVTX_MODES = ("launch", "innermost", "window")


@dataclass(frozen=True)
class NvtxSelection:
    """The GPU work of some NVTX ranges: those ``selector`` names (``name[@domain][/index]``; with
    ``like`` the name is a case-insensitive LIKE pattern), attributed by ``mode`` (NVTX_MODES). What
    ``--nvtx``/``--nvtx-like``/``--nvtx-mode`` ask for and ``nsysq.open(path, nvtx=...)`` takes."""

    selector: str
    like: bool = False
    mode: str = "launch"

    def __post_init__(self) -> None:
        if self.mode not in NVTX_MODES:
            raise UsageError(f"--nvtx-mode {self.mode!r} is not one of {', '.join(NVTX_MODES)}.")

    @property
    def label(self) -> str:
        """``nvtx NAME``, ``nvtx-like PATTERN (window)``: how footers and --show-sql name it."""
        kind = "nvtx-like" if self.like else "nvtx"
        return f"{kind} {self.selector}" + ("" if self.mode == "launch" else f" ({self.mode})")


@dataclass(frozen=True)
class IterationSelection:
    """The GPU work of some iterations of the loop (``nsysq iters``): ``first`` to ``last``
    (inclusive), numbered as ``nsysq iters`` numbers them (N of ProfilerStep#N, else from 0). What
    ``--iteration N`` / ``--iteration A:B`` and ``nsysq.open(path, iteration=...)`` take; the
    session turns it into the launches of those iterations when the trace opens."""

    first: int
    last: int

    def __post_init__(self) -> None:
        if self.last < self.first:
            raise UsageError(f"--iteration {self.first}:{self.last} is empty; give A:B with A <= B.")

    @staticmethod
    def parse(text: str | int) -> IterationSelection:
        """``N`` or ``A:B`` (both inclusive) as a selection; UsageError otherwise."""
        if isinstance(text, int):
            return IterationSelection(text, text)
        first, sep, last = str(text).strip().partition(":")
        try:
            return IterationSelection(int(first), int(last if sep else first))
        except ValueError:
            raise UsageError(
                f"--iteration {text!r} is not N or A:B (iteration numbers, as nsysq iters shows them)."
            ) from None

    @property
    def label(self) -> str:
        """``iteration 3`` or ``iterations 3:5``."""
        if self.first == self.last:
            return f"iteration {self.first}"
        return f"iterations {self.first}:{self.last}"


@dataclass(frozen=True)
class Scope:
    """The GPU work an analysis reads; the default (nothing set) is the whole trace. ``nvtx``: an NVTX
    selection, turned into ``ops`` (the launches it keeps) when the trace opens; ``iterations``:
    some iterations of the loop, turned into ``ops`` the same way (nsysq.iterations.scope)."""

    device: int | None = None
    stream: int | None = None
    pid: int | None = None
    ops: OpFilter | None = None
    nvtx: NvtxSelection | None = None
    iterations: IterationSelection | None = None

    @property
    def active(self) -> bool:
        values = (self.device, self.stream, self.pid, self.ops, self.nvtx, self.iterations)
        return any(v is not None for v in values)

    def describe(self) -> str:
        """``device 0, stream 7, pid 4242, nvtx step`` ("" for the whole trace)."""
        named = (("device", self.device), ("stream", self.stream), ("pid", self.pid))
        parts = [f"{what} {value}" for what, value in named if value is not None]
        if self.ops is not None:
            parts.append(self.ops.label)
        elif self.nvtx is not None:
            parts.append(self.nvtx.label)
        elif self.iterations is not None:
            parts.append(self.iterations.label)
        return ", ".join(parts)

    def key(self) -> str:
        """What makes two scopes read the same rows (salts kept answers)."""
        # The label too: one filter query can read helper tables built for another selection.
        ops = "" if self.ops is None else f"{self.ops.label}|{self.ops.keys}|{self.ops.sql}"
        return f"scope|{self.device}|{self.stream}|{self.pid}|{ops}"

    def gpu_predicate(self) -> str:
        """The SQL condition a row of GPU work (any of GPU_TABLES) meets to be in scope."""
        terms = []
        if self.device is not None:
            terms.append(f"deviceId = {int(self.device)}")
        if self.stream is not None:
            terms.append(f"streamId = {int(self.stream)}")
        if self.pid is not None:
            terms.append(f"(globalPid >> 24) {_PID_BITS} = {int(self.pid)}")
        if self.ops is not None:
            keys = ", ".join(self.ops.keys)
            terms.append(f"({keys}) IN (SELECT ({keys}) FROM {OPS_TABLE})")
        return " AND ".join(terms) or "true"

    def thread_predicate(self) -> str:
        """The SQL condition a host event (CUDA API call, NVTX event) meets to be in scope."""
        if self.pid is None:
            return "true"
        return f"(globalTid >> 24) {_PID_BITS} = {int(self.pid)}"

    def ops_statement(self) -> Statement | None:
        """The statement that keeps the launches of ``ops`` as OPS_TABLE (None without ``ops``)."""
        if self.ops is None:
            return None
        return Statement(
            f"CREATE OR REPLACE TEMP TABLE {OPS_TABLE} AS\n"
            f"SELECT DISTINCT {', '.join(self.ops.keys)} FROM (\n{self.ops.sql}\n)",
            note=f"the launches in scope ({self.ops.label})",
        )

    def view_statements(self) -> list[Statement]:
        """The statements that create the scoped views (after ``ops_statement``)."""
        gpu = [_view(table, self.gpu_predicate()) for table in GPU_TABLES]
        return gpu + [_view(table, self.thread_predicate()) for table in THREAD_TABLES]

    def declared_extra(self) -> dict[str, tuple[str, ...]]:
        """The columns the scoped views read per canonical table (decoded first on a direct read)."""
        gpu: tuple[str, ...] = ("deviceId", "streamId", "globalPid", "correlationId")
        if self.ops is not None and self.ops.keys == OP_KEYS:
            gpu += ("start", "end")
        extra: dict[str, tuple[str, ...]] = dict.fromkeys(GPU_TABLES, gpu)
        extra.update(dict.fromkeys(THREAD_TABLES, ("globalTid",)))
        if self.ops is not None:
            for table, cols in self.ops.declared.items():
                extra[table] = tuple(dict.fromkeys((*extra.get(table, ()), *cols)))
        return extra


def check(scope: Scope, values: list[tuple[Any, ...]], trace_name: str) -> None:
    """Raise UsageError when ``scope`` names a device, stream or pid with no GPU work; ``values``:
    the rows of queries/scope_values.sql (dimension, value, ops)."""
    present: dict[str, list[int]] = {}
    for dimension, value, _ops in values:
        present.setdefault(str(dimension), []).append(int(value))
    for dimension, wanted in (("device", scope.device), ("stream", scope.stream), ("pid", scope.pid)):
        if wanted is None or int(wanted) in present.get(dimension, []):
            continue
        there = ", ".join(str(v) for v in sorted(present.get(dimension, []))) or "none"
        raise UsageError(
            f"{trace_name} has no GPU work on {dimension} {wanted}; {_PLURAL[dimension]} with GPU work: "
            f"{there} (nsysq info lists them)."
        )


_PLURAL = {"device": "devices", "stream": "streams", "pid": "processes"}


def _view(table: str, where: str) -> Statement:
    return Statement(
        f"CREATE OR REPLACE TEMP VIEW {SCOPED[table]} AS\nSELECT * FROM {schema.quote(table)} WHERE {where}",
        note=f"{table} in scope",
    )


# A comment or string literal to copy unchanged, or an identifier (bare or double-quoted).
_TOKEN = re.compile(r"""--[^\n]*|'(?:[^']|'')*'|"((?:[^"]|"")*)"|\b([A-Za-z_][A-Za-z0-9_]*)\b""")


def rewrite(sql: str, mapping: Mapping[str, str] = SCOPED) -> str:
    """``sql`` with every relation named in ``mapping`` (bare or quoted; not in comments or strings)
    replaced by its scoped relation."""

    def swap(match: re.Match[str]) -> str:
        name = match.group(1) if match.group(1) is not None else match.group(2)
        if name is not None and name in mapping:
            return mapping[name]
        return match.group(0)

    return _TOKEN.sub(swap, sql)


def reads_scoped(sql: str) -> bool:
    """Whether ``sql`` (already rewritten) reads the scoped per-name statistics."""
    return SCOPED[NAME_STATS] in sql


def merge_declared(
    declared: Mapping[str, tuple[str, ...]] | None, extra: Mapping[str, tuple[str, ...]]
) -> dict[str, tuple[str, ...]] | None:
    """A query's declared columns plus the scope's, for the tables the query reads."""
    if declared is None:
        return None
    out = dict(declared)
    for table, cols in declared.items():
        if table in extra:
            out[table] = tuple(dict.fromkeys((*cols, *extra[table])))
    return out


def stamp(table: Table, scope: Scope) -> Table:
    """``table`` with ``scope`` (its description) in the footer when a scope is active."""
    if not scope.active:
        return table
    return replace(table, footer={**table.footer, "scope": scope.describe()})
