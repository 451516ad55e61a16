"""Every command on every real export, with totals equal to an independent raw-SQL count."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from nsysq import catalog
from nsysq.analyses.census import census
from nsysq.analyses.info import info
from nsysq.analyses.lineup import lineup
from nsysq.analyses.stakeout import stakeout
from nsysq.analyses.timeline import timeline
from nsysq.base.errors import NoDataError
from nsysq.session import Session
from tests import oracle
from tests.conftest import sha256


def _has_kernels(path: Path) -> bool:
    return "CUPTI_ACTIVITY_KIND_KERNEL" in oracle.tables(path) and oracle.kernel_count(path) > 0


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)


def check_census(path: Path) -> None:
    expected = oracle.per_short_name(path)
    with Session(path) as trace:
        full = census(trace).records()
        top = census(trace, limit=3)
    assert {r["name"]: (r["instances"], r["total_ns"]) for r in full} == expected
    assert sum(r["instances"] for r in top.records()) == oracle.kernel_count(path)
    assert sum(r["total_ns"] for r in top.records()) == oracle.kernel_ns(path)
    assert top.footer["total_kernels"] == oracle.kernel_count(path)
    if len(expected) > 3:
        assert top.records()[-1]["name"] == f"other ({len(expected) - 3} kernels)"
    assert math.isclose(sum(r["share_pct"] for r in full), 100.0, rel_tol=1e-9) or not oracle.kernel_ns(path)
    order = [(-r["total_ns"], -r["instances"], r["name"]) for r in full]
    assert order == sorted(order)
    # The statistics of the top kernel, recomputed from its raw durations.
    first = full[0]
    if not first["name"].startswith("<"):
        s = oracle.stats(oracle.durations(path, first["name"]))
        for key in ("instances", "total", "avg", "med", "min", "max", "stddev"):
            got = first[key if key == "instances" else f"{key}_ns"]
            assert _close(got, s[key]), (key, got, s[key])


def check_lineup(path: Path) -> None:
    with Session(path) as trace:
        rows = lineup(trace).records()
    assert sum(r["instances"] for r in rows) == oracle.kernel_count(path)
    assert sum(r["total_ns"] for r in rows) == oracle.kernel_ns(path)
    assert len({r["category"] for r in rows}) == len(rows)


def check_stakeout(path: Path) -> None:
    name = max(oracle.per_short_name(path).items(), key=lambda kv: (kv[1][1], kv[1][0], kv[0]))[0]
    with Session(path) as trace:
        table = stakeout(trace, name)
        t0 = trace.t0
    records = table.records()
    assert len(records) == oracle.launches_named(path, name)
    assert table.footer["launches"] == len(records)
    starts = [r["start_ns"] for r in records]
    assert starts == sorted(starts) and min(starts) >= 0
    raw_min = oracle.scalar(
        path,
        "SELECT min(k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName "
        f"WHERE s.value = '{name.replace(chr(39), chr(39) * 2)}'",
    )
    assert starts[0] == raw_min - t0
    assert sum(r["total_ns"] for r in table.footer["summary"]) == sum(r["duration_ns"] for r in records)


def check_timeline(path: Path) -> None:
    present = oracle.tables(path)
    with Session(path) as trace:
        rows = timeline(trace, nvtx_lanes=True, limit=0).records()
        span = trace.span
    kinds = {k: sum(1 for r in rows if r["kind"] == k) for k in ("kernel", "memcpy", "memset", "nvtx")}
    assert kinds["kernel"] == oracle.count(path, "CUPTI_ACTIVITY_KIND_KERNEL")
    assert kinds["memcpy"] == oracle.count(path, "CUPTI_ACTIVITY_KIND_MEMCPY")
    assert kinds["memset"] == oracle.count(path, "CUPTI_ACTIVITY_KIND_MEMSET")
    if "NVTX_EVENTS" in present:
        assert kinds["nvtx"] == oracle.count(path, "NVTX_EVENTS", "WHERE eventType IN (34, 59, 60)")
    starts = [r["start_ns"] for r in rows]
    assert starts == sorted(starts)
    if rows and span["span_ns"]:
        mid = span["span_ns"] / 2 / 1e6
        with Session(path) as trace:
            window = timeline(trace, start_ms=mid, end_ms=mid + 50, limit=0).records()
        for r in window:
            assert r["start_ns"] < (mid + 50) * 1e6 and r["end_ns"] >= mid * 1e6


def check_info(path: Path) -> None:
    with Session(path) as trace:
        data = info(trace)
    counts = data["counts"]
    assert counts["kernels"] == oracle.count(path, "CUPTI_ACTIVITY_KIND_KERNEL")
    assert counts["memcpys"] == oracle.count(path, "CUPTI_ACTIVITY_KIND_MEMCPY")
    assert counts["memsets"] == oracle.count(path, "CUPTI_ACTIVITY_KIND_MEMSET")
    assert counts["nvtx_events"] == oracle.count(path, "NVTX_EVENTS")
    assert counts["cuda_api_calls"] == oracle.count(
        path, "CUPTI_ACTIVITY_KIND_RUNTIME", "WHERE eventClass IN (0, 1)"
    )
    assert data["kernel_ns"] == oracle.kernel_ns(path)
    gpu_tables = {"TARGET_INFO_GPU", "TARGET_INFO_CUDA_GPU"} & set(oracle.tables(path))
    if gpu_tables:
        assert data["gpus"], "an export with GPU tables names at least one GPU"
    else:  # e.g. the 2026.2 derived exports: no GPU recorded, none invented
        assert data["gpus"] == []
    assert data["tables"] == sorted(oracle.tables(path))


def test_commands_on_real_trace(real_trace: Path) -> None:
    digest = sha256(real_trace)
    check_info(real_trace)
    if _has_kernels(real_trace):
        check_census(real_trace)
        check_lineup(real_trace)
        check_stakeout(real_trace)
    else:
        with Session(real_trace) as trace, pytest.raises(NoDataError, match="--trace=cuda"):
            census(trace)
    check_timeline(real_trace)
    assert sha256(real_trace) == digest


@pytest.mark.parametrize("fmt", ["json", "csv", "markdown", "table"])
def test_cli_formats_on_real_trace(real_trace: Path, fmt: str) -> None:
    args = [sys.executable, "-m", "nsysq"]
    command = "census" if _has_kernels(real_trace) else "info"
    proc = subprocess.run(
        [*args, command, str(real_trace), "-f", fmt], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    if fmt == "json":
        doc = json.loads(proc.stdout)
        if command == "census":
            assert doc["kind"] == "census" and doc["queries"][0] == f"census@{catalog.get('census').version}"
            assert sum(r["instances"] for r in doc["rows"]) == oracle.kernel_count(real_trace)
            assert sum(r["total_ns"] for r in doc["rows"]) == oracle.kernel_ns(real_trace)
        else:
            assert doc["counts"]["kernels"] == 0
