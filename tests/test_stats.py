"""nsysq stats against NVIDIA's own printed ``nsys stats`` output (conftest's SHARED_DIR, traces/stats:
real exports with the text nsys printed for them), against the oracle (tests/oracle.py) on fixtures and
real exports, and its CLI contract (formats, -o, SKIPPED lines, exit codes)."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests import oracle
from tests.conftest import REAL_TRACES, ROOT, SHARED_DIR

STATS_DIR = SHARED_DIR / "traces" / "stats"
PAIRS = sorted(d for d in STATS_DIR.iterdir() if d.is_dir()) if STATS_DIR.is_dir() else []
EXAMPLES = sorted((ROOT / "examples").glob("*.sqlite"))

_REPORT_MENTION = (
    re.compile(r"Executing '([\w:]+)' stats report"),
    re.compile(r"Processing \[.*?\] with \[(?:.*[/\\])?([\w]+)\.py\]"),
    re.compile(r"^\s*\*\* .*\((\w+(?::\w+)*)\):\s*$"),
)
_OLD_TITLE = re.compile(r"^([A-Z][^:*]*(?:Statistics|Summary)[^:]*):\s*$")  # "CUDA API Statistics:"
_SKIPPED = re.compile(r"^SKIPPED: (.*) does not contain (.*)\.\s*$")
_DASHES = re.compile(r"^ ?-+(?:  -+)*\s*$")
_CSV_HEADER = re.compile(r'^"?(?:Time \(%\)|Total \(MB\)|Start \(\w+\))"?,')
_NUMBER = re.compile(r"^-?[\d,]+(?:\.\d+)?$")


@dataclass
class Printed:
    """What one nsys stats output holds: the reports it ran (in order), its tables, its SKIPPED
    lines (what each export lacked)."""

    mentioned: list[str] = field(default_factory=list)
    tables: list[tuple[str, list[str], list[list[str]], list[str]]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _old_titles() -> dict[str, str]:
    from nsysq.stats.reports import REPORTS

    return {s.old_title: s.old for s in REPORTS}


def _screen_lines(text: str) -> list[str]:
    """The lines as a terminal shows them: a progress bar's carriage returns keep the last frame."""
    out = []
    for raw in text.split("\n"):
        frames = [f for f in raw.split("\r") if f.strip()]
        out.append(frames[-1] if frames else "")
    return out


def _cells(line: str, spans: list[tuple[int, int]]) -> list[str]:
    return [line[a:b].strip() for a, b in spans]


def parse_printed(text: str) -> Printed:
    """Parse nsys's console output robustly: banners, progress bars, jobs' noise around it."""
    lines = _screen_lines(text)
    found = Printed()
    current = ""
    for i, line in enumerate(lines):
        title = _OLD_TITLE.match(line)
        if title and title.group(1) in _old_titles():
            current = _old_titles()[title.group(1)]
            if current not in found.mentioned:
                found.mentioned.append(current)
        for pattern in _REPORT_MENTION:
            match = pattern.search(line)
            if match:
                current = match.group(1)
                if current not in found.mentioned:
                    found.mentioned.append(current)
        skipped = _SKIPPED.match(line)
        if skipped:
            found.skipped.append(skipped.group(2))
        if _CSV_HEADER.match(line) and current:  # nsys stats --format csv
            rows = []
            for row in lines[i + 1 :]:
                if not row.strip() or _CSV_HEADER.match(row):
                    break
                rows.append(next(csv.reader(io.StringIO(row))))
            found.tables.append((current, next(csv.reader(io.StringIO(line))), rows, []))
        if i and _DASHES.match(line) and lines[i - 1].strip():
            spans = [m.span() for m in re.finditer(r"-+", line)]
            if len(spans) < 2 or not current:  # a rule in the program's own output, not a table
                continue
            header = _cells(lines[i - 1], spans)
            rows, raw = [], []
            for row in lines[i + 1 :]:
                if not row.strip():
                    break
                rows.append(_cells(row, spans))
                raw.append(row)
            found.tables.append((current, header, rows, [lines[i - 1], line, *raw]))
    return found


def _printed_file(folder: Path) -> Path:
    texts = [p for p in sorted(folder.iterdir()) if p.suffix not in (".sqlite", ".ipynb", ".nsys-rep")]
    assert len(texts) == 1, f"{folder}: expected one printed output beside the export, found {texts}"
    return texts[0]


def _canonical(name: str) -> str | None:
    from nsysq.stats.reports import parse_reports

    try:
        return parse_reports(name)[0][0].report
    except Exception:
        return None  # a report nsysq does not offer (openmp_sum, um_sum, ...)


def _invoke(*args: str) -> tuple[int, str, str]:
    from nsysq.cli.root import app

    result = CliRunner().invoke(app, ["stats", *args])
    code = result.exit_code
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        code = getattr(result.exception, "exit_code", 70)
    return code, result.stdout, result.stderr


def _csv_blocks(text: str, names: list[str]) -> dict[str, list[list[str]]]:
    """nsysq's multi-report CSV: each block after its name line."""
    blocks: dict[str, list[list[str]]] = {}
    current = None
    for line in text.split("\n"):
        if line in names:
            current = line
            blocks[current] = []
        elif line and current is not None:
            blocks[current].append(next(csv.reader(io.StringIO(line))))
    return blocks


def _same_cell(printed: str, ours: str) -> bool:
    if _NUMBER.match(printed):  # the printed digits, whatever the grouping: 1,2681,9010 = 126819010
        return _NUMBER.match(ours) is not None and Decimal(printed.replace(",", "")) == Decimal(ours)
    if printed.endswith("…"):
        return ours.startswith(printed[:-1])
    return printed == ours


def _pair_run(folder: Path) -> tuple[Printed, list[str], dict[str, list[list[str]]], str, str]:
    printed = parse_printed(_printed_file(folder).read_text(encoding="utf-8", errors="replace"))
    trace = next(folder.glob("*.sqlite"))
    wanted = [c for c in (_canonical(m) for m in printed.mentioned) if c is not None]
    assert wanted, f"{folder.name}: the printed output names no report nsysq offers"
    code, out, err = _invoke(str(trace), "-r", ",".join(wanted), "-f", "csv", "--no-cache")
    ran = [t[0] for t in printed.tables]
    assert code == (0 if ran else 5), err
    from nsysq.stats.reports import parse_reports

    names = _shown_names(trace, wanted)
    assert len({n.split(":")[0] for n in names}) == len(parse_reports(",".join(wanted)))
    if len(names) > 1:
        return printed, names, _csv_blocks(out, names), out, err
    return printed, names, {names[0]: list(csv.reader(io.StringIO(out)))}, out, err


def _shown_names(trace: Path, wanted: list[str]) -> list[str]:
    import nsysq
    from nsysq.stats.reports import stats

    with nsysq.open(trace, cache=False) as t:
        return [r.name for r in stats(t.session, wanted)]


@pytest.mark.skipif(not PAIRS, reason=f"no NVIDIA stats outputs in {STATS_DIR}")
@pytest.mark.parametrize("folder", PAIRS, ids=lambda p: p.name)
def test_every_printed_cell_equals_nsysq(folder: Path) -> None:
    printed, names, blocks, _, err = _pair_run(folder)
    by_report = {_canonical(n): n for n in names}
    for report, header, rows, _ in printed.tables:
        name = by_report[_canonical(report)]
        ours = blocks.get(name, [])
        assert ours, f"{folder.name}: nsysq printed no {name} (stderr: {err})"
        assert ours[0] == header, f"{folder.name} {name}: headers differ"
        assert len(ours) - 1 == len(rows), f"{folder.name} {name}: {len(ours) - 1} rows, nsys {len(rows)}"
        for theirs, mine in zip(rows, ours[1:], strict=True):
            bad = [(h, a, b) for h, a, b in zip(header, theirs, mine, strict=True) if not _same_cell(a, b)]
            assert not bad, f"{folder.name} {name}: cells differ (header, nsys, nsysq): {bad}"
    # SKIPPED: every line nsys printed for a report nsysq offers, nsysq prints too, in its words
    ours_skipped = [m.group(2) for m in map(_SKIPPED.match, err.splitlines()) if m]
    from nsysq.stats.reports import REPORTS

    known = {s.what for s in REPORTS}
    theirs_skipped = Counter(w for w in printed.skipped if w in known)
    assert not theirs_skipped - Counter(ours_skipped), f"{folder.name}: {theirs_skipped} vs {ours_skipped}"
    tabled = {_canonical(t[0]) for t in printed.tables}
    skipped_reports = {
        r
        for r, w in zip(names, _skips(folder, names), strict=True)
        if w is not None and _canonical(r) in tabled
    }
    assert not skipped_reports, f"{folder.name}: nsysq skipped {skipped_reports}, nsys printed them"


def _skips(folder: Path, names: list[str]) -> list[str | None]:
    import nsysq
    from nsysq.stats.reports import stats

    with nsysq.open(next(folder.glob("*.sqlite")), cache=False) as t:
        return [r.skipped for r in stats(t.session, names)]


def _grouped_by_three(lines: list[str]) -> bool:
    """Whether the block's numbers are grouped as nsysq groups them (1,234,567; not 1,2345 nor 1234)."""
    numbers = [c for line in lines[2:] for c in line.split() if _NUMBER.match(c)]
    return all(re.fullmatch(r"-?\d{1,3}(,\d{3})*(\.\d+)?", n) for n in numbers) and any(
        "," in n for n in numbers
    )


@pytest.mark.skipif(not PAIRS, reason=f"no NVIDIA stats outputs in {STATS_DIR}")
@pytest.mark.parametrize("folder", PAIRS, ids=lambda p: p.name)
def test_column_layout_is_nsys_console(folder: Path) -> None:
    """--format column, parsed as nsys's output is, gives nsysq's CSV cells; where nsys grouped
    digits by three, its lines are nsysq's, character for character."""
    printed = parse_printed(_printed_file(folder).read_text(encoding="utf-8", errors="replace"))
    wanted = [c for c in (_canonical(m) for m in printed.mentioned) if c is not None]
    code, out, _ = _invoke(str(next(folder.glob("*.sqlite"))), "-r", ",".join(wanted), "--no-cache")
    ours = parse_printed(out)
    assert code == (0 if printed.tables else 5)
    assert len(ours.tables) == len(printed.tables)
    for (_, header, rows, lines), (_, our_header, our_rows, our_lines) in zip(
        printed.tables, ours.tables, strict=True
    ):
        assert our_header == header
        pairs = [(a, b) for r, o in zip(rows, our_rows, strict=True) for a, b in zip(r, o, strict=True)]
        assert all(_same_cell(a, b.replace(",", "") if _NUMBER.match(b) else b) for a, b in pairs)
        cut = any(c.endswith("…") for r in rows for c in r)  # nsys's cut width is not pinned down
        if lines and _grouped_by_three(lines) and not cut:
            assert [ln.rstrip() for ln in our_lines] == [ln.rstrip() for ln in lines]


# -- the numbers' rules ----------------------------------------------------------------------
def test_rounding_is_sqlite_half_away_from_zero() -> None:
    from nsysq.stats.numbers import group_digits, sqlite_round

    assert sqlite_round([3138.25, 0.05, -2.25, 12.0, None], 1) == [3138.3, 0.1, -2.3, 12.0, None]
    assert round(3138.25, 1) == 3138.2  # why Python's round is not used
    assert group_digits("25610616016.0") == "25,610,616,016.0" and group_digits("-992") == "-992"


def test_report_names_aliases_and_options() -> None:
    from nsysq.base.errors import UsageError
    from nsysq.stats.reports import DEFAULT_REPORTS, parse_reports

    assert [s.report for s, _ in parse_reports(None)] == list(DEFAULT_REPORTS)
    old = "cudaapisum,gpukernsum,gpumemtimesum,gpumemsizesum,osrtsum,nvtxsum,nvtxppsum,gpusum,gputrace"
    assert [s.report for s, _ in parse_reports(old)] == [
        "cuda_api_sum", "cuda_gpu_kern_sum", "cuda_gpu_mem_time_sum", "cuda_gpu_mem_size_sum", "osrt_sum",
        "nvtx_sum", "nvtx_pushpop_sum", "cuda_gpu_sum", "cuda_gpu_trace",
    ]  # fmt: skip
    assert parse_reports("cuda_gpu_kern_sum:base")[0][1] == ("base",)
    for bad in ("cuda_api_sum:base", "no_such_report", ","):
        with pytest.raises(UsageError):
            parse_reports(bad)


def _fixtures() -> list[Path]:
    found = list(EXAMPLES)
    return found + list(REAL_TRACES)


# -- the oracle: a plain-Python recomputation from the raw rows --------------------------------
@pytest.mark.parametrize("trace", _fixtures() or [None], ids=lambda p: p.stem if p else "none")
def test_summaries_equal_the_oracle(trace: Path | None) -> None:
    if trace is None:
        pytest.skip("no examples or real exports")
    import nsysq
    from nsysq.stats.reports import stats

    wanted = ["cuda_gpu_kern_sum", "cuda_gpu_kern_sum:base", "cuda_api_sum", "cuda_gpu_mem_time_sum",
              "cuda_gpu_mem_size_sum", "osrt_sum", "nvtx_sum"]  # fmt: skip
    with nsysq.open(trace, cache=False) as t:
        done = stats(t.session, wanted)
    expected = {
        "cuda_gpu_kern_sum": oracle.stats_kernels(trace, "demangledName"),
        "cuda_gpu_kern_sum:base": oracle.stats_kernels(trace, "shortName"),
        "cuda_api_sum": oracle.stats_api(trace),
        "cuda_gpu_mem_time_sum": oracle.stats_memory(trace, size=False),
        "cuda_gpu_mem_size_sum": oracle.stats_memory(trace, size=True),
        "osrt_sum": oracle.stats_osrt(trace),
        "nvtx_sum": oracle.stats_nvtx(trace),
    }
    for want, report in zip(wanted, done, strict=True):
        rows = expected[want]
        if report.table is None:
            assert rows is None, f"{trace.name} {want}: skipped ({report.skipped}) but the oracle has rows"
            continue
        assert rows is not None, f"{trace.name} {want}: the oracle says the table is absent"
        assert [tuple(r) for r in report.table.rows] == rows, f"{trace.name} {want}"


def test_scope_window_and_footer() -> None:
    trace = EXAMPLES[0] if EXAMPLES else None
    if trace is None:
        pytest.skip("no examples")
    import nsysq
    from nsysq.stats.reports import stats

    with nsysq.open(trace, cache=False) as t:
        whole = stats(t.session, "cuda_gpu_kern_sum")[0].table
        device = next(r for r in t.session.run("scope_values").rows if r[0] == "device")
    with nsysq.open(trace, cache=False) as t:
        early = stats(t.session, "cuda_gpu_kern_sum", start_ms=0, end_ms=1)[0].table
    assert whole is not None and early is not None
    assert sum(r[2] for r in early.rows) == oracle.stats_kernels_in_window(trace, 0, 1)
    assert sum(r[2] for r in early.rows) < sum(r[2] for r in whole.rows)
    assert early.footer["window"] == "0-1 ms from the trace start"
    code, out, err = _invoke(str(trace), "-r", "cuda_gpu_kern_sum", "--device", str(device[1]), "-f", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["reports"][0]["footer"]["scope"] == f"device {device[1]}"


def test_formats_output_files_and_exit_codes(tmp_path: Path) -> None:
    trace = EXAMPLES[0] if EXAMPLES else None
    if trace is None:
        pytest.skip("no examples")
    prefix = tmp_path / "run"
    code, out, err = _invoke(
        str(trace), "-r", "cuda_api_sum,cuda_gpu_kern_sum", "-f", "csv", "-o", str(prefix)
    )
    assert code == 0, err
    assert out == ""
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["run_cuda_api_sum.csv", "run_cuda_gpu_kern_sum.csv"]
    header = (tmp_path / "run_cuda_gpu_kern_sum.csv").read_text().splitlines()[0]
    assert header == "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name"
    code, _, err = _invoke(str(trace), "-r", "cuda_api_sum", "-f", "csv", "-o", str(prefix))
    assert code == 2 and not err.count("SKIPPED")
    code, _, _ = _invoke(
        str(trace), "-r", "cuda_api_sum", "-f", "csv", "-o", str(prefix), "--force-overwrite"
    )
    assert code == 0
    code, out, _ = _invoke(str(trace), "-r", "cuda_gpu_kern_sum", "-f", "csv", "--time-unit", "us")
    assert out.splitlines()[0].startswith("Time (%),Total Time (us),Instances,Avg (us)")
    code, out, _ = _invoke(str(trace), "-r", "cuda_gpu_kern_sum,cuda_gpu_mem_size_sum", "--show-sql")
    assert code == 0 and "stats_kernels@1" in out and "stats_memory@1" in out
    asked = ["nvtx_sum", "cuda_gpu_trace", "cuda_api_trace", "cuda_gpu_sum"]
    code, out, _ = _invoke(str(trace), "-f", "json", "-r", ",".join(asked))
    doc = json.loads(out)
    by_name = {r["report"]: r for r in doc["reports"]}
    assert sorted([*by_name, *(s["report"] for s in doc["skipped"])]) == sorted(asked)
    ops = sum(oracle.count(trace, t) for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                                                "CUPTI_ACTIVITY_KIND_MEMSET"))  # fmt: skip
    assert len(by_name["cuda_gpu_trace"]["rows"]) == ops
    assert len(by_name["cuda_api_trace"]["rows"]) == oracle.count(trace, "CUPTI_ACTIVITY_KIND_RUNTIME")
    kernels = oracle.stats_kernels(trace) or []
    gpu_sum = [r for r in by_name["cuda_gpu_sum"]["rows"] if r["category"] == "CUDA_KERNEL"]
    assert sorted((r["operation"], r["instances"]) for r in gpu_sum) == sorted((k[8], k[2]) for k in kernels)
    empty = next((p for p in PAIRS if "skipped" in p.name), None)
    if empty is not None:  # no table any report reads: nsysq's no-data exit code, through main()
        proc = subprocess.run(
            [sys.executable, "-m", "nsysq", "stats", str(next(empty.glob("*.sqlite"))), "--no-cache"],
            capture_output=True, text=True, cwd=ROOT, timeout=120,
        )  # fmt: skip
        assert proc.returncode == 5, proc.stderr
        assert proc.stdout == "" and proc.stderr.count("SKIPPED: ") == 6


def test_json_keys_are_documented() -> None:
    from tests.test_docs import _named, _section

    trace = EXAMPLES[0] if EXAMPLES else None
    if trace is None:
        pytest.skip("no examples")
    every = "nvtx_sum,osrt_sum,cuda_api_sum,cuda_gpu_kern_sum,cuda_gpu_mem_time_sum,cuda_gpu_mem_size_sum"
    every += ",nvtx_pushpop_sum,cuda_gpu_sum,cuda_gpu_trace,cuda_api_trace"
    code, out, err = _invoke(str(trace), "-r", every, "-f", "json", "--from", "0", "--to", "5")
    assert code == 0, err
    doc = json.loads(out)
    keys = set(doc)
    for report in doc["reports"]:
        keys |= set(report) | set(report["columns"]) | set(report["footer"])
    for skipped in doc["skipped"]:
        keys |= set(skipped)
    assert doc["reports"] and not keys - _named(_section("stats"))
