"""The evidence board: turn the combined tables into findings, one function per finding kind, and
order them (outliers, GPU idle and exposed communication changes, per-call changes, danger kernels
only on one side, variants, copies, danger kernels picked differently, launch configuration)."""

from __future__ import annotations

import math
from typing import Any

from nsysq.base.table import Table
from nsysq.base.units import fmt_bytes, fmt_time
from nsysq.diffing.format import fmt_ratio, plural, short_list, split_names
from nsysq.diffing.params import (
    COPY_CHANGE,
    IDLE_CHANGE,
    IDLE_MIN_SHARE,
    OVERALL_MIN_CHANGE,
    OVERALL_SHARE,
    OVERALL_TYPICAL,
    WORK_CHANGE,
)
from nsysq.diffing.result import Finding

Ranked = tuple[tuple[Any, ...], Finding]
"""A finding with its sort key: (its place on the board, most anomalous first)."""

# The board's order: the place of each kind of finding (lower first). Within one place the findings
# sort by the second element of their key, the most anomalous first.
_PLACE = {
    "overall": -1,  # the whole trace's change, when it is itself the news
    "outlier": 0,  # a category or kernel whose change is out of line
    "busy": 0.5,  # idle_change, exposed_comm: a busy/idle change the kernel time does not explain
    "per_call": 0.75,
    "danger_one_side": 1,  # danger kernels (numerics) in one trace only
    "variants": 2,
    "copy_change": 3,
    "danger_swap": 4,  # other danger kernels picked for the same kind
    "launch_config": 5,
}

_LAUNCH_FIELDS = (
    ("grid", "grid"),
    ("block", "block"),
    ("registers", "registers"),
    ("smem", "smem"),
)


def findings(
    tables: dict[str, Table],
    threshold: float,
    sms: tuple[int | None, int | None] = (None, None),
    min_ns: float = 0.0,
) -> list[Finding]:
    """The board's findings; ``sms``: each side's SM count (None when unknown or mixed), for the
    fill a grid change means; ``min_ns``: the smallest time a busy/idle change must reach."""
    cats = tables["categories"].records()
    kerns = tables["kernels"].records()
    launch = {r["name"]: {**r, "sms_a": sms[0], "sms_b": sms[1]} for r in tables["launch_config"].records()}
    totals = {r["metric"]: r for r in tables["totals"].records()} if "totals" in tables else {}
    found: list[Ranked] = [
        *_overall_findings(cats, kerns, launch, totals),
        *_outlier_findings(cats, kerns, launch, threshold),
        *_busy_findings(totals, min_ns),
        *_per_call_findings(kerns, totals, threshold),
        *_danger_findings(tables["danger"].records()),
        *_variant_findings(tables["variants"].records()),
        *_copy_findings(tables["copies"].records()),
        *_launch_config_findings(list(launch.values())),
    ]
    found.sort(key=lambda item: item[0])
    return [f for _, f in found]


def _per_call_verdict(calls_a: int, calls_b: int, per_call: float | None) -> str:
    same_calls = calls_a == calls_b
    steady = per_call is not None and abs(math.log(max(per_call, 1e-12))) < math.log(1.05)
    if same_calls and not steady and per_call is not None and per_call > 1:
        return (
            "More work per call, not more calls: the same launches process more data or take a different path"
        )
    if same_calls and not steady:
        return "Less work per call with the same launches: smaller inputs or a cheaper path"
    if steady and calls_b > calls_a:
        return "More launches of the same work: the kernel runs more often"
    if steady:
        return "Fewer launches of the same work"
    return "Both the number of launches and the work per launch changed"


def _typical(rows: list[dict[str, Any]]) -> float | None:
    centers = [r["typical_log_ratio"] for r in rows if r["typical_log_ratio"] is not None]
    return math.exp(centers[0]) if centers else None


def _launch_note(launch: dict[str, dict[str, Any]], name: str) -> str:
    lc = launch.get(name)
    if not lc:
        return ""
    parts = _launch_parts(lc)
    return ("; launch " + ", ".join(parts)) if parts else ""


def _blocks(grid: Any) -> int | None:
    """gridX x gridY x gridZ of a "GXxGYxGZ" text (None when a part is unknown)."""
    try:
        return math.prod(int(p) for p in str(grid).split("x"))
    except ValueError:
        return None


def _fill(blocks: int | None, sms: int | None) -> float | None:
    return 100.0 * min(blocks, sms) / sms if blocks is not None and sms else None


def _grid_fill(lc: dict[str, Any]) -> str:
    """ "8x1x1 → 128x1x1 on 132 SMs: fill 6% → 97%" (the grid part alone when SMs are unknown)."""
    text = f"grid {lc['grid_a']} → {lc['grid_b']}"
    sa, sb = lc.get("sms_a"), lc.get("sms_b")
    fa, fb = _fill(_blocks(lc["grid_a"]), sa), _fill(_blocks(lc["grid_b"]), sb)
    if fa is None or fb is None:
        return text
    on = f"{sa} SMs" if sa == sb else f"{sa} → {sb} SMs"
    return f"{text} on {on}: fill {fa:.0f}% → {fb:.0f}%"


def _launch_parts(lc: dict[str, Any]) -> list[str]:
    parts = []
    for fld, label in _LAUNCH_FIELDS:
        va, vb = lc[f"{fld}_a"], lc[f"{fld}_b"]
        if va != vb:
            parts.append(_grid_fill(lc) if fld == "grid" else f"{label} {va} → {vb}")
    return parts


# -- 0. overall: the trace's own change, when the typical change is far from 1x or one thing made it --
def _overall_findings(
    cats: list[dict[str, Any]],
    kerns: list[dict[str, Any]],
    launch: dict[str, dict[str, Any]],
    totals: dict[str, dict[str, Any]],
) -> list[Ranked]:
    """The board's headline: "GPU kernel time 2.81 s → 0.72 s (0.26x); Fan2 accounts for 99% of the
    change (grid ... → ...)", when the typical change lies outside OVERALL_TYPICAL or one kernel
    (else one category) holds OVERALL_SHARE of a change of at least OVERALL_MIN_CHANGE."""
    a_ns, b_ns = _kernel_time(kerns, totals)
    delta = b_ns - a_ns
    typical = _typical(kerns)
    far = typical is not None and not OVERALL_TYPICAL[0] <= typical <= OVERALL_TYPICAL[1]
    ratio = b_ns / a_ns if a_ns else None
    material = ratio is not None and abs(math.log(max(ratio, 1e-12))) >= math.log(1 + OVERALL_MIN_CHANGE)
    holder = _holder(kerns, "name", delta) or _holder(cats, "category", delta)
    if not far and not (material and holder is not None and holder[1] >= OVERALL_SHARE):
        return []
    clue = f"GPU kernel time {fmt_time(a_ns)} → {fmt_time(b_ns)} ({fmt_ratio(ratio)})"
    numbers: dict[str, Any] = {"a_ns": a_ns, "b_ns": b_ns, "ratio": ratio, "typical_ratio": typical}
    evidence = f"typical kernel change {fmt_ratio(typical)}"
    if holder is not None:
        row, share = holder
        subject = str(row.get("name") or row.get("category"))
        note = _launch_note(launch, subject).removeprefix("; launch ")
        evidence = (
            f"{subject} accounts for {share:.0%} of the change: {fmt_time(row['a_ns'])} → "
            f"{fmt_time(row['b_ns'])}" + (f" ({note})" if note else "") + f"; {evidence}"
        )
        numbers.update(subject=subject, subject_a_ns=row["a_ns"], subject_b_ns=row["b_ns"], share=share)
    verdict = _overall_verdict(far, typical, holder)
    finding = Finding("overall", "trace", clue, evidence, verdict, "high", numbers)
    return [((_PLACE["overall"], 0), finding)]


def _kernel_time(kerns: list[dict[str, Any]], totals: dict[str, dict[str, Any]]) -> tuple[int, int]:
    row = totals.get("kernel_time_ns")
    if row is not None and row["a"] is not None and row["b"] is not None:
        return int(row["a"]), int(row["b"])
    return int(sum(k["a_ns"] or 0 for k in kerns)), int(sum(k["b_ns"] or 0 for k in kerns))


def _holder(rows: list[dict[str, Any]], key: str, delta: int) -> tuple[dict[str, Any], float] | None:
    """The row whose change is the largest share of ``delta`` (same direction), with that share."""
    if not delta or not rows:
        return None
    best = max(rows, key=lambda r: ((r["b_ns"] or 0) - (r["a_ns"] or 0)) / delta)
    share = ((best["b_ns"] or 0) - (best["a_ns"] or 0)) / delta
    return (best, min(share, 1.0)) if share > 0 and best.get(key) else None


def _overall_verdict(far: bool, typical: float | None, holder: tuple[dict[str, Any], float] | None) -> str:
    if holder is not None and holder[1] >= OVERALL_SHARE:
        what = holder[0].get("name") or holder[0].get("category")
        return (
            f"The trace's change is {what}'s: look at it first; the outliers below are measured "
            "against a typical change it does not share"
        )
    return (
        f"Every kernel changed by about {fmt_ratio(typical)}: a whole-trace change (other GPU, clocks, "
        "precision, batch or input size), not one kernel"
        if far
        else "The trace's change, for scale"
    )


# -- 1. outliers: categories, then kernels not explained by a flagged category ----------------------
def _outlier_findings(
    cats: list[dict[str, Any]],
    kerns: list[dict[str, Any]],
    launch: dict[str, dict[str, Any]],
    threshold: float,
) -> list[Ranked]:
    flagged_cats = {r["category"] for r in cats if r["outlier"]}
    return [
        *_category_outliers(cats, kerns, launch, threshold),
        *_kernel_outliers(kerns, flagged_cats, launch, threshold),
    ]


def _category_outliers(
    cats: list[dict[str, Any]],
    kerns: list[dict[str, Any]],
    launch: dict[str, dict[str, Any]],
    threshold: float,
) -> list[Ranked]:
    cat_typical = _typical(cats)
    found: list[Ranked] = []
    for r in cats:
        if not r["outlier"]:
            continue
        members = [k for k in kerns if k["category"] == r["category"] and k["status"] == "both"]
        members.sort(key=lambda k: (not k["outlier"], -abs(k["score"] or 0), -(k["b_ns"] or 0)))
        top = members[0] if members else None
        direction = "longer" if (r["ratio"] or 0) >= 1 else "shorter"
        evidence = (
            f"{r['category']}: {fmt_time(r['a_ns'])} → {fmt_time(r['b_ns'])} ({fmt_ratio(r['ratio'])}), "
            f"{r['calls_a']:,} → {r['calls_b']:,} calls"
        )
        if top is not None:
            evidence += f"; {top['name']}: {top['pattern']}" + _launch_note(launch, top["name"])
        verdict = _per_call_verdict(int(r["calls_a"]), int(r["calls_b"]), r["per_call_ratio"])
        verdict += (
            f"; out of line with the trace's typical {fmt_ratio(cat_typical)} (score {r['score']:+.1f})"
        )
        numbers = {
            "category": r["category"],
            "a_ns": r["a_ns"],
            "b_ns": r["b_ns"],
            "ratio": r["ratio"],
            "calls_a": r["calls_a"],
            "calls_b": r["calls_b"],
            "per_call_ratio": r["per_call_ratio"],
            "typical_ratio": cat_typical,
            "score": r["score"],
            "threshold": threshold,
            "kernel": top["name"] if top else None,
            "kernel_ratio": top["ratio"] if top else None,
            "kernel_per_call_ratio": top["per_call_ratio"] if top else None,
        }
        found.append(
            (
                (_PLACE["outlier"], -abs(r["score"])),
                Finding(
                    kind="outlier",
                    subject=r["category"],
                    clue=(
                        f"{fmt_ratio(r['ratio'])} {r['category']} time "
                        f"({direction}; typical {fmt_ratio(cat_typical)})"
                    ),
                    evidence=evidence,
                    verdict=verdict,
                    severity="high",
                    numbers=numbers,
                ),
            )
        )
    return found


def _kernel_outliers(
    kerns: list[dict[str, Any]],
    flagged_cats: set[str],
    launch: dict[str, dict[str, Any]],
    threshold: float,
) -> list[Ranked]:
    kern_typical = _typical(kerns)
    found: list[Ranked] = []
    for k in kerns:
        if not k["outlier"] or k["category"] in flagged_cats:
            continue
        direction = "longer" if (k["ratio"] or 0) >= 1 else "shorter"
        verdict = _per_call_verdict(int(k["calls_a"]), int(k["calls_b"]), k["per_call_ratio"])
        verdict += (
            f"; out of line with the trace's typical {fmt_ratio(kern_typical)} (score {k['score']:+.1f})"
        )
        found.append(
            (
                (_PLACE["outlier"], -abs(k["score"])),
                Finding(
                    kind="outlier",
                    subject=k["name"],
                    clue=(
                        f"{fmt_ratio(k['ratio'])} {k['name']} time "
                        f"({direction}; typical {fmt_ratio(kern_typical)})"
                    ),
                    evidence=(
                        f"{k['name']} ({k['category']}): {fmt_time(k['a_ns'])} → {fmt_time(k['b_ns'])}, "
                        f"{k['calls_a']:,} → {k['calls_b']:,} calls: {k['pattern']}"
                        + _launch_note(launch, k["name"])
                    ),
                    verdict=verdict,
                    severity="high",
                    numbers={
                        "kernel": k["name"],
                        "category": k["category"],
                        "a_ns": k["a_ns"],
                        "b_ns": k["b_ns"],
                        "ratio": k["ratio"],
                        "calls_a": k["calls_a"],
                        "calls_b": k["calls_b"],
                        "per_call_ratio": k["per_call_ratio"],
                        "typical_ratio": kern_typical,
                        "score": k["score"],
                        "threshold": threshold,
                    },
                ),
            )
        )
    return found


# -- 2. danger kernels whose presence differs -------------------------------------------------------
def _danger_names(rs: list[dict[str, Any]], col: str, calls: str) -> str:
    shown = ", ".join(f"{r['name']} ({r[calls]:,} calls, {fmt_time(r[col])})" for r in rs[:3])
    return shown + (f" and {len(rs) - 3} more" if len(rs) > 3 else "")


def _danger_findings(danger_rows: list[dict[str, Any]]) -> list[Ranked]:
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for r in danger_rows:
        by_kind.setdefault(r["kind"], []).append(r)
    found: list[Ranked] = []
    for kind, rows in by_kind.items():
        presence = rows[0]["kind_presence"]
        only_a = [r for r in rows if r["presence"] == "A only"]
        only_b = [r for r in rows if r["presence"] == "B only"]
        if presence == "both" and not only_a and not only_b:
            continue  # the same danger kernels ran in both: listed in the danger section only

        if presence == "B only":
            clue, severity, sort = f"{kind} kernels only in B", "high", _PLACE["danger_one_side"]
            evidence = "in B only: " + _danger_names(only_b, "b_ns", "calls_b")
        elif presence == "A only":
            clue, severity, sort = f"{kind} kernels only in A", "high", _PLACE["danger_one_side"]
            evidence = "in A only: " + _danger_names(only_a, "a_ns", "calls_a")
        else:
            clue, severity, sort = f"{kind}: different kernels picked", "medium", _PLACE["danger_swap"]
            parts = []
            if only_a:
                parts.append("only in A: " + _danger_names(only_a, "a_ns", "calls_a"))
            if only_b:
                parts.append("only in B: " + _danger_names(only_b, "b_ns", "calls_b"))
            evidence = "; ".join(parts)
        found.append(
            (
                (sort, -sum(max(r["a_ns"], r["b_ns"]) for r in rows)),
                Finding(
                    kind="danger",
                    subject=kind,
                    clue=clue,
                    evidence=evidence,
                    verdict=rows[0]["reason"],
                    severity=severity,
                    numbers={
                        "danger_kind": kind,
                        "presence": presence,
                        "kernels_only_a": [r["name"] for r in only_a],
                        "kernels_only_b": [r["name"] for r in only_b],
                        "calls_a": sum(r["calls_a"] for r in rows),
                        "calls_b": sum(r["calls_b"] for r in rows),
                        "a_ns": sum(r["a_ns"] for r in rows),
                        "b_ns": sum(r["b_ns"] for r in rows),
                    },
                ),
            )
        )
    return found


# -- 3. variants: kernels in only one trace, grouped by category / family ---------------------------
def _variant_findings(variant_rows: list[dict[str, Any]]) -> list[Ranked]:
    found: list[Ranked] = []
    for v in variant_rows:
        cat, fam = v["category"], v["family"]
        swaps = _decoded_swaps(split_names(v["removed_names"]), split_names(v["new_names"]))
        kind, clue, evidence, verdict = _variant_text(v, swaps)
        total = float(v["new_ns"]) + float(v["removed_ns"])
        found.append(
            (
                (_PLACE["variants"], -total),
                Finding(
                    kind=kind,
                    subject=f"{cat}" + (f": {fam}" if fam else ""),
                    clue=clue,
                    evidence=evidence,
                    verdict=verdict,
                    severity="medium",
                    numbers={
                        "category": cat,
                        "family": fam,
                        "new_kernels": int(v["new_kernels"]),
                        "new_calls": v["new_calls"],
                        "new_ns": v["new_ns"],
                        "removed_kernels": int(v["removed_kernels"]),
                        "removed_calls": v["removed_calls"],
                        "removed_ns": v["removed_ns"],
                        "new_names": split_names(v["new_names"]),
                        "removed_names": split_names(v["removed_names"]),
                        "decoded_swaps": swaps,
                    },
                ),
            )
        )
    return found


def _variant_text(v: dict[str, Any], swaps: list[dict[str, Any]]) -> tuple[str, str, str, str]:
    """Kind, clue, evidence and verdict of one category's (and family's) kernels that ran in one
    trace only: new variants that replaced old ones, kernels only in B, or kernels only in A."""
    n_new, n_old = int(v["new_kernels"]), int(v["removed_kernels"])
    cat = v["category"]
    if n_new and n_old:
        fam_note = f" ({v['family']} family)" if v["family"] else ""
        evidence = (
            f"{n_new} new {cat} variants ({fmt_time(v['new_ns'])}) replaced {n_old} "
            f"({fmt_time(v['removed_ns'])}){fam_note}"
        )
        if swaps:
            shown = "; ".join(f"{', '.join(w['changes'])}" for w in swaps[:3])
            more = f"; and {len(swaps) - 3} more" if len(swaps) > 3 else ""
            evidence += f"; decoded: {shown}{more}"
        return "new_variants", f"{n_new} new {cat} variants", evidence, _replaced_verdict(cat)
    if n_new:
        clue = f"{n_new} new {cat} kernel{'s' if n_new > 1 else ''}"
        evidence = f"{n_new} {cat} kernel{plural(n_new)} only in B ({fmt_time(v['new_ns'])}): " + short_list(
            v["new_names"]
        )
        return "new_variants", clue, evidence, "Code that did not run in A"
    clue = f"{n_old} {cat} kernel{'s' if n_old > 1 else ''} gone"
    evidence = f"{n_old} {cat} kernel{plural(n_old)} only in A ({fmt_time(v['removed_ns'])}): " + short_list(
        v["removed_names"]
    )
    return "removed_variants", clue, evidence, "Code that ran in A no longer runs in B"


def _replaced_verdict(category: str) -> str:
    """Why variants of a category were replaced by others, as far as the category tells."""
    lower = category.lower()
    if any(w in lower for w in ("gemm", "cublas", "cutlass")):
        return (
            "The library's heuristic / autotuner picked other tiles for the new shapes: "
            "same math, different kernels and rounding"
        )
    if "triton" in lower:
        return "torch.compile generated different kernels (re-fused or renumbered)"
    return "Different kernel variants run for the same work"


def _decoded_swaps(removed: list[str], new: list[str]) -> list[dict[str, Any]]:
    """Removed and new variants of one kernel (same decoder family key: e.g. nvjet types and
    layout), paired in order of time, with the decoded fields that changed ("tile 64x8 → 128x64",
    "stages 16 → 8"). Names no decoder reads, or without a partner, are left out."""
    from nsysq.catalog import kernel_names

    by_key: dict[str, list[kernel_names.Decoded]] = {}
    for name in removed:
        decoded = kernel_names.decode(name)
        if decoded.family_key is not None:
            by_key.setdefault(decoded.family_key, []).append(decoded)
    swaps = []
    for name in new:
        decoded = kernel_names.decode(name)
        partners = by_key.get(decoded.family_key or "", [])
        if partners:
            old = partners.pop(0)
            changes = kernel_names.field_changes(old, decoded)
            if changes:
                swaps.append({"removed": old.name, "new": name, "changes": changes})
    return swaps


# -- 4. copy changes (operation counts) -------------------------------------------------------------
def _copy_findings(copy_rows: list[dict[str, Any]]) -> list[Ranked]:
    found: list[Ranked] = []
    for c in copy_rows:
        oa, ob = int(c["ops_a"]), int(c["ops_b"])
        if max(oa, ob) < 5:
            continue
        r = ob / oa if oa else None
        if r is not None and 1 / COPY_CHANGE < r < COPY_CHANGE:
            continue
        what = "memsets" if c["operation"] == "memset" else f"{c['kind']} copies"
        if r is None:
            clue = f"{what} only in B"
        elif r == 0:
            clue = f"{what} only in A"
        else:
            pct = (r - 1) * 100
            clue = f"{abs(pct):.0f}% {'more' if pct > 0 else 'fewer'} {what}"
        evidence = f"{oa:,} → {ob:,} ops, {fmt_bytes(c['bytes_a'])} → {fmt_bytes(c['bytes_b'])}"
        kind_l = str(c["kind"]).lower()
        if c["operation"] == "memset":
            verdict = "More or fewer buffers zeroed: a different workspace or allocation pattern"
        elif "device-to-device" in kind_l or "dtod" in kind_l:
            verdict = "Copies inside the GPU changed: tensors are split, concatenated or staged differently"
        elif "host" in kind_l:
            verdict = "Host-device traffic changed: inputs or outputs move differently"
        else:
            verdict = "Memory traffic changed"
        found.append(
            (
                (_PLACE["copy_change"], -abs(math.log(r)) if r else -99.0),
                Finding(
                    kind="copy_change",
                    subject=f"{c['operation']} {c['kind']}" if c["operation"] == "memcpy" else "memset",
                    clue=clue,
                    evidence=evidence,
                    verdict=verdict,
                    severity="medium",
                    numbers={
                        "operation": c["operation"],
                        "copy_kind": c["kind"],
                        "ops_a": oa,
                        "ops_b": ob,
                        "ops_ratio": r,
                        "bytes_a": c["bytes_a"],
                        "bytes_b": c["bytes_b"],
                        "bytes_ratio": c["bytes_ratio"],
                    },
                ),
            )
        )
    return found


# -- 5. launch configuration changes, one grouped finding ---------------------------------------------
def _launch_config_findings(lrows: list[dict[str, Any]]) -> list[Ranked]:
    if not lrows:
        return []
    shown = []
    for lc in lrows[:3]:
        parts = _launch_parts(lc)
        if not parts:
            parts = [f"{lc['configs_a']} → {lc['configs_b']} distinct configurations"]
        shown.append(f"{lc['name']} " + ", ".join(parts))
    more = f"; and {len(lrows) - 3} more" if len(lrows) > 3 else ""
    return [
        (
            (_PLACE["launch_config"], -len(lrows)),
            Finding(
                kind="launch_config",
                subject=f"{len(lrows)} kernels",
                clue=f"Launch configuration changed for {len(lrows)} kernel{plural(len(lrows))}",
                evidence="; ".join(shown) + more,
                verdict="Same kernels launched with other grids, blocks, registers or shared memory: "
                "the work per launch changed (expected when input shapes change)",
                severity="low",
                numbers={
                    "kernels": len(lrows),
                    "changes": [
                        {
                            "kernel": lc["name"],
                            "changed": lc["changed"],
                            "fill_a_pct": _fill(_blocks(lc["grid_a"]), lc.get("sms_a")),
                            "fill_b_pct": _fill(_blocks(lc["grid_b"]), lc.get("sms_b")),
                        }
                        for lc in lrows
                    ],
                },
            ),
        )
    ]


# -- 6. GPU idle / exposed communication out of line with kernel time -------------------------------
_BUSY_CHANGES = (
    # (totals metric, finding kind, what it is called, the command that explains it)
    ("gpu_idle_ns", "idle_change", "idle", "nsysq gaps"),
    ("comm_exposed_ns", "exposed_comm", "exposed communication", "nsysq overlap"),
)


def _number(row: dict[str, Any] | None, side: str) -> float | None:
    value = None if row is None else row.get(side)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _busy_findings(totals: dict[str, dict[str, Any]], min_ns: float) -> list[Ranked]:
    """A change in GPU idle (or exposed communication) time out of line with the kernel time change:
    kernel time scaled by B/A predicts ``expected_b_ns`` = A's time x that ratio; a finding when B's
    time and the prediction differ by IDLE_CHANGE either way and by at least IDLE_MIN_SHARE of the
    larger side's GPU time and ``min_ns`` (docs/diff.md)."""
    ka, kb = _number(totals.get("kernel_time_ns"), "a"), _number(totals.get("kernel_time_ns"), "b")
    gpu = [
        (_number(totals.get("gpu_busy_ns"), side) or 0.0) + (_number(totals.get("gpu_idle_ns"), side) or 0.0)
        for side in ("a", "b")
    ]
    if not ka or kb is None:
        return []
    kernel_ratio = kb / ka
    found: list[Ranked] = []
    for metric, kind, what, command in _BUSY_CHANGES:
        va, vb = _number(totals.get(metric), "a"), _number(totals.get(metric), "b")
        if va is None or vb is None or va + vb == 0:
            continue
        expected = va * kernel_ratio
        excess = vb - expected
        off = math.inf if not va or not vb else abs(math.log(vb / expected))
        if off < math.log(IDLE_CHANGE) or abs(excess) < max(min_ns, IDLE_MIN_SHARE * max(gpu)):
            continue
        found.append(_busy_finding(totals, kind, what, command, va, vb, kernel_ratio, expected, max(gpu)))
    return found


def _busy_finding(
    totals: dict[str, dict[str, Any]],
    kind: str,
    what: str,
    command: str,
    va: float,
    vb: float,
    kernel_ratio: float,
    expected: float,
    gpu_ns: float,
) -> Ranked:
    excess = vb - expected
    less = excess < 0
    same = abs(math.log(kernel_ratio)) < math.log(WORK_CHANGE)
    kernels = "same kernel time" if same else f"{fmt_ratio(kernel_ratio)} kernel time"
    clue = f"{kernels}, {fmt_time(abs(vb - va))} {'less' if vb < va else 'more'} {what}"
    if not same:
        clue += f" ({fmt_time(abs(excess))} {'less' if less else 'more'} than kernel time predicts)"
    la, lb = _number(totals.get("kernels"), "a") or 0, _number(totals.get("kernels"), "b") or 0
    span = totals.get("gpu_span_ns") or {}
    kt = totals.get("kernel_time_ns") or {}
    evidence = (
        f"GPU {what} {fmt_time(va)} → {fmt_time(vb)} ({fmt_ratio(vb / va if va else None)}); kernel time "
        f"{fmt_time(kt.get('a'))} → {fmt_time(kt.get('b'))} ({fmt_ratio(kernel_ratio)}), which predicts "
        f"{fmt_time(expected)}; kernel launches {int(la):,} → {int(lb):,}; GPU span "
        f"{fmt_time(span.get('a'))} → {fmt_time(span.get('b'))}"
    )
    fewer, more = lb * WORK_CHANGE < la, la * WORK_CHANGE < lb
    if kind == "exposed_comm":
        verdict = (
            "Less communication time sits in the open: more of it now runs behind compute"
            if less
            else "More communication time sits in the open: less of it runs behind compute"
        )
    elif less:
        verdict = (
            "Fewer launches and syncs: the GPU waits less for the host"
            if fewer
            else "The GPU waits less for the host: fewer synchronizations or less host work between its work"
        )
    else:
        verdict = (
            "More launches and syncs: the GPU waits more for the host"
            if more
            else "The GPU waits more for the host: more synchronizations or host work between its work"
        )
    verdict += f" ({command} on each trace tells where)"
    numbers = {
        "metric": f"{'gpu_idle' if kind == 'idle_change' else 'comm_exposed'}_ns",
        "a_ns": va,
        "b_ns": vb,
        "ratio": vb / va if va else None,
        "kernel_time_ratio": kernel_ratio,
        "expected_b_ns": expected,
        "excess_ns": excess,
        "gpu_ns": gpu_ns,
        "kernels_a": int(la),
        "kernels_b": int(lb),
    }
    severity = "high" if abs(excess) >= 4 * IDLE_MIN_SHARE * gpu_ns else "medium"
    subject = "GPU idle time" if kind == "idle_change" else "exposed communication"
    key = (_PLACE["busy"], -abs(excess) / gpu_ns if gpu_ns else 0.0)
    return key, Finding(kind, subject, clue, evidence, verdict, severity, numbers)


# -- 7. per-call changes when the traces cover different amounts of work ----------------------------
def _per_call_findings(
    kerns: list[dict[str, Any]], totals: dict[str, dict[str, Any]], threshold: float
) -> list[Ranked]:
    """When the kernel launch counts differ by WORK_CHANGE or more (a longer window, more
    iterations), a kernel whose time per call is out of line with every other kernel's per-call
    change (``per_call_outlier``) is a finding, unless its total time is an outlier already."""
    la, lb = _number(totals.get("kernels"), "a"), _number(totals.get("kernels"), "b")
    if not la or not lb or abs(math.log(lb / la)) < math.log(WORK_CHANGE):
        return []
    found: list[Ranked] = []
    for k in kerns:
        if not k.get("per_call_outlier") or k["outlier"]:
            continue
        typical = math.exp(k["typical_per_call_log_ratio"])
        per_call = k["per_call_ratio"]
        direction = "longer" if per_call >= 1 else "shorter"
        evidence = (
            f"{k['name']} ({k['category']}): {fmt_time(k['avg_a_ns'])} → {fmt_time(k['avg_b_ns'])} per call "
            f"({fmt_ratio(per_call)}), {k['calls_a']:,} → {k['calls_b']:,} calls; "
            f"total {fmt_time(k['a_ns'])} → {fmt_time(k['b_ns'])} ({fmt_ratio(k['ratio'])}), "
            f"launches overall {int(la):,} → {int(lb):,} "
            f"({fmt_ratio(lb / la)})"
        )
        verdict = (
            f"The traces cover different amounts of work, so totals scale with it; per call, this "
            f"kernel changed {fmt_ratio(per_call)} while the others changed a typical {fmt_ratio(typical)} "
            f"(per-call score {k['per_call_score']:+.1f})"
        )
        found.append(
            (
                (_PLACE["per_call"], -abs(k["per_call_score"])),
                Finding(
                    kind="per_call",
                    subject=k["name"],
                    clue=(
                        f"{fmt_ratio(per_call)} {k['name']} time per call "
                        f"({direction}; typical {fmt_ratio(typical)})"
                    ),
                    evidence=evidence,
                    verdict=verdict,
                    severity="high",
                    numbers={
                        "kernel": k["name"],
                        "category": k["category"],
                        "avg_a_ns": k["avg_a_ns"],
                        "avg_b_ns": k["avg_b_ns"],
                        "per_call_ratio": per_call,
                        "typical_per_call_ratio": typical,
                        "per_call_score": k["per_call_score"],
                        "calls_a": k["calls_a"],
                        "calls_b": k["calls_b"],
                        "ratio": k["ratio"],
                        "launches_ratio": lb / la,
                        "threshold": threshold,
                    },
                ),
            )
        )
    return found
