"""nsysq report: every number in the page equals the JSON of the command the page names beside it.

The page's tables carry the command (``data-command``), where its rows are in that command's JSON
(``data-json``) and each cell's raw value (``data-value``); the test runs each command once with
``--format json`` and compares value by value. Reports of the example pair and of every real export.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from nsysq.cli.root import app
from tests.conftest import REAL_TRACES, ROOT

EXAMPLES = (ROOT / "examples" / "bs1.sqlite", ROOT / "examples" / "bs16.sqlite")


@dataclass
class Group:
    """One ``div.result`` / ``div.info``: the command and what the page shows from its JSON."""

    command: list[str]
    tables: list[dict[str, Any]] = field(default_factory=list)
    keys: list[tuple[str, Any]] = field(default_factory=list)


class ReportParser(HTMLParser):
    """Collects the groups, every table's column names and raw cell values, and the data-keys."""

    def __init__(self) -> None:
        super().__init__()
        self.groups: list[Group] = []
        self.sections: list[str] = []
        self.tags: set[str] = set()
        self.urls: list[str] = []
        self._in_body = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.tags.add(tag)
        for key in ("src", "href", "data", "action", "poster", "xlink:href"):
            if key in a and not a[key].startswith("#"):
                self.urls.append(a[key])
        if tag == "section":
            self.sections.append(a.get("data-section", ""))
        if tag == "div" and a.get("class") in ("result", "info") and "data-command" in a:
            self.groups.append(Group(json.loads(a["data-command"])))
        elif tag == "table" and "data-json" in a:
            self.groups[-1].tables.append(
                {"path": a["data-json"], "columns": [], "rows": [], "total": int(a["data-total-rows"])}
            )
        elif tag == "th" and "data-col" in a:
            self.groups[-1].tables[-1]["columns"].append(a["data-col"])
        elif tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self.groups[-1].tables[-1]["rows"].append([])
        elif tag == "td" and self._in_body and "data-value" in a:
            self.groups[-1].tables[-1]["rows"][-1].append(json.loads(a["data-value"]))
        elif tag in ("dd", "li") and "data-key" in a:
            self.groups[-1].keys.append((a["data-key"], json.loads(a["data-value"])))

    def handle_endtag(self, tag: str) -> None:
        if tag == "tbody":
            self._in_body = False


def parse(page: Path) -> ReportParser:
    parser = ReportParser()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def command_json(argv: list[str], traces: dict[str, Path]) -> Any:
    args = [str(traces.get(a, a)) for a in argv] + ["--format", "json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, (args, result.stderr)
    return json.loads(result.stdout)


def _at(doc: Any, path: str) -> Any:
    for part in path.split("."):
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


def check_report(page: Path, traces: dict[str, Path]) -> ReportParser:
    """Every table row and every keyed value in ``page`` equals the JSON of its command."""
    parsed = parse(page)
    assert parsed.groups, "the report shows no results"
    for group in parsed.groups:
        doc = command_json(group.command, traces)
        for table in group.tables:
            expected = _at(doc, table["path"])
            assert table["total"] == len(expected), (group.command, table["path"])
            assert len(table["rows"]) <= len(expected)
            for row, want in zip(table["rows"], expected, strict=False):
                assert row == [want[c] for c in table["columns"]], (group.command, table["path"])
        for key, value in group.keys:
            assert _at(doc, key) == value, (group.command, key)
    assert not parsed.urls, f"the page refers to other resources: {parsed.urls[:5]}"
    assert not parsed.tags & {"img", "link", "iframe", "object", "embed"}
    return parsed


ReportPage = Callable[..., Path]


def test_trace_report_equals_commands(report_page: ReportPage) -> None:
    page = report_page(EXAMPLES[0])
    parsed = check_report(page, {"TRACE": EXAMPLES[0]})
    sections = ["info", "census", "lineup", "nvtx", "gaps", "overlap", "stakeout", "timeline"]
    assert parsed.sections == sections
    commands = {g.command[0] for g in parsed.groups}
    assert commands == set(sections)
    text = page.read_text(encoding="utf-8")
    assert text.count("<svg") == 7  # census, lineup, nvtx, gaps, overlap, stakeout, timeline plots
    without_namespaces = re.sub(r'xmlns(:\w+)?="http://www\.w3\.org/[^"]*"', "", text)
    assert "http:" not in without_namespaces and "https:" not in without_namespaces


def test_nvtx_section_equals_nvtx_json(report_page: ReportPage) -> None:
    """The NVTX table holds the rows and footer of `nsysq nvtx TRACE --limit 20 --format json`."""
    parsed = check_report(report_page(EXAMPLES[0]), {"TRACE": EXAMPLES[0]})
    group = next(g for g in parsed.groups if g.command[0] == "nvtx")
    assert group.command == ["nvtx", "TRACE", "--limit", "20"]
    doc = command_json(group.command, {"TRACE": EXAMPLES[0]})
    rows = next(t for t in group.tables if t["path"] == "rows")
    assert len(rows["rows"]) == len(doc["rows"]) > 1
    assert rows["rows"][0][rows["columns"].index("name")] == doc["rows"][0]["name"]
    shown = {key.removeprefix("footer."): value for key, value in group.keys}
    assert shown == {k: v for k, v in doc["footer"].items() if not isinstance(v, (list, dict))}


def test_nvtx_section_without_ranges(fixture_dir: Path, tmp_path: Path) -> None:
    trace = fixture_dir / "v2021_2.sqlite"
    page = tmp_path / "r.html"
    result = CliRunner().invoke(app, ["report", str(trace), "-o", str(page)])
    assert result.exit_code == 0, result.stderr
    parsed = check_report(page, {"TRACE": trace})
    assert "nvtx" in parsed.sections and "nvtx" not in {g.command[0] for g in parsed.groups}
    section = page.read_text(encoding="utf-8").split('data-section="nvtx"')[1].split("</section>")[0]
    assert "No NVTX ranges in this trace" in section


def test_nvtx_section_skips_many_unnested_ranges(monkeypatch: pytest.MonkeyPatch) -> None:
    """bs16's push/pop ranges do not all nest: above NVTX_UNNESTED_LIMIT ranges the section says
    why it is not computed instead of running the quadratic interval join."""
    from nsysq.analyses.nvtx import unnested_ranges
    from nsysq.output import report
    from nsysq.session import Session

    section = [s for s in report.TRACE_SECTIONS if s.key == "nvtx"]
    with Session(EXAMPLES[1]) as trace:
        shown = report.trace_report(trace, section).html
    assert "$ nsysq nvtx TRACE --limit 20" in shown
    monkeypatch.setattr(report, "NVTX_UNNESTED_LIMIT", 10)
    with Session(EXAMPLES[1]) as trace:
        noted = report.trace_report(trace, section).html
        unnested = unnested_ranges(trace)
    assert unnested > 0
    assert f"NVTX ranges not computed for this report: {unnested:,} push/pop ranges overlap" in noted
    assert "$ nsysq nvtx TRACE" not in noted


def test_check_report_catches_a_wrong_number(report_page: ReportPage, tmp_path: Path) -> None:
    text = report_page(EXAMPLES[0]).read_text(encoding="utf-8")
    page = tmp_path / "wrong.html"
    first = re.search(r"<td class=\"num\" data-value='(\d+)'", text)
    assert first is not None
    wrong = text[: first.start(1)] + str(int(first.group(1)) + 1) + text[first.end(1) :]
    page.write_text(wrong, encoding="utf-8")
    with pytest.raises(AssertionError):
        check_report(page, {"TRACE": EXAMPLES[0]})


def test_diff_report_equals_diff_json(report_page: ReportPage) -> None:
    page = report_page(*EXAMPLES)
    parsed = check_report(page, {"A": EXAMPLES[0], "B": EXAMPLES[1]})
    assert parsed.sections[0] == "board"
    assert parsed.sections == [
        "board", "totals", "categories", "kernels", "variants", "launch_config", "danger", "copies"
    ]  # fmt: skip
    board = parsed.groups[0].tables[0]
    assert board["path"] == "findings" and board["rows"][0][2].startswith("5.15x Flash attention")


def test_report_refuses_three_traces_and_bad_names(tmp_path: Path) -> None:
    def fails(*args: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "nsysq", "report", *args], capture_output=True, text=True, cwd=ROOT
        )
        assert proc.returncode == 2 and not proc.stdout
        return proc.stderr

    three = (*map(str, EXAMPLES), str(EXAMPLES[0]))
    assert "give one trace (a report of it) or two" in fails(*three, "-o", str(tmp_path / "r.html"))
    assert "end the output name 'r.pdf' with .html" in fails(str(EXAMPLES[0]), "-o", str(tmp_path / "r.pdf"))
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("trace", REAL_TRACES or [None], ids=lambda p: p.stem if p else "none")
def test_real_report_equals_commands(trace: Path | None, report_page: ReportPage) -> None:
    if trace is None:
        pytest.skip("no real exports")
    check_report(report_page(trace), {"TRACE": trace})


def _real_pairs() -> list[tuple[Path, Path]]:
    """Consecutive real exports that both recorded kernels (a diff needs kernels on both sides)."""
    from tests import oracle

    with_kernels = [
        t
        for t in REAL_TRACES
        if "CUPTI_ACTIVITY_KIND_KERNEL" in oracle.tables(t) and oracle.kernel_count(t) > 0
    ]
    return list(zip(with_kernels, with_kernels[1:], strict=False))


REAL_PAIRS = _real_pairs()


@pytest.mark.parametrize(
    "pair", REAL_PAIRS or [None], ids=lambda p: f"{p[0].stem[:12]}-{p[1].stem[:12]}" if p else "none"
)
def test_real_diff_report_equals_diff_json(pair: tuple[Path, Path] | None, report_page: ReportPage) -> None:
    if pair is None:
        pytest.skip("fewer than two real exports with kernels")
    parsed = check_report(report_page(*pair), {"A": pair[0], "B": pair[1]})
    assert parsed.sections[0] == "board"


def test_a_failing_section_fails_the_report_instead_of_leaving_a_hole() -> None:
    """Only "the trace lacks these events" (NoDataError) becomes a note in a section; any other
    error (a query bug, damage) propagates, so a report never quietly misses a section."""
    from nsysq.base.errors import NoDataError, QueryError
    from nsysq.output.report import _guarded

    def no_data(_: object) -> str:
        raise NoDataError("this trace has no NVTX ranges.")

    def broken(_: object) -> str:
        raise QueryError("query nvtx_ranges needs parameters ['extend_unended'].")

    assert _guarded(no_data, None) == '<p class="nodata">this trace has no NVTX ranges.</p>'
    with pytest.raises(QueryError):
        _guarded(broken, None)
