"""``nsysq check``: nsys analyze's expert rules and nsysq's own, on any export.

:func:`check` runs the rules asked for (every one by default) in one session and returns a
:class:`CheckResult`: the ``rules`` table (one row per rule: found, clean or skipped with the
reason, the count and time of its findings, one sentence of advice) and the ``findings`` table
(the longest ``--rows`` findings of each rule, each with the innermost NVTX range holding its CUDA
API call). The rules: nsysq.stats.rules.events (single API calls and memory operations),
nsysq.stats.rules.gpu (GPU time per process and device), nsysq.stats.rules.own (nsysq's); the GPU
ops the rules over GPU time share are read once, in nsysq.stats.rules.ops. A rule
whose tables the export lacks is skipped, never an error. docs/stats.md ("nsysq check") states
every rule, its options and where it differs from nsys on purpose.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nsysq import catalog
from nsysq.base.errors import NoDataError, UsageError
from nsysq.base.table import Table
from nsysq.base.threads import before_threads
from nsysq.export import schema
from nsysq.session.scope import stamp
from nsysq.stats.rules import events, gpu, ops, own
from nsysq.stats.rules.base import CALL, FINDING_COLUMNS, CheckOptions, Context, Outcome, Rule

if TYPE_CHECKING:
    from nsysq.session import Session

__all__ = ["RULES", "RULE_COLUMNS", "CheckOptions", "CheckResult", "check", "parse_rules"]

_COPY = (schema.MEMCPY, schema.RUNTIME)
_GPU = (schema.KERNEL, schema.MEMCPY, schema.MEMSET, schema.GRAPH_TRACE)
RULES: dict[str, Rule] = {
    r.name: r
    for r in (
        Rule(
            "cuda_memcpy_async", "nsys", "Asynchronous memcpy with pageable memory",
            "Allocate the host buffers as pinned memory (cudaMallocHost, cudaHostAlloc; pin_memory=True "
            "in PyTorch) so these copies run asynchronously and overlap with kernels.",
            _COPY, events.memcpy_async,
        ),
        Rule(
            "cuda_memcpy_sync", "nsys", "Synchronous memcpy",
            "Use cudaMemcpyAsync on a non-default stream with pinned host memory so the host does not "
            "block while the copy runs.",
            _COPY, events.memcpy_sync,
        ),
        Rule(
            "cuda_memset_sync", "nsys", "Synchronous memset",
            "Use cudaMemsetAsync on a stream so the host does not wait for the memset to finish.",
            (schema.MEMSET, schema.RUNTIME), events.memset_sync,
        ),
        Rule(
            "cuda_api_sync", "nsys", "Synchronization API calls",
            "Take device- and stream-wide synchronization out of the hot loop: wait on events "
            "(cudaStreamWaitEvent, cudaEventSynchronize) only where a result is needed.",
            (schema.RUNTIME,), events.api_sync,
        ),
        Rule(
            "gpu_gaps", "nsys", "GPU idle gaps",
            "See what the host did during these gaps (nsysq gaps gives their causes) and overlap it "
            "with GPU work, or queue the work ahead so the GPU never waits.",
            (), gpu.gpu_gaps, gpu_work=True,
        ),
        Rule(
            "gpu_time_util", "nsys", "GPU low utilization",
            "Keep the GPU fed in these stretches (nsysq timeline --from/--to shows them): larger "
            "batches, more work per launch, or independent work on concurrent streams.",
            (), gpu.gpu_time_util, gpu_work=True,
        ),
        Rule(
            "underfilled", "nsysq", "Under-filled launches",
            "Give these kernels at least as many thread blocks as the GPU has SMs (larger batches, "
            "smaller tiles, split-K or split-KV), or fuse them into larger kernels.",
            (schema.KERNEL,), own.underfilled,
        ),
        Rule(
            "launch_bound", "nsysq", "Launch-bound GPU",
            "Launch fewer, larger kernels: capture the loop in a CUDA graph (torch.compile "
            "mode='reduce-overhead') or fuse the small kernels.",
            (schema.RUNTIME,), own.launch_bound, gpu_work=True,
        ),
        Rule(
            "danger", "nsysq", "Numerics-risk kernels",
            "Where results must be reproducible, pin the kernel choice (fixed shapes, deterministic "
            "algorithms, no split-K or split-KV heuristics) and compare outputs when these kernels change.",
            (schema.KERNEL,), own.danger,
        ),
    )
}  # fmt: skip
"""Every rule, in the order ``nsysq check`` runs and prints them (NVIDIA's first, then nsysq's)."""

_LANES = {"gpu_gaps": True, "gpu_time_util": True, "launch_bound": False}
"""The rules over the lanes of the GPU ops (nsysq.stats.rules.ops), each with whether it reads them
clipped to the window. They run after the others, their lanes gathered meanwhile on a thread of
their own (numpy, no SQL), beside the other rules' SQL."""
RULE_COLUMNS = ("rule", "title", "status", "count", "total_ns", "advice", "reason")
_GPU_NEEDED = "the export has no GPU work (no kernel, memcpy, memset or CUDA graph table)"


@dataclass(frozen=True)
class CheckResult:
    """What ``nsysq check`` prints: one row per rule, and the findings."""

    rules: Table
    findings: Table

    def in_unit(self, unit: str) -> CheckResult:
        return CheckResult(self.rules.in_unit(unit), self.findings.in_unit(unit))

    def tables(self) -> dict[str, Table]:
        return {"rules": self.rules, "findings": self.findings}

    def found(self) -> list[str]:
        """The rules that found something, in order."""
        return [r["rule"] for r in self.rules.records() if r["status"] == "found"]


def parse_rules(text: str | Iterable[str] | None, *, allow_any: bool = False) -> list[str]:
    """Rule names from ``NAME,NAME`` (or a list), checked; None: every rule. With ``allow_any``,
    ``any`` stands for every rule (--fail-on)."""
    if text is None:
        return list(RULES)
    names = [n.strip() for n in (text.split(",") if isinstance(text, str) else text) if n.strip()]
    if allow_any and "any" in names:
        return list(RULES)
    unknown = [n for n in names if n not in RULES]
    if unknown or not names:
        what = f"unknown rule {unknown[0]!r}" if unknown else "no rule named"
        extra = ", any" if allow_any else ""
        raise UsageError(f"{what}; use one or more of {', '.join(RULES)}{extra}, separated by commas.")
    return list(dict.fromkeys(names))


def check(
    trace: Session,
    *,
    rules: str | Iterable[str] | None = None,
    options: CheckOptions | None = None,
    unit: str = "ns",
) -> CheckResult:
    """Run ``rules`` (names; None: every rule) with ``options`` on ``trace`` in its scope."""
    chosen = parse_rules(rules)
    ctx = Context(trace, options or CheckOptions())
    before_threads()  # numpy imported here, not by the thread (a cached copy imports none first)
    with ThreadPoolExecutor(1, thread_name_prefix="nsysq-check") as pool:
        for name in chosen:  # the lanes gather on the pool's thread while the SQL rules run here
            if name in _LANES and _missing(ctx, RULES[name]) is None:
                ops.gather_beside(ctx, pool, windowed=_LANES[name])
        computed = {name: _run(ctx, RULES[name]) for name in sorted(chosen, key=lambda n: n in _LANES)}
    outcomes = {name: computed[name] for name in chosen}
    shown = [f for name in chosen for f in outcomes[name].findings]
    named = _name_ranges(trace, shown)
    return _result(ctx, outcomes, shown, named).in_unit(unit)


def _missing(ctx: Context, rule: Rule) -> str | None:
    """Why ``rule`` cannot run on this export (the tables it lacks), or None."""
    has = ctx.trace.schema.has
    missing = [t for t in rule.needs if not has(t)]
    if missing:
        what = schema.EVENT_TABLES.get(missing[0], "its data")
        return f"the export has no {missing[0]} table (no {what} recorded)"
    if rule.gpu_work and not any(has(t) for t in _GPU):
        return _GPU_NEEDED
    return None


def _run(ctx: Context, rule: Rule) -> Outcome:
    """One rule's outcome, or skipped when the export lacks its tables (or the scope its events)."""
    reason = _missing(ctx, rule)
    if reason is not None:
        return Outcome.skipped(reason)
    try:
        return rule.run(ctx)
    except NoDataError as exc:
        return Outcome.skipped(str(exc).rstrip("."))


def _name_ranges(trace: Session, findings: list[dict[str, Any]]) -> bool:
    """Set ``nvtx`` on the findings that name a CUDA API call: the innermost NVTX range holding it
    (queries/check/nvtx.sql over nsysq.analyses.nvtx's ranges). Whether the query ran."""
    from nsysq.analyses import nvtx

    calls = [(i, f[CALL]) for i, f in enumerate(findings) if f.get(CALL) is not None]
    if not calls or not trace.schema.has(schema.NVTX):
        return False
    try:
        nvtx.require_ranges(trace)
    except NoDataError:
        return False
    rows = trace.run(
        "check_nvtx",
        tids=[c[0] for _, c in calls],
        starts=[c[1] for _, c in calls],
        ends=[c[2] for _, c in calls],
    ).rows
    for k, domain, name in rows:
        findings[calls[int(k) - 1][0]]["nvtx"] = f"{domain}:{name}" if domain else name
    return True


def _result(
    ctx: Context, outcomes: dict[str, Outcome], shown: list[dict[str, Any]], named: bool
) -> CheckResult:
    rows = [
        (name, RULES[name].title, o.status, o.count, o.total_ns, RULES[name].advice, o.reason)
        for name, o in outcomes.items()
    ]
    statuses = [o.status for o in outcomes.values()]
    opts = ctx.options
    footer = {
        "rules_run": len(outcomes),
        "found": statuses.count("found"),
        "clean": statuses.count("clean"),
        "skipped": statuses.count("skipped"),
        "findings_shown": len(shown),
        "rows": opts.rows,
        "t0_ns": ctx.t0,
        "from_ns": opts.from_ns,
        "to_ns": opts.to_ns,
        "gap_ns": round(opts.gap_ms * 1e6),
        "threshold_pct": opts.threshold_pct,
        "chunks": opts.chunks,
        "fill_pct": opts.fill_pct,
        "min_share_pct": opts.min_share_pct,
        "launch_bound_pct": opts.launch_bound_pct,
        "danger_min_share_pct": opts.danger_min_share_pct,
    }
    notes = tuple(n for o in outcomes.values() for n in o.notes)
    queries = _labels(outcomes, named)
    rules = Table("check", RULE_COLUMNS, rows, queries=queries, footer=footer, notes=notes)
    findings = Table(
        "check_findings",
        FINDING_COLUMNS,
        [tuple(f[c] for c in FINDING_COLUMNS) for f in shown],
        queries=queries,
    )
    return CheckResult(stamp(rules, ctx.trace.scope), findings)


_QUERIES = {
    "cuda_memcpy_async": ("check_copies",),
    "cuda_memcpy_sync": ("check_copies",),
    "cuda_memset_sync": ("check_copies",),
    "cuda_api_sync": ("check_api_sync",),
    "gpu_gaps": ("gap_ops",),
    "gpu_time_util": ("gap_ops",),
    "underfilled": ("check_underfilled", "launch_sm_counts"),
    "launch_bound": ("gap_ops", "gap_calls", "gap_feeders", "gap_call_classes"),
    "danger": ("check_danger",),
}


def _labels(outcomes: dict[str, Outcome], named: bool) -> tuple[str, ...]:
    """The packaged queries behind the rules that ran (not skipped), and the NVTX names' when
    ``named`` (it ran)."""
    names = [q for name, o in outcomes.items() if o.status != "skipped" for q in _QUERIES[name]]
    extra = ["nvtx_ranges", "check_nvtx"] if named else []
    return tuple(catalog.get(n).label for n in dict.fromkeys([*names, *extra]))
