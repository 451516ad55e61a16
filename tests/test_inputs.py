"""Bad input: one clear sentence on stderr, a non-zero exit code, no traceback, the input untouched."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import sha256


def nsysq(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nsysq", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def assert_clean_failure(proc: subprocess.CompletedProcess[str], code: int, *phrases: str) -> None:
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("nsysq: error: ")
    assert lines[0].endswith((".", "?")) or "nsys export" in lines[0]
    for phrase in phrases:
        assert phrase in lines[0], (phrase, lines[0])


@pytest.fixture(autouse=True)
def _no_nsys(monkeypatch: pytest.MonkeyPatch) -> None:
    """No nsys anywhere (tests/test_nsys_rep.py tests the .nsys-rep with a stand-in nsys): PATH
    without it, no install folders searched."""
    monkeypatch.delenv("NSYSQ_NSYS", raising=False)
    monkeypatch.setenv("NSYSQ_NSYS_DIRS", "")
    folders = os.environ.get("PATH", "").split(os.pathsep)
    monkeypatch.setenv("PATH", os.pathsep.join(d for d in folders if d and not (Path(d) / "nsys").exists()))


def _make_bad_inputs(directory: Path, fixture_dir: Path) -> dict[str, tuple[Path, int, tuple[str, ...]]]:
    good = fixture_dir / "v2024_6.sqlite"
    empty = directory / "empty.sqlite"
    empty.write_bytes(b"")
    text = directory / "notes.sqlite"
    text.write_text("kernel,ms\nfoo,1\n")
    rep = directory / "profile.nsys-rep"
    rep.write_bytes(b"\x00NSYS-REP-FAKE" * 100)
    truncated = directory / "truncated.sqlite"
    data = good.read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    corrupt = directory / "corrupt.sqlite"
    corrupt.write_bytes(data[:100] + b"\xde\xad\xbe\xef" * ((len(data) - 100) // 4))
    sub = directory / "adir"
    sub.mkdir()
    return {
        "missing": (directory / "nope.sqlite", 2, ("no such file",)),
        "directory": (sub, 2, ("is a directory",)),
        "empty": (empty, 2, ("is empty",)),
        "not sqlite": (text, 2, ("not a SQLite file",)),
        "nsys-rep": (
            rep,
            2,
            ("nsys export --type sqlite --output profile.sqlite profile.nsys-rep", "--nsys PATH"),
        ),
        "truncated": (truncated, 2, ("truncated",)),
        "corrupt": (corrupt, 2, ("damaged",)),
        "not nsys": (fixture_dir / "not_nsys.sqlite", 2, ("not an nsys export", "StringIds")),
    }


@pytest.mark.parametrize("command", ["info", "census", "lineup", "timeline"])
def test_bad_inputs_fail_cleanly(command: str, tmp_path: Path, fixture_dir: Path) -> None:
    cases = _make_bad_inputs(tmp_path, fixture_dir)
    before = {p.name: (sha256(p) if p.is_file() else None) for p in tmp_path.iterdir()}
    for _label, (path, code, phrases) in cases.items():
        assert_clean_failure(nsysq(command, path), code, *phrases)
    after = {p.name: (sha256(p) if p.is_file() else None) for p in tmp_path.iterdir()}
    assert after == before, "an input was changed or a file was written beside it"


def test_no_kernels_explains_how_to_capture(fixture_dir: Path) -> None:
    path = fixture_dir / "no_kernels.sqlite"
    for command in ("census", "lineup"):
        assert_clean_failure(nsysq(command, path), 5, "recorded no CUDA kernels", "--trace=cuda")
    assert_clean_failure(nsysq("stakeout", path, "x"), 5, "recorded no CUDA kernels")
    info = nsysq("info", path, "-f", "json")
    assert info.returncode == 0, info.stderr
    assert "no CUDA kernels were recorded" in info.stderr


def test_unknown_kernel_suggests_names(fixture_dir: Path) -> None:
    proc = nsysq("stakeout", fixture_dir / "v2024_6.sqlite", "ampere_sgemm")
    assert_clean_failure(proc, 2, "no kernel is named 'ampere_sgemm'", "did you mean")


def test_bad_options_fail_with_usage(fixture_dir: Path) -> None:
    path = fixture_dir / "v2024_6.sqlite"
    proc = nsysq("census", path, "--format", "xml")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    proc = nsysq("timeline", path, "--from", "5", "--to", "1")
    assert_clean_failure(proc, 2, "must be after --from")
    proc = nsysq("sql", path, "DELETE FROM StringIds")
    assert_clean_failure(proc, 2, "read-only SELECT")


def test_read_only_directory_and_file_stay_byte_identical(tmp_path: Path, fixture_dir: Path) -> None:
    """Commands succeed on a read-only file in a read-only directory, and write nothing there."""
    directory = tmp_path / "ro"
    directory.mkdir()
    path = directory / "trace.sqlite"
    shutil.copy(fixture_dir / "edge_cases.sqlite", path)
    digest = sha256(path)
    path.chmod(0o444)
    directory.chmod(0o555)
    try:
        for args in (
            ["info"],
            ["census"],
            ["lineup"],
            ["timeline", "--nvtx-lanes"],
            ["sql", "SELECT count(*) FROM StringIds"],
        ):
            proc = nsysq(args[0], path, *args[1:])
            assert proc.returncode == 0, (args, proc.stderr)
        assert sha256(path) == digest
        assert sorted(p.name for p in directory.iterdir()) == ["trace.sqlite"]
    finally:
        directory.chmod(0o755)
        path.chmod(0o644)
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()


def test_missing_extension_names_the_fix(monkeypatch: pytest.MonkeyPatch, fixture_dir: Path) -> None:
    from nsysq.base.errors import ExtensionUnavailableError
    from nsysq.export import engine
    from nsysq.session import Session

    monkeypatch.setattr(engine, "extension_path", lambda: Path("/nonexistent/sqlite_scanner.ext"))
    with pytest.raises(ExtensionUnavailableError, match="pip install 'duckdb-extension-sqlite-scanner=="):
        Session(fixture_dir / "v2024_6.sqlite")
