"""The terminal a person reads: every table command in a real pseudo-terminal at 80 and 120
columns (``script`` from util-linux, or tmux), no line longer than the terminal, no number cut; the
compact columns, ``--wide`` and ``--columns``; the footer; the ``overall`` finding of the board."""

from __future__ import annotations

import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nsysq.base.terminal import footer_lines, middle_ellipsis
from nsysq.base.units import condensed
from tests.conftest import REAL_TRACES, ROOT

EXAMPLES = ROOT / "examples"
A, B = EXAMPLES / "bs1.sqlite", EXAMPLES / "bs16.sqlite"
WIDTHS = (80, 120)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]")
_SCRIPT = shutil.which("script")
_TMUX = shutil.which("tmux")
needs_pty = pytest.mark.skipif(
    not (_SCRIPT or _TMUX), reason="neither script (util-linux) nor tmux is installed: no pseudo-terminal"
)


def in_terminal(args: list[str], width: int, tmp: Path) -> str:
    """What ``nsysq ARGS`` shows on stdout in a pseudo-terminal ``width`` columns wide (stderr to a file)."""
    command = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "nsysq", *args])
    env = {**os.environ, "NO_COLOR": "1", "TERM": "xterm", "COLUMNS": "", "LINES": ""}
    env.pop("COLUMNS")
    env.pop("LINES")
    err = tmp / "stderr.txt"
    shell = f"stty cols {width} rows 300; {command} 2>{shlex.quote(str(err))}"
    if _SCRIPT:
        run = [_SCRIPT, "-qec", shell, "/dev/null"]
    else:  # tmux: a detached session of that size, the output captured from a file
        out = tmp / "stdout.txt"
        run = [str(_TMUX), "new-session", "-d", "-x", str(width), "-y", "50", f"{shell} | cat > {out}"]
    proc = subprocess.run(run, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    text = proc.stdout if _SCRIPT else (tmp / "stdout.txt").read_text()
    return _ANSI.sub("", text).replace("\r", "")


def graph_trace(tmp: Path) -> Path:
    from tests.fixtures import build

    return build("graph_trace", tmp)


COMMANDS: dict[str, list[str]] = {
    "info": ["info", str(A)],
    "census": ["census", str(A)],
    "lineup": ["lineup", str(A)],
    "stakeout": ["stakeout", str(A), "device_kernel"],
    "timeline": ["timeline", str(A)],
    "nvtx": ["nvtx", str(A)],
    "gaps": ["gaps", str(A)],
    "overlap": ["overlap", str(A)],
    "graphs": ["graphs", "GRAPH"],
    "diff": ["diff", str(A), str(B)],
    "fleet": ["fleet", "census", str(A), str(B)],
}


@needs_pty
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_table_fits_the_terminal(command: str, width: int, tmp_path: Path) -> None:
    args = [graph_trace(tmp_path).as_posix() if a == "GRAPH" else a for a in COMMANDS[command]]
    shown = in_terminal(args, width, tmp_path)
    lines = shown.splitlines()
    assert len(lines) > 3, shown
    too_long = [line for line in lines if len(line.rstrip()) > width]
    assert not too_long, f"{len(too_long)} lines wider than {width}:\n" + "\n".join(too_long[:5])
    cut = re.search(r"(?:^|\s)[-+]?[\d,.]+%?…|(?:^|\s)…[\d,.]+%?(?:\s|$)", shown, re.M)
    assert cut is None, f"a number was cut: {cut.group(0) if cut else ''}"


def _grouped(value: float | int, decimals: int) -> str:
    return f"{value:,.{decimals}f}" if decimals else f"{int(value):,}"


@needs_pty
@pytest.mark.parametrize("width", WIDTHS)
def test_census_numbers_shown_are_whole(width: int, tmp_path: Path) -> None:
    """Every count and time of a census row that the terminal shows is the JSON's, in full."""
    shown = in_terminal(["census", str(A), "-n", "6"], width, tmp_path)
    doc = json.loads(subprocess.run(
        [sys.executable, "-m", "nsysq", "census", str(A), "-n", "6", "-f", "json", "-u", "ms"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout)  # fmt: skip
    rows = [line for line in shown.splitlines() if re.match(r"\s+\d+\s", line)]
    assert len(rows) == 6, shown
    for line, row in zip(rows, doc["rows"], strict=False):
        assert _grouped(row["instances"], 0) in line
        assert _grouped(row["total_ms"], 3) in line
        assert f"{row['share_pct']:.1f}%" in line


@needs_pty
def test_compact_columns_at_a_terminal_every_column_otherwise(tmp_path: Path) -> None:
    at_terminal = in_terminal(["census", str(A), "-n", "3"], 120, tmp_path)
    assert "stddev" in at_terminal and "underfilled ms" not in at_terminal.split("not shown")[0]
    assert "not shown (--wide): " in at_terminal
    wide = in_terminal(["census", str(A), "-n", "3", "--wide"], 120, tmp_path)
    assert "underfilled" in wide.split("total kernels")[0] and "not shown" not in wide
    piped = subprocess.run(
        [sys.executable, "-m", "nsysq", "census", str(A), "-n", "3"], cwd=ROOT, capture_output=True, text=True
    ).stdout
    header = piped.split("──")[0]
    for column in ("kernel", "zero", "unresolved", "underfilled"):
        assert column in header, header


@needs_pty
def test_stakeout_prints_grids_joined(tmp_path: Path) -> None:
    shown = in_terminal(["stakeout", str(A), "device_kernel"], 120, tmp_path)
    assert "132x1x1" in shown and "384x1x1" in shown


def nsysq(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nsysq", *args], cwd=ROOT, capture_output=True, text=True)


def test_columns_picks_in_csv_and_markdown_json_keeps_every_key() -> None:
    csv_out = nsysq("census", str(A), "-n", "2", "-f", "csv", "--columns", "name,total_ms,avg")
    assert csv_out.stdout.splitlines()[0] == "name,total_ns,avg_ns"
    md = nsysq("stakeout", str(A), "device_kernel", "-f", "markdown", "--columns", "grid,block")
    assert "| grid | block |" in md.stdout and "| 132x1x1 | 384x1x1 |" in md.stdout
    doc = json.loads(nsysq("census", str(A), "-n", "2", "-f", "json", "--columns", "name").stdout)
    assert "stddev_ns" in doc["columns"]


def test_an_unknown_column_is_one_sentence() -> None:
    out = nsysq("census", str(A), "--columns", "name,bogus")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith("nsysq: error: census has no column 'bogus'; its columns: rank, name")
    several = nsysq("gaps", str(A), "--columns", "device_id,nothing")
    assert several.returncode == 2 and "no table of this result has the column 'nothing'" in several.stderr
    ok = nsysq("gaps", str(A), "--columns", "device_id,cause")
    assert ok.returncode == 0 and "host_busy" in ok.stdout


def test_middle_ellipsis_keeps_both_ends() -> None:
    name = "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN"
    cut = middle_ellipsis(name, 20)
    assert len(cut) == 20 and cut.startswith("nvjet_tst_") and cut.endswith("coopB_TNN") and "…" in cut
    assert middle_ellipsis("short", 20) == "short"


def test_footer_lines_are_aligned_and_fit() -> None:
    pairs = [(f"label {i}", f"{i * 1000:,}") for i in range(7)] + [
        ("rules", "packaged lineup_rules.toml " * 4)
    ]
    for width in WIDTHS:
        lines = footer_lines(pairs, width)
        assert all(len(line) <= width for line in lines), lines
        assert lines[0].index("label 1") == lines[1].index("label 4")  # columns line up
        assert lines[-1].lstrip().startswith("packaged") or "rules:" in "".join(lines)


def test_repeated_names_are_counted() -> None:
    assert condensed(["NVIDIA GeForce RTX 3090"] * 7) == "7× NVIDIA GeForce RTX 3090"
    assert condensed(["A100", "A100", "T4"]) == "2× A100, 1× T4"
    assert condensed(["NVIDIA H200"]) == "NVIDIA H200"
    assert condensed([]) == ""


def test_no_blank_cell_where_the_export_records_no_gpu() -> None:
    no_gpu = [p for p in REAL_TRACES if "2026.2" in p.name]
    if not no_gpu:
        pytest.skip("no 2026.2 real export (without TARGET_INFO_GPU) here")
    out = nsysq("census", str(no_gpu[0]), "-n", "3")
    assert "underfilled pct            –" in out.stdout or re.search(r"underfilled pct\s+–", out.stdout)
    assert not re.search(r"underfilled \w+:\s*$", out.stdout, re.M)
    assert "SM count unknown: the export records no GPU" in out.stderr


def test_the_board_opens_with_the_overall_change_when_one_kernel_made_it(tmp_path: Path) -> None:
    from nsysq.synth.scenarios import headline_pair

    before, after = headline_pair(tmp_path)
    doc = json.loads(nsysq("diff", str(before), str(after), "-f", "json").stdout)
    first = doc["findings"][0]
    assert first["kind"] == "overall" and first["subject"] == "trace"
    numbers = first["numbers"]
    assert (numbers["a_ns"], numbers["b_ns"]) == (2_825_000_000, 736_000_000)
    assert numbers["subject"] == "Fan2" and numbers["share"] >= 0.99
    assert first["clue"] == "GPU kernel time 2.83 s → 736 ms (0.26x)"
    assert (
        "grid 1024x1024x1 → 256x256x1" in first["evidence"] and "block 4x4x1 → 16x16x1" in first["evidence"]
    )
    assert [f["kind"] for f in doc["findings"][1:3]] == ["outlier", "outlier"]  # the outliers still follow
    assert nsysq("diff", str(before), str(after), "--fail-on", "overall").returncode == 3


def test_no_overall_finding_when_the_outliers_are_the_news() -> None:
    """The article's pair: everything ~1.04x, one category 5x: the board is as before."""
    doc = json.loads(nsysq("diff", str(A), str(B), "-f", "json").stdout)
    assert doc["findings"][0]["kind"] == "outlier"
    assert "overall" not in {f["kind"] for f in doc["findings"]}


@pytest.mark.parametrize("mode", ["pipe", "terminal", "colour"])
def test_rows_written_by_hand_are_richs_own(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """From PLAIN_ROWS rows on, the body rows whose every cell fits its column are written without
    rich, the rows that wrap drawn by rich one at a time (nsysq.base.render): for random tables of
    names, sentences (mostly short, some wrapping), numbers and unknowns, in a pipe, at a terminal
    and at a colour terminal, the output is rich's byte for byte."""
    import io

    from nsysq.base import render as render_mod
    from nsysq.base.table import Table

    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    if mode != "pipe":
        monkeypatch.setenv("FORCE_COLOR", "1")
    if mode == "terminal":
        monkeypatch.setenv("NO_COLOR", "1")
    written: list[str] = []
    by_hand = render_mod._plain_rows

    def spied(*args: object) -> list[str]:
        lines = by_hand(*args)
        written.extend(lines)
        return lines

    monkeypatch.setattr(render_mod, "_plain_rows", spied)
    rng = random.Random(7)
    mixed, before = 0, 0
    plain = ["void", "gemm", "nccl_AllReduce", "k<[T=float]>", "a b", "x::y", "[bold]", ":smile:"]
    for case in range(30):
        words = plain if case % 2 else [*plain, "ñame", "tab\there", "  pad", "", "全角"]
        n_rows = render_mod.PLAIN_ROWS + rng.randrange(0, 30)
        columns = ("name", "total_ns", "instances", "advice", "value")
        rows = [
            (
                "_".join(rng.choice(words) for _ in range(rng.randrange(1, 12))),
                rng.choice([None, rng.randrange(0, 10**12), rng.random() * 1e6]),
                rng.randrange(0, 10**6),
                " ".join(rng.choice(words) for _ in range(rng.randrange(0, _advice_words(rng, case)))),
                rng.choice([None, True, "x", 1.5]),
            )
            for _ in range(n_rows)
        ]
        table = Table("case", columns, rows, footer={"rows": n_rows})
        fast, slow = io.StringIO(), io.StringIO()
        render_mod.render(table, "table", fast, title="t")
        with monkeypatch.context() as only_rich:
            only_rich.setattr(render_mod, "PLAIN_ROWS", 10**9)
            render_mod.render(table, "table", slow, title="t")
        assert fast.getvalue() == slow.getvalue(), f"case {case}"
        if case % 3 == 1 and case % 2:  # some rows wrap: they were drawn by rich, the others by hand
            wrapped = fast.getvalue().count("\n") > n_rows + 8
            mixed += wrapped and len(written) > before
        before = len(written)
    assert len(written) >= 3 * render_mod.PLAIN_ROWS, "no rows written by hand: the comparison tested nothing"
    assert mixed >= 2, "no table mixed rows written by hand with rows that wrap"


def _advice_words(rng: random.Random, case: int) -> int:
    """Cases 0, 3, ...: short sentences; 1, 4, ...: one row in six long enough to wrap; else long."""
    if case % 3 == 0:
        return 3
    if case % 3 == 1:
        return 30 if rng.random() < 1 / 6 else 3
    return 30
