"""The page decoder and the NVTX sweep under AddressSanitizer and UndefinedBehaviorSanitizer.

tests/native/fuzz_pages.c is compiled with the decoder (nsysq/export/_pages.c) using
``-fsanitize=address,undefined -fno-sanitize-recover=all`` and the wheel build's warnings-as-errors
flags, then fed every page of a corruption corpus (tests/corpus.py over the bundled examples, files
holding every integer serial type, overflow records, text/real values and odd page sizes, and the
real exports when present) and thousands of deterministic random mutations of their leaf pages. Any
sanitizer report makes it exit non-zero. tests/native/fuzz_sweep.c feeds nsysq/analyses/_sweep.c
random stacks, ranges and ops, bad ones among them. Skipped, with the reason, where no C compiler
with sanitizer runtimes exists.
"""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
from pathlib import Path

import pytest

import hatch_build
from tests.conftest import REAL_TRACES
from tests.corpus import damaged_copies

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "tests" / "native" / "fuzz_pages.c"
DECODER = ROOT / "nsysq" / "export" / "_pages.c"
SWEEP_HARNESS = ROOT / "tests" / "native" / "fuzz_sweep.c"  # and the NVTX sums (nsysq/analyses/_sweep.c)
SWEEP = ROOT / "nsysq" / "analyses" / "_sweep.c"
SANITIZE = [
    "-O1",
    "-g",
    "-fno-omit-frame-pointer",
    "-fsanitize=address,undefined",
    "-fno-sanitize-recover=all",
]
ENV = {"ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0", "UBSAN_OPTIONS": "print_stacktrace=1"}
MUTATIONS = 100_000


def _build(out: Path, source: Path, harness: Path = HARNESS) -> subprocess.CompletedProcess[str]:
    cmd = [
        *hatch_build.compiler(), *SANITIZE, *hatch_build.WARNINGS, f"-I{source.parent}",
        "-o", str(out), str(harness), str(source),
    ]  # fmt: skip
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as exc:
        pytest.skip(f"no C compiler ({cmd[0]}: {exc.strerror}): sanitizer run skipped")


def _sanitizers_available(tmp: Path) -> str | None:
    """None, or why a sanitized program cannot be built and run here."""
    probe = tmp / "probe.c"
    probe.write_text("int main(void) { return 0; }\n")
    cmd = [*hatch_build.compiler(), *SANITIZE, "-o", str(tmp / "probe"), str(probe)]
    try:
        built = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as exc:
        return f"no C compiler ({cmd[0]}: {exc.strerror})"
    if built.returncode != 0:
        return f"{cmd[0]} cannot link ASan/UBSan runtimes: {built.stderr.strip()[:200]}"
    ran = subprocess.run([str(tmp / "probe")], capture_output=True, text=True, env=_env(), check=False)
    if ran.returncode != 0:
        return f"a sanitized program does not run here: {ran.stderr.strip()[:200]}"
    return None


def _env() -> dict[str, str]:
    return {**os.environ, **ENV}


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("sanitizers")
    why = _sanitizers_available(tmp)
    if why is not None:
        pytest.skip(f"{why}: sanitizer run skipped")
    exe = tmp / "fuzz_pages"
    built = _build(exe, DECODER)
    assert built.returncode == 0, built.stderr[-3000:]  # warnings are errors here too
    return exe


def _edge_files(directory: Path) -> list[Path]:
    """Valid files whose leaf pages hold what nsys exports rarely do: every integer serial type,
    NULLs, records spilling into overflow pages, text and real values, 512 and 65536-byte pages.
    (Pages with a reserved tail come from the mutations, which give some buffers one.)"""
    files = []
    edges = [None, 0, 1, -1, 127, -128, 32768, -8388608, 2**31, -(2**47), 2**63 - 1, -(2**63), 1.5, "txt"]
    rows = [
        (edges[i % len(edges)], i - 5000, i * 7919, b"x" * (i % 900) * (i % 37 == 0)) for i in range(6000)
    ]
    for page_size in (512, 65536):
        path = directory / f"edges_{page_size}.sqlite"
        con = sqlite3.connect(path)
        con.execute(f"PRAGMA page_size = {page_size}")
        con.execute("CREATE TABLE t (a, b INTEGER, c INTEGER NOT NULL, d BLOB)")
        con.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", rows)
        con.execute("DELETE FROM t WHERE b % 13 = 0")  # freeblocks and rowid gaps
        con.commit()
        con.close()
        files.append(path)
    return files


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = tmp_path_factory.mktemp("corpus")
    files = [ROOT / "examples" / "bs1.sqlite", ROOT / "examples" / "bs16.sqlite", *_edge_files(out)]
    files += [d.path for d in damaged_copies(ROOT / "examples" / "bs16.sqlite", out / "bs16", per_kind=6)]
    return files + REAL_TRACES  # read in place (the harness opens them read-only)


def _run(exe: Path, files: list[Path], mutations: int) -> subprocess.CompletedProcess[str]:
    args = [str(exe), "-m", str(mutations), "-s", "20261130", *map(str, files)]
    return subprocess.run(args, capture_output=True, text=True, env=_env(), timeout=120, check=False)


def test_corpus_and_mutations_run_clean_under_sanitizers(harness: Path, corpus: list[Path]) -> None:
    done = _run(harness, corpus, MUTATIONS)
    assert done.returncode == 0, done.stderr[-4000:]
    counts = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", done.stdout)}
    # every outcome occurs, so the run went through decoding, damage and refusal paths alike
    kinds = ("decoded", "damaged", "unsupported", "narrow", "text_valid", "text_invalid")
    assert all(counts[k] > 0 for k in kinds), done.stdout


def test_the_harness_catches_an_out_of_bounds_read(harness: Path, corpus: list[Path], tmp_path: Path) -> None:
    """A decoder with one bounds check loosened (a record may run 64 bytes past its page, in both
    the decoder and the text check) must make
    the sanitized run fail: the harness can see what it is there to see."""
    check = "return payload > (uint64_t)(pend - rec) ? NSYSQ_ERR_RECORD : 0;"
    loose = check.replace("(pend - rec)", "(pend - rec) + 64")
    done = _run(_mutant(tmp_path, DECODER, check, loose, HARNESS), corpus[:2], 5_000)
    assert done.returncode != 0
    assert "AddressSanitizer" in done.stderr


def _mutant(tmp_path: Path, source: Path, check: str, loosened: str, harness: Path) -> Path:
    """``harness`` built with a copy of ``source`` whose one ``check`` reads ``loosened``."""
    text = source.read_text()
    assert text.count(check) == 1
    mutant = tmp_path / source.name
    mutant.write_text(text.replace(check, loosened))
    header = source.with_suffix(".h")
    (tmp_path / header.name).write_text(header.read_text())
    built = _build(tmp_path / "fuzz_mutant", mutant, harness)
    assert built.returncode == 0, built.stderr[-3000:]
    return tmp_path / "fuzz_mutant"


def _run_sweep(exe: Path, rounds: int) -> subprocess.CompletedProcess[str]:
    args = [str(exe), str(rounds), "20261207"]
    return subprocess.run(args, capture_output=True, text=True, env=_env(), timeout=120, check=False)


def test_nvtx_sums_run_clean_under_sanitizers(tmp_path: Path) -> None:
    """nsysq_nvtx_sums, nsysq_nvtx_picked, nsysq_nvtx_stacks and the launch join (nsysq_call_keys,
    nsysq_launch_ops) on 200,000 random inputs each (bad indexes, cycles, bad kinds, disorder,
    unnested and reversed ranges, keys that do not fit, bad tables, values near the int64 limits,
    each array in a block of its own length): no sanitizer report, every outcome occurs."""
    why = _sanitizers_available(tmp_path)
    if why is not None:
        pytest.skip(f"{why}: sanitizer run skipped")
    built = _build(tmp_path / "fuzz_sweep", SWEEP, SWEEP_HARNESS)
    assert built.returncode == 0, built.stderr[-3000:]  # warnings are errors here too
    done = _run_sweep(tmp_path / "fuzz_sweep", 200_000)
    assert done.returncode == 0, done.stderr[-4000:]
    counts = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", done.stdout)}
    outcomes = (
        "summed",
        "pairs",
        "bad_index",
        "cycle",
        "overflow",
        "bad_kind",
        "order",
        "stacked",
        "unnested",
    )
    outcomes += ("refused", "picked", "matched", "unkeyed", "join_refused")
    assert all(counts[k] > 0 for k in outcomes), done.stdout


def test_the_sums_harness_catches_an_out_of_bounds_read(tmp_path: Path) -> None:
    """A pass with its range bound loosened (an index one past the ranges is read) must make the
    sanitized run fail: the harness can see what it is there to see."""
    why = _sanitizers_available(tmp_path)
    if why is not None:
        pytest.skip(f"{why}: sanitizer run skipped")
    check = "if (r >= n_ranges) return NSYSQ_SWEEP_BAD_INDEX - 1;"
    loose = check.replace("r >= n_ranges", "r > n_ranges")
    done = _run_sweep(_mutant(tmp_path, SWEEP, check, loose, SWEEP_HARNESS), 50_000)
    assert done.returncode != 0
    assert "AddressSanitizer" in done.stderr
