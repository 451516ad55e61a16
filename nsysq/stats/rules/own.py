"""nsysq's own rules, from what it already measures: underfilled (census's SM fill), launch_bound
(nsys gaps' idle time by cause) and danger (nsysq diff's danger kernels)."""

from __future__ import annotations

from typing import Any

from nsysq.base.errors import NoDataError
from nsysq.stats.rules import ops
from nsysq.stats.rules.base import Context, Outcome


def underfilled(ctx: Context) -> Outcome:
    """Launch groups (process, device, kernel, grid) under --fill % SM fill holding at least
    --min-share % of the kernel time (queries/check/underfilled.sql)."""
    opts = ctx.options
    rows = ctx.trace.run(
        "check_underfilled", **ctx.window(), fill_pct=opts.fill_pct, min_share_pct=opts.min_share_pct
    ).records()
    if not rows and not _fill_known(ctx):
        return Outcome.skipped("the export gives no SM count for the GPUs these kernels ran on")
    found = [
        {
            "start_ns": r["first_start_ns"],
            "duration_ns": int(r["total_ns"]),
            "pid": r["pid"],
            "device_id": r["device_id"],
            "kernel": r["name"],
            "value_pct": float(r["sm_fill_pct"]),
            "detail": f"grid {r['grid']} on {r['sms']} SMs: {r['instances']:,} launches, "
            f"{r['share_pct']:.1f}% of kernel time",
        }
        for r in rows
    ]
    return Outcome.of("underfilled", found, sum(f["duration_ns"] for f in found), opts.row_limit)


def _fill_known(ctx: Context) -> bool:
    """Whether some kernel in scope ran on a GPU whose SM count the export gives."""
    return bool(ctx.trace.run("launch_sm_counts").rows[0][0])


def launch_bound(ctx: Context) -> Outcome:
    """Devices whose idle time while their host threads were in launch calls (nsys gaps' cause
    launch_bound) is at least --launch-bound % of their span."""
    found = []
    for device, (first, span, launching) in _launching(ctx).items():
        share = 100.0 * launching / span if span else 0.0
        if launching and share >= ctx.options.launch_bound_pct:
            detail = f"{share:.1f}% of the device's span idle while its host threads were launching"
            found.append(_device_finding(device, first - ctx.t0, launching, share, detail))
    found.sort(key=lambda f: (-f["duration_ns"], -1 if f["device_id"] is None else f["device_id"]))
    notes: tuple[str, ...] = ()
    if ctx.options.from_ms is not None or ctx.options.to_ms is not None:
        notes = ("launch_bound reads the whole scope: --from/--to do not narrow the gaps analysis.",)
    total = sum(f["duration_ns"] for f in found)
    return Outcome.of("launch_bound", found, total, ctx.options.row_limit, notes)


def _launching(ctx: Context) -> dict[int, tuple[int, int, int]]:
    """Per device that may be launch-bound (gap_unions.NULL: no deviceId): its first op's start, its
    span and its idle time inside launch calls of its feeding threads, as nsys gaps computes them
    (nsysq.gputime.gaps: the device's union, its feeding threads, the coverage of their launch
    calls) without the rest of the gaps analysis (streams, sync calls, the listed gaps). A device
    whose whole idle time is under --launch-bound % of its span cannot be, so its host side (the
    API calls, its feeding threads) is never read."""
    from nsysq.gputime import gap_unions, gaps

    unions = ops.devices(ctx)
    if not unions:
        raise NoDataError(gaps.NO_GPU_OPS.format(name=ctx.trace.path.name))
    out = {}
    for device, union in unions.items():
        first, span = int(union.starts[0]), int(union.ends[-1] - union.starts[0])
        idle = sum(int((ends - starts).sum()) for starts, ends in ops.idle(union))
        if idle and 100.0 * idle / span >= ctx.options.launch_bound_pct:  # launching <= idle
            out[device] = (first, span, idle)
    if not out:
        return out
    with ctx.trace.bounded_memory(gaps.WORK_MEMORY):  # the feeders' SQL, if the ids repeat
        fed_by, covers = gaps.host_side(
            ctx.trace, gap_unions.read_ops(ctx.trace), list(out), gaps.load_call_rules(), ("launch_bound",)
        )
    for device, (first, span, _) in out.items():
        launch = covers[fed_by[device]][0] if fed_by[device] else None
        gaps_of = ops.idle(unions[device])
        launching = 0 if launch is None else sum(int(launch.between(*gap).sum()) for gap in gaps_of)
        out[device] = (first, span, launching)
    return out


def _device_finding(device: int, start: int, launching: int, share: float, detail: str) -> dict[str, Any]:
    from nsysq.gputime.gap_unions import NULL

    return {
        "start_ns": start,
        "duration_ns": launching,
        "device_id": None if device == NULL else device,
        "value_pct": share,
        "detail": detail,
    }


def danger(ctx: Context) -> Outcome:
    """Kernels the danger rules match (per kind and short name) holding at least --danger-share %
    of the kernel time (0: any launch)."""
    from nsysq.catalog.rules import load_danger_rules

    rules = load_danger_rules(ctx.options.danger_rules)
    reasons = {r.kind: r.reason for r in rules}
    rows = ctx.trace.run(
        "check_danger",
        **ctx.window(),
        min_share_pct=ctx.options.danger_min_share_pct,
        danger_kinds=[r.kind for r in rules],
        danger_fields=[r.field for r in rules],
        danger_patterns=[r.like for r in rules],
    ).records()
    found = [
        {
            "start_ns": r["first_start_ns"],
            "duration_ns": int(r["total_ns"]),
            "kernel": r["name"],
            "device_id": r["devices"][0] if len(r["devices"]) == 1 else None,
            "value_pct": float(r["share_pct"]),
            "detail": f"{r['kind']}: {r['instances']:,} launches; {reasons[r['kind']]}",
        }
        for r in rows
    ]
    return Outcome.of("danger", found, sum(f["duration_ns"] for f in found), ctx.options.row_limit)
