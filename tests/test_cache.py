"""The columnar cache: same answers as the file, never stale, atomic, bounded, and out of the way.

Every test runs with its own NSYSQ_CACHE_DIR (autouse fixture in conftest.py).
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from nsysq.analyses.census import census
from nsysq.analyses.info import info
from nsysq.analyses.lineup import lineup
from nsysq.analyses.nvtx import nvtx
from nsysq.analyses.stakeout import stakeout
from nsysq.analyses.timeline import timeline
from nsysq.base.errors import NoDataError, UsageError
from nsysq.base.table import Table
from nsysq.export import cache, pages, schema
from nsysq.gputime.gaps import gaps
from nsysq.gputime.overlap import overlap
from nsysq.iterations.table import iters
from nsysq.session import Session
from tests.conftest import REAL_DIR, sha256

REAL = sorted(REAL_DIR.glob("*.sqlite")) if REAL_DIR.is_dir() else []


@pytest.fixture(autouse=True)
def _no_background(monkeypatch: pytest.MonkeyPatch) -> None:
    """No detached builders outliving a test; tests build explicitly."""
    monkeypatch.setenv("NSYSQ_CACHE_BACKGROUND", "0")


def _answers(trace: Session) -> dict[str, Any]:
    """Everything the commands answer, as plain rows."""
    out: dict[str, Any] = {"cache": trace.cache_status()}
    data = info(trace)
    out["info"] = {
        k: data[k]
        for k in (
            "counts",
            "kernel_ns",
            "t0_ns",
            "t_end_ns",
            "span_ns",
            "unresolved_kernel_names",
            "zero_length_kernels",
        )
    }
    try:
        out["census"] = census(trace).rows
        out["census_top3"] = census(trace, limit=3).rows
        out["census_demangled"] = census(trace, names="demangled").rows
        out["lineup"] = lineup(trace).rows
        names = [r["name"] for r in census(trace).records()]
        out["stakeout"] = [stakeout(trace, n).rows for n in names[:2]]
    except NoDataError as exc:
        out["no_kernels"] = str(exc)
    out.update(_array_answers(trace))
    span = data["span_ns"] or 0
    out["timeline"] = timeline(trace, limit=0).rows
    out["timeline_window"] = timeline(
        trace, start_ms=span / 4e6, end_ms=span / 2e6, nvtx_lanes=True, limit=0
    ).rows
    return out


def _array_answers(trace: Session) -> dict[str, Any]:
    """What the commands that read the event columns as arrays answer (on the copy too, where the
    kernels come back in another order): NVTX, iterations, gaps, overlap."""
    asked = {
        "nvtx": lambda: [nvtx(trace, limit=0)],
        "nvtx_innermost": lambda: [nvtx(trace, innermost=True, limit=0)],
        "iters": lambda: [iters(trace)],
        "gaps": lambda: list(gaps(trace).tables().values()),
        "overlap": lambda: list(overlap(trace).tables().values()),
    }
    out: dict[str, Any] = {}
    for key, ask in asked.items():
        try:
            tables: list[Table] = ask()
            out[key] = [(t.rows, t.footer) for t in tables]
        except (NoDataError, UsageError) as exc:
            out[key] = str(exc)
    return out


def _norm(value: Any) -> Any:
    """Floats to 10 significant digits: parallel sums/stddevs differ in the last bits run to run."""
    if isinstance(value, float):
        return float(f"{value:.10g}")
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_norm(v) for v in value]
    return value


def _compare(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Direct (kernel rows decoded from pages, and through SQLite), direct with answers kept,
    cached copy, answers recalled: identical answers."""
    with Session(path, cache=False) as t:
        direct = _answers(t)
        if pages.available() and t.schema.has(schema.KERNEL):
            assert t.kernel_reader == "pages"
    monkeypatch.setenv("NSYSQ_PAGE_READER", "0")
    with Session(path, cache=False) as t:
        assert t.kernel_reader.startswith("sqlite")
        through_sqlite = _answers(t)
    monkeypatch.delenv("NSYSQ_PAGE_READER")
    monkeypatch.setenv("NSYSQ_CACHE_MIN_BYTES", "0")
    with Session(path, cache=True) as t:  # no copy yet: read directly, answers kept
        assert t._cache.mode == "direct", t.cache_status()
        kept = _answers(t)
    with Session(path, cache=True) as t:  # same questions again: recalled from the kept answers
        assert t._cache.mode == "direct"
        recalled = _answers(t)
    cache.clear()
    with Session(path, cache="build") as t:
        assert t._cache.mode == "cached", t.cache_status()
        built = _answers(t)
    with Session(path) as t:  # a later open reads the complete copy (and the kept answers)
        assert t._cache.mode == "cached"
        again = _answers(t)
    for got in (direct, through_sqlite, kept, recalled, built, again):
        got.pop("cache")
    for got in (through_sqlite, kept, recalled, built, again):
        assert _norm(got) == _norm(direct)


def test_fixture_answers_identical(
    fixture_trace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / fixture_trace.name
    shutil.copy(fixture_trace, path)
    before = sha256(path)
    _compare(path, monkeypatch)
    assert sha256(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


@pytest.mark.skipif(not REAL, reason=f"no real exports in {REAL_DIR}")
@pytest.mark.parametrize("path", REAL, ids=[p.stem for p in REAL])
def test_real_answers_identical(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = sha256(path)
    listing = sorted(p.name for p in path.parent.iterdir())
    _compare(path, monkeypatch)
    assert sha256(path) == before
    assert sorted(p.name for p in path.parent.iterdir()) == listing


def _copy(fixture_dir: Path, tmp_path: Path, name: str = "v2024_6") -> Path:
    path = tmp_path / "trace" / f"{name}.sqlite"
    path.parent.mkdir()
    shutil.copy(fixture_dir / f"{name}.sqlite", path)
    return path


def _cache_files() -> list[str]:
    directory = cache.cache_dir()
    return sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []


def test_small_traces_read_directly(
    fixture_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NSYSQ_CACHE_MIN_BYTES", raising=False)
    path = _copy(fixture_dir, tmp_path)
    with Session(path) as t:
        assert t._cache.mode == "small"
        census(t)
    assert not any(f.endswith(".duckdb") for f in _cache_files())


def test_modified_trace_never_answered_from_stale_cache(
    fixture_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _copy(fixture_dir, tmp_path)
    with Session(path, cache="build") as t:
        before = census(t).records()
    st = path.stat()
    con = sqlite3.connect(path)  # same size, new content: every kernel 1000 ns longer
    con.execute('UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = "end" + 1000')
    con.commit()
    con.close()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # even with the old mtime restored
    assert path.stat().st_size == st.st_size
    with Session(path, cache=False) as t:
        truth = census(t).records()
    assert truth != before
    for mode in (True, "build"):
        with Session(path, cache=mode) as t:
            assert _norm(census(t).records()) == _norm(truth)
    monkeypatch.setenv("NSYSQ_CACHE_MIN_BYTES", "0")
    with Session(path) as t:
        assert _norm(census(t).records()) == _norm(truth)


def test_replaced_trace_gets_new_key(fixture_dir: Path, tmp_path: Path) -> None:
    path = _copy(fixture_dir, tmp_path)
    key = cache.identity(path).key
    other = fixture_dir / "v2025_5.sqlite"
    shutil.copy(other, path.with_suffix(".tmp"))
    os.replace(path.with_suffix(".tmp"), path)
    assert cache.identity(path).key != key


def _builder(path: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "nsysq", "cache", "build", str(path)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_concurrent_builders_leave_one_valid_cache(fixture_dir: Path, tmp_path: Path) -> None:
    path = _copy(fixture_dir, tmp_path, "edge_cases")
    env = dict(os.environ)
    procs = [_builder(path, env) for _ in range(3)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    key = cache.identity(path).key
    assert cache.valid(key)
    files = _cache_files()
    assert [f for f in files if f.endswith(".duckdb")] == [f"{key}.duckdb"]
    assert not [f for f in files if ".tmp" in f or f.endswith(".wal")]
    with Session(path) as t, Session(path, cache=False) as d:
        assert t._cache.mode == "cached"
        assert _norm(census(t).rows) == _norm(census(d).rows)


@pytest.mark.slow
def test_killed_builder_leaves_nothing_valid(tmp_path: Path) -> None:
    from nsysq.synth import big

    path = big(tmp_path / "big.sqlite", 400_000)
    env = dict(os.environ)
    proc = _builder(path, env)
    key = cache.identity(path).key
    deadline = time.monotonic() + 60
    while not list(cache.cache_dir().glob(f"{key}.duckdb.tmp-*")):
        assert proc.poll() is None, "builder finished before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.01)
    time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not cache.entry_file(key).exists()
    assert not cache.valid(key)
    assert list(cache.cache_dir().glob(f"{key}.duckdb.tmp-*"))  # debris, never read
    with Session(path) as t:
        assert t._cache.mode != "cached"  # nothing valid to read
    with Session(path, cache="build") as t:  # the next build replaces it
        assert t._cache.mode == "cached"
        cached = census(t).rows
    with Session(path, cache=False) as d:
        assert _norm(census(d).rows) == _norm(cached)
    assert not list(cache.cache_dir().glob(f"{key}.*tmp-*"))


def test_corrupt_cache_file_is_ignored(fixture_dir: Path, tmp_path: Path) -> None:
    path = _copy(fixture_dir, tmp_path)
    with Session(path, cache="build") as t:
        expected = census(t).rows
    file = cache.entry_file(cache.identity(path).key)
    file.write_bytes(b"not a duckdb file" * 100)
    with Session(path) as t:
        assert t._cache.mode != "cached"
        assert _norm(census(t).rows) == _norm(expected)
    cache.remove(cache.identity(path).key)
    with Session(path, cache="build") as t:
        assert t._cache.mode == "cached"
        assert _norm(census(t).rows) == _norm(expected)


def test_eviction_keeps_total_under_limit(
    fixture_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _copy(fixture_dir, tmp_path, "v2024_6")
    second = tmp_path / "trace" / "v2025_5.sqlite"
    shutil.copy(fixture_dir / "v2025_5.sqlite", second)
    with Session(first, cache="build"):
        pass
    size = cache.entries()[0].size_bytes
    monkeypatch.setenv("NSYSQ_CACHE_MAX_BYTES", str(size + size // 2))
    time.sleep(0.05)
    with Session(second, cache="build"):
        pass
    remaining = cache.entries()
    assert [e.trace for e in remaining] == [str(second)]


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from nsysq.cli import main; main()", *args],
        capture_output=True,
        text=True,
        env=env or dict(os.environ),
        timeout=120,
    )


def test_cli_list_and_clear(fixture_dir: Path, tmp_path: Path) -> None:
    import json

    path = _copy(fixture_dir, tmp_path)
    env = dict(os.environ, NSYSQ_CACHE_MIN_BYTES="0")
    assert _cli("census", str(path), env=env).returncode == 0
    assert _cli("cache", "build", str(path), env=env).returncode == 0
    listed = json.loads(_cli("cache", "list", "--format", "json", env=env).stdout)
    assert [r["trace"] for r in listed["rows"]] == [str(path)]
    assert listed["rows"][0]["answers"] >= 1  # the census run before the build was kept
    assert listed["rows"][0]["size_bytes"] > 0
    shown = _cli("info", str(path), "--format", "json", env=env)
    assert "cached copy" in json.loads(shown.stdout)["cache"]
    cleared = _cli("cache", "clear", env=env)
    assert cleared.returncode == 0
    assert "removed 1 cached trace" in cleared.stderr
    assert json.loads(_cli("cache", "list", "--format", "json", env=env).stdout)["rows"] == []
    assert not [f for f in _cache_files() if f.endswith((".duckdb", ".json", ".results"))]
    shown = _cli("info", str(path), "--format", "json", "--no-cache", env=env)
    assert "disabled" in json.loads(shown.stdout)["cache"]


def test_no_cache_writes_nothing(fixture_dir: Path, tmp_path: Path) -> None:
    path = _copy(fixture_dir, tmp_path)
    env = dict(os.environ, NSYSQ_CACHE_MIN_BYTES="0")
    for cmd in (["census"], ["lineup"], ["info"], ["timeline"]):
        result = _cli(*cmd, str(path), "--no-cache", env=env)
        assert result.returncode == 0, result.stderr
    assert _cache_files() == []
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_cli_cache_never_beside_trace(fixture_dir: Path, tmp_path: Path) -> None:
    path = _copy(fixture_dir, tmp_path)
    before = sha256(path)
    env = dict(os.environ, NSYSQ_CACHE_MIN_BYTES="0")
    for cmd in (["census"], ["lineup"], ["info"], ["timeline"], ["census"]):
        result = _cli(*cmd, str(path), env=env)
        assert result.returncode == 0, result.stderr
        assert "caching" not in result.stdout
    assert sha256(path) == before
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]
    assert any(f.endswith(".results") for f in _cache_files())  # answers kept, away from the trace


def test_recalled_answers_depend_on_rules_and_params(
    fixture_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kept answer is only reused for the same SQL, parameters and lineup rules."""
    monkeypatch.setenv("NSYSQ_CACHE_MIN_BYTES", "0")
    path = _copy(fixture_dir, tmp_path, "edge_cases")
    rules = tmp_path / "rules.toml"
    rules.write_text('version = 1\n[[rule]]\ncategory = "Everything"\nfield = "short"\nlike = "%"\n')
    with Session(path) as t:
        packaged = lineup(t).rows
        top2 = census(t, limit=2).rows
    with Session(path) as t:
        custom = lineup(t, rules=rules).rows
        assert [r[0] for r in custom] == ["Everything"]
        assert lineup(t).rows == packaged
        assert census(t, limit=3).rows != top2
        assert census(t, limit=2).rows == top2


def test_cache_dir_default_locations(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("NSYSQ_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "nsysq"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == tmp_path / "home" / ".cache" / "nsysq"


def test_progress_bar_only_on_terminals(fixture_dir: Path, tmp_path: Path) -> None:
    path = _copy(fixture_dir, tmp_path)
    env = dict(os.environ, NSYSQ_CACHE_MIN_BYTES="0")
    result = _cli("cache", "build", str(path), env=env)
    assert result.returncode == 0
    assert "caching" not in result.stderr  # stderr is a pipe here: no bar
    assert result.stdout == ""


def test_first_read_starts_a_background_build_that_keeps_default_answers(
    fixture_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NSYSQ_CACHE_MIN_BYTES", "0")
    monkeypatch.setenv("NSYSQ_CACHE_BACKGROUND", "1")
    path = _copy(fixture_dir, tmp_path, "edge_cases")
    with Session(path) as t:
        assert t._cache.mode == "direct"
        direct = census(t, limit=20).rows
    key = cache.identity(path).key
    deadline = time.monotonic() + 120
    while not (cache.valid(key) and not cache.build_running(key)):
        assert time.monotonic() < deadline, "the background build did not finish"
        time.sleep(0.2)
    monkeypatch.setenv("NSYSQ_CACHE_BACKGROUND", "0")
    with Session(path) as t:
        assert t._cache.mode == "cached"
        assert _norm(census(t, limit=20).rows) == _norm(direct)
    (entry,) = cache.entries()
    assert entry.answers >= 3  # census short + demangled and lineup, answered by the builder
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_copy_stores_per_name_statistics(fixture_dir: Path, tmp_path: Path) -> None:
    """The copy keeps nsysq_kernel_name_stats (one row per short and per demangled name), so census
    on the copy reads it instead of aggregating every launch; counts match raw SQLite."""
    import duckdb

    path = _copy(fixture_dir, tmp_path, "edge_cases")
    with Session(path, cache="build") as t:
        assert t._cache.mode == "cached"
        file = t._cache.file
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    expect = {
        kind: dict(con.execute(f"SELECT {col}, count(*) FROM {schema.KERNEL} GROUP BY {col}").fetchall())
        for kind, col in (("short", "shortName"), ("demangled", "demangledName"))
    }
    con.close()
    copy = duckdb.connect(str(file), read_only=True)
    try:
        rows = copy.execute("SELECT names, name_id, instances FROM nsysq_kernel_name_stats").fetchall()
    finally:
        copy.close()
    got: dict[str, dict[Any, int]] = {"short": {}, "demangled": {}}
    for kind, name_id, instances in rows:
        got[kind][name_id] = instances
    assert got == expect
