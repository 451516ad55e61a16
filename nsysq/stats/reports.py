"""``nsysq stats``: NVIDIA's ``nsys stats`` reports, number for number, on any export.

:func:`stats` runs the reports named (NVIDIA's names, old aliases, ``:base``/``:mangled`` options)
in one session and returns one :class:`~nsysq.stats.model.StatsReport` each: its Table, or the
reason nsys gives for skipping it (the export lacks the table the report reads). The grouping,
statistics and rounding of each report are stated in docs/stats.md."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from nsysq.base.errors import UsageError
from nsysq.base.table import Table
from nsysq.base.units import check_unit, ms_to_ns
from nsysq.export import schema
from nsysq.session.scope import stamp
from nsysq.stats import traces
from nsysq.stats.flavor import flavor_of, memory_label, nvtx_name
from nsysq.stats.model import Built, Context, StatsReport
from nsysq.stats.summaries import SIZE_COLUMNS, size_summary, sort_groups, summary_columns, time_summary

if TYPE_CHECKING:
    from nsysq.session import Session


@dataclass(frozen=True)
class ReportSpec:
    """One report: its names (2023.1+ and before), titles, the tables it needs (any one; without
    them nsys prints ``SKIPPED: FILE does not contain <what>.``), its options, its builder."""

    report: str
    old: str
    title: str
    old_title: str
    needs: tuple[str, ...]
    what: str
    build: Callable[[Context], Built]
    options: tuple[str, ...] = ()


def _groups(table: Table, count: str) -> list[dict[str, Any]]:
    return [{**r, "count": r[count]} for r in table.records()]


def _kernels(ctx: Context) -> Built:
    names = "base" if "base" in ctx.options else "mangled" if "mangled" in ctx.options else "demangled"
    table = ctx.run("stats_kernels", names=names)
    columns = summary_columns(("instances", "Instances"), [("name", "Name")])
    return columns, time_summary(
        "cuda_gpu_kern_sum", columns, _groups(table, "instances"), ctx.unit, table.queries
    )


def _calls(query: str, kind: str) -> Callable[[Context], Built]:
    def build(ctx: Context) -> Built:
        table = ctx.run(query)
        columns = summary_columns(("num_calls", "Num Calls"), [("name", "Name")])
        return columns, time_summary(kind, columns, _groups(table, "num_calls"), ctx.unit, table.queries)

    return build


def _memory_groups(ctx: Context) -> tuple[list[dict[str, Any]], tuple[str, ...]]:
    table = ctx.run("stats_memory")
    groups = [
        {**r, "operation": memory_label(ctx.flavor, r["op"], r["copy_kind"], r["kind_label"])}
        for r in table.records()
    ]
    return groups, table.queries


def _mem_time(ctx: Context) -> Built:
    groups, queries = _memory_groups(ctx)
    columns = summary_columns(("count", "Count"), [("operation", "Operation")])
    ordered = sort_groups(groups, "total_ns", "operation")
    return columns, time_summary("cuda_gpu_mem_time_sum", columns, ordered, ctx.unit, queries)


def _mem_size(ctx: Context) -> Built:
    groups, queries = _memory_groups(ctx)
    return SIZE_COLUMNS, size_summary(sort_groups(groups, "total_bytes", "operation"), ctx.unit, queries)


def _nvtx_groups(ctx: Context, *, pushpop: bool) -> tuple[list[dict[str, Any]], tuple[str, ...]]:
    table = ctx.run("stats_nvtx")
    groups = [
        {**r, "count": r["instances"], "range": nvtx_name(ctx.flavor, r["domain"], r["text"])}
        for r in table.records()
        if not pushpop or r["style"] == "PushPop"
    ]
    return sort_groups(groups, "total_ns", "range"), table.queries


def _nvtx(ctx: Context) -> Built:
    groups, queries = _nvtx_groups(ctx, pushpop=False)
    columns = summary_columns(("instances", "Instances"), [("style", "Style"), ("range", "Range")])
    return columns, time_summary("nvtx_sum", columns, groups, ctx.unit, queries)


def _nvtx_pushpop(ctx: Context) -> Built:
    groups, queries = _nvtx_groups(ctx, pushpop=True)
    columns = summary_columns(("instances", "Instances"), [("range", "Range")])
    return columns, time_summary("nvtx_pushpop_sum", columns, groups, ctx.unit, queries)


def _gpu_sum(ctx: Context) -> Built:
    kernels = ctx.run("stats_kernels", names="demangled")
    groups = [
        {**r, "count": r["instances"], "category": "CUDA_KERNEL", "operation": r["name"]}
        for r in kernels.records()
    ]
    memory, queries = _memory_groups(ctx)
    groups += [{**g, "category": "MEMORY_OPER"} for g in memory]
    columns = summary_columns(
        ("instances", "Instances"), [("category", "Category"), ("operation", "Operation")]
    )
    ordered = sort_groups(groups, "total_ns", "operation")
    return columns, time_summary("cuda_gpu_sum", columns, ordered, ctx.unit, (*kernels.queries, *queries))


_GPU_TABLES = (schema.KERNEL, schema.MEMCPY, schema.MEMSET)
_MEMORY = (schema.MEMCPY, schema.MEMSET)
_NVTX_WHAT = "NV Tools Extension (NVTX) data"

REPORTS: tuple[ReportSpec, ...] = (
    ReportSpec("nvtx_sum", "nvtxsum", "NVTX Range Summary", "NVTX Range Statistics",
               (schema.NVTX,), _NVTX_WHAT, _nvtx),
    ReportSpec("osrt_sum", "osrtsum", "OS Runtime Summary", "Operating System Runtime API Statistics",
               (schema.OSRT,), "OS Runtime trace data", _calls("stats_osrt", "osrt_sum")),
    ReportSpec("cuda_api_sum", "cudaapisum", "CUDA API Summary", "CUDA API Statistics",
               (schema.RUNTIME,), "CUDA trace data", _calls("stats_api", "cuda_api_sum")),
    ReportSpec("cuda_gpu_kern_sum", "gpukernsum", "CUDA GPU Kernel Summary", "CUDA Kernel Statistics",
               (schema.KERNEL,), "CUDA kernel data", _kernels, ("base", "mangled")),
    ReportSpec("cuda_gpu_mem_time_sum", "gpumemtimesum", "CUDA GPU MemOps Summary (by Time)",
               "CUDA Memory Operation Statistics (by time)", _MEMORY, "GPU memory data", _mem_time),
    ReportSpec("cuda_gpu_mem_size_sum", "gpumemsizesum", "CUDA GPU MemOps Summary (by Size)",
               "CUDA Memory Operation Statistics (by size)", _MEMORY, "GPU memory data", _mem_size),
    ReportSpec("nvtx_pushpop_sum", "nvtxppsum", "NVTX Push/Pop Range Summary",
               "NVTX Push-Pop Range Statistics", (schema.NVTX,), _NVTX_WHAT, _nvtx_pushpop),
    ReportSpec("cuda_gpu_sum", "gpusum", "CUDA GPU Summary (Kernels/MemOps)", "CUDA Summary (Kernels/MemOps)",
               _GPU_TABLES, "CUDA kernel or GPU memory data", _gpu_sum),
    ReportSpec("cuda_gpu_trace", "gputrace", "CUDA GPU Trace", "CUDA GPU Trace",
               _GPU_TABLES, "CUDA kernel or GPU memory data", traces.gpu_trace),
    ReportSpec("cuda_api_trace", "cudaapitrace", "CUDA API Trace", "CUDA API Trace",
               (schema.RUNTIME,), "CUDA trace data", traces.api_trace),
)  # fmt: skip
#: What ``nsys profile --stats=true`` prints, in its order: nsysq stats without --report.
DEFAULT_REPORTS: tuple[str, ...] = (
    "nvtx_sum",
    "osrt_sum",
    "cuda_api_sum",
    "cuda_gpu_kern_sum",
    "cuda_gpu_mem_time_sum",
    "cuda_gpu_mem_size_sum",
)
_BY_NAME: dict[str, ReportSpec] = {s.report: s for s in REPORTS} | {s.old: s for s in REPORTS}


def parse_reports(names: str | Sequence[str] | None) -> list[tuple[ReportSpec, tuple[str, ...]]]:
    """``cuda_api_sum,gpukernsum:base`` (or a list of such) as (report, options) pairs, in order."""
    if names is None:
        items = list(DEFAULT_REPORTS)
    else:
        listed = [names] if isinstance(names, str) else list(names)
        items = [part.strip() for item in listed for part in item.split(",") if part.strip()]
    if not items:
        raise UsageError("name at least one report with --report (nsysq stats --help lists them).")
    out = []
    for item in items:
        name, *options = item.split(":")
        spec = _BY_NAME.get(name)
        if spec is None:
            known = ", ".join(s.report for s in REPORTS)
            raise UsageError(f"nsysq stats has no report {name!r}; use one of {known} (or their old names).")
        bad = [o for o in options if o not in spec.options]
        if bad:
            allowed = ", ".join(f":{o}" for o in spec.options) or "none"
            raise UsageError(f"report {spec.report} takes no option :{bad[0]} (its options: {allowed}).")
        out.append((spec, tuple(options)))
    return out


def stats(
    session: Session,
    reports: str | Sequence[str] | None = None,
    *,
    unit: str = "ns",
    start_ms: float | None = None,
    end_ms: float | None = None,
) -> list[StatsReport]:
    """Run ``reports`` (default: the six ``nsys profile --stats=true`` prints) on ``session``; times
    in ``unit``; ``start_ms``/``end_ms``: keep events overlapping that window (ms from the trace
    start, as ``nsysq timeline --from/--to``)."""
    check_unit(unit)
    wanted = parse_reports(reports)
    if start_ms is not None and end_ms is not None and end_ms <= start_ms:
        raise UsageError(f"--to ({end_ms} ms) must be after --from ({start_ms} ms).")
    t0 = session.t0 if start_ms is not None or end_ms is not None else 0
    ctx = Context(
        session,
        flavor_of(session),
        unit,
        None if start_ms is None else t0 + ms_to_ns(start_ms),
        None if end_ms is None else t0 + ms_to_ns(end_ms),
    )
    return [_one(replace(ctx, options=options), spec, start_ms, end_ms) for spec, options in wanted]


def _one(ctx: Context, spec: ReportSpec, start_ms: float | None, end_ms: float | None) -> StatsReport:
    base = spec.report if ctx.flavor.new_names else spec.old
    name = ":".join((base, *ctx.options))
    title = spec.title if ctx.flavor.new_names else spec.old_title
    heading = f" ** {title} ({name}):" if ctx.flavor.new_names else f"{title}:"
    if not any(ctx.session.schema.has(t) for t in spec.needs):
        return StatsReport(name, spec.report, title, (), ctx.unit, heading, skipped=spec.what)
    columns, table = spec.build(ctx)
    footer: dict[str, Any] = {"report": name, "nsys_version": ctx.flavor.version, "rows": len(table.rows)}
    if start_ms is not None or end_ms is not None:
        footer["window"] = _window(start_ms, end_ms)
    table = stamp(replace(table, footer=footer), ctx.session.scope)
    return StatsReport(name, spec.report, title, columns, ctx.unit, heading, table=table)


def _window(start_ms: float | None, end_ms: float | None) -> str:
    """``12.5-40 ms from the trace start`` (an open end as ``start``/``end``)."""
    left = "start" if start_ms is None else f"{start_ms:g}"
    right = "end" if end_ms is None else f"{end_ms:g}"
    return f"{left}-{right} ms from the trace start"
