"""Damage is never quiet: every damaged copy either answers what SQLite's own full scan answers or
fails with the one-sentence damage message; no input ever gets a Python traceback.

The damaged copies come from tests/corpus.py (examples/bs16.sqlite and, when present, a real 2020.3
export). Library runs go through one subprocess per reader mode (``python -m tests.test_damage``
loops over the files and reports each outcome as a JSON line); a smaller set goes through the real
CLI, one subprocess per command.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any

import pytest

from tests import oracle
from tests.conftest import REAL_DIR, REAL_TRACES, ROOT
from tests.corpus import KERNEL_TABLE, Damaged, Pages, damaged_copies, table_trees, unorder_keys

SOURCES = [ROOT / "examples" / "bs16.sqlite", REAL_DIR / "nsys2020.3_openmp-offload_2xV100.sqlite"]
PER_KIND = 4
KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Damaged]:
    out = tmp_path_factory.mktemp("damaged")
    return [
        d for source in SOURCES if source.is_file() for d in damaged_copies(source, out, per_kind=PER_KIND)
    ]


def _snapshot(directory: Path) -> dict[str, str]:
    """Every file in ``directory`` with its sha256: the inputs unchanged, nothing written beside them."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir())}


def _library(job: str, files: list[Path], env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    run = subprocess.run(
        [sys.executable, "-m", "tests.test_damage", job, *map(str, files)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "MPLBACKEND": "Agg", **(env or {})},
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    return [json.loads(line) for line in run.stdout.splitlines()]


def _assert_damage_sentence(message: str, path: Path, table: str | None = None) -> None:
    assert "\n" not in message.strip(), message
    assert f"{path} is damaged" in message, message  # after at most the CLI's "nsysq: error:" prefix
    assert len(message.split(str(path))[0]) < 20, message
    assert f"sqlite3 {path} 'PRAGMA integrity_check'" in message, message
    assert "export the trace again" in message, message
    if table is not None:
        assert f"is damaged in {table}" in message, message


@pytest.mark.parametrize("page_reader", ["1", "0"], ids=["pages", "scanner"])
def test_damaged_census_reconciles_with_sqlite_or_names_the_damage(
    corpus: list[Damaged], page_reader: str
) -> None:
    directory = corpus[0].path.parent
    before = _snapshot(directory)
    results = _library("census", [d.path for d in corpus], {"NSYSQ_PAGE_READER": page_reader})
    outcomes = {"answered": 0, "damaged": 0}
    for item, result in zip(corpus, results, strict=True):
        assert result["file"] == str(item.path)
        assert "traceback" not in result, result["traceback"]
        try:
            want: dict[str, Any] | None = oracle.census_totals(item.path)
        except sqlite3.DatabaseError:
            want = None  # SQLite itself cannot read the table: only the damage message is right
        if "error" in result:
            assert result["error"] == "DamagedTraceError", (item, result)
            _assert_damage_sentence(result["message"], item.path, item.table)
            outcomes["damaged"] += 1
            continue
        assert want is not None, f"{item}: answered {result} where SQLite cannot read the file"
        assert (result["instances"], result["total_ns"]) == (want["instances"], want["total_ns"]), item
        assert {k: tuple(v) for k, v in result["per_name"].items()} == want["per_name"], item
        outcomes["answered"] += 1
    assert _snapshot(directory) == before
    assert outcomes["answered"] and outcomes["damaged"], outcomes  # the corpus exercises both


def test_scanner_guard_catches_the_quiet_partial_scan(corpus: list[Damaged]) -> None:
    """The review's case: a rowid out of order makes DuckDB's parallel scan skip rows; the guard
    compares with SQLite's own count and names the table instead of answering."""
    bumped = [d for d in corpus if d.kind == "rowid-order"]
    results = _library("census", [d.path for d in bumped], {"NSYSQ_PAGE_READER": "0"})
    guarded = [r for r in results if "rows where SQLite counts" in r.get("message", "")]
    assert guarded, results
    for result in guarded:
        _assert_damage_sentence(result["message"], Path(result["file"]), KERNEL)


def test_no_input_gets_a_traceback(corpus: list[Damaged], fixture_dir: Path, tmp_path: Path) -> None:
    """Every library entry point the commands use, over every fixture, real export and damaged
    file: an answer or an NsysqError with one sentence, never another exception."""
    files = sorted(fixture_dir.glob("*.sqlite")) + REAL_TRACES + [d.path for d in corpus]
    results = _library("sweep", files, {"NSYSQ_DAMAGE_PLOT_DIR": str(tmp_path)})
    assert len(results) == len(files)
    for result in results:
        for step, outcome in result["steps"].items():
            assert "traceback" not in outcome, f"{result['file']} {step}:\n{outcome['traceback']}"
            if "error" in outcome:
                assert "\n" not in outcome["message"].strip(), outcome


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nsysq", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "MPLBACKEND": "Agg", **(env or {})},
        timeout=300,
    )


def _commands(path: Path, png: Path) -> list[list[str]]:
    other = str(ROOT / "examples" / "bs1.sqlite")
    sql = f"SELECT count(*) FROM {KERNEL}"
    return [
        ["info", str(path)],
        ["census", str(path), "--format", "json"],
        ["lineup", str(path)],
        ["stakeout", str(path), "%", "--like", "-n", "5"],
        ["timeline", str(path), "--nvtx-lanes"],
        ["diff", other, str(path)],
        ["sql", str(path), sql],
        ["plot", "census", str(path), "-o", str(png)],
        ["nvtx", str(path)],
        ["graphs", str(path)],
        ["gaps", str(path)],
        ["overlap", str(path)],
        ["census", str(path), "--underfilled"],
        ["explain", "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN", "--trace", str(path)],
        ["export", str(path), "-o", str(png.with_suffix(".json"))],
        ["report", str(path), "-o", str(png.with_suffix(".html"))],
        ["fleet", str(path), other],
    ]


def test_cli_every_command_on_damaged_files_exits_cleanly(corpus: list[Damaged], tmp_path: Path) -> None:
    picked = {d.kind: d for d in reversed(corpus)}  # one damaged file of each kind
    directory = corpus[0].path.parent
    before = _snapshot(directory)
    for item in picked.values():
        for args in _commands(item.path, tmp_path / "out.png"):
            run = _cli(*args)
            assert "Traceback" not in run.stderr, (args, run.stderr)
            if run.returncode == 0:
                continue
            lines = run.stderr.strip().splitlines()
            if args[0] == "fleet":  # one line per failed trace, then the --fail-on line
                assert run.returncode == 3 and lines[-1] == "nsysq: exit code 3: --fail-on failed.", (
                    run.stderr
                )
                lines = [line.replace("nsysq: failed: ", "nsysq: error: ", 1) for line in lines[:-1]]
            assert len(lines) == 1, (args, run.stderr)
            if "is damaged" in lines[0]:
                _assert_damage_sentence(lines[0], item.path)
    assert _snapshot(directory) == before


def _keys_out_of_order(source: Path, out: Path) -> tuple[Path, int]:
    """A copy of ``source`` whose kernel table's root page has keys out of order (tests/corpus.py's
    ``interior-keys`` damage): every page still well formed, SQLite's full scan unchanged."""
    import random

    image = Pages(source.read_bytes())
    root = table_trees(source, image)[KERNEL_TABLE].interiors[0]
    damaged = bytearray(image.image)
    assert unorder_keys(image, damaged, random.Random(23), root) is not None
    out.write_bytes(bytes(damaged))
    return out, root


@pytest.mark.parametrize("source", ["synth", "real"])
def test_interior_keys_out_of_order_fail_loud_on_both_paths(source: str, tmp_path: Path) -> None:
    """The issue's case: a kernel table whose root page's keys are out of order. info and census,
    through the page decoder and through the scanner, all name the table and the page (exit 2):
    never an answer, never two answers that disagree."""
    if source == "synth":
        from nsysq.synth import big

        original = tmp_path / "synth.sqlite"
        big(str(original), 5000)
    else:
        real = REAL_DIR / "nsys2025.5_windows_gemm_RTX5070Ti.sqlite"
        if not real.is_file():
            pytest.skip(f"no {real.name} in {REAL_DIR}")
        original = tmp_path / real.name  # a copy: nothing is written beside the shared file
        original.write_bytes(real.read_bytes())
    path, root = _keys_out_of_order(original, tmp_path / "damaged.sqlite")
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        assert "out of order" in con.execute("PRAGMA integrity_check").fetchone()[0]
    for reader in ("1", "0"):
        for command in ("info", "census"):
            run = _cli(command, str(path), "--no-cache", env={"NSYSQ_PAGE_READER": reader})
            assert (run.returncode, run.stdout) == (2, ""), (command, reader, run.stderr)
            _assert_damage_sentence(run.stderr.strip(), path, KERNEL)
            assert f"(page {root}): interior key " in run.stderr, run.stderr


def test_cli_names_the_damage_the_scanner_would_hide(corpus: list[Damaged]) -> None:
    """The issue's example through the CLI: scanner only, a rowid out of order, exit non-zero."""
    bumped = [d for d in corpus if d.kind == "rowid-order"]
    failures = [(d, _cli("census", str(d.path), env={"NSYSQ_PAGE_READER": "0"})) for d in bumped]
    damaged = [(d, run) for d, run in failures if run.returncode != 0]
    assert damaged
    for item, run in damaged:
        assert run.stdout == ""
        _assert_damage_sentence(run.stderr.strip(), item.path, KERNEL)


# -- the subprocess side: python -m tests.test_damage census|sweep FILE... -------------------------
def _census(path: Path) -> dict[str, Any]:
    import nsysq
    from nsysq.analyses.census import census

    with nsysq.open(path, cache=False) as trace:
        table = census(trace.session)
    per_name: dict[str, list[int]] = {}
    for row in table.records():
        instances, total = per_name.setdefault(row["name"], [0, 0])
        per_name[row["name"]] = [instances + row["instances"], total + (row["total_ns"] or 0)]
    footer = table.footer or {}
    return {"per_name": per_name, "instances": footer["total_kernels"], "total_ns": footer["total_kernel_ns"]}


def _outcome(step: Any) -> dict[str, Any]:
    from nsysq.base.errors import NsysqError

    try:
        return {"answer": step()}
    except NsysqError as exc:
        return {"error": type(exc).__name__, "message": str(exc)}
    except Exception:  # noqa: BLE001 - what the test looks for
        return {"traceback": traceback.format_exc()}


def _sweep(path: Path) -> dict[str, Any]:
    import nsysq
    from nsysq.analyses.census import census
    from nsysq.analyses.info import info
    from nsysq.analyses.lineup import lineup
    from nsysq.analyses.stakeout import stakeout
    from nsysq.analyses.timeline import timeline

    steps: dict[str, Any] = {}
    opened = _outcome(lambda: nsysq.open(path, cache=False))
    steps["open"] = {k: v for k, v in opened.items() if k != "answer"}
    face = opened.get("answer")
    trace = face.session if face is not None else None
    if face is not None and trace is not None:
        with face:
            steps["info"] = _outcome(lambda: bool(info(trace)))
            steps["census"] = _outcome(lambda: len(census(trace).rows))
            steps["lineup"] = _outcome(lambda: len(lineup(trace).rows))
            steps["stakeout"] = _outcome(lambda: len(stakeout(trace, "%", like=True, limit=5).rows))
            steps["timeline"] = _outcome(lambda: len(timeline(trace, nvtx_lanes=True).rows))
            steps["sql"] = _outcome(lambda: len(trace.sql_table(f"SELECT count(*) FROM {KERNEL}").rows))
            steps["plot"] = _outcome(lambda: _plot(face))
            _sweep_later_analyses(trace, steps)
    steps["diff"] = _outcome(lambda: bool(nsysq.diff(ROOT / "examples" / "bs1.sqlite", path)))
    return {"file": str(path), "steps": steps}


def _sweep_later_analyses(trace: Any, steps: dict[str, Any]) -> None:
    """The analyses added after the first commands: NVTX, graphs, gaps, overlap, under-filled
    launches, explain with a trace, and the Chrome-trace export's rows."""
    from nsysq.analyses.census import underfilled
    from nsysq.analyses.explain import explain
    from nsysq.analyses.graphs import graphs
    from nsysq.analyses.nvtx import nvtx
    from nsysq.gputime.gaps import gaps
    from nsysq.gputime.overlap import overlap
    from nsysq.output.chrome_trace import collect

    steps["nvtx"] = _outcome(lambda: len(nvtx(trace).rows))
    steps["graphs"] = _outcome(lambda: len(graphs(trace).rows))
    steps["gaps"] = _outcome(lambda: bool(gaps(trace)))
    steps["overlap"] = _outcome(lambda: bool(overlap(trace)))
    steps["underfilled"] = _outcome(lambda: len(underfilled(trace).rows))
    steps["explain"] = _outcome(lambda: bool(explain("nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN", trace)))
    steps["export"] = _outcome(lambda: bool(collect(trace)))


def _plot(trace: Any) -> bool:
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    from nsysq.plot import plot_census

    figure = plot_census(trace.census()).get_figure(root=True)
    assert isinstance(figure, Figure)
    figure.savefig(Path(os.environ["NSYSQ_DAMAGE_PLOT_DIR"]) / "census.png")
    plt.close("all")
    return True


def main(argv: list[str]) -> int:
    job, files = argv[0], [Path(f) for f in argv[1:]]
    for path in files:
        if job == "census":
            outcome = _outcome(lambda: _census(path))  # noqa: B023 - called at once
            result = {"file": str(path), **outcome.pop("answer", {}), **outcome}
        else:
            result = _sweep(path)
        print(json.dumps(result, default=str), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
