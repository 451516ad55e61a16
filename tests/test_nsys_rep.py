""".nsys-rep in, everywhere: nsysq finds nsys, exports the report once into its cache folder and
reuses the export until the report or nsys changes (nsysq.export.nsys_rep).

The nsys here is a stand-in written by the test: a Python script that accepts exactly the documented
``nsys export`` options (``--type``/``-t`` sqlite, ``--output``/``-o``, ``--force-overwrite``/``-f``
true|false, ``--lazy`` true|false) and ``nsys --version``, fails on anything else, "exports" by
copying a known SQLite export (examples/bs1.sqlite) and counts its exports in a file.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import nsysq
from nsysq.base.errors import NsysExportError, NsysNotFoundError, UsageError
from nsysq.export import cache, nsys_rep
from nsysq.fleet_analysis import LocalEngine
from tests.conftest import ROOT, sha256
from tests.test_inputs import assert_clean_failure

EXAMPLES = ROOT / "examples"
VERSION = "NVIDIA Nsight Systems version 2025.6.1.190-256143517148v0"

STAND_IN = '''\
#!{python}
"""A stand-in for nsys: `nsys --version` and `nsys export` with its documented options only."""
import os, shutil, sys, time

VERSION = {version!r}
OPTIONS = {{"--type": "type", "-t": "type", "--output": "output", "-o": "output",
            "--force-overwrite": "force", "-f": "force", "--lazy": "lazy"}}


def fail(message):
    sys.stderr.write(message + "\\n")
    sys.exit(1)


def count(what):
    with open(os.environ["FAKE_NSYS_COUNT"], "a") as fh:
        fh.write(what + "\\n")


args = sys.argv[1:]
if args == ["--version"]:
    print(VERSION)
    sys.exit(0)
if not args or args[0] != "export":
    fail(f"unknown command: {{' '.join(args)}}")
opts, inputs, rest, i = {{}}, [], args[1:], 0
while i < len(rest):
    arg = rest[i]
    if arg.startswith("-"):
        name, eq, value = arg.partition("=")
        if name not in OPTIONS:
            fail(f"unrecognised option '{{name}}'")
        if not eq:
            i += 1
            if i == len(rest):
                fail(f"option '{{name}}' needs a value")
            value = rest[i]
        opts[OPTIONS[name]] = value
    else:
        inputs.append(arg)
    i += 1
if opts.get("type", "sqlite") != "sqlite":
    fail(f"unsupported export type '{{opts['type']}}'")
for key in ("force", "lazy"):
    if opts.get(key, "false") not in ("true", "false"):
        fail(f"'{{opts[key]}}' is not true or false")
if len(inputs) != 1 or not os.path.isfile(inputs[0]):
    fail(f"give one report file, not {{inputs}}")
if "output" not in opts:
    fail("the stand-in wants --output (real nsys would write beside the report)")
out = opts["output"]
if os.path.exists(out) and opts.get("force") != "true":
    fail(f"{{out}} exists; use --force-overwrite true")
count("export")
time.sleep(float(os.environ.get("FAKE_NSYS_SLEEP", "0")))
if os.environ.get("FAKE_NSYS_FAIL"):
    with open(out, "wb") as fh:
        fh.write(b"half an export")
    sys.stderr.write("Processing events...\\nERROR: the report is damaged (QdstrmImporter error)\\n")
    sys.exit(1)
shutil.copyfile(os.environ["FAKE_NSYS_SOURCE"], out)
'''


def write_nsys(folder: Path, version: str = VERSION) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / "nsys"
    exe.write_text(STAND_IN.format(python=sys.executable, version=version))
    exe.chmod(0o755)
    return exe


def _no_nsys_path() -> str:
    """PATH without any folder that holds an nsys."""
    keep = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d and not (Path(d) / "nsys").exists()]
    return os.pathsep.join(keep)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """A stand-in nsys on PATH, no install folders searched, the cache in tmp_path/cache."""
    bindir = tmp_path / "bin"
    write_nsys(bindir)
    counter = tmp_path / "count.txt"
    values = {
        "NSYSQ_CACHE_DIR": str(tmp_path / "cache"),
        "NSYSQ_NSYS_DIRS": "",
        "NSYSQ_CACHE_BACKGROUND": "0",
        "FAKE_NSYS_COUNT": str(counter),
        "FAKE_NSYS_SOURCE": str(EXAMPLES / "bs1.sqlite"),
        "PATH": str(bindir) + os.pathsep + _no_nsys_path(),
    }
    monkeypatch.delenv("NSYSQ_NSYS", raising=False)
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    yield {**os.environ}


@pytest.fixture
def report(tmp_path: Path) -> Path:
    folder = tmp_path / "runs"
    folder.mkdir()
    path = folder / "run.nsys-rep"
    path.write_bytes(b"NSYS-REP stand-in report\n" * 200)
    return path


def exports(env: dict[str, str]) -> int:
    counter = Path(env["FAKE_NSYS_COUNT"])
    return counter.read_text().splitlines().count("export") if counter.exists() else 0


def cli(*args: str | Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nsysq", *map(str, args)],
        capture_output=True, text=True, timeout=120, env=env, cwd=ROOT,
    )  # fmt: skip


def listing(folder: Path) -> list[tuple[str, str]]:
    return sorted((p.name, sha256(p)) for p in folder.iterdir())


# -- export once, then reuse ------------------------------------------------------------------------
def test_export_once_then_reuse(env: dict[str, str], report: Path, capfd: pytest.CaptureFixture[str]) -> None:
    before = listing(report.parent)
    first = nsys_rep.resolve(report)
    err = capfd.readouterr().err
    assert "exporting run.nsys-rep to SQLite with nsys 2025.6.1.190-256143517148v0" in err
    assert "exported run.nsys-rep in " in err and " s (into " in err
    assert first.exported is not None and not first.exported.reused
    assert first.path.name == "run.sqlite"
    assert first.path.is_relative_to(Path(env["NSYSQ_CACHE_DIR"]) / "exports")
    assert sha256(first.path) == sha256(EXAMPLES / "bs1.sqlite")
    second = nsys_rep.resolve(report)
    assert second.path == first.path and second.exported is not None and second.exported.reused
    assert capfd.readouterr().err == ""  # no progress line when nothing is exported
    with nsysq.open(report) as trace:  # the one opener
        assert trace.path == first.path
        assert trace.census(limit=3)["name"].iloc[0] == "device_kernel"
    assert exports(env) == 1
    assert listing(report.parent) == before, "something was written beside the report"


@pytest.mark.parametrize("change", ["touch", "replace", "size"])
def test_a_changed_report_is_exported_again(env: dict[str, str], report: Path, change: str) -> None:
    first = nsys_rep.resolve(report)
    if change == "touch":
        stat = report.stat()
        os.utime(report, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    elif change == "replace":  # same bytes, same size, another file (a new inode)
        other = report.with_name("other.tmp")
        shutil.copy2(report, other)
        os.replace(other, report)
    else:
        with report.open("ab") as fh:
            fh.write(b"x")
    second = nsys_rep.resolve(report)
    assert exports(env) == 2
    assert second.path != first.path and second.exported is not None and not second.exported.reused
    nsys_rep.resolve(report)
    assert exports(env) == 2


def test_another_nsys_version_exports_again(env: dict[str, str], report: Path, tmp_path: Path) -> None:
    nsys_rep.resolve(report)
    write_nsys(tmp_path / "bin", version="NVIDIA Nsight Systems version 2025.6.2.7-356143517148v0")
    again = nsys_rep.resolve(report)
    assert exports(env) == 2
    assert again.exported is not None and again.exported.nsys_version.endswith("2025.6.2.7-356143517148v0")
    assert nsys_rep.short_version(again.exported.nsys_version) == "2025.6.2.7-356143517148v0"


def test_read_only_report_folder(env: dict[str, str], report: Path) -> None:
    folder = report.parent
    before = listing(folder)
    report.chmod(0o444)
    folder.chmod(0o555)
    try:
        proc = cli("census", report, "--limit", "2", "-f", "csv", env=env)
        assert proc.returncode == 0, proc.stderr
        assert "device_kernel" in proc.stdout
        assert listing(folder) == before
    finally:
        folder.chmod(0o755)
        report.chmod(0o644)


# -- which nsys -----------------------------------------------------------------------------------
def test_nsys_is_found_in_order(env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    on_path = (tmp_path / "bin" / "nsys").resolve()
    given = write_nsys(tmp_path / "given")
    from_env = write_nsys(tmp_path / "env")
    installed = write_nsys(tmp_path / "opt" / "nsight-systems-2025.6.1" / "target-linux-x64")
    write_nsys(tmp_path / "opt" / "nsight-systems-2024.10.1" / "target-linux-x64")  # older
    assert nsys_rep.find_nsys() == on_path
    monkeypatch.setenv("NSYSQ_NSYS", str(from_env))
    assert nsys_rep.find_nsys() == from_env.resolve()
    assert nsys_rep.find_nsys(given) == given.resolve()
    assert nsys_rep.find_nsys(given.parent) == given.resolve()  # a folder holding nsys
    monkeypatch.delenv("NSYSQ_NSYS")
    monkeypatch.setenv("PATH", _no_nsys_path())
    assert nsys_rep.find_nsys() is None
    monkeypatch.setenv("NSYSQ_NSYS_DIRS", str(tmp_path / "opt" / "nsight-systems*" / "target-linux-x64"))
    assert nsys_rep.find_nsys() == installed.resolve()
    with pytest.raises(UsageError, match="--nsys .*no executable nsys there"):
        nsys_rep.find_nsys(tmp_path / "missing" / "nsys")
    assert any("nsight-systems" in d for d in nsys_rep.INSTALL_DIRS)  # the defaults are not empty
    monkeypatch.delenv("NSYSQ_NSYS_DIRS")
    assert nsys_rep.install_dirs() == list(nsys_rep.INSTALL_DIRS)


def test_no_nsys_is_one_sentence_and_exit_2(env: dict[str, str], report: Path) -> None:
    env = {**env, "PATH": _no_nsys_path()}
    before = listing(report.parent)
    proc = cli("info", report, env=env)
    assert_clean_failure(
        proc, 2, "nsys export --type sqlite --output run.sqlite run.nsys-rep", "--nsys PATH", "NSYSQ_NSYS",
        "install Nsight Systems",
    )  # fmt: skip
    assert listing(report.parent) == before
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PATH", env["PATH"])
        with pytest.raises(NsysNotFoundError):
            nsys_rep.resolve(report)


def test_the_stand_in_refuses_what_nsys_does_not_document(env: dict[str, str], tmp_path: Path) -> None:
    """nsysq's export succeeds against it, so nsysq passes only documented options."""
    exe = str(tmp_path / "bin" / "nsys")
    for bad in (["export", "--bogus", "x"], ["export", "--type", "json", "r"], ["stats", "r"]):
        done = subprocess.run([exe, *bad], capture_output=True, text=True, env=env, check=False)
        assert done.returncode == 1 and done.stderr, bad
    assert exports(env) == 0


def test_a_failing_nsys_leaves_nothing_behind(env: dict[str, str], report: Path) -> None:
    env = {**env, "FAKE_NSYS_FAIL": "1"}
    before = listing(report.parent)
    proc = cli("census", report, env=env)
    progress, error = proc.stderr.strip().splitlines()  # the progress line, then one sentence
    assert progress.startswith("nsysq: exporting run.nsys-rep")
    assert_clean_failure(
        subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout, error), 2,
        "nsys could not export", "(exit 1): ERROR: the report is damaged (QdstrmImporter error);",
    )  # fmt: skip
    assert listing(report.parent) == before
    left = Path(env["NSYSQ_CACHE_DIR"]) / "exports"
    assert [p.name for p in left.iterdir() if not p.name.endswith(".lock")] == []
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FAKE_NSYS_FAIL", "1")
        with pytest.raises(NsysExportError, match="the report is damaged"):
            nsys_rep.resolve(report)


def test_two_processes_export_once(env: dict[str, str], report: Path) -> None:
    env = {**env, "FAKE_NSYS_SLEEP": "1"}
    code = "import sys; from nsysq.export.nsys_rep import resolve; print(resolve(sys.argv[1]).path)"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(report)],
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert outs[0][0] == outs[1][0] and outs[0][0].strip().endswith("run.sqlite")
    assert exports(env) == 1


# -- every command ----------------------------------------------------------------------------------
def test_info_says_where_the_export_came_from(env: dict[str, str], report: Path, tmp_path: Path) -> None:
    given = write_nsys(tmp_path / "given")
    proc = cli("info", report, "-f", "json", "--nsys", given, env={**env, "PATH": _no_nsys_path()})
    assert proc.returncode == 0, proc.stderr
    assert f"with nsys 2025.6.1.190-256143517148v0 ({given.resolve()})" in proc.stderr
    data = json.loads(proc.stdout)
    source = data["exported_from"]
    assert source["report"] == str(report.resolve())
    assert source["nsys"] == str(given.resolve())
    assert source["nsys_version"] == "2025.6.1.190-256143517148v0"
    assert source["report_size_bytes"] == report.stat().st_size
    assert source["reused"] is False and source["export_seconds"] >= 0
    assert data["path"].endswith("run.sqlite") and data["nsys_version"] == "2025.1.1.110"
    table = cli("info", report, "--nsys", given, "-f", "csv", env=env)
    assert table.returncode == 0 and table.stderr == ""
    assert (
        f"file,exported_from,export reused by nsys 2025.6.1.190-256143517148v0: {report.resolve()}"
        in table.stdout
    )
    listed = json.loads(cli("cache", "list", "-f", "json", env=env).stdout)
    assert [(r["kind"], r["trace"]) for r in listed["rows"]] == [("export", str(report.resolve()))]
    cleared = cli("cache", "clear", env=env)
    assert "and 1 exported report" in cleared.stderr, cleared.stderr
    assert not any((Path(env["NSYSQ_CACHE_DIR"]) / "exports").glob("*/run.sqlite"))
    assert exports(env) == 1


def test_diff_takes_reports(env: dict[str, str], tmp_path: Path) -> None:
    a, b = tmp_path / "a.nsys-rep", tmp_path / "b.nsys-rep"
    a.write_bytes(b"report A" * 100)
    b.write_bytes(b"report B" * 100)
    # The stand-in copies one export: B is the bs16 example through a second stand-in.
    other = write_nsys(tmp_path / "bin16")
    bs16 = repr(str(EXAMPLES / "bs16.sqlite"))
    other.write_text(other.read_text().replace('os.environ["FAKE_NSYS_SOURCE"]', bs16))
    with nsysq.open(b, nsys=other):
        pass
    result = nsysq.diff(a, b, cache=False)
    expected = nsysq.diff(EXAMPLES / "bs1.sqlite", EXAMPLES / "bs16.sqlite", cache=False)
    assert {k: t.rows for k, t in result.tables.items()} == {k: t.rows for k, t in expected.tables.items()}
    assert [f.clue for f in result.findings] == [f.clue for f in expected.findings]
    assert (result.a.name, result.b.name) == ("a.sqlite", "b.sqlite")
    assert exports(env) == 2  # A by the stand-in on PATH; B's export, by the other, was reused


def test_fleet_takes_reports_and_folders_of_reports(env: dict[str, str], tmp_path: Path) -> None:
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    for rank in range(2):
        (ranks / f"rank{rank}.nsys-rep").write_bytes(f"rank {rank}".encode() * 100)
    shutil.copy(EXAMPLES / "bs1.sqlite", ranks / "rank2.sqlite")
    (ranks / "rank2.nsys-rep").write_bytes(b"rank 2 (exported beside it already)")
    result = nsysq.fleet(ranks, engine=LocalEngine(2), census=True, lineup=False)
    paths = [r["path"] for r in result.traces_table.records()]
    assert sorted(Path(p).name for p in paths) == ["rank0.nsys-rep", "rank1.nsys-rep", "rank2.sqlite"]
    assert all(r["status"] == "ok" for r in result.traces_table.records())
    assert exports(env) == 2
    proc = cli("fleet", "census", ranks / "rank0.nsys-rep", ranks / "rank1.nsys-rep", "-f", "json", env=env)
    assert proc.returncode == 0, proc.stderr
    assert exports(env) == 2  # the workers reused both exports


def test_ray_workers_export_on_the_worker(env: dict[str, str], report: Path, tmp_path: Path) -> None:
    """The Ray task runs the same per-trace function (partial.read_trace -> Trace -> resolve)."""
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        pytest.skip("a Ray instance is already running in this process")
    given = write_nsys(tmp_path / "given")
    keys = ("NSYSQ_CACHE_DIR", "NSYSQ_NSYS_DIRS", "FAKE_NSYS_COUNT", "FAKE_NSYS_SOURCE")
    started = time.monotonic()
    ray.init(
        num_cpus=1, object_store_memory=80 * 1024**2, include_dashboard=False, log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": str(ROOT), **{k: env[k] for k in keys}}},
    )  # fmt: skip
    try:
        result = nsysq.fleet([report], engine="ray", census=True, lineup=False, nsys=given, cache=False)
    finally:
        ray.shutdown()
    (row,) = result.traces_table.records()
    assert row["status"] == "ok", row
    assert exports(env) == 1
    assert time.monotonic() - started < 120


def test_the_export_command_named_is_the_documented_one() -> None:
    assert nsys_rep.export_command(Path("x/run.nsys-rep")) == (
        "nsys export --type sqlite --output run.sqlite run.nsys-rep"
    )
    assert (
        nsys_rep.export_command(Path("old.qdrep"))
        == "nsys export --type sqlite --output old.sqlite old.qdrep"
    )
    assert cache.exports_dir() == cache.cache_dir() / "exports"


def test_what_counts_as_a_report(tmp_path: Path) -> None:
    renamed = tmp_path / "really.nsys-rep"  # an export someone named like a report: read as SQLite
    shutil.copy(EXAMPLES / "bs1.sqlite", renamed)
    assert not nsys_rep.is_report(renamed)
    assert nsys_rep.resolve(renamed).exported is None
    zipped = tmp_path / "report.sqlite"
    zipped.write_bytes(b"PK\x03\x04" + b"\x00" * 100)
    assert nsys_rep.is_report(zipped)
    assert nsys_rep.is_report(tmp_path / "old.qdrep") is False  # missing: not a report, check_path says so
