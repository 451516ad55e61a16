"""``nsysq check`` (issue 24, requirement 2): every rule equals the oracle's plain-Python version
(tests/oracle.py: check_rules) on its own fixture (nsysq.synth.check), on the packaged fixtures and
on every real export; --fail-on exits 3; an unknown rule is one sentence and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nsysq.stats.rules import RULES, CheckOptions, check
from nsysq.synth.check import check_trace
from nsysq.trace import Trace
from tests import oracle
from tests.conftest import REAL_TRACES, SHARED_DIR

STATS_TRACES = sorted((SHARED_DIR / "traces" / "stats").glob("*/*.sqlite"))
EVERY_REAL = REAL_TRACES + STATS_TRACES
_COMPARED = (
    "start_ns", "duration_ns", "pid", "tid", "device_id", "stream_id", "api_name", "kernel", "bytes",
    "src_kind", "dst_kind", "mem_kind",
)  # fmt: skip


@pytest.fixture(scope="module")
def check_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return check_trace(tmp_path_factory.mktemp("check") / "check.sqlite")


def _options(args: oracle.CheckArgs) -> CheckOptions:
    return CheckOptions(
        rows=args.rows, gap_ms=args.gap_ns / 1e6, threshold_pct=args.threshold, chunks=args.chunks,
        fill_pct=args.fill, min_share_pct=args.min_share, launch_bound_pct=args.launch_pct,
        danger_min_share_pct=args.danger_share,
        from_ms=None if args.from_ns is None else args.from_ns / 1e6,
        to_ms=None if args.to_ns is None else args.to_ns / 1e6,
    )  # fmt: skip


def _agree(path: Path, args: oracle.CheckArgs) -> dict[str, Any]:
    """Run every rule and require each to equal the oracle's; return the result's rules by name."""
    expected = oracle.check_rules(path, args)
    with Trace(path, cache=False) as t:
        result = check(t.session, options=_options(args))
    rules = {r["rule"]: r for r in result.rules.records()}
    findings = result.findings.records()
    assert list(rules) == list(RULES)
    for name, (status, count, total, kept) in expected.items():
        got = rules[name]
        assert (got["status"], got["count"], got["total_ns"]) == (status, count, total), (path.name, name)
        assert (got["reason"] is not None) == (status == "skipped"), (name, got["reason"])
        mine = [f for f in findings if f["rule"] == name]
        assert len(mine) == len(kept), (path.name, name)
        for f, want in zip(mine, kept, strict=True):
            assert {c: f[c] for c in _COMPARED if c in want} == {c: want[c] for c in _COMPARED if c in want}
            assert f["nvtx"] == want.get("nvtx"), (path.name, name, f)
            if "value_pct" in want:
                assert f["value_pct"] == pytest.approx(want["value_pct"], abs=1e-9)
    return rules


def test_fixture_finds_what_each_rule_looks_for(check_fixture: Path) -> None:
    rules = _agree(check_fixture, oracle.CheckArgs())
    assert all(r["status"] == "found" for r in rules.values())
    counts = {name: r["count"] for name, r in rules.items()}
    # 3 pageable copies + 1 into pageable memory; 4 sync copies (small HtoD, same-device, driver left out)
    assert counts["cuda_memcpy_async"] == 4 and counts["cuda_memcpy_sync"] == 4
    assert counts["cuda_memset_sync"] == 2 and counts["cuda_api_sync"] == 4
    assert counts["gpu_gaps"] == 1 and rules["gpu_gaps"]["total_ns"] == 700_000_000  # 500 ms exactly: not


@pytest.mark.parametrize(
    "args",
    [
        oracle.CheckArgs(rows=2, gap_ns=100_000_000, threshold=20.0, chunks=7),
        oracle.CheckArgs(rows=0, from_ns=4_000_000, to_ns=900_000_000, min_share=0.1, launch_pct=90.0),
        oracle.CheckArgs(rows=1, fill=100.0, danger_share=50.0, gap_ns=0, chunks=1000),
    ],
    ids=["rows-gap-threshold", "window", "edges"],
)
def test_options_agree_with_the_oracle(check_fixture: Path, args: oracle.CheckArgs) -> None:
    _agree(check_fixture, args)


def test_packaged_fixtures_agree(fixture_trace: Path) -> None:
    _agree(fixture_trace, oracle.CheckArgs(gap_ns=1_000_000))


@pytest.mark.skipif(not EVERY_REAL, reason=f"no real exports under {SHARED_DIR}")
@pytest.mark.parametrize("path", EVERY_REAL, ids=lambda p: f"{p.parent.name}/{p.stem}"[:60])
def test_real_exports_agree(path: Path) -> None:
    _agree(path, oracle.CheckArgs(gap_ns=10_000_000))


def _cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nsysq", "check", *map(str, args)], capture_output=True, text=True, timeout=120
    )


def test_fail_on_and_json(check_fixture: Path) -> None:
    proc = _cli(
        check_fixture, "--rule", "gpu_gaps,danger", "--gap", "800", "--fail-on", "gpu_gaps", "-f", "json"
    )
    assert proc.returncode == 0, proc.stderr  # gpu_gaps is clean with --gap 800
    doc = json.loads(proc.stdout)
    assert [r["rule"] for r in doc["rules"]] == ["gpu_gaps", "danger"]
    assert [r["status"] for r in doc["rules"]] == ["clean", "found"]
    assert {f["rule"] for f in doc["findings"]} == {"danger"} and doc["footer"]["rules_run"] == 2
    proc = _cli(check_fixture, "--rule", "gpu_gaps,danger", "--gap", "800", "--fail-on", "any", "-f", "csv")
    assert proc.returncode == 3 and "danger" in proc.stderr
    assert proc.stdout.splitlines()[0].startswith("rule,title,status,count,total_ns")


def test_unknown_rule_is_one_sentence(check_fixture: Path) -> None:
    for flag in ("--rule", "--fail-on"):
        proc = _cli(check_fixture, flag, "gpu_gap")
        assert proc.returncode == 2
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "unknown rule 'gpu_gap'" in lines[0] and "gpu_gaps" in lines[0]


def test_json_keys_are_documented(check_fixture: Path) -> None:
    from tests.test_docs import _named, _section

    proc = _cli(check_fixture, "--pid", "4242", "--rows", "1", "-f", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert set(doc) == {"kind", "unit", "queries", "rules", "findings", "footer", "notes"}
    keys = set(doc) | set(doc["rules"][0]) | set(doc["findings"][0]) | set(doc["footer"])
    missing = keys - _named(_section("check"))
    assert not missing, f"docs/json.md section 'check' does not name {sorted(missing)}"
    assert doc["footer"]["scope"] == "pid 4242"
    assert {r["rule"] for r in doc["rules"] if r["status"] == "found"} >= {"cuda_memcpy_async", "gpu_gaps"}


def test_scopes_narrow_the_rules(check_fixture: Path) -> None:
    """--pid keeps one process's findings; --nvtx keeps the GPU work launched inside the range (the
    oracle's findings whose innermost range it is: 'forward' nests in nothing else of the fixture's)."""
    from nsysq.session.scope import NvtxSelection, Scope

    expected = oracle.check_rules(check_fixture)
    with Trace(check_fixture, cache=False, scope=Scope(pid=5151)) as t:
        result = check(t.session)
    rules = {r["rule"]: r for r in result.rules.records()}
    assert rules["launch_bound"]["status"] == "found" and rules["cuda_memcpy_async"]["status"] == "clean"
    assert {f["pid"] for f in result.findings.records() if f["pid"] is not None} == {5151}
    with Trace(check_fixture, cache=False, nvtx=NvtxSelection("forward")) as t:
        result = check(t.session, rules=["cuda_memcpy_async", "cuda_memcpy_sync", "cuda_memset_sync"])
    for name in ("cuda_memcpy_async", "cuda_memcpy_sync", "cuda_memset_sync"):
        want = [(f["start_ns"], f["duration_ns"]) for f in expected[name][3] if f.get("nvtx") == "forward"]
        got = [(f["start_ns"], f["duration_ns"]) for f in result.findings.records() if f["rule"] == name]
        assert got == want, name
        assert want or name == "cuda_memset_sync"  # the memsets' calls outlast the range
    assert result.rules.footer["scope"] == "nvtx forward"
