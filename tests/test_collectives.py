"""nsysq fleet collectives: NCCL collectives matched across ranks equal a plain-Python matcher over raw
rows (tests/oracle.py), on 8 generated rank files with their own capture starts (nsysq.synth.ranks:
rank 5 late at three AllReduces because its data_loader range grew), with a collective dropped or
renamed on one rank, with a file lacking its clock, on one export holding four devices, and on the
real 2-GPU exports; the verdict names the late rank and the phase that grew.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nsysq.fleet_analysis import collectives
from nsysq.synth.ranks import collective_node, collective_ranks
from tests import oracle
from tests.conftest import REAL_TRACES, ROOT

LATE = "rank05.sqlite"
PAIRS = [p for p in REAL_TRACES if "nccl" in p.name]


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("job")
    collective_ranks(out)
    return out


@pytest.fixture(scope="module")
def answer(job: Path) -> Any:
    return collectives(job, cache=False)


def _paths(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.sqlite"))


def _agrees(result: Any, paths: list[Path]) -> dict[str, Any]:
    """The command's tables equal the oracle's, row for row; returns the oracle's answer."""
    want = oracle.collectives_matched(paths)
    assert result.collectives_table.records() == want["rows"]
    got = {r["path"]: {k: r[k] for k in ("collectives", "last_arrivals", "caused_wait_ns", "waited_ns")}
           for r in result.ranks_table.records()}  # fmt: skip
    assert got == want["ranks"]
    footer = result.collectives_table.footer
    assert (footer["unmatched_counts_differ"], footer["unmatched_names_differ"]) == (
        want["counts_differ"],
        want["names_differ"],
    )
    assert footer["unmatched"] == result.match["unmatched"] == want["counts_differ"] + want["names_differ"]
    mine = [(p.what, p.name, p.late_ns, p.typical_ns) for p in result.phases]
    assert [m[:3] for m in mine] == [w[:3] for w in want["phases"]]
    assert [m[3] for m in mine] == pytest.approx([w[3] for w in want["phases"]])
    return want


def test_eight_ranks_equal_the_oracle_and_the_late_rank_is_named(job: Path, answer: Any) -> None:
    want = _agrees(answer, _paths(job))
    footer = answer.collectives_table.footer
    assert (footer["ranks"], footer["collectives"], footer["unmatched"]) == (8, 25, 0)
    assert footer["clock"] == "utcEpochNs" and footer["files_without_clock"] == "none"
    top = answer.ranks_table.records()[0]
    assert Path(top["path"]).name == LATE and want["blamed"] == top["path"]
    caused = [r["caused_wait_ns"] for r in answer.ranks_table.records()]
    assert caused == sorted(caused, reverse=True)
    assert answer.phases[0].name == "data_loader" and answer.phases[0].what == "NVTX range"
    assert answer.verdict.startswith(f"{LATE} makes the others wait") and "'data_loader'" in answer.verdict
    # the planted steps: rank 5 arrives about 3 ms late at AllReduce 3, 7 and 8
    late = [r for r in answer.collectives_table.records() if r["skew_ns"] > 1_000_000]
    assert [(r["kind"], r["seq"]) for r in late] == [("AllReduce", 3), ("AllReduce", 7), ("AllReduce", 8)]
    assert all(Path(r["last_path"]).name == LATE and 2_900_000 < r["skew_ns"] < 3_200_000 for r in late)


def test_the_capture_starts_are_aligned(job: Path, answer: Any) -> None:
    """Rank files start their clocks up to 250 ms apart: unaligned, the skews would be that large."""
    starts = {oracle._clock_epoch(p) for p in _paths(job)}
    assert max(starts) - min(starts) > 50_000_000
    ontime = [r["skew_ns"] for r in answer.collectives_table.records() if r["skew_ns"] < 1_000_000]
    assert len(ontime) == 22 and max(ontime) < 50_000


def _copy(job: Path, tmp_path: Path) -> Path:
    out = tmp_path / "ranks"
    shutil.copytree(job, out)
    return out


def _string_id(con: sqlite3.Connection, like: str) -> int:
    return int(con.execute("SELECT id FROM StringIds WHERE value LIKE ?", (like,)).fetchone()[0])


def test_a_collective_missing_on_one_rank_is_counted(job: Path, tmp_path: Path) -> None:
    ranks = _copy(job, tmp_path)
    with sqlite3.connect(ranks / "rank02.sqlite") as con:
        sid = _string_id(con, "ncclDevKernel_AllReduce%")
        con.execute(
            "DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid = (SELECT rowid FROM "
            "CUPTI_ACTIVITY_KIND_KERNEL WHERE shortName = ? ORDER BY start LIMIT 1 OFFSET 10)",
            (sid,),
        )
    result = collectives(ranks, cache=False)
    _agrees(result, _paths(ranks))
    assert result.match["counts_differ"] == 1 and result.match["names_differ"] == 0
    assert result.collectives_table.footer["collectives"] == 24
    assert any("AllReduce" in n and "counts differ" in n for n in result.collectives_table.notes)


def test_a_collective_whose_name_differs_is_counted(job: Path, tmp_path: Path) -> None:
    ranks = _copy(job, tmp_path)
    with sqlite3.connect(ranks / "rank06.sqlite") as con:
        sid = _string_id(con, "ncclDevKernel_AllGather%")
        con.execute("INSERT INTO StringIds VALUES (9999, 'ncclDevKernel_AllGather_RING_SIMPLE')")
        con.execute(
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET shortName = 9999 WHERE rowid = (SELECT rowid FROM "
            "CUPTI_ACTIVITY_KIND_KERNEL WHERE shortName = ? ORDER BY start LIMIT 1 OFFSET 4)",
            (sid,),
        )
    result = collectives(ranks, cache=False)
    _agrees(result, _paths(ranks))
    assert (result.match["counts_differ"], result.match["names_differ"]) == (0, 1)


def test_a_file_without_its_clock_means_one_shared_clock(tmp_path: Path) -> None:
    collective_ranks(tmp_path, ranks=4, steps=4, late_rank=None, without_clock=(2,))
    result = collectives(tmp_path, cache=False)
    _agrees(result, _paths(tmp_path))
    footer = result.collectives_table.footer
    assert footer["clock"] == "shared (assumed)" and footer["files_without_clock"].endswith("rank02.sqlite")
    assert any(n.startswith("warning: 1 of 4 file(s) lack TARGET_INFO_SESSION_START_TIME") for n in
               result.collectives_table.notes)  # fmt: skip


def test_one_export_with_several_devices(tmp_path: Path) -> None:
    node = collective_node(tmp_path / "node.sqlite")
    result = collectives(node, cache=False)
    _agrees(result, [node])
    labels = [r["path"] for r in result.ranks_table.records()]
    assert len(labels) == 4 and labels[0] == f"{node} [pid 5102, device 2]"
    assert result.phases[0].name == "data_loader"
    assert result.verdict.startswith("node.sqlite [pid 5102, device 2] makes the others wait")


def test_a_grown_category_is_the_phase(tmp_path: Path) -> None:
    collective_ranks(tmp_path, ranks=4, steps=6, late_rank=1, late_steps=(2, 4), late_phase="category")
    result = collectives(tmp_path, cache=False)
    want = _agrees(result, _paths(tmp_path))
    assert Path(want["blamed"]).name == "rank01.sqlite"
    named = {(p.what, p.name) for p in result.phases[:2]}
    assert ("category", "Persistent GEMM (nvjet)") in named or ("NVTX range", "backward") in named


@pytest.mark.parametrize("path", PAIRS, ids=[p.name[:40] for p in PAIRS])
def test_real_two_gpu_exports_equal_the_oracle(path: Path) -> None:
    result = collectives(path, cache=False)
    _agrees(result, [path])
    assert result.collectives_table.footer["ranks"] == 2 and result.match["unmatched"] == 0


def test_real_exports_present_or_skipped() -> None:
    if not PAIRS:
        pytest.skip("the real NCCL exports are not here (tests/conftest.py REAL_DIR)")
    assert len(PAIRS) == 2


def _cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nsysq", "fleet", "collectives", *map(str, args)],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip


def _section(title: str) -> str:
    text = (ROOT / "docs" / "json.md").read_text(encoding="utf-8")
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_cli_json_is_the_library_answer_and_documented(job: Path, answer: Any) -> None:
    proc = _cli(job, "--no-cache", "-f", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["collectives"] == answer.document()["collectives"] and doc["verdict"] == answer.verdict
    assert doc["match"]["matched"] == 25
    keys = {*doc, *doc["footer"], *doc["collectives"][0], *doc["ranks"][0], *doc["match"],
            *doc["match"]["groups"][0], *doc["phases"][0]}  # fmt: skip
    section = _section("fleet collectives")
    assert not [k for k in keys if f"`{k}`" not in section]


def test_cli_limit_keeps_the_most_wait_and_shows_the_verdict(job: Path) -> None:
    proc = _cli(job, "--no-cache", "--limit", "3", "-f", "markdown")
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| ncclDevKernel_")]
    assert len(rows) == 3 and all("| AllReduce |" in row for row in rows)
    assert "rank05.sqlite makes the others wait" in proc.stdout and "shown_rows: 3" in proc.stdout


def test_cli_show_sql_prints_the_per_trace_sql(job: Path) -> None:
    proc = _cli(job / "rank00.sqlite", "--no-cache", "--show-sql")
    assert proc.returncode == 0, proc.stderr
    assert "fleet_collective_kernels@1" in proc.stdout and "kernel_comm_pairs@2" in proc.stdout


def test_a_note_on_many_different_counts_gives_their_range() -> None:
    """Each of 40 ranks with its own count: the note says the range and its two ends in one line,
    not 40 counts (at 48 ranks that was a 4 KB line on stderr)."""
    from nsysq.fleet_analysis.collectives import Rank, _group_note

    ranks = [Rank(f"r{i:02d}.sqlite", f"r{i:02d}.sqlite", 1, 0, 0, 0) for i in range(40)]
    counts = [900 + i for i in range(40)]
    note = _group_note((0, "AllReduce"), ranks, counts, 0)
    assert note == (
        "stream 0 AllReduce: 900-939 per rank over 40 ranks (most on r39.sqlite, fewest on r00.sqlite): "
        "39 not matched (counts differ)"
    )
    few = _group_note((1, "AllGather"), ranks[:3], [5, 5, 4], 2)
    assert few == (
        "stream 1 AllGather: 5 on r00.sqlite, r01.sqlite; 4 on r02.sqlite: 1 not matched (counts differ); "
        "2 not matched (kernel names differ between ranks)"
    )
