"""The entry point :func:`diff`: read both traces, combine them, add totals, findings and warnings."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from nsysq.base.errors import UsageError
from nsysq.base.units import condensed
from nsysq.diffing.combine import combine
from nsysq.diffing.findings import findings
from nsysq.diffing.params import (
    COPY_CHANGE,
    DEFAULT_MIN_TIME_MS,
    DEFAULT_THRESHOLD,
    IDLE_CHANGE,
    IDLE_MIN_SHARE,
    KERNEL_PASS,
    MAD_FLOOR,
    PER_CALL_FLOOR,
    WORK_CHANGE,
)
from nsysq.diffing.result import DiffResult
from nsysq.diffing.side import Side
from nsysq.diffing.sides import kernel_pass, read_side
from nsysq.diffing.totals import totals

if TYPE_CHECKING:
    from nsysq.catalog.rules import Rule
    from nsysq.export.reader import CacheMode
    from nsysq.session import Session
    from nsysq.session.scope import NvtxSelection, Scope
    from nsysq.trace import Trace

RulesArg = str | Path | Sequence[Any] | None


def diff(
    a: str | Path | Trace,
    b: str | Path | Trace,
    *,
    rules: RulesArg = None,
    danger_rules: RulesArg = None,
    min_time_ms: float = DEFAULT_MIN_TIME_MS,
    threshold: float = DEFAULT_THRESHOLD,
    scope: Scope | None = None,
    nvtx: str | NvtxSelection | None = None,
    cache: CacheMode = True,
    nsys: str | Path | None = None,
) -> DiffResult:
    """Compare trace ``a`` (before) with trace ``b`` (after); paths or open :class:`Trace` objects.

    ``rules`` / ``danger_rules``: a TOML file or a list of rules replacing the packaged ones.
    ``min_time_ms``: noise floor for the outlier test; ``threshold``: robust score cut-off.
    ``scope``, ``nvtx``, ``cache``, ``nsys``: how a trace given as a path is opened (``nsysq.open``;
    ``nsys`` exports a ``.nsys-rep``), the same on both sides (a Trace passed in is read as it was opened).
    """
    from nsysq.catalog import rules as rules_mod

    if min_time_ms < 0 or not math.isfinite(min_time_ms):
        raise UsageError("--min-time must be a number of milliseconds >= 0.")
    if threshold <= 0 or not math.isfinite(threshold):
        raise UsageError("--threshold must be a positive number (robust spreads, default 3).")
    lineup_rules, rules_source = _lineup_rules(rules)
    if isinstance(danger_rules, (str, Path)):
        danger, danger_source = rules_mod.load_danger_rules(danger_rules), str(danger_rules)
    elif danger_rules is None:
        danger, danger_source = rules_mod.load_danger_rules(), "packaged danger_rules.toml"
    else:
        # mypy cannot narrow str out of Sequence after the isinstance test above
        danger, danger_source = list(cast("Sequence[Any]", danger_rules)), "given rules"

    opened: list[Trace] = []
    try:
        # On direct reads the kernel pages decode in the background: A's while B is opened, B's
        # while A's remaining queries run (one decode at a time, so one side's rows in memory).
        ta = _session(a, opened, prefetch=KERNEL_PASS, scope=scope, nvtx=nvtx, cache=cache, nsys=nsys)
        ta.prefetch(KERNEL_PASS)  # a Trace passed in: decode what is missing
        tb = _session(b, opened, prefetch=None, scope=scope, nvtx=nvtx, cache=cache, nsys=nsys)
        busy_a = kernel_pass(ta, lineup_rules, rules_source)
        tb.prefetch(KERNEL_PASS)
        side_a = read_side(ta, lineup_rules, rules_source, busy_a)
        side_b = read_side(tb, lineup_rules, rules_source)
    finally:
        for t in opened:
            t.close()

    params = {
        "min_time_ms": float(min_time_ms),
        "threshold": float(threshold),
        "mad_floor": MAD_FLOOR,
        "copy_change": COPY_CHANGE,
        "per_call_floor": PER_CALL_FLOOR,
        "work_change": WORK_CHANGE,
        "idle_change": IDLE_CHANGE,
        "idle_min_share": IDLE_MIN_SHARE,
        "rules": rules_source,
        "danger_rules": danger_source,
    }
    tables = combine(side_a, side_b, danger, min_ns=min_time_ms * 1e6, threshold=threshold)
    tables["totals"] = totals(side_a, side_b)
    board = findings(tables, threshold, (side_a.info.sms, side_b.info.sms), min_ns=min_time_ms * 1e6)
    return DiffResult(
        a=side_a.info,
        b=side_b.info,
        tables=tables,
        findings=board,
        warnings=_warnings(side_a, side_b),
        params=params,
    )


def _session(
    trace: str | Path | Trace,
    opened: list[Trace],
    *,
    prefetch: str | tuple[str, ...] | None,
    scope: Scope | None,
    nvtx: str | NvtxSelection | None,
    cache: CacheMode,
    nsys: str | Path | None = None,
) -> Session:
    """The session of ``trace``: a Trace's own, or that of the trace at a path, opened (and added to
    ``opened``, closed by the caller) with ``prefetch`` and the diff's ``scope``, ``nvtx``, ``cache``,
    ``nsys``."""
    from nsysq.trace import Trace

    if isinstance(trace, Trace):
        return trace.session
    opened.append(Trace(trace, scope=scope, nvtx=nvtx, cache=cache, prefetch=prefetch, nsys=nsys))
    return opened[-1].session


def _lineup_rules(rules: RulesArg) -> tuple[list[Rule] | None, str]:
    from nsysq.catalog import rules as rules_mod

    if rules is None:
        return None, "packaged lineup_rules.toml"
    if isinstance(rules, (str, Path)):
        return rules_mod.load_lineup_rules(rules), str(rules)
    return list(rules), "given rules"


def _warnings(side_a: Side, side_b: Side) -> list[str]:
    out: list[str] = []
    a, b = side_a.info, side_b.info
    if sorted(a.gpus) != sorted(b.gpus):
        out.append(
            f"the traces ran on different GPUs (A: {condensed(a.gpus) or 'unknown'}; "
            f"B: {condensed(b.gpus) or 'unknown'}): time ratios mix hardware and workload."
        )
    if a.nsys_version != b.nsys_version:
        out.append(
            f"the traces come from different nsys versions (A: {a.nsys_version}; B: {b.nsys_version})."
        )
    for label, side in (("A", side_a), ("B", side_b)):
        graphs = side.whole_graphs
        if graphs.get("executions"):
            out.append(
                f"{label} ({side.info.name}) has {graphs['executions']:,} executions of CUDA "
                f"graphs traced whole ({graphs['graph_ns'] / 1e6:,.3f} ms): their kernels are not in the "
                "kernel table and are not compared; profile with nsys profile --cuda-graph-trace=node "
                "to compare them."
            )
    for label, info in (("A", a), ("B", b)):
        if not info.kernels:
            out.append(
                f"{label} ({info.name}) recorded no CUDA kernels: only copies and totals are "
                "compared; profile with nsys profile --trace=cuda to capture kernels."
            )
    return out
