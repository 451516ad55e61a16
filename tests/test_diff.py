"""nsysq diff: the example pair's evidence board, totals against a raw-SQL oracle, real pairs, JSON, CLI."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import nsysq
from nsysq.base.errors import UsageError
from nsysq.base.table import Table
from nsysq.catalog.rules import load_danger_rules
from nsysq.cli import app
from nsysq.diffing import FINDING_KINDS, DiffResult, parse_fail_on
from nsysq.diffing.combine import combine
from nsysq.diffing.side import GpuTotals, Side, SideInfo, Span
from tests import oracle
from tests.conftest import REAL_TRACES, ROOT

MS = 1_000_000
NSYSQ = [sys.executable, "-c", "from nsysq.cli import main; main()"]


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    a, b = ROOT / "examples" / "bs1.sqlite", ROOT / "examples" / "bs16.sqlite"
    if a.is_file() and b.is_file():
        return a, b
    from nsysq.synth.scenarios import example_pair

    return example_pair(tmp_path_factory.mktemp("example"))


@pytest.fixture(scope="module")
def result(pair: tuple[Path, Path]) -> DiffResult:
    return nsysq.diff(*pair)


def _rows(table: Table) -> list[dict[str, Any]]:
    return table.records()


def _totals(res: DiffResult) -> dict[str, tuple[Any, Any, Any]]:
    return {m: (a, b, r) for m, a, b, r, _delta in res.tables["totals"].rows}


def _oracle_flash(path: Path) -> tuple[int, int]:
    with oracle.connect(path) as con:
        return con.execute(
            """SELECT count(*), sum(k."end" - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k
               JOIN StringIds s ON s.id = k.shortName WHERE lower(s.value) LIKE '%flash%'"""
        ).fetchone()


# -- the example pair: the article's evidence board -----------------------------------------------
def test_board_names_flash_attention_first(result: DiffResult, pair: tuple[Path, Path]) -> None:
    (ca, ta), (cb, tb) = _oracle_flash(pair[0]), _oracle_flash(pair[1])
    assert ca == cb == 392
    first = result.findings[0]
    assert first.kind == "outlier"
    assert first.subject == "Flash attention"
    assert f"{tb / ta:.2f}x" == "5.15x"
    assert "5.15x" in first.clue
    assert "same number of calls, 5.15x longer per call" in first.evidence
    assert "1.20 ms → 6.17 ms" in first.evidence
    assert first.numbers["a_ns"] == ta and first.numbers["b_ns"] == tb
    assert first.numbers["calls_a"] == first.numbers["calls_b"] == 392
    assert first.numbers["kernel"] == "reshape_and_cache_flash_kernel"


def test_only_flash_attention_is_an_outlier(result: DiffResult) -> None:
    cats = _rows(result.tables["categories"])
    assert [c["category"] for c in cats if c["outlier"]] == ["Flash attention"]
    kernels = _rows(result.tables["kernels"])
    assert [k["name"] for k in kernels if k["outlier"]] == ["reshape_and_cache_flash_kernel"]
    assert [f.subject for f in result.findings_of("outlier")] == ["Flash attention"]
    flash = next(c for c in cats if c["category"] == "Flash attention")
    assert flash["ratio"] == pytest.approx(6.170 / 1.198, rel=1e-9)
    assert flash["score"] >= 3


def test_gemm_variant_swap_is_one_grouped_finding(result: DiffResult, pair: tuple[Path, Path]) -> None:
    a_names, b_names = oracle.per_short_name(pair[0]), oracle.per_short_name(pair[1])
    new = {n: v for n, v in b_names.items() if n not in a_names}
    gone = {n: v for n, v in a_names.items() if n not in b_names}
    assert len(new) == len(gone) == 7
    variants = result.findings_of("new_variants", "removed_variants")
    assert len(variants) == 1
    v = variants[0]
    assert v.kind == "new_variants"
    assert re.search(r"7 new .*variants \(88 ms\) replaced 7 \(18 ms\)", v.evidence), v.evidence
    assert v.numbers["family"] == "nvjet_tst_*"
    assert v.numbers["new_ns"] == sum(t for _, t in new.values()) == 88 * MS
    assert v.numbers["removed_ns"] == sum(t for _, t in gone.values()) == 18 * MS
    assert sorted(v.numbers["new_names"]) == sorted(new)
    assert sorted(v.numbers["removed_names"]) == sorted(gone)


def test_d2d_copy_change(result: DiffResult, pair: tuple[Path, Path]) -> None:
    ka, kb = oracle.memcpy_by_kind(pair[0]), oracle.memcpy_by_kind(pair[1])
    assert ka[8] == (29, 81_000_000) and kb[8] == (53, 163_000_000)
    d2d = [f for f in result.findings_of("copy_change") if "Device-to-Device" in f.subject]
    assert len(d2d) == 1
    assert "29 → 53 ops, 81 MB → 163 MB" in d2d[0].evidence
    assert "83% more" in d2d[0].clue
    assert (d2d[0].numbers["ops_a"], d2d[0].numbers["ops_b"]) == (29, 53)
    assert (d2d[0].numbers["bytes_a"], d2d[0].numbers["bytes_b"]) == (81_000_000, 163_000_000)


def test_findings_ordered_most_anomalous_first(result: DiffResult) -> None:
    kinds = [f.kind for f in result.findings]
    assert kinds[:3] == ["outlier", "new_variants", "copy_change"]
    assert kinds[-1] == "launch_config"


def test_launch_config_change(result: DiffResult) -> None:
    rows = {r["name"]: r for r in _rows(result.tables["launch_config"])}
    flash = rows["reshape_and_cache_flash_kernel"]
    assert (flash["grid_a"], flash["grid_b"]) == ("1x1x1", "16x1x1")
    assert flash["changed"] == "grid"
    # nvjet tiles in both traces keep their configuration
    assert not any(n.startswith("nvjet_") for n in rows)
    assert "grid 1x1x1 → 16x1x1" in result.findings[0].evidence


def test_totals_equal_census_and_oracle(result: DiffResult, pair: tuple[Path, Path]) -> None:
    totals = _totals(result)
    for i, path in enumerate(pair):
        with nsysq.open(path) as t:
            census = t.census()
        assert totals["kernels"][i] == oracle.kernel_count(path) == census.attrs["footer"]["total_kernels"]
        assert totals["kernel_time_ns"][i] == oracle.kernel_ns(path)
        assert totals["distinct_kernel_names"][i] == census.attrs["footer"]["distinct_names"]
        kinds = oracle.memcpy_by_kind(path)
        assert totals["memcpy_ops"][i] == sum(n for n, _ in kinds.values())
        assert totals["memcpy_bytes"][i] == sum(b for _, b in kinds.values())
        assert totals["memset_ops"][i] == oracle.count(path, "CUPTI_ACTIVITY_KIND_MEMSET")
    assert totals["kernels"] == (8955, 8955, 1.0)
    assert totals["memcpy_ops"][:2] == (1099, 1147)
    assert totals["memset_ops"][:2] == (345, 429)
    assert totals["memcpy_ops_DtoD"][:2] == (29, 53)
    assert totals["memcpy_bytes_DtoD"][:2] == (81_000_000, 163_000_000)
    assert totals["gpus"][:2] == ("NVIDIA H200", "NVIDIA H200")
    assert totals["kernel_time_ns"][2] == pytest.approx(1374 / 1250)


def test_categories_add_up_to_lineup(result: DiffResult, pair: tuple[Path, Path]) -> None:
    cats = _rows(result.tables["categories"])
    for side, path in (("a", pair[0]), ("b", pair[1])):
        with nsysq.open(path) as t:
            lineup = {r["category"]: (r["instances"], r["total_ns"]) for r in t.lineup().to_dict("records")}
        got = {c["category"]: (c[f"calls_{side}"], c[f"{side}_ns"]) for c in cats if c[f"calls_{side}"]}
        assert got == lineup


def test_kernel_rows_match_oracle(result: DiffResult, pair: tuple[Path, Path]) -> None:
    a, b = oracle.per_short_name(pair[0]), oracle.per_short_name(pair[1])
    rows = {r["name"]: r for r in _rows(result.tables["kernels"])}
    assert set(rows) == set(a) | set(b)
    for name, r in rows.items():
        assert (r["calls_a"], r["a_ns"]) == a.get(name, (0, 0))
        assert (r["calls_b"], r["b_ns"]) == b.get(name, (0, 0))
        assert r["status"] == ("both" if name in a and name in b else "new" if name in b else "removed")


def test_self_diff_is_quiet(pair: tuple[Path, Path]) -> None:
    res = nsysq.diff(pair[0], pair[0])
    assert res.findings == []
    assert res.warnings == []
    assert all(r["ratio"] == pytest.approx(1.0) for r in _rows(res.tables["categories"]))
    assert not any(r["outlier"] for r in _rows(res.tables["kernels"]))


def test_threshold_and_noise_floor(pair: tuple[Path, Path]) -> None:
    assert not nsysq.diff(*pair, threshold=100).findings_of("outlier")
    assert not nsysq.diff(*pair, min_time_ms=10_000).findings_of("outlier")
    with pytest.raises(UsageError):
        nsysq.diff(*pair, threshold=0)
    with pytest.raises(UsageError):
        nsysq.diff(*pair, min_time_ms=-1)


def test_open_traces_are_accepted_and_left_open(pair: tuple[Path, Path]) -> None:
    with nsysq.open(pair[0]) as ta, nsysq.open(pair[1]) as tb:
        res = nsysq.diff(ta, tb)
        assert res.findings[0].subject == "Flash attention"
        assert ta.session.kernel_totals["kernels"] == 8955  # still usable


# -- danger kernels ---------------------------------------------------------------------------------
def test_danger_only_in_one_trace_is_loud(tmp_path: Path, pair: tuple[Path, Path]) -> None:
    rules = tmp_path / "danger.toml"
    rules.write_text(
        'version = 1\n\n[[rule]]\nkind = "small_tiles"\nfield = "short"\nlike = "nvjet_tst_64x8_%"\n'
        'reason = "Test: small tiles ran only at batch size 1."\n\n'
        '[[rule]]\nkind = "same_in_both"\nfield = "short"\nlike = "rms_norm_kernel"\n'
        'reason = "Test: present in both traces."\n',
        encoding="utf-8",
    )
    res = nsysq.diff(*pair, danger_rules=rules)
    rows = _rows(res.tables["danger"])
    assert {(r["kind"], r["name"], r["presence"]) for r in rows} == {
        ("small_tiles", "nvjet_tst_64x8_64x16_1x1_v_bz_TNT", "A only"),
        ("small_tiles", "nvjet_tst_64x8_64x16_1x1_h_bz_TNN", "A only"),
        ("same_in_both", "rms_norm_kernel", "both"),
    }
    assert rows[0]["kind"] == "small_tiles"  # one-sided kinds sort first
    danger = res.findings_of("danger")
    assert [f.subject for f in danger] == ["small_tiles"]  # identical presence is not a finding
    assert danger[0].severity == "high"
    assert "only in A" in danger[0].clue
    assert danger[0].verdict == "Test: small tiles ran only at batch size 1."
    # a one-sided danger kind ranks right after the outliers
    assert [f.kind for f in res.findings][:2] == ["outlier", "danger"]


def test_packaged_danger_rules_on_real_cublas_pair() -> None:
    llama = [p for p in REAL_TRACES if "llama" in p.name or "nvfuser" in p.name]
    if len(llama) < 2:
        pytest.skip("the real cuBLAS traces are absent")
    res = nsysq.diff(llama[0], llama[1])
    rows = _rows(res.tables["danger"])
    assert rows and all(r["reason"] for r in rows)
    kinds = {r.kind for r in load_danger_rules()}
    assert {r["kind"] for r in rows} <= kinds


# -- family matching (variants) ---------------------------------------------------------------------
def _side(rows: list[tuple[str, str, int, int]]) -> Side:
    from nsysq import catalog

    columns = (
        "short_name demangled_name category calls total_ns min_ns max_ns configs name_configs "
        "name_config_sig top_config top_grid top_block top_registers top_static_smem "
        "top_dynamic_smem top_config_calls"
    ).split()
    assert "diff_side_kernels" in catalog.all_queries()
    full = [
        (n, n, cat, calls, ns, 1, 1, 1, 1, "sig", "cfg", "1x1x1", "128x1x1", 32, 0, 0, calls)
        for n, cat, calls, ns in rows
    ]
    kernels = Table(kind="diff_side_kernels", columns=tuple(columns), rows=full)
    copies = Table(kind="copies", columns=("operation", "kind", "operations", "bytes", "total_ns"), rows=[])
    info = SideInfo("t.sqlite", "t.sqlite", "2025.1", ("GPU",), sum(r[2] for r in rows), True, None, 132)
    return Side(
        info=info,
        kernels=kernels,
        copies=copies,
        span=Span(None, None),
        busy=GpuTotals(None, None, 0),
        whole_graphs={},
        kernel_types={},
        copy_types={},
    )


def test_lineage_follows_the_tables_each_statement_read() -> None:
    """A result's labels: its statement's, then those of the latest statement that built each table
    it reads, followed back; a table rebuilt later (scores) does not pull in its earlier builder."""
    from nsysq.diffing.lineage import lineage
    from nsysq.session.sqlscript import Statement

    record = [
        Statement("CREATE OR REPLACE TEMP TABLE rows_a AS SELECT * FROM side", label="rows@1"),
        Statement("CREATE OR REPLACE TEMP VIEW score_input AS SELECT * FROM rows_a"),
        Statement("CREATE OR REPLACE TEMP TABLE scores AS SELECT * FROM score_input", label="scores@1"),
        Statement("CREATE OR REPLACE TEMP TABLE rows_b AS SELECT * FROM side", label="other@2"),
        Statement("CREATE OR REPLACE TEMP VIEW score_input AS SELECT * FROM rows_b"),
        Statement("CREATE OR REPLACE TEMP TABLE scores AS SELECT * FROM score_input", label="scores@1"),
        Statement("SELECT * FROM rows_b JOIN scores USING (key)"),
    ]
    sources = {"side": ("side@3",)}
    assert lineage(record, 6, sources=sources) == ("side@3", "other@2", "scores@1")
    assert lineage(record, 2, sources=sources) == ("side@3", "rows@1", "scores@1")
    assert lineage(record, 6) == ("other@2", "scores@1")


def test_side_queries_come_from_the_recorded_statements(pair: tuple[Path, Path]) -> None:
    from nsysq import catalog
    from nsysq.diffing.sides import read_side

    with nsysq.open(pair[0]) as trace:
        side = read_side(trace.session, None, "packaged")
        recorded = {s.label for s in trace.session.executed}
    label = {
        name: catalog.get(name).label for name in ("diff_side_kernels", "kernel_groups", "kernel_category")
    }
    assert side.kernels.queries == (
        label["diff_side_kernels"],
        label["kernel_groups"],
        label["kernel_category"],
    )
    assert set(side.kernels.queries + side.span.queries) <= recorded


def test_families_match_tiles_and_inductor_counters() -> None:
    tri, cut = "torch.compile (Triton)", "CUTLASS GEMM"
    a = _side(
        [
            ("triton_poi_fused_cat_1", tri, 10, 5 * MS),
            ("cutlass_tensorop_s16816gemm_bf16_128x256_32x3_nn_align8", cut, 10, 9 * MS),
            ("shared_kernel", "Other", 10, 1 * MS),
            ("gone_kernel", "Other", 10, 1 * MS),
        ]
    )
    b = _side(
        [
            ("triton_poi_fused_cat_2", tri, 10, 5 * MS),
            ("cutlass_tensorop_s16816gemm_bf16_64x128_64x4_nn_align8", cut, 10, 7 * MS),
            ("cutlass_tensorop_s16816gemm_bf16_256x128_32x3_nn_align8", cut, 10, 3 * MS),
            ("shared_kernel", "Other", 10, 1 * MS),
        ]
    )
    tables = combine(a, b, [], min_ns=0.5 * MS, threshold=3.0)
    groups = {(v["category"], v["family"]): v for v in _rows(tables["variants"])}
    assert groups[(tri, "triton_poi_fused_cat_*")]["new_kernels"] == 1
    assert groups[(tri, "triton_poi_fused_cat_*")]["removed_kernels"] == 1
    gemm = groups[(cut, "cutlass_tensorop_s*gemm_bf16_*_*_nn_align*")]
    assert (gemm["new_kernels"], gemm["removed_kernels"]) == (2, 1)
    assert (gemm["new_ns"], gemm["removed_ns"]) == (10 * MS, 9 * MS)
    other = groups[("Other", None)]
    assert (other["new_kernels"], other["removed_kernels"], other["removed_names"]) == (0, 1, "gone_kernel")


def test_fail_on_words() -> None:
    assert parse_fail_on("outlier,danger,new") == ("outlier", "danger", "new_variants")
    assert set(parse_fail_on("any")) == set(FINDING_KINDS)
    with pytest.raises(UsageError):
        parse_fail_on("outliers")


# -- JSON schema --------------------------------------------------------------------------------------
def test_json_schema(result: DiffResult) -> None:
    doc = json.loads(result.to_json())
    assert {
        "totals",
        "categories",
        "kernels",
        "findings",
        "variants",
        "launch_config",
        "danger",
        "copies",
    } <= set(doc)
    assert {"a", "b", "params", "warnings", "unit", "queries", "kind"} <= set(doc)
    assert doc["unit"] == "ns"
    for side in ("a", "b"):
        assert {"path", "name", "nsys_version", "gpus", "kernels", "has_kernel_table"} <= set(doc[side])
    for row in doc["totals"]:
        assert set(row) == {"metric", "a", "b", "ratio", "delta"}
    for section, key in (("categories", "category"), ("kernels", "name")):
        assert doc[section]
        for row in doc[section]:
            assert {key, "status", "calls_a", "calls_b", "a_ns", "b_ns", "ratio", "outlier", "score"} <= set(
                row
            )
            assert isinstance(row["outlier"], bool)
            assert row["status"] in ("both", "new", "removed")
            assert row["ratio"] is None or isinstance(row["ratio"], float)
    kernel_keys = {"pattern", "family", "calls_ratio", "per_call_ratio", "avg_a_ns", "avg_b_ns"}
    assert kernel_keys <= set(doc["kernels"][0])
    assert doc["findings"]
    for f in doc["findings"]:
        assert set(f) == {"kind", "subject", "clue", "evidence", "verdict", "severity", "numbers"}
        assert f["kind"] in FINDING_KINDS
        assert f["severity"] in ("high", "medium", "low")
        assert isinstance(f["numbers"], dict) and f["numbers"]
    ms = result.to_dict("ms")
    assert "a_ms" in ms["kernels"][0] and "a_ns" not in ms["kernels"][0]
    assert any(r["metric"] == "kernel_time_ms" and r["a"] == pytest.approx(1250) for r in ms["totals"])


def test_dataframes(result: DiffResult) -> None:
    df = result.categories
    assert {"category", "ratio", "outlier"} <= set(df.columns)
    assert len(result.kernels) == len(result.tables["kernels"].rows)
    assert list(result.board["kind"])[0] == "outlier"


# -- real exports -------------------------------------------------------------------------------------
def _real_pairs() -> list[tuple[Path, Path]]:
    n = len(REAL_TRACES)
    return [(REAL_TRACES[i], REAL_TRACES[(i + 1) % n]) for i in range(n)] if n > 1 else []


@pytest.mark.parametrize(
    "a,b", _real_pairs() or [pytest.param(None, None, marks=pytest.mark.skip("no real traces"))]
)
def test_real_pairs_diff_cleanly(a: Path, b: Path) -> None:
    res = nsysq.diff(a, b)
    totals = _totals(res)
    for i, path in enumerate((a, b)):
        assert totals["kernels"][i] == oracle.kernel_count(path)
        assert totals["kernel_time_ns"][i] == oracle.kernel_ns(path)
        has_kernels = "CUPTI_ACTIVITY_KIND_KERNEL" in oracle.tables(path)
        names = oracle.per_short_name(path) if has_kernels else {}
        assert totals["distinct_kernel_names"][i] == len(names)
        kinds = oracle.memcpy_by_kind(path)
        assert totals["memcpy_ops"][i] == sum(n for n, _ in kinds.values())
        assert totals["memset_ops"][i] == oracle.count(path, "CUPTI_ACTIVITY_KIND_MEMSET")
        if has_kernels:
            with nsysq.open(path) as t:
                if t.session.kernel_totals["kernels"]:
                    assert totals["kernels"][i] == t.census().attrs["footer"]["total_kernels"]
    json.loads(res.to_json())
    for f in res.findings:
        assert f.kind in FINDING_KINDS and f.evidence


def test_trace_without_kernels_still_diffs_copies() -> None:
    empty = [p for p in REAL_TRACES if "no-kernel-table" in p.name]
    other = [p for p in REAL_TRACES if "memcpy" in p.name]
    if not empty or not other:
        pytest.skip("the real no-kernel trace is absent")
    res = nsysq.diff(empty[0], other[0])
    assert any("recorded no CUDA kernels" in w for w in res.warnings)
    totals = _totals(res)
    assert totals["kernels"][0] == 0 and totals["kernels"][2] is None
    assert totals["memcpy_ops"][0] == oracle.count(empty[0], "CUPTI_ACTIVITY_KIND_MEMCPY")
    assert not any(r["calls_a"] for r in _rows(res.tables["kernels"]))
    assert all(r["status"] == "new" for r in _rows(res.tables["kernels"]))


# -- CLI ------------------------------------------------------------------------------------------------
runner = CliRunner()


def test_cli_board_first(pair: tuple[Path, Path]) -> None:
    out = runner.invoke(app, ["diff", str(pair[0]), str(pair[1])])
    assert out.exit_code == 0, out.output
    text = out.stdout
    assert text.index("Evidence board") < text.index("Totals") < text.index("Categories")
    assert text.index("Categories") < text.index("Kernels") < text.index("Memory operations")
    assert "5.15x Flash attention" in text


def test_cli_fail_on_exit_code(pair: tuple[Path, Path]) -> None:
    hit = runner.invoke(app, ["diff", str(pair[0]), str(pair[1]), "--fail-on", "outlier,danger"])
    assert hit.exit_code == 3
    miss = runner.invoke(app, ["diff", str(pair[0]), str(pair[1]), "--fail-on", "danger", "-f", "json"])
    assert miss.exit_code == 0
    assert json.loads(miss.stdout)["findings"][0]["kind"] == "outlier"
    same = runner.invoke(app, ["diff", str(pair[0]), str(pair[0]), "--fail-on", "any"])
    assert same.exit_code == 0


def test_cli_process_exit_codes_and_streams(pair: tuple[Path, Path]) -> None:
    cmd = [*NSYSQ, "diff", str(pair[0]), str(pair[1])]
    proc = subprocess.run([*cmd, "--fail-on", "new", "-f", "markdown"], capture_output=True, text=True)
    assert proc.returncode == 3
    assert proc.stdout.startswith("**nsysq diff")
    assert "| 1 | 5.15x Flash attention" in proc.stdout
    assert "--fail-on" in proc.stderr and "--fail-on" not in proc.stdout
    bad = subprocess.run([*cmd, "--fail-on", "bogus"], capture_output=True, text=True)
    assert bad.returncode == 2 and "bogus" in bad.stderr and not bad.stdout


def test_cli_csv_and_sections(pair: tuple[Path, Path]) -> None:
    csv_out = runner.invoke(app, ["diff", str(pair[0]), str(pair[1]), "-f", "csv"])
    header = csv_out.stdout.splitlines()[0].split(",")
    assert header[:3] == ["name", "category", "status"] and "ratio" in header and "outlier" in header
    copies = runner.invoke(app, ["diff", str(pair[0]), str(pair[1]), "-f", "json", "--section", "copies"])
    rows = json.loads(copies.stdout)
    assert any(r["kind"] == "Device-to-Device" and r["ops_b"] == 53 for r in rows)


def test_cli_warns_on_different_gpus(pair: tuple[Path, Path]) -> None:
    other = [p for p in REAL_TRACES if "H200" not in p.name]
    if not other:
        pytest.skip("no real traces")
    proc = subprocess.run(
        [*NSYSQ, "diff", str(pair[0]), str(other[0]), "-f", "json"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "different GPUs" in proc.stderr and "different nsys versions" in proc.stderr
    json.loads(proc.stdout)


def _scored_pairs() -> list[tuple[Path, Path]]:
    examples = (ROOT / "examples" / "bs1.sqlite", ROOT / "examples" / "bs16.sqlite")
    pairs = [examples] if all(p.is_file() for p in examples) else []
    with_kernels = [p for p in REAL_TRACES if "CUPTI_ACTIVITY_KIND_KERNEL" in oracle.tables(p)]
    return pairs + list(zip(with_kernels, with_kernels[1:], strict=False))


@pytest.mark.parametrize(
    "a,b", _scored_pairs() or [pytest.param(None, None, marks=pytest.mark.skip("no pairs"))]
)
def test_kernel_scores_and_outliers_match_the_oracle(a: Path, b: Path) -> None:
    """queries/diff/outliers.sql on kernel totals equals a plain-Python weighted median/MAD over raw
    sqlite3 sums (tests/oracle.py): every score, and the outlier flag at the default threshold."""
    _check_scores(a, b)


def test_kernel_scores_match_the_oracle_on_generated_pairs(tmp_path: Path) -> None:
    from tests.fixtures import diff_pairs

    scored = [_check_scores(*diff_pairs.build(name, tmp_path)) for name in diff_pairs.PAIRS]
    assert sum(scored) >= 5  # the sync and window pairs share their kernel names


def test_kernel_scores_match_the_oracle_when_the_spread_is_wide(tmp_path: Path) -> None:
    """Twelve kernels whose B/A ratios spread from 0.4x to 3.3x: the spread is the weighted MAD,
    not the floor, and the one 20x kernel stands out."""
    from nsysq.synth.writer import write_trace
    from tests.fixtures import diff_pairs

    ms = diff_pairs.MS
    ratios = [20.0, 0.4, 3.3, 0.5, 2.2, 0.7, 1.6, 0.8, 1.3, 0.9, 1.1, 1.0]  # the heaviest near 1x
    a = [(f"kernel_{i:02d}", (i + 2) * ms) for i in range(len(ratios))]
    b = [(name, int(ns * r)) for (name, ns), r in zip(a, ratios, strict=True)]
    gaps = [ms] * len(a)
    pair = [write_trace(tmp_path / f"{s}.sqlite", diff_pairs._run(k, gaps)) for s, k in (("a", a), ("b", b))]
    assert _check_scores(*pair) == len(ratios)
    outliers = [r["name"] for r in nsysq.diff(*pair).tables["kernels"].records() if r["outlier"]]
    assert outliers == ["kernel_00"]


def _check_scores(a: Path, b: Path) -> int:
    """Compare every 'both' kernel row's score and outlier flag with the oracle; how many were eligible."""
    from nsysq.diffing.params import DEFAULT_MIN_TIME_MS, DEFAULT_THRESHOLD, MAD_FLOOR

    scores = oracle.total_scores(a, b, DEFAULT_MIN_TIME_MS * 1e6, MAD_FLOOR)
    rows = [r for r in nsysq.diff(a, b).tables["kernels"].records() if r["status"] == "both"]
    assert {r["name"] for r in rows} == set(scores)
    for row in rows:
        want = scores[row["name"]]
        if want is None:
            assert row["score"] is None and not row["outlier"], row["name"]
        else:
            assert row["score"] == pytest.approx(want, abs=1e-9), row["name"]
            assert row["outlier"] == (abs(want) >= DEFAULT_THRESHOLD), row["name"]
    return sum(v is not None for v in scores.values())
