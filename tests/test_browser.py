"""The reports in a real browser: headless Chromium (installed by .ci/run from the system's packages)
opens each page; it must load with no console error, no exception and no request but the page
itself; the evidence board and tables must render with the expected text; a click on a header must
sort the table. Screenshots go to a temporary folder, or to docs/img with NSYSQ_SCREENSHOTS=1.

Skipped, with a message, when no Chromium-family browser is installed.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.browser import Browser, Page, find_browser
from tests.conftest import REAL_TRACES, ROOT
from tests.test_report import REAL_PAIRS

EXAMPLES = (ROOT / "examples" / "bs1.sqlite", ROOT / "examples" / "bs16.sqlite")
BROWSER = find_browser()
pytestmark = pytest.mark.skipif(
    BROWSER is None, reason="no Chromium-family browser (apt-get install chromium; .ci/run does)"
)
ReportPage = Callable[..., Path]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert BROWSER is not None
    with Browser(BROWSER) as b:
        yield b


def screenshots(tmp_path: Path) -> Path:
    return ROOT / "docs" / "img" if os.environ.get("NSYSQ_SCREENSHOTS") == "1" else tmp_path


def png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", header[16:24])
    return width, height


def assert_clean(page: Page, path: Path) -> None:
    """Loaded with no console error, exception or CSP violation, and asked for nothing but itself."""
    assert page.errors() == []
    assert page.requests() == [path.resolve().as_uri()]


def column_values(page: Page, section: str, column: str) -> list[object]:
    script = f"""(function(){{
      var t = document.querySelector('#{section} table.nsysq');
      var i = Array.prototype.findIndex.call(t.tHead.rows[0].cells, function(c){{
        return c.dataset.col === '{column}';}});
      return Array.prototype.map.call(t.tBodies[0].rows, function(r){{
        return JSON.parse(r.cells[i].dataset.value);}});
    }})()"""
    values: list[object] = page.evaluate(script)
    return values


def click_header(page: Page, section: str, column: str) -> None:
    page.evaluate(f"document.querySelector('#{section} table.nsysq th[data-col=\"{column}\"]').click()")


def test_trace_report_in_browser(browser: Browser, report_page: ReportPage, tmp_path: Path) -> None:
    path = report_page(EXAMPLES[0])
    page = browser.open(path)
    assert_clean(page, path)
    headings = page.evaluate("Array.from(document.querySelectorAll('h2')).map(h => h.textContent)")
    assert headings[:3] == ["The trace", "Census: GPU time per kernel", "Lineup: GPU time per category"]
    census = page.evaluate("document.querySelector('#census table').innerText")
    assert "device_kernel" in census and "877.380" in census and "70.2%" in census
    assert page.evaluate("document.querySelectorAll('svg').length") == 7
    # the svg figures are drawn: each has a non-zero rendered size
    assert page.evaluate("Array.from(document.querySelectorAll('svg')).every(s => s.getBBox().width > 0)")
    # sorting: by instances ascending after two clicks (descending first for numbers)
    click_header(page, "census", "instances")
    down = column_values(page, "census", "instances")
    assert down == sorted(down, reverse=True)  # type: ignore[type-var]
    click_header(page, "census", "instances")
    up = column_values(page, "census", "instances")
    assert up == sorted(up)  # type: ignore[type-var]
    click_header(page, "census", "name")
    names = column_values(page, "census", "name")
    assert names == sorted(names, key=lambda n: str(n).lower()) or names[0] < names[-1]  # type: ignore[operator]
    # a shortened name carries its full text on hover
    assert page.evaluate("document.querySelectorAll('td span[title]').length") > 0
    assert page.errors() == []
    page.evaluate("window.scrollTo(0, 0)")
    shot = screenshots(tmp_path) / "report.png"
    page.screenshot(shot, full_page=False)
    assert png_size(shot) == (1280, 900)


def test_nvtx_section_in_browser(browser: Browser, report_page: ReportPage, tmp_path: Path) -> None:
    """The NVTX section renders its plot and table (range names with GPU time), and sorts."""
    path = report_page(EXAMPLES[0])
    page = browser.open(path)
    assert_clean(page, path)
    headings = page.evaluate("Array.from(document.querySelectorAll('h2')).map(h => h.textContent)")
    assert headings[3] == "NVTX ranges: GPU time per range name"
    text = page.evaluate("document.querySelector('#nvtx table').innerText")
    assert "execute_model" in text and "decoder_layer_0" in text
    assert page.evaluate("document.querySelector('#nvtx svg').getBBox().width") > 0
    kernel_ns = column_values(page, "nvtx", "kernel_ns")
    assert kernel_ns == sorted(kernel_ns, reverse=True)  # type: ignore[type-var]  # as printed
    printed = column_values(page, "nvtx", "name")
    click_header(page, "nvtx", "instances")
    down = column_values(page, "nvtx", "instances")
    assert down == sorted(down, reverse=True)  # type: ignore[type-var]
    assert column_values(page, "nvtx", "name") != printed  # the rows moved
    click_header(page, "nvtx", "instances")
    up = column_values(page, "nvtx", "instances")
    assert up == sorted(up)  # type: ignore[type-var]
    click_header(page, "nvtx", "name")
    names = [str(n).lower() for n in column_values(page, "nvtx", "name")]
    assert names == sorted(names) or names == sorted(names, reverse=True)
    assert page.errors() == []
    page.evaluate("document.querySelector('#nvtx').scrollIntoView()")
    shot = screenshots(tmp_path) / "report-nvtx.png"
    page.screenshot(shot, full_page=False)
    assert png_size(shot) == (1280, 900)


def test_diff_report_in_browser(browser: Browser, report_page: ReportPage, tmp_path: Path) -> None:
    path = report_page(*EXAMPLES)
    page = browser.open(path)
    assert_clean(page, path)
    board = page.evaluate("document.querySelector('#board table').innerText")
    assert "5.15x Flash attention time" in board and "7 new Persistent GEMM (nvjet) variants" in board
    assert page.evaluate("document.querySelector('#board tbody tr').className") == "high"
    click_header(page, "categories", "ratio")
    ratios = [r for r in column_values(page, "categories", "ratio") if r is not None]
    assert ratios == sorted(ratios, reverse=True)  # type: ignore[type-var]
    assert page.errors() == []
    shot = screenshots(tmp_path) / "report-diff.png"
    page.screenshot(shot, full_page=False)
    assert png_size(shot) == (1280, 900)


def test_reports_fit_a_phone(browser: Browser, report_page: ReportPage, tmp_path: Path) -> None:
    """At 390 px the page does not scroll sideways (wide tables scroll inside their own box)."""
    for traces, name in ((EXAMPLES[:1], "report-phone.png"), (EXAMPLES, "report-diff-phone.png")):
        path = report_page(*traces)
        page = browser.open(path, width=390, height=844, mobile=True)
        assert_clean(page, path)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        shot = screenshots(tmp_path) / name
        page.screenshot(shot, full_page=False)
        assert png_size(shot)[0] == 390


@pytest.mark.parametrize("trace", REAL_TRACES or [None], ids=lambda p: p.stem if p else "none")
def test_real_report_in_browser(
    trace: Path | None, browser: Browser, report_page: ReportPage, tmp_path: Path
) -> None:
    if trace is None:
        pytest.skip("no real exports")
    path = report_page(trace)
    page = browser.open(path)
    assert_clean(page, path)
    assert page.evaluate("document.querySelector('#info dl.card').innerText").startswith("file")
    tables = page.evaluate("document.querySelectorAll('table.nsysq').length")
    if tables:
        page.evaluate("document.querySelector('table.nsysq th').click()")
        assert page.evaluate("document.querySelector('table.nsysq th').getAttribute('aria-sort')")
    assert page.errors() == []


@pytest.mark.parametrize(
    "pair", REAL_PAIRS or [None], ids=lambda p: f"{p[0].stem[:12]}-{p[1].stem[:12]}" if p else "none"
)
def test_real_diff_report_in_browser(
    pair: tuple[Path, Path] | None, browser: Browser, report_page: ReportPage
) -> None:
    if pair is None:
        pytest.skip("fewer than two real exports with kernels")
    path = report_page(*pair)
    page = browser.open(path)
    assert_clean(page, path)
    assert page.evaluate("document.querySelector('h2').textContent") == "Evidence board"
    assert page.errors() == []
