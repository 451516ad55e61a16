"""The totals section: kernel, copy and span facts of each side side by side."""

from __future__ import annotations

from typing import Any

from nsysq.base.units import condensed
from nsysq.diffing.result import TotalsTable
from nsysq.diffing.side import Side


def _kind_slug(label: str) -> str:
    """'Device-to-Device' -> 'DtoD'; anything else -> a snake_case-ish token."""
    parts = label.split("-to-")
    if len(parts) == 2 and all(p.strip() for p in parts):
        return f"{parts[0].strip()[0].upper()}to{parts[1].strip()[0].upper()}"
    return "".join(ch if ch.isalnum() else "_" for ch in label).strip("_") or "unknown"


def _ratio(a: Any, b: Any) -> float | None:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a:
        return float(b) / float(a)
    return None


def _delta(a: Any, b: Any) -> int | float | None:
    """b - a for two numbers (bools and strings have none)."""
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b))
    return b - a if numbers else None


def totals(side_a: Side, side_b: Side) -> TotalsTable:
    """One row per metric: metric, a, b, ratio (b / a) and delta (b - a); the GPU busy, idle and
    exposed communication times come from each side's GPU unions (``nsysq gaps``, ``nsysq overlap``)."""
    ka, kb = _kernel_facts(side_a), _kernel_facts(side_b)
    ca, cb = _copy_facts(side_a), _copy_facts(side_b)
    rows: list[tuple[Any, ...]] = []
    for key in ka:
        rows.append((key, ka[key], kb[key], _ratio(ka[key], kb[key])))
    copy_keys = list(dict.fromkeys([*ca, *cb]))
    per_kind = [k for k in copy_keys if k.startswith(("memcpy_ops_", "memcpy_bytes_"))]
    per_kind.sort(key=lambda k: (k.split("_", 2)[2], k.startswith("memcpy_bytes")))
    for key in ["memcpy_ops", "memcpy_bytes", *per_kind, "memset_ops", "memset_bytes"]:
        va, vb = ca.get(key, 0), cb.get(key, 0)
        rows.append((key, va, vb, _ratio(va, vb)))
    sa, sb = side_a.span.span_ns, side_b.span.span_ns
    rows.append(("gpu_span_ns", sa, sb, _ratio(sa, sb)))
    for (key, va), (_, vb) in zip(side_a.busy.metrics(), side_b.busy.metrics(), strict=True):
        rows.append((key, va, vb, _ratio(va, vb)))
    ga = condensed(side_a.info.gpus) or "unknown"
    gb = condensed(side_b.info.gpus) or "unknown"
    rows.append(("gpus", ga, gb, None))
    rows.append(("nsys_version", side_a.info.nsys_version, side_b.info.nsys_version, None))
    return TotalsTable(
        kind="diff_totals",
        columns=("metric", "a", "b", "ratio", "delta"),
        rows=[(*row, _delta(row[1], row[2])) for row in rows],
        queries=tuple(
            dict.fromkeys(
                label
                for side in (side_a, side_b)
                for label in (
                    *side.kernels.queries,
                    *side.copies.queries,
                    *side.span.queries,
                    *side.busy.queries,
                )
            )
        ),
    )


def _kernel_facts(side: Side) -> dict[str, Any]:
    recs = side.kernels.records()
    return {
        "kernels": sum(int(r["calls"]) for r in recs),
        "kernel_time_ns": sum(int(r["total_ns"]) for r in recs),
        "distinct_kernel_names": len({r["short_name"] for r in recs}),
    }


def _copy_facts(side: Side) -> dict[str, Any]:
    recs = side.copies.records()
    memcpy = [r for r in recs if r["operation"] == "memcpy"]
    memset = [r for r in recs if r["operation"] == "memset"]
    out: dict[str, Any] = {
        "memcpy_ops": sum(int(r["operations"]) for r in memcpy),
        "memcpy_bytes": sum(int(r["bytes"]) for r in memcpy),
    }
    for r in memcpy:
        slug = _kind_slug(str(r["kind"]))
        out[f"memcpy_ops_{slug}"] = int(r["operations"])
        out[f"memcpy_bytes_{slug}"] = int(r["bytes"])
    out["memset_ops"] = sum(int(r["operations"]) for r in memset)
    out["memset_bytes"] = sum(int(r["bytes"]) for r in memset)
    return out
