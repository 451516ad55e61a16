"""CLI output contracts: formats agree, units convert, --show-sql shows what ran, the census path
stays light, and every error becomes one line and an exit code (tests/test_layers.py: the imports)."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nsysq import catalog
from nsysq.base.table import Table
from tests import oracle
from tests.conftest import KEEP_RUNNING, ROOT


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "nsysq", *map(str, args)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return proc


def test_json_csv_markdown_agree(fixture_dir: Path) -> None:
    path = fixture_dir / "edge_cases.sqlite"
    doc = json.loads(run("census", path, "-f", "json", "-n", "4").stdout)
    rows = list(csv.DictReader(io.StringIO(run("census", path, "-f", "csv", "-n", "4").stdout)))
    assert [r["name"] for r in rows] == [r["name"] for r in doc["rows"]]
    assert [int(r["total_ns"]) for r in rows] == [r["total_ns"] for r in doc["rows"]]
    assert doc["unit"] == "ns" and doc["columns"][:4] == ["rank", "name", "instances", "total_ns"]
    assert set(doc) == {"kind", "queries", "unit", "columns", "rows", "footer", "notes"}
    assert doc["rows"][-1]["name"].startswith("other (")
    assert sum(r["total_ns"] for r in doc["rows"]) == doc["footer"]["total_kernel_ns"]
    md = run("census", path, "-f", "markdown", "-n", "4").stdout
    assert md.count("\n| ") == len(doc["rows"]) + 1
    assert any(
        "<unresolved id" in r["name"]
        for r in json.loads(run("census", path, "-f", "json", "-n", "0").stdout)["rows"]
    )


def test_time_unit_converts_every_time_column(fixture_dir: Path) -> None:
    path = fixture_dir / "v2024_6.sqlite"
    ns = json.loads(run("census", path, "-f", "json").stdout)
    ms = json.loads(run("census", path, "-f", "json", "--time-unit", "ms").stdout)
    assert ms["unit"] == "ms" and "total_ms" in ms["columns"] and "total_ns" not in ms["columns"]
    for a, b in zip(ns["rows"], ms["rows"], strict=True):
        assert b["total_ms"] == pytest.approx(a["total_ns"] / 1e6)
        assert b["avg_ms"] == pytest.approx(a["avg_ns"] / 1e6)
    assert ms["footer"]["total_kernel_ms"] == pytest.approx(ns["footer"]["total_kernel_ns"] / 1e6)


def test_show_sql_prints_the_packaged_files(fixture_dir: Path) -> None:
    """The script names each file by its label and fills in its parameters (test_show_sql.py runs it)."""
    out = run("census", fixture_dir / "v2024_6.sqlite", "--show-sql", "-n", "5").stdout
    label = catalog.get("census").label
    assert f"-- {label} with names = 'short', limit = 5" in out
    census_sql = catalog.get("census").sql.strip()
    assert census_sql.replace("$names", "'short'").replace("$limit", "5") in out
    assert out.startswith("-- nsysq --show-sql")  # the script only, no result
    assert out.rsplit(f"\n-- {label}", 1)[1].count("\n-- kernel") == 0  # census runs last


def test_queries_lists_every_file() -> None:
    doc = json.loads(run("queries", "-f", "json").stdout)
    assert {r["name"] for r in doc["rows"]} == set(catalog.all_queries())


def test_stakeout_like_and_timeline_window(fixture_dir: Path) -> None:
    path = fixture_dir / "v2024_6.sqlite"
    doc = json.loads(run("stakeout", path, "%gemm%", "--like", "-f", "json").stdout)
    assert doc["rows"] and all("gemm" in (r["name"] + r["demangled_name"]).lower() for r in doc["rows"])
    assert doc["footer"]["launches"] == len(doc["rows"])
    tl = json.loads(run("timeline", path, "--from", "0", "--to", "5", "-f", "json", "-n", "0").stdout)
    assert all(r["start_ns"] < 5e6 for r in tl["rows"])


def test_sql_is_read_only_and_binds(fixture_dir: Path) -> None:
    import nsysq

    with nsysq.open(fixture_dir / "v2024_6.sqlite") as trace:
        df = trace.sql("SELECT count(*) AS n FROM StringIds WHERE value LIKE $p", {"p": "%gemm%"})
        assert int(df["n"][0]) >= 1
        with pytest.raises(nsysq.NsysqError):
            trace.sql("CREATE TABLE x (a INT)")


def test_user_sql_cannot_load_extensions(fixture_dir: Path, tmp_path: Path) -> None:
    """Connections that read exports trust the installed sqlite extension without DuckDB's signature
    check (nsysq/export/engine.py): user SQL must not be able to load anything else."""
    import nsysq
    from nsysq.export import engine

    stray = tmp_path / "stray.duckdb_extension"
    stray.write_bytes(b"not an extension")
    with nsysq.open(fixture_dir / "v2024_6.sqlite", cache=False) as trace:
        for text in (f"LOAD '{stray}'", "INSTALL httpfs", f"SELECT 1; LOAD '{stray}'"):
            with pytest.raises(nsysq.NsysqError):
                trace.sql(text)
    cached = engine.connect(sqlite=False)  # the cached copy's connection loads nothing: checks stay on
    try:
        ((unsigned,),) = cached.execute("SELECT current_setting('allow_unsigned_extensions')").fetchall()
    finally:
        cached.close()
    assert unsigned is False


def _modules_after(command: str, path: Path) -> str:
    """The stderr of ``nsysq COMMAND PATH -f csv`` run in-process, ending in the heavy modules it
    imported ('MODULES pandas,...')."""
    code = (
        f"{KEEP_RUNNING}import sys, runpy; sys.argv = ['nsysq', '{command}', sys.argv[1], '-f', 'csv'];\n"
        "try:\n    runpy.run_module('nsysq', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "sys.stderr.write('MODULES ' + ','.join(m for m in ('pandas', 'matplotlib') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True)
    return out.stderr.strip()


def _collector_during(args: list[str]) -> str:
    """``nsysq ARGS`` run in-process as the ``nsysq`` script runs it; the last stderr line: whether
    the collector ran ('enabled True/False'), what it froze, and collections it made while paused."""
    code = (
        f"{KEEP_RUNNING}import gc, sys\n"
        "seen = []\n"
        "gc.callbacks.append(lambda phase, info: seen.append(gc.isenabled()) if phase == 'start' else None)\n"
        f"sys.argv = ['nsysq', *{args!r}]\n"
        "from nsysq.__main__ import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "sys.stderr.write(f'\\nenabled {gc.isenabled()} frozen {gc.get_freeze_count() > 0} '\n"
        "                 f'paused-collections {seen.count(False)}')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    return out.stderr.strip().splitlines()[-1]


def test_the_command_pauses_the_collector_until_the_trace_is_open(fixture_dir: Path) -> None:
    """nsysq.base.collector: paused while the command loads (no automatic collection then), the
    loaded objects frozen and collection back on once a trace is open; a command that opens none
    ends paused (it lives no longer than its imports)."""
    opened = _collector_during(["census", str(fixture_dir / "v2024_6.sqlite"), "-f", "csv"])
    assert opened == "enabled True frozen True paused-collections 0"
    assert _collector_during(["--version"]) == "enabled False frozen False paused-collections 0"


def test_the_collector_is_left_alone_in_a_library_process(fixture_dir: Path) -> None:
    """Only a collector the command paused is resumed: a library user's choice stands."""
    import gc

    import nsysq
    from nsysq.base import collector

    was = gc.isenabled()
    gc.disable()
    try:
        with nsysq.open(fixture_dir / "v2024_6.sqlite", cache=False) as trace:
            trace.census()
        assert not gc.isenabled() and gc.get_freeze_count() == 0
        collector.resume()  # nothing was paused by nsysq: nothing to resume
        assert not gc.isenabled()
    finally:
        if was:
            gc.enable()


def test_census_cli_path_does_not_import_pandas_or_matplotlib(fixture_dir: Path) -> None:
    err = _modules_after("census", fixture_dir / "v2024_6.sqlite")
    assert err.endswith("MODULES"), err


@pytest.mark.parametrize("command", ["nvtx", "iters"])
def test_nvtx_and_iters_do_not_import_pandas(command: str, tmp_path: Path) -> None:
    """DuckDB imports pandas (0.2 s) to bind a view over numpy arrays or a Python parameter unless
    told it is absent (engine.pandas_free_binding): nvtx keeps its ranges so, iters scores so."""
    from nsysq.synth import training

    path = training.training(tmp_path / "training.sqlite")
    err = _modules_after(command, path)
    assert err.endswith("MODULES"), err


_OVERLAPPING_REFUSALS = """
import sys, threading
from nsysq.export.engine import pandas_free_binding
inside, leave_first = threading.Event(), threading.Event()
def first():
    with pandas_free_binding():
        inside.set()
        leave_first.wait()
thread = threading.Thread(target=first)
thread.start()
inside.wait()
with pandas_free_binding():
    leave_first.set()
    thread.join()  # the first block has closed; this one still binds
    assert sys.modules["pandas"] is None, "pandas unmarked while a block is open"
assert "pandas" not in sys.modules, "the mark outlived the last block"
import pandas
with pandas_free_binding():
    assert sys.modules["pandas"] is pandas  # loaded for real: left alone
print("ok")
"""


def test_pandas_free_binding_on_two_threads_keeps_the_mark_until_the_last_leaves() -> None:
    """Blocks open on two threads at once (the fleet's thread engine): the one that closes first must
    not unmark pandas under the other (DuckDB would then import it there, 0.5 s, on a thread)."""
    proc = subprocess.run([sys.executable, "-c", _OVERLAPPING_REFUSALS], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_api_returns_dataframes(fixture_dir: Path) -> None:
    import pandas as pd

    import nsysq

    with nsysq.open(fixture_dir / "v2024_6.sqlite") as trace:
        df = trace.census(unit="ms", limit=2)
        assert isinstance(df, pd.DataFrame) and "total_ms" in df.columns
        assert df.attrs["queries"][0] == f"census@{catalog.get('census').version}"
        assert isinstance(trace.lineup(), pd.DataFrame)
        assert isinstance(trace.timeline(limit=5), pd.DataFrame)
        name = df["name"].iloc[0]
        assert len(trace.stakeout(name)) == df["instances"].iloc[0]


def test_api_methods_take_the_analyses_parameters(fixture_dir: Path) -> None:
    """Trace.census() etc. take exactly the parameters of the analysis they call (``unit``
    included), on the class and on an open trace (what a notebook shows), and return its table."""
    import inspect

    import nsysq
    from nsysq.analyses import census, graphs, lineup, nvtx, stakeout, timeline
    from nsysq.trace import Trace

    analyses = [census.census, lineup.lineup, stakeout.stakeout, graphs.graphs, timeline.timeline, nvtx.nvtx]
    with nsysq.open(fixture_dir / "v2024_6.sqlite") as opened:
        for analysis in analyses:
            wanted = list(inspect.signature(analysis).parameters.values())[1:]  # after the session
            for face in (getattr(Trace, analysis.__name__), getattr(opened, analysis.__name__)):
                method = inspect.signature(face).parameters
                assert [(p.name, p.kind, p.default) for p in wanted] == [
                    (p.name, p.kind, p.default) for p in method.values() if p.name != "self"
                ], analysis.__name__
            assert inspect.signature(analysis).parameters["unit"].default == "ns"
        frame = opened.census(limit=2, unit="ms")
        table = census.census(opened.session, limit=2).in_unit("ms")
    assert list(frame.columns) == list(table.columns) and len(frame) == len(table.rows)


def test_duckdb_progress_bar_is_off() -> None:
    """DuckDB draws a progress bar on stdout during long queries; stdout must carry data only."""
    from nsysq.export import engine

    con = engine.connect(sqlite=False)
    try:
        assert con.execute("SELECT current_setting('enable_progress_bar')").fetchone() == (False,)
    finally:
        con.close()


def test_table_format_prints_names_verbatim() -> None:
    """Rich markup and emoji codes stay off: bracketed or colon-laden kernel names print as they are."""
    import io

    from nsysq.base import render
    from nsysq.base.table import Table

    names = ["void k<[with T=float]>", "a[bold]b", "ns::fire::kernel", "x[/]y"]
    buf = io.StringIO()
    table = Table(kind="census", columns=("name", "instances"), rows=[(n, 1) for n in names])
    render.render(table, "table", buf)
    text = buf.getvalue()
    assert all(n in text for n in names), text


# -- errors become one line and an exit code (nsysq.cli.root.main) -------------------------------------
def run_failing(
    trace: Path, raise_code: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``nsysq census TRACE`` with nsysq.analyses.census.census replaced by a function that runs
    ``raise_code``."""
    code = (
        "import sys\nimport nsysq.analyses.census\nfrom nsysq.base import errors\n"
        f"def failing(*args, **kwargs):\n    {raise_code}\n"
        "nsysq.analyses.census.census = failing\n"
        "from nsysq.cli.root import main\n"
        "sys.argv = ['nsysq', 'census', sys.argv[1]]\nmain()"
    )
    environ = {k: v for k, v in os.environ.items() if k != "NSYSQ_DEBUG"} | (env or {})
    return subprocess.run(
        [sys.executable, "-c", code, str(trace)], capture_output=True, text=True, timeout=120, env=environ
    )


def test_unexpected_error_is_one_line_without_traceback(fixture_dir: Path) -> None:
    from nsysq.cli.root import INTERNAL_ERROR_EXIT_CODE

    proc = run_failing(fixture_dir / "v2024_6.sqlite", "raise RuntimeError('boom\\nsecond line')")
    assert proc.returncode == INTERNAL_ERROR_EXIT_CODE == 70
    assert proc.stdout == ""
    assert proc.stderr == (
        "nsysq: internal error (RuntimeError: boom); rerun with NSYSQ_DEBUG=1 to see the traceback.\n"
    )


def test_nsysq_debug_shows_the_traceback(fixture_dir: Path) -> None:
    proc = run_failing(fixture_dir / "v2024_6.sqlite", "raise RuntimeError('boom')", {"NSYSQ_DEBUG": "1"})
    assert proc.returncode == 70
    assert "Traceback (most recent call last)" in proc.stderr and "in failing" in proc.stderr
    assert proc.stderr.endswith(
        "nsysq: internal error (RuntimeError: boom); rerun with NSYSQ_DEBUG=1 to see the traceback.\n"
    )


def test_nsysq_error_is_its_sentence_and_exit_code(fixture_dir: Path) -> None:
    path = fixture_dir / "v2024_6.sqlite"
    proc = run_failing(path, "raise errors.NoDataError('this trace has no kernels.')")
    assert (proc.returncode, proc.stdout) == (5, "")
    assert proc.stderr == "nsysq: error: this trace has no kernels.\n"
    damaged = run_failing(path, "raise errors.DamagedTraceError('t.sqlite', 'StringIds', 7, 'bad cell')")
    assert damaged.returncode == 2 and "Traceback" not in damaged.stderr
    assert damaged.stderr.startswith("nsysq: error: t.sqlite is damaged in StringIds (page 7): bad cell;")
    assert len(damaged.stderr.splitlines()) == 1


def test_usage_errors_stay_the_parsers(fixture_dir: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "nsysq", "census", str(fixture_dir / "v2024_6.sqlite"), "--limit", "x"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert "Usage: " in proc.stderr and "Invalid value for '--limit'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_trace_options_are_declared_once() -> None:
    """Every command that takes a trace option takes the one TraceOptions declares (same click
    option), the trace options in TraceOptions' field order (fleet declares --no-cache itself)."""
    from dataclasses import fields
    from typing import Any

    import typer.main

    from nsysq.cli.common import TraceOptions, trace_options
    from nsysq.cli.root import app

    def walk(cmd: Any) -> Any:
        yield cmd
        for sub in getattr(cmd, "commands", {}).values():
            yield from walk(sub)

    order = [f.name for f in fields(TraceOptions)]
    commands = list(walk(typer.main.get_command(app)))
    census = next(cmd for cmd in commands if cmd.name == "census")
    reference = {p.name: (p.opts, p.help, p.default) for p in census.params}
    taking = 0
    for cmd in commands:
        params = [p for p in cmd.params if p.name in order]
        assert [p.name for p in params] == sorted((p.name for p in params), key=order.index), cmd.name
        assert all((p.opts, p.help, p.default) == reference[p.name] for p in params), cmd.name
        taking += "device" in {p.name for p in params}
    assert taking == 22  # 18 + check, stats, iters, plot iters
    with pytest.raises(TypeError, match="keyword-only"):
        trace_options()(lambda options: None)


def test_a_commands_own_checks_come_before_the_nvtx_options(fixture_dir: Path, tmp_path: Path) -> None:
    """The NVTX options are checked where the trace opens (TraceOptions.nvtx), after the command's
    own checks, as when each command called nvtx_of itself."""
    trace = fixture_dir / "v2024_6.sqlite"
    both = ("--nvtx", "a", "--nvtx-like", "b")
    proc = subprocess.run(
        [sys.executable, "-m", "nsysq", "plot", "census", trace, "-o", tmp_path / "p.txt", *both],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert (proc.returncode, proc.stderr) == (
        2,
        "nsysq: error: end the output name 'p.txt' with .png, .svg or .pdf.\n",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "nsysq", "census", trace, *both], capture_output=True, text=True, timeout=120
    )
    assert (proc.returncode, proc.stderr) == (
        2,
        "nsysq: error: give --nvtx NAME or --nvtx-like PATTERN, not both.\n",
    )


# -- renderers live in the library: the CLI prints what they write ------------------------------------
EXAMPLES = (ROOT / "examples" / "bs1.sqlite", ROOT / "examples" / "bs16.sqlite")


def test_diff_report_is_what_the_cli_prints() -> None:
    import nsysq
    from nsysq.cli.diff import Section
    from nsysq.diffing.report import BOARD, SECTION_TITLES, render_board, render_diff

    assert [s.value for s in Section] == [BOARD, *SECTION_TITLES]
    result = nsysq.diff(*EXAMPLES)
    for fmt, unit in (("markdown", "ms"), ("json", "ns"), ("csv", "ns")):
        buf = io.StringIO()
        render_diff(result, fmt, buf, unit=unit)
        assert buf.getvalue() == run("diff", *EXAMPLES, "-f", fmt).stdout
    board = io.StringIO()
    render_board(result, "markdown", board)
    lines = board.getvalue().splitlines()
    assert lines[0].startswith("**nsysq diff   A: bs1.sqlite (") and "→   B: bs16.sqlite" in lines[0]
    assert sum(line.startswith("| ") for line in lines) == len(result.findings) + 1 > 1
    assert "Flash attention" in lines[lines.index("|---|---|---|---|") + 1]


def test_stakeout_summary_table_reconciles_with_sqlite3() -> None:
    import nsysq
    from nsysq.analyses.stakeout import stakeout, summary_table

    path, name = EXAMPLES[0], "reshape_and_cache_flash_kernel"
    with nsysq.open(path) as trace:
        launches = stakeout(trace.session, name, limit=3)
    summary = summary_table(launches)
    assert summary.kind == "stakeout_summary" and summary.unit == "ns"
    assert summary.queries == (f"stakeout_summary@{catalog.get('stakeout_summary').version}",)
    row = summary.records()
    values = oracle.durations(path, name)
    assert [(r["name"], r["instances"], r["total_ns"]) for r in row] == [(name, len(values), sum(values))]
    assert (row[0]["min_ns"], row[0]["max_ns"]) == (min(values), max(values))
    shown = run("stakeout", path, name, "-n", "3", "-f", "markdown").stdout
    summary_lines = shown.split("**summary**\n\n")[1].splitlines()
    assert sum(line.startswith("| ") for line in summary_lines) == 2  # header + one name
    with pytest.raises(ValueError):
        summary_table(Table(kind="census", columns=("name",), rows=[("k",)]))


def test_a_bug_in_nsysqs_own_sql_is_an_internal_error_not_a_bad_trace(fixture_dir: Path) -> None:
    """A parser error in a packaged view or macro is nsysq's bug: exit 70, never "export the trace again"."""
    code = (
        "import sys\nfrom nsysq import catalog\n"
        "good = catalog.macros\n"
        "def broken():\n"
        "    return [*good(), type('Q', (), {'sql': 'CREATE TEMP MACRO nsysq_broken(x) AS x +'})()]\n"
        "catalog.macros = broken\n"
        "from nsysq.cli.root import main\n"
        "sys.argv = ['nsysq', 'census', sys.argv[1], '--no-cache']\nmain()"
    )
    environ = {k: v for k, v in os.environ.items() if k != "NSYSQ_DEBUG"}
    proc = subprocess.run(
        [sys.executable, "-c", code, str(fixture_dir / "v2024_6.sqlite")],
        capture_output=True, text=True, timeout=120, env=environ,
    )  # fmt: skip
    assert proc.returncode == 70, proc.stderr
    assert proc.stderr.startswith("nsysq: internal error (ParserException: ")
    assert "export the trace again" not in proc.stderr


def test_the_process_ends_with_its_output_flushed_and_its_code(fixture_dir: Path, tmp_path: Path) -> None:
    """main() ends the process with os._exit after flushing: a whole JSON answer through a pipe, the
    command's exit code, and a reader that went away is exit 1 with no traceback."""
    env = {**os.environ, "NSYSQ_CACHE_DIR": str(tmp_path / "cache"), "NSYSQ_CACHE_BACKGROUND": "0"}
    trace = str(fixture_dir / "v2024_6.sqlite")
    run = [
        sys.executable,
        "-m",
        "nsysq",
        "sql",
        trace,
        "SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL",
        "-f",
        "json",
    ]
    done = subprocess.run(run, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["rows"]) == oracle.kernel_count(fixture_dir / "v2024_6.sqlite")
    missing = subprocess.run(
        [sys.executable, "-m", "nsysq", "census", str(tmp_path / "none.sqlite")],
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2 and missing.stderr.startswith("nsysq: error:")
    with subprocess.Popen(run, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # the reader goes away before the answer is written
        err = proc.stderr.read().decode()
    assert proc.returncode == 1 and "Traceback" not in err and "Exception ignored" not in err, err


def test_process_settings_precede_numpy() -> None:
    """main() sets OPENBLAS_NUM_THREADS for the CLI process; numpy reads it when it is imported, so
    importing the CLI must not import numpy (or DuckDB) already."""
    code = (
        "import os, sys\n"
        "import nsysq.cli.root as root\n"
        "assert 'numpy' not in sys.modules and 'duckdb' not in sys.modules\n"
        "os.environ.pop('OPENBLAS_NUM_THREADS', None)\n"
        "sys.argv = ['nsysq', '--help']\n"
        f"{KEEP_RUNNING}"
        "try:\n"
        "    root.main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(os.environ['OPENBLAS_NUM_THREADS'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.split()[-1] == "1"


@pytest.mark.parametrize("option", ["--version", "-V"])
def test_version_prints_the_version_and_exits_0(option: str) -> None:
    from nsysq.base.version import __version__

    run = subprocess.run(
        [sys.executable, "-m", "nsysq", option], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert (run.returncode, run.stdout, run.stderr) == (0, f"nsysq {__version__}\n", "")


def test_shell_completion_is_offered() -> None:
    """``--install-completion`` (documented in the README) is an option of the root command."""
    run = subprocess.run(
        [sys.executable, "-m", "nsysq", "--help"], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert run.returncode == 0 and "--install-completion" in run.stdout and "--show-completion" in run.stdout
    assert "nsysq --install-completion" in (ROOT / "README.md").read_text(encoding="utf-8")
