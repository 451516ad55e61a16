"""The built wheel carries queries/ and rules: install it in a clean venv and run a query from elsewhere."""

from __future__ import annotations

import json
import shutil
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_ships_queries_and_runs_them(tmp_path: Path, fixture_dir: Path) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheels),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    wheel = next(wheels.glob("nsysq-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {Path(n).name for n in names if n.startswith("nsysq/queries/")}
    expected = {p.name for p in (ROOT / "queries").iterdir() if p.suffix in (".sql", ".toml")}
    assert expected and expected <= shipped
    if _compiler():  # hatch_build.py compiles the page decoder into the wheel
        assert "nsysq/_pages.so" in names
        assert not wheel.name.endswith("-none-any.whl"), wheel.name  # a platform wheel

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    purelib = Path(
        subprocess.run(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    # The wheel goes into the new venv; its dependencies come from this environment, added after it.
    deps = [sysconfig.get_paths()["purelib"], *site.getsitepackages()]
    (purelib / "zz_deps.pth").write_text("\n".join(dict.fromkeys(deps)) + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(purelib), str(wheel)],
        check=True,
        capture_output=True,
        text=True,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code = (
        "import json, sys, nsysq; t = nsysq.open(sys.argv[1]);"
        "from nsysq import pages;"
        "print(json.dumps({'file': nsysq.__file__, 'rows': len(t.census()), 'cats': len(t.lineup()),"
        " 'reader': t.kernel_reader, 'decoder': pages.available()}))"
    )
    out = subprocess.run(
        [str(py), "-c", code, str(fixture_dir / "v2024_6.sqlite")],
        cwd=elsewhere,
        check=True,
        capture_output=True,
        text=True,
    )
    doc = json.loads(out.stdout)
    assert doc["file"].startswith(str(purelib)), doc["file"]
    assert doc["rows"] > 0 and doc["cats"] > 0
    if _compiler():
        assert doc["decoder"] and doc["reader"] in ("pages", "cached copy"), doc


def _compiler() -> str | None:
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(cc)


def test_decoder_is_built_wherever_a_compiler_exists() -> None:
    """Where a C compiler exists (CI included) the page decoder must load, or the page-decoding
    tests would all be skipped silently (conftest builds it for the checkout the suite imports)."""
    from nsysq import pages

    if _compiler() is None:
        import pytest

        pytest.skip("no C compiler: nsysq reads through the sqlite scanner")
    assert pages.available()
