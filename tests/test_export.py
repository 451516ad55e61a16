"""nsysq export: the Chrome Trace Event Format file follows the published format, and its events
reconcile with raw SQL (tests/oracle.py) on every fixture and real export, whole and in a window."""

from __future__ import annotations

import gzip
import json
import math
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests import oracle
from tests.conftest import ROOT

# -- the Trace Event Format, as published ------------------------------------------------------------
# "Trace Event Format" (Google, the document chrome://tracing and Perfetto's JSON importer follow):
# the JSON Object Format is {"traceEvents": [...], "displayTimeUnit": "ms" | "ns", "otherData": {...}};
# every event has name, ph, ts (microseconds), pid and tid; cat is a comma-separated string; args an
# object. Phases used here: X (complete: dur, in µs), i (instant: s in g/p/t), b/e (async nestable:
# cat and id), s/f (flow: cat and id; f binds to the enclosing slice with bp "e"), M (metadata:
# process_name / thread_name with args.name, process_sort_index / thread_sort_index with
# args.sort_index).
PHASES = set("BEXiIbenstfPNODMCRcvV")
METADATA_NAMES = {
    "process_name": "name",
    "process_labels": "labels",
    "process_sort_index": "sort_index",
    "thread_name": "name",
    "thread_sort_index": "sort_index",
}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def schema_errors(doc: Any) -> list[str]:
    """Everything in ``doc`` that the Trace Event Format does not allow (empty when valid)."""
    errors: list[str] = []
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        return ["the top level must be an object with a traceEvents array"]
    if doc.get("displayTimeUnit", "ms") not in ("ms", "ns"):
        errors.append("displayTimeUnit must be 'ms' or 'ns'")
    if "otherData" in doc and not isinstance(doc["otherData"], dict):
        errors.append("otherData must be an object")
    for i, event in enumerate(doc["traceEvents"]):
        errors += [f"event {i} ({event.get('ph')}): {e}" for e in _event_errors(event)]
        if len(errors) > 20:
            break
    return errors


def _event_errors(event: dict[str, Any]) -> list[str]:
    out = []
    ph = event.get("ph")
    if ph not in PHASES:
        return [f"unknown phase {ph!r}"]
    if not isinstance(event.get("name"), str):
        out.append("name must be a string")
    for key in ("pid", "tid"):
        if not isinstance(event.get(key), int) or isinstance(event.get(key), bool):
            out.append(f"{key} must be an integer")
    if "cat" in event and not isinstance(event["cat"], str):
        out.append("cat must be a string")
    if "args" in event and not isinstance(event["args"], dict):
        out.append("args must be an object")
    if ph == "M":
        key = METADATA_NAMES.get(event.get("name", ""))
        if key is None or key not in event.get("args", {}):
            out.append(f"metadata event {event.get('name')!r} needs args.{key}")
        return out
    if not _number(event.get("ts")):
        out.append("ts must be a number (µs)")
    if ph == "X" and not (_number(event.get("dur")) and event["dur"] >= 0):
        out.append("a complete event needs dur >= 0")
    if ph == "i" and event.get("s", "t") not in ("g", "p", "t"):
        out.append("an instant event's scope s must be g, p or t")
    if ph in ("b", "e", "n", "s", "t", "f"):
        if "id" not in event and "id2" not in event:
            out.append("async and flow events need an id")
        if not isinstance(event.get("cat"), str):
            out.append("async and flow events need a cat")
    if ph == "f" and event.get("bp", "e") != "e":
        out.append("a flow end binds with bp 'e' (or the next slice without bp)")
    return out


def test_schema_checks_can_fail() -> None:
    assert schema_errors({"traceEvents": [{"ph": "X", "name": "k", "pid": 1, "tid": 1, "ts": 1}]})
    assert schema_errors({"traceEvents": [{"ph": "Q", "name": "k", "pid": 1, "tid": 1, "ts": 1}]})
    assert schema_errors({"events": []})
    good = {"name": "k", "ph": "X", "pid": 1, "tid": 1, "ts": 0.5, "dur": 1.0}
    assert not schema_errors({"traceEvents": [good], "displayTimeUnit": "ns"})


# -- running the command ------------------------------------------------------------------------------
def export(trace: Path, out: Path, *args: str) -> tuple[dict[str, Any], dict[str, Any], str]:
    """Run ``nsysq export``; return the file's document, the printed JSON summary and stderr."""
    proc = subprocess.run(
        [sys.executable, "-m", "nsysq", "export", str(trace), "-o", str(out), "--format", "json", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    opener: Any = gzip.open if out.name.endswith(".gz") else open
    with opener(out, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    return doc, json.loads(proc.stdout), proc.stderr


_KIND_OF_EVENT = {"kernel": "kernel", "memcpy": "memcpy", "memset": "memset", "graph": "graph"}


def _counted(doc: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """(events, summed duration ns from args) per summary kind, counted in the file."""
    counts: Counter[str] = Counter()
    durations: Counter[str] = Counter()
    for e in doc["traceEvents"]:
        ph, cat = e["ph"], e.get("cat")
        if ph == "X" and cat in _KIND_OF_EVENT:
            kind = cat
        elif ph == "X" and cat == "cuda_api":
            kind = "cuda_api"
        elif ph == "X" and cat == "nvtx":
            kind = "nvtx_push_pop"
        elif ph == "b" and cat == "nvtx":
            kind = "nvtx_start_end"
        elif ph == "i" and cat == "nvtx":
            kind = "nvtx_mark"
        else:
            continue
        counts[kind] += 1
        durations[kind] += e["args"]["duration_ns"]
    kinds = (*_KIND_OF_EVENT, "cuda_api", "nvtx_push_pop", "nvtx_start_end", "nvtx_mark")
    return {k: (counts[k], durations[k]) for k in kinds}


def check_export(trace: Path, out: Path, window: tuple[float, float] | None = None) -> dict[str, Any]:
    args = ("--from", str(window[0]), "--to", str(window[1])) if window else ()
    doc, printed, _ = export(trace, out, *args)
    assert schema_errors(doc) == []
    from_ns, to_ns = (round(window[0] * 1e6), round(window[1] * 1e6)) if window else (None, None)
    expected = oracle.export_counts(trace, from_ns, to_ns)
    assert _counted(doc) == expected
    assert {r["kind"]: (r["events"], r["duration_ns"]) for r in printed["rows"]} == expected
    events = doc["traceEvents"]
    flows = [e for e in events if e["ph"] == "s"]
    assert len(flows) == len([e for e in events if e["ph"] == "f"]) == printed["footer"]["flows"]
    assert len(flows) == oracle.export_flows(trace, from_ns, to_ns)
    footer = printed["footer"]
    gpu_ops = sum(expected[k][0] for k in _KIND_OF_EVENT)
    assert footer["gpu_ops"] == gpu_ops == footer["flows"] + footer["ops_without_call"]
    assert footer["unclosed_nvtx_ranges"] == oracle.export_unclosed_nvtx(trace, from_ns, to_ns)
    assert footer["trace_events"] == len(events)
    t0 = oracle.trace_t0(trace) if gpu_ops or expected["cuda_api"][0] else None
    if t0 is not None:
        assert doc["otherData"]["t0_ns"] == t0
    _check_timing_and_tracks(events)
    return doc


def _check_nesting(events: list[dict[str, Any]]) -> None:
    """On every track the complete events nest or follow one another (a viewer drops the others:
    Perfetto's slice_drop_overlapping_complete_event)."""
    tracks: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for e in events:
        if e["ph"] == "X":
            start = round(e["ts"] * 1000)
            tracks.setdefault((e["pid"], e["tid"]), []).append((start, start + round(e["dur"] * 1000)))
    for track, spans in tracks.items():
        open_ends: list[int] = []
        for start, end in sorted(spans, key=lambda se: (se[0], -se[1])):
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            assert not open_ends or end <= open_ends[-1], (track, start, end, open_ends[-1])
            open_ends.append(end)


def _check_timing_and_tracks(events: list[dict[str, Any]]) -> None:
    """ts and dur are the exact ns of args in µs; every track that holds an event is named; complete
    events nest on every track."""
    _check_nesting(events)
    named = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    processes = {e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    for e in events:
        if e["ph"] != "M":  # Perfetto drops events with a negative timestamp
            assert e["ts"] >= 0, e
        if e["ph"] in ("X", "b", "i") and e["args"]["start_ns"] >= 0:
            assert round(e["ts"] * 1000) == e["args"]["start_ns"]
            assert e["ph"] != "X" or round(e["dur"] * 1000) == e["args"]["duration_ns"]
            assert "before_trace_start_ns" not in e["args"]
        elif e["ph"] in ("X", "b", "i"):  # began before the trace start: drawn from it
            assert e["ts"] == 0 and e["args"]["before_trace_start_ns"] == -e["args"]["start_ns"] > 0, e
            assert e["ph"] != "X" or round(e["dur"] * 1000) == max(e["args"]["end_ns"], 0)
        if e["ph"] != "M":
            assert (e["pid"], e["tid"]) in named and e["pid"] in processes, e


@pytest.mark.parametrize("name", ["graph_trace", "edge_cases"])
def test_export_fixture(name: str, fixture_dir: Path, tmp_path: Path) -> None:
    trace = fixture_dir / f"{name}.sqlite"
    if not trace.exists():
        pytest.skip(f"no fixture {name}")
    doc = check_export(trace, tmp_path / "t.json")
    if name == "graph_trace":
        assert any(e.get("cat") == "graph" for e in doc["traceEvents"])


def test_export_every_fixture(fixture_trace: Path, tmp_path: Path) -> None:
    check_export(fixture_trace, tmp_path / "t.json.gz")


def test_export_example_window(tmp_path: Path) -> None:
    trace = ROOT / "examples" / "bs1.sqlite"
    whole = check_export(trace, tmp_path / "all.json")
    window = check_export(trace, tmp_path / "w.json", (100.0, 100.2))
    assert 0 < len(window["traceEvents"]) < len(whole["traceEvents"])
    early = [e for e in whole["traceEvents"] if "before_trace_start_ns" in e.get("args", {})]
    assert "execute_model" in {e["name"] for e in early}  # opened before the first CUDA call
    assert all(e["cat"] == "nvtx" for e in early)
    assert window["otherData"]["from_ns"] == 100_000_000


def test_lanes_keep_every_track_nested() -> None:
    from nsysq.output.chrome_trace import lanes

    spans = [("a", 0, 10), ("a", 2, 5), ("a", 4, 12), ("a", 12, 13), ("b", 4, 12), ("a", 5, 8), ("a", 0, 10)]
    got = lanes(spans)
    # (4, 12) crosses (0, 10): lane 1; (5, 8) starts when (2, 5) ends, inside both (0, 10): lane 0
    assert got == [0, 0, 1, 0, 0, 0, 0]
    for lane in set(got):
        _check_nesting(
            [
                {"ph": "X", "pid": 0, "tid": "ab".index(t), "ts": a / 1000, "dur": (b - a) / 1000}
                for (t, a, b), k in zip(spans, got, strict=True)
                if k == lane
            ]
        )


def test_unnested_ranges_go_to_an_overlap_track(tmp_path: Path) -> None:
    """bs16's NVTX push/pop ranges are closed out of order twice (execute_model opens before the
    last decoder layer of the step before closes): those go to 'thread 4242 NVTX (overlap 1)'."""
    doc = check_export(ROOT / "examples" / "bs16.sqlite", tmp_path / "t.json")
    names = {e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    assert "thread 4242 NVTX (overlap 1)" in names


def test_export_size_guard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from nsysq.cli.root import app
    from nsysq.output import chrome_trace

    monkeypatch.setattr(chrome_trace, "EVENT_GUARD", 1000)
    result = CliRunner().invoke(
        app, ["export", str(ROOT / "examples" / "bs1.sqlite"), "-o", str(tmp_path / "t.json")]
    )
    assert result.exit_code == 0
    assert "viewers slow down or fail above about 1,000" in result.output
    assert "--from 0.000 --to " in result.output
    assert (tmp_path / "t.json").exists()


def test_export_refuses_bad_output(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "nsysq",
            "export",
            str(ROOT / "examples" / "bs1.sqlite"),
            "-o",
            str(tmp_path / "t.txt"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 2
    assert "end the output name 't.txt' with .json or .json.gz" in proc.stderr
    assert not (tmp_path / "t.txt").exists()


def test_export_real(real_trace: Path, tmp_path: Path) -> None:
    check_export(real_trace, tmp_path / "t.json.gz")
    present = oracle.tables(real_trace)
    ends = [
        oracle.scalar(real_trace, f'SELECT max("end") FROM {t}', None)
        for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME")
        if t in present
    ]
    if not ends:
        return
    span_ms = (max(e for e in ends if e is not None) - oracle.trace_t0(real_trace)) / 1e6
    check_export(real_trace, tmp_path / "w.json", (round(span_ms * 0.4, 3), round(span_ms * 0.45, 3)))


def test_export_json_is_documented(tmp_path: Path) -> None:
    from tests.test_docs import _undocumented

    _, printed, _ = export(ROOT / "examples" / "bs1.sqlite", tmp_path / "t.json")
    keys = set(printed["columns"]) | set(printed["footer"]) | {r["kind"] for r in printed["rows"]}
    assert not _undocumented(keys, "export")
    assert not _undocumented(set(printed), "The table document")


# -- scoped exports: --device, --stream, --pid, --nvtx, --nvtx-like ---------------------------------
_GPU_KINDS = tuple(_KIND_OF_EVENT)
_DIMENSIONS = ("device", "stream", "pid")


def scoped_rows(
    path: Path,
    scope: dict[str, int] | None = None,
    nvtx: str | None = None,
    *,
    like: bool = False,
    window: tuple[float, float] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The export's events (as the file holds them) and its summary document, computed in-process."""
    from nsysq.output.chrome_trace import collect, events, summary
    from nsysq.session.scope import NvtxSelection, Scope
    from nsysq.trace import Trace

    selection = None if nvtx is None else NvtxSelection(nvtx, like=like)
    with Trace(path, scope=Scope(**(scope or {})), nvtx=selection) as opened:
        trace = opened.session
        start, end = window or (None, None)
        rows = collect(trace, start_ms=start, end_ms=end)
    table = summary(rows)
    doc = {"traceEvents": list(events(rows)), "displayTimeUnit": "ns"}
    return doc, {"rows": table.records(), "footer": table.footer}


def check_scoped(doc: dict[str, Any], printed: dict[str, Any], expected: dict[str, Any], flows: int) -> None:
    """The file and the summary equal the oracle; the footer reconciles; every call has its arrow
    when only launching calls are kept."""
    assert schema_errors(doc) == []
    assert _counted(doc) == expected
    assert {r["kind"]: (r["events"], r["duration_ns"]) for r in printed["rows"]} == expected
    footer = printed["footer"]
    assert footer["flows"] == flows == len([e for e in doc["traceEvents"] if e["ph"] == "s"])
    assert footer["gpu_ops"] == sum(expected[k][0] for k in _GPU_KINDS) == flows + footer["ops_without_call"]
    assert footer["trace_events"] == len(doc["traceEvents"])
    _check_timing_and_tracks(doc["traceEvents"])
    if footer["host_events"] == "launches":
        starts = {(e["pid"], e["tid"], e["ts"]) for e in doc["traceEvents"] if e["ph"] == "s"}
        calls = [e for e in doc["traceEvents"] if e.get("cat") == "cuda_api"]
        assert all((e["pid"], e["tid"], e["ts"]) in starts for e in calls)
        assert footer["unclosed_nvtx_ranges"] == 0


def check_dimensions_add_up(path: Path) -> None:
    """Per dimension, the scoped exports equal the oracle, and their GPU ops, durations and launch
    arrows add up to the whole export's."""
    whole = oracle.export_counts(path)
    whole_flows = oracle.export_flows(path)
    for dim, values in oracle.gpu_scope_values(path).items():
        if dim not in _DIMENSIONS:
            continue
        summed: Counter[str] = Counter()
        flows = 0
        for value in values:
            doc, printed = scoped_rows(path, {dim: value})
            expected, expected_flows = oracle.export_scoped(path, **{dim: value})
            check_scoped(doc, printed, expected, expected_flows)
            assert printed["footer"]["scope"] == f"{dim} {value}"
            assert printed["footer"]["host_events"] == ("all" if dim == "pid" else "launches")
            for kind in _GPU_KINDS:
                summed[f"{kind} events"] += expected[kind][0]
                summed[f"{kind} ns"] += expected[kind][1]
            flows += expected_flows
        for kind in _GPU_KINDS:
            assert (summed[f"{kind} events"], summed[f"{kind} ns"]) == whole[kind], (path.name, dim, kind)
        assert flows == whole_flows, (path.name, dim)


@pytest.mark.parametrize("name", ["edge_cases", "graph_node", "graph_trace", "v2024_6"])
def test_scoped_exports_add_up_on_fixtures(name: str, fixture_dir: Path) -> None:
    check_dimensions_add_up(fixture_dir / f"{name}.sqlite")


def test_scoped_exports_add_up_on_real_exports(real_trace: Path) -> None:
    check_dimensions_add_up(real_trace)


def _selector(name: str, domain: str) -> str:
    return name.replace("\\", "\\\\").replace("@", "\\@").replace("/", "\\/") + "@" + domain


def check_nvtx_scopes(path: Path, names: int = 2) -> None:
    """For the range names with most kernels: the export --nvtx NAME@DOMAIN writes the kernels the
    scoped census counts, and every kind equals the oracle."""
    from nsysq.analyses.census import census
    from nsysq.analyses.nvtx import nvtx
    from nsysq.session import Session
    from nsysq.trace import Trace

    with Session(path) as trace:
        top = [r for r in nvtx(trace, limit=0).records() if r["kernels"]][:names]
    assert top, path.name
    for row in top:
        selector = _selector(row["name"], row["domain"])
        doc, printed = scoped_rows(path, nvtx=selector)
        launches = oracle.nvtx_selected_launches(path, row["name"], row["domain"])
        expected, flows = oracle.export_scoped(path, launches=launches)
        check_scoped(doc, printed, expected, flows)
        assert printed["footer"]["scope"] == f"nvtx {selector}"
        with Trace(path, nvtx=selector) as opened:
            footer = census(opened.session, limit=0).footer
        assert expected["kernel"] == (footer["total_kernels"], footer["total_kernel_ns"]), row["name"]
        ranges = expected["nvtx_push_pop"][0] + expected["nvtx_start_end"][0]
        assert ranges >= 1  # at least one selected range holds its launches


@pytest.mark.parametrize("name", ["v2022_2_nonlazy", "v2023_1", "v2024_6", "edge_cases"])
def test_nvtx_scoped_export_on_fixtures(name: str, fixture_dir: Path) -> None:
    check_nvtx_scopes(fixture_dir / f"{name}.sqlite")


def _real_with_nvtx() -> list[Path]:
    from tests.conftest import REAL_TRACES

    return [p for p in REAL_TRACES if "NVTX_EVENTS" in oracle.tables(p)]


@pytest.mark.parametrize("path", _real_with_nvtx() or [None], ids=lambda p: p.stem if p else "none")
def test_nvtx_scoped_export_on_real_exports(path: Path | None) -> None:
    if path is None:
        pytest.skip("no real exports")
    check_nvtx_scopes(path)


def test_nvtx_scoped_export_on_the_command_line(tmp_path: Path) -> None:
    """One instance of a range, in a window, through the CLI: the file equals the oracle; the
    selected range and the decoder layers it holds are the NVTX ranges written."""
    trace = ROOT / "examples" / "bs1.sqlite"
    doc, printed, _ = export(trace, tmp_path / "s.json.gz", "--nvtx", "execute_model/3")
    launches = oracle.nvtx_selected_launches(trace, "execute_model", None, 3)
    expected, flows = oracle.export_scoped(trace, launches=launches)
    check_scoped(doc, printed, expected, flows)
    names = Counter(e["name"] for e in doc["traceEvents"] if e.get("cat") == "nvtx")
    assert names["execute_model"] == 1 and len(names) > 1
    assert doc["otherData"]["scope"] == printed["footer"]["scope"] == "nvtx execute_model/3"
    census = json.loads(
        subprocess.run(
            [sys.executable, "-m", "nsysq", "census", str(trace), "--nvtx", "execute_model/3", "-f", "json"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=True,
        ).stdout
    )["footer"]
    assert expected["kernel"] == (census["total_kernels"], census["total_kernel_ns"])
    first = min(e["ts"] for e in doc["traceEvents"] if e.get("cat") == "kernel") / 1000
    window = (round(first + 1, 3), round(first + 3, 3))
    doc, printed = scoped_rows(trace, nvtx="execute_model/3", window=window)
    from_ns, to_ns = round(window[0] * 1e6), round(window[1] * 1e6)
    expected, flows = oracle.export_scoped(trace, launches=launches, from_ns=from_ns, to_ns=to_ns)
    check_scoped(doc, printed, expected, flows)
    assert 0 < printed["footer"]["gpu_ops"] < census["total_kernels"]
    like, _ = scoped_rows(trace, nvtx="EXECUTE_MODEL", like=True)
    assert (
        _counted(like)["kernel"]
        == oracle.export_scoped(trace, launches=oracle.nvtx_selected_launches(trace, "execute_model"))[0][
            "kernel"
        ]
    )


def test_scoped_export_show_sql_runs(tmp_path: Path) -> None:
    from tests.test_show_sql import run_script

    trace = ROOT / "examples" / "bs1.sqlite"
    args = [sys.executable, "-m", "nsysq", "export", str(trace), "-o", str(tmp_path / "s.json")]
    proc = subprocess.run(
        [*args, "--nvtx", "execute_model/3", "--show-sql"], capture_output=True, text=True, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    assert "nsysq_export_launches" in proc.stdout
    ranges = run_script(proc.stdout)  # the last query: export_launch_nvtx
    _, printed, _ = export(trace, tmp_path / "s.json", "--nvtx", "execute_model/3")
    written = {r["kind"]: r["events"] for r in printed["rows"]}
    assert len(ranges) == written["nvtx_push_pop"] + written["nvtx_start_end"] > 0


def test_launch_calls_read_like_api_calls() -> None:
    """queries/export/launch_calls.sql differs from export_api_calls.sql only in the relation it reads
    (its header says why it is a file of its own): same columns, window and order."""
    from nsysq import catalog

    def body(name: str) -> list[str]:
        lines = [ln.strip() for ln in catalog.get(name).sql.splitlines() if not ln.startswith("--")]
        kept = [ln for ln in lines if not ln.startswith("FROM ") and "eventClass <> 67" not in ln]
        return [ln.removeprefix("WHERE ").removeprefix("AND ") for ln in kept]

    assert body("export_launch_calls") == body("export_api_calls")
    assert "FROM nsysq_export_launches AS r" in catalog.get("export_launch_calls").sql
