"""The open path: one reader chosen at open, the scanner guard where (and only where) DuckDB's
sqlite scanner supplies rows, no cache for a damaged file, locking without fcntl, rules loaded once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from nsysq.analyses.census import census
from nsysq.base.errors import DamagedTraceError
from nsysq.export import cache, pages, schema
from nsysq.export.check import read_schema
from nsysq.session import Session
from nsysq.synth.ranks import collective_ranks
from tests import oracle
from tests.conftest import ROOT
from tests.corpus import Damaged, damaged_copies

BS16 = ROOT / "examples" / "bs16.sqlite"


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Damaged]]:
    out: dict[str, list[Damaged]] = {}
    for item in damaged_copies(BS16, tmp_path_factory.mktemp("damaged"), per_kind=6):
        out.setdefault(item.kind, []).append(item)
    return out


def _hidden_by_scanner(items: list[Damaged]) -> Path:
    """A rowid-order copy on which DuckDB's scanner, unguarded, returns fewer rows than SQLite."""
    from nsysq.export import engine

    for item in items:
        con = engine.connect()
        try:
            con.execute(f"ATTACH '{item.path}' AS src (TYPE sqlite, READ_ONLY)")
            row = con.execute(f"SELECT count(*) FROM src.{schema.KERNEL}").fetchone()
        finally:
            con.close()
        if row is not None and row[0] != oracle.kernel_count(item.path):
            return item.path
    pytest.fail("no copy in the corpus makes the scanner skip rows")


def test_guard_checks_scanned_tables_and_leaves_decoded_ones_alone() -> None:
    if not pages.available():
        pytest.skip("page decoder not built")
    with Session(BS16, cache=False) as t:
        census(t)
        guard = t._reader.guard
        assert guard is not None
        assert schema.STRINGS in guard.verified  # read through the scanner: checked
        assert schema.KERNEL not in guard.verified  # decoded from pages: the fast path, unchecked


def test_guard_checks_only_what_the_rules_pass_declares() -> None:
    """The category table is built by SQL the parser cannot read alone (it calls a macro): its
    header's tables are checked, not every table of the export (which cost the first diff 0.5 s
    at 5M kernels, reading NVTX_EVENTS it never uses)."""
    if not pages.available():
        pytest.skip("page decoder not built")
    with Session(BS16, cache=False) as t:
        t.use_rules()
        guard = t._reader.guard
        assert guard is not None
        assert schema.STRINGS in guard.verified
        assert oracle.count(BS16, "NVTX_EVENTS") > 0
        assert "NVTX_EVENTS" not in guard.verified


def test_guard_checks_every_table_in_scanner_only_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NSYSQ_PAGE_READER", "0")
    with Session(BS16, cache=False) as t:
        table = census(t)
        guard = t._reader.guard
        assert guard is not None
        assert {schema.KERNEL, schema.STRINGS} <= guard.verified
    assert table.footer is not None
    assert table.footer["total_kernels"] == oracle.kernel_count(BS16)


def test_guard_refuses_the_partial_scan(
    damaged: dict[str, list[Damaged]], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _hidden_by_scanner(damaged["rowid-order"])
    monkeypatch.setenv("NSYSQ_PAGE_READER", "0")
    with Session(path, cache=False) as t, pytest.raises(DamagedTraceError) as caught:
        census(t)
    assert caught.value.table == schema.KERNEL
    assert "rows where SQLite counts" in str(caught.value)


def test_ad_hoc_sql_checks_the_tables_it_names(
    damaged: dict[str, list[Damaged]], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _hidden_by_scanner(damaged["rowid-order"])
    monkeypatch.setenv("NSYSQ_PAGE_READER", "0")
    with Session(path, cache=False) as t:
        assert t.sql_table("SELECT count(*) FROM StringIds").rows[0][0] == oracle.count(path, "StringIds")
        with pytest.raises(DamagedTraceError):
            t.sql_table(f"SELECT count(*) FROM {schema.KERNEL}")


def test_invalid_utf8_is_damage_before_duckdb_reads_it(damaged: dict[str, list[Damaged]]) -> None:
    for item in damaged["string-utf8"]:
        with Session(item.path, cache=False) as t, pytest.raises(DamagedTraceError) as caught:
            t.sql_table("SELECT value FROM StringIds")
        assert caught.value.table == schema.STRINGS
        assert "not valid UTF-8" in str(caught.value)


@pytest.mark.parametrize("kind", ["rowid-order", "string-utf8"])
def test_damaged_file_never_gets_a_cached_copy(
    damaged: dict[str, list[Damaged]], kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NSYSQ_CACHE_MIN_BYTES", "0")
    path = _hidden_by_scanner(damaged[kind]) if kind == "rowid-order" else damaged[kind][0].path
    with pytest.raises(DamagedTraceError):
        cache.build(path, read_schema(path), progress=False)
    assert not list(cache.cache_dir().glob("*.duckdb*"))


def test_no_background_build_after_damage(
    damaged: dict[str, list[Damaged]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NSYSQ_CACHE_MIN_BYTES", "0")
    monkeypatch.setenv("NSYSQ_PAGE_READER", "0")
    spawned: list[Path] = []

    def spawn(path: Path) -> bool:
        spawned.append(path)
        return True

    monkeypatch.setattr(cache, "spawn_background", spawn)
    with Session(BS16) as t:  # control: an undamaged direct read starts the copy on close
        census(t)
    assert spawned == [BS16.resolve()]
    path = _hidden_by_scanner(damaged["rowid-order"])
    with Session(path) as t, pytest.raises(DamagedTraceError):
        census(t)
    assert spawned == [BS16.resolve()]


def test_use_rules_loads_the_packaged_rules_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from nsysq.catalog import rules

    loads: list[int] = []
    real = rules.load_lineup_rules

    def counted() -> list[rules.Rule]:
        loads.append(1)
        return real()

    monkeypatch.setattr(rules, "load_lineup_rules", counted)
    with Session(BS16, cache=False) as t:
        t.use_rules()
        first = t.run("lineup").rows
        t.use_rules()
        t.use_rules()
        assert t.run("lineup").rows == first
    assert len(loads) == 1


_NO_LOCKS = """
import json, runpy, sys
sys.modules["fcntl"] = None
sys.modules["msvcrt"] = None
import nsysq
from nsysq.export import cache
trace = nsysq.open(sys.argv[1])
out = {"locking": cache.locking_available(), "status": trace.session.cache_status(),
       "kernels": int(trace.session.kernel_totals["kernels"])}
trace.close()
print(json.dumps(out))
sys.argv = ["nsysq", "info", sys.argv[1], "--format", "json"]
runpy.run_module("nsysq", run_name="__main__")
"""


def test_reads_where_no_file_locking_exists(tmp_path: Path) -> None:
    """Where neither fcntl nor msvcrt imports (the cache needs a lock), nsysq reads directly,
    builds nothing and says so."""
    env = {**os.environ, "NSYSQ_CACHE_MIN_BYTES": "0", "NSYSQ_CACHE_DIR": str(tmp_path / "cache")}
    run = subprocess.run(
        [sys.executable, "-c", _NO_LOCKS, str(BS16)], capture_output=True, text=True, cwd=ROOT, env=env
    )
    assert run.returncode == 0, run.stderr
    first, rest = run.stdout.split("\n", 1)
    library = json.loads(first)
    assert library["locking"] is False
    assert "no file locking" in library["status"]
    assert library["kernels"] == oracle.kernel_count(BS16)
    assert "no file locking" in json.dumps(json.loads(rest))
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").glob("*.duckdb"))


_MSVCRT = """
import fcntl as _fcntl, json, subprocess, sys, types  # subprocess looks for msvcrt when imported
sys.modules["fcntl"] = None
fake = types.ModuleType("msvcrt")
fake.LK_NBLCK, fake.LK_UNLCK = 2, 0
def locking(fd, mode, nbytes):
    op = _fcntl.LOCK_UN if mode == fake.LK_UNLCK else _fcntl.LOCK_EX | _fcntl.LOCK_NB
    try:
        _fcntl.flock(fd, op)
    except BlockingIOError:
        raise PermissionError(13, "locked") from None
fake.locking = locking
sys.modules["msvcrt"] = fake
import nsysq
from nsysq.export import cache
from nsysq.export.check import read_schema
from nsysq.export.check import check_path
path = check_path(sys.argv[1])
key = cache.identity(path).key
cache.cache_dir().mkdir(parents=True)
with cache._locked(key, wait=False) as got:
    running = cache.build_running(key)  # another open file description: the lock is seen
built = cache.build(path, read_schema(path), progress=False)
with nsysq.open(sys.argv[1]) as trace:
    print(json.dumps({"got": got, "running": running, "built": built is not None,
                      "status": trace.session.cache_status(),
                      "kernels": int(trace.session.kernel_totals["kernels"])}))
"""


def test_cache_locks_with_msvcrt_where_fcntl_is_missing(tmp_path: Path) -> None:
    """The msvcrt branch (Windows), driven by a stand-in msvcrt whose locking() has its semantics."""
    env = {**os.environ, "NSYSQ_CACHE_MIN_BYTES": "0", "NSYSQ_CACHE_DIR": str(tmp_path / "cache")}
    run = subprocess.run(
        [sys.executable, "-c", _MSVCRT, str(BS16)], capture_output=True, text=True, cwd=ROOT, env=env
    )
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["got"] is True and result["running"] is True
    assert result["built"] is True
    assert result["status"].startswith("cached copy")
    assert result["kernels"] == oracle.kernel_count(BS16)


def test_pages_damaged_is_the_damage_message_never_a_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    """The decoder saying the pages contradict the format ends the read with the table and page;
    the scanner (which could answer with a quiet part of the rows) is not asked."""
    if not pages.available():
        pytest.skip("page decoder not built")

    def contradicted(path: Path, table: str, columns: list[str], **_: object) -> pages.Columns:
        raise pages.PagesDamaged(table, 42, "rowids out of order")

    monkeypatch.setattr(pages, "read_columns", contradicted)
    with Session(BS16, cache=False, prefetch=None) as t:
        with pytest.raises(DamagedTraceError) as caught:
            census(t)
        assert t.kernel_reader == "pages"  # not fallen back to the scanner
    assert (caught.value.table, caught.value.page) == (schema.KERNEL, 42)
    assert str(caught.value).startswith(f"{BS16.resolve()} is damaged in {schema.KERNEL} (page 42): rowids")


# -- the environment is written, and modules imported, by the main thread only ------------------------
# glibc's getenv crashes when another thread changes the environment under it: numpy's first import
# (putenv + unsetenv of OPENBLAS_MAIN_FREE) in the page-decoding thread while DuckDB read its
# environment on the main thread ended `nsysq export` with SIGSEGV. And Python 3.11's imports are
# not safe in two threads at once: the decoding thread importing numpy while the main thread
# imported DuckDB and pandas ended `nsysq nvtx` in CI with numpy's "Importing the numpy
# C-extensions failed" (base/threads.before_threads imports numpy before the threads start).
_AUDIT_THREADS = """
import sys, threading
def hook(event, args):
    if threading.current_thread() is threading.main_thread():
        return
    if event in ("os.putenv", "os.unsetenv"):
        sys.stderr.write(f"ENV-WRITE {event} {args[0]!r} in {threading.current_thread().name}\\n")
    elif event == "import" and sys.modules.get(args[0], 0) is not None:  # None: refused (engine.py)
        sys.stderr.write(f"IMPORT {args[0]} in {threading.current_thread().name}\\n")
sys.addaudithook(hook)
sys.argv = ["nsysq", *sys.argv[1:]]
from nsysq.cli.root import main
main()
"""
NVTX_FIXTURE = "nvtx_2024"  # NVTX ranges, the decoded table whose prefetch started the CI failure


@pytest.mark.parametrize(
    "argv",
    [
        ["export", str(BS16), "-o", "{out}/t.json.gz", "--format", "json"],
        ["census", str(BS16), "--format", "json"],
        ["nvtx", "{out}/nvtx_2024.sqlite", "--format", "json"],
        ["gaps", str(BS16), "--format", "json"],
        ["fleet", "census", str(BS16), str(ROOT / "examples" / "bs1.sqlite"), "--format", "json"],
        ["fleet", "lineup", str(BS16), "{out}/nvtx_2024.sqlite", "--workers", "2", "--format", "json"],
        ["fleet", "traces", str(BS16), "{out}/nvtx_2024.sqlite", "--workers", "2", "--format", "json"],
        ["fleet", "collectives", "{out}/ranks", "--workers", "2", "--format", "json"],
        ["iters", "{out}/training.sqlite", "--format", "json"],
    ],
    ids=[
        "export",
        "census",
        "nvtx",
        "gaps",
        "fleet",
        "fleet-lineup",
        "fleet-traces",
        "fleet-collectives",
        "iters",
    ],  # fmt: skip
)
def test_no_thread_but_the_main_one_writes_the_environment_or_imports(
    argv: list[str], tmp_path: Path
) -> None:
    from tests.fixtures import nvtx_scenarios

    nvtx_scenarios.build(NVTX_FIXTURE, tmp_path)
    if "collectives" in argv:
        collective_ranks(tmp_path / "ranks", ranks=3, steps=3, late_rank=None)
    if "iters" in argv:  # its calls are joined to their GPU ops on a thread beside the stacks' sweep
        from nsysq.synth import training

        training.training(tmp_path / "training.sqlite")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_MAIN_FREE", "GOTOBLAS_MAIN_FREE")}
    args = [a.format(out=tmp_path) for a in argv]
    proc = subprocess.run(
        [sys.executable, "-c", _AUDIT_THREADS, *args], capture_output=True, text=True, cwd=ROOT, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert "ENV-WRITE" not in proc.stderr, proc.stderr
    assert "IMPORT " not in proc.stderr, proc.stderr


def test_background_hands_its_value_or_its_error_to_the_caller() -> None:
    """base.threads.Background: the value of its computation, or its exception raised again where
    the result is asked for; the thread is a daemon (a process that ends does not wait for it)."""
    from nsysq.base.threads import Background

    main = threading.current_thread()
    done = Background(lambda: (threading.current_thread() is not main, 6 * 7))
    assert done.result() == (True, 42)
    assert done._thread.daemon

    def fails() -> None:
        raise ValueError("from the thread")

    with pytest.raises(ValueError, match="from the thread"):
        Background(fails).result()


def test_nvtx_runs_on_a_second_thread_import_nothing(tmp_path: Path) -> None:
    """nsysq nvtx with runs small enough that attributed_pairs and per_range share them with a
    second thread (every fixture is too small otherwise): that thread imports nothing."""
    from tests.fixtures import nvtx_scenarios

    nvtx_scenarios.build(NVTX_FIXTURE, tmp_path)
    small_runs = "from nsysq.analyses import nvtx_sweep\nnvtx_sweep._OPS_RUN, nvtx_sweep.CHUNK_PAIRS = 2, 8\n"
    script = _AUDIT_THREADS.replace(
        "from nsysq.cli.root import main\n", small_runs + "from nsysq.cli.root import main\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_MAIN_FREE", "GOTOBLAS_MAIN_FREE")}
    proc = subprocess.run(
        [sys.executable, "-c", script, "nvtx", str(tmp_path / f"{NVTX_FIXTURE}.sqlite"), "--format", "json"],
        capture_output=True, text=True, cwd=ROOT, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "IMPORT " not in proc.stderr and "ENV-WRITE" not in proc.stderr, proc.stderr
    assert json.loads(proc.stdout)["rows"]


@pytest.mark.parametrize("command", ["census", "nvtx", "gaps", "overlap", "iters", "check", "timeline"])
def test_from_the_cached_copy_no_thread_imports(command: str, tmp_path: Path) -> None:
    """A question answered from the cached copy imports numpy only when it needs it (a census does
    not), and then on the main thread, before any thread of nsysq's starts: no thread imports or
    writes the environment."""
    from tests.fixtures import nvtx_scenarios

    nvtx_scenarios.build(NVTX_FIXTURE, tmp_path)
    trace = tmp_path / f"{NVTX_FIXTURE}.sqlite"
    if command == "iters":  # a loop to find
        from nsysq.synth import training

        trace = tmp_path / "training.sqlite"
        training.training(trace)
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_MAIN_FREE", "GOTOBLAS_MAIN_FREE")}
    env |= {"NSYSQ_CACHE_DIR": str(tmp_path / "cache"), "NSYSQ_CACHE_BACKGROUND": "0"}
    env["NSYSQ_CACHE_MIN_BYTES"] = "0"  # the copy answers, small as the trace is
    launch = "import sys; from nsysq.cli.root import main; sys.exit(main())"
    built = subprocess.run(
        [sys.executable, "-c", launch, "cache", "build", str(trace)],
        capture_output=True, text=True, cwd=ROOT, env=env,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    proc = subprocess.run(
        [sys.executable, "-c", _AUDIT_THREADS, command, str(trace), "--format", "json"],
        capture_output=True, text=True, cwd=ROOT, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "IMPORT " not in proc.stderr and "ENV-WRITE" not in proc.stderr, proc.stderr
    if command == "census":
        probe = "import sys; from nsysq.cli.root import _leave; import nsysq.cli.root as r\n"
        probe += "r._leave = lambda code: print('numpy' in sys.modules, file=sys.stderr) or sys.exit(code)\n"
        probe += "sys.argv = ['nsysq', *sys.argv[1:]]\nr.main()\n"
        seen = subprocess.run(
            [sys.executable, "-c", probe, "census", str(trace)],
            capture_output=True, text=True, cwd=ROOT, env=env,
        )  # fmt: skip
        assert seen.returncode == 0 and seen.stderr.strip().splitlines()[-1] == "False", seen.stderr
