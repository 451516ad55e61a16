"""Shared fixtures: the real exports beside the checkout, and synthetic fixtures built by code."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fixtures import FIXTURE_NAMES, build

ROOT = Path(__file__).resolve().parents[1]
# main() ends the process with os._exit once its output is flushed (nsysq/cli/root.py): a probe
# that runs it in-process and then inspects the interpreter starts with this, which makes os._exit
# raise the SystemExit the probe catches.
KEEP_RUNNING = "import os as _os\n\ndef _leave(code):\n    raise SystemExit(code)\n\n_os._exit = _leave\n"
# The shared folder beside the checkout (real exports, research): every test reads it through these
# names, and skips what needs it when it is absent. NSYSQ_SHARED_DIR moves it (.ci/run points it at
# a missing folder to prove a fresh clone's run skips cleanly); NSYSQ_REAL_TRACES the real exports.
SHARED_DIR = Path(os.environ.get("NSYSQ_SHARED_DIR", ROOT.parent / "shared"))
REAL_DIR = Path(os.environ.get("NSYSQ_REAL_TRACES") or SHARED_DIR / "traces" / "real")
REAL_TRACES = sorted(REAL_DIR.glob("*.sqlite")) if REAL_DIR.is_dir() else []
NSYS_FIXTURES = [n for n in FIXTURE_NAMES if n != "not_nsys"]


def _build_page_decoder() -> None:
    """The suite imports nsysq from this checkout (pythonpath = ["."]), not from the installed wheel,
    so build the native libraries here the way the wheel build does (hatch_build.py's NATIVE: the
    page decoder, the NVTX sums), if a C compiler exists and each is not built yet (or is older
    than its sources): the native paths are then what the tests exercise."""
    build = ROOT / "hatch_build.py"
    if not build.exists():
        return
    import importlib.util

    spec = importlib.util.spec_from_file_location("nsysq_hatch_build", build)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError:  # hatchling not installed: nothing to build with
        return
    for source, name in module.NATIVE:
        library = ROOT / source.with_name(name)
        sources = [ROOT / source, ROOT / source.with_suffix(".h"), build]
        newest = max(s.stat().st_mtime for s in sources if s.exists())
        if library.exists() and library.stat().st_mtime >= newest:
            continue  # built from these sources already
        module.compile_decoder(ROOT, library, source)


_build_page_decoder()


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="session")
def fixture_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("fixtures")
    for name in FIXTURE_NAMES:
        build(name, directory)
    return directory


@pytest.fixture(params=NSYS_FIXTURES)
def fixture_trace(request: pytest.FixtureRequest, fixture_dir: Path) -> Path:
    return fixture_dir / f"{request.param}.sqlite"


real = pytest.mark.skipif(not REAL_TRACES, reason=f"no real exports in {REAL_DIR}")


@pytest.fixture(params=REAL_TRACES or [None], ids=lambda p: p.stem if p else "none")
def real_trace(request: pytest.FixtureRequest) -> Path:
    if request.param is None:
        pytest.skip(f"no real exports in {REAL_DIR}")
    return request.param


def keep_answers(monkeypatch: pytest.MonkeyPatch, directory: Path) -> None:
    """Cache in ``directory`` and keep answers even for a small fixture, no background build: a
    second question to the same trace reads its kept answer."""
    monkeypatch.setenv("NSYSQ_CACHE_DIR", str(directory))
    monkeypatch.setenv("NSYSQ_CACHE_MIN_BYTES", "0")
    monkeypatch.setenv("NSYSQ_CACHE_BACKGROUND", "0")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test uses its own throwaway cache directory, never the user's."""
    monkeypatch.setenv("NSYSQ_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(scope="session")
def report_page(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """``report_page(*traces)``: the ``nsysq report`` page of one trace or a pair, built once per
    session (test_report checks its numbers, test_browser opens it)."""
    from typer.testing import CliRunner

    from nsysq.cli.root import app

    folder = tmp_path_factory.mktemp("reports")
    built: dict[tuple[Path, ...], Path] = {}

    def page(*traces: Path) -> Path:
        if traces not in built:
            out = folder / ("_vs_".join(t.stem for t in traces) + ".html")
            result = CliRunner().invoke(app, ["report", *map(str, traces), "-o", str(out)])
            assert result.exit_code == 0, result.stderr
            assert f"wrote {out}" in result.stderr
            built[traces] = out
        return built[traces]

    return page
