"""The built wheel carries queries/ and rules: install it in a clean venv and run a query from elsewhere."""

from __future__ import annotations

import json
import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _build_wheel(out: Path, env: dict[str, str] | None = None) -> Path:
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
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return next(out.glob("nsysq-*.whl"))


def _platform() -> str:
    """This platform's wheel tag (PEP 425: sysconfig's platform, with '-' and '.' as '_')."""
    return re.sub(r"[-.]", "_", sysconfig.get_platform())


def test_wheel_ships_queries_and_runs_them(tmp_path: Path, fixture_dir: Path) -> None:
    wheels = tmp_path / "wheels"
    wheel = _build_wheel(wheels)
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {n.removeprefix("nsysq/queries/") for n in names if n.startswith("nsysq/queries/")}
    queries = ROOT / "queries"
    expected = {
        p.relative_to(queries).as_posix() for p in queries.rglob("*") if p.suffix in (".sql", ".toml")
    }
    assert expected and expected <= shipped
    if _compiler():  # hatch_build.py compiles the page decoder into the wheel
        assert "nsysq/export/_pages.so" in names and "nsysq/analyses/_sweep.so" in names
        # a ctypes library, not an extension module: any Python 3 on this platform, no ABI
        assert wheel.name.endswith(f"-py3-none-{_platform()}.whl"), wheel.name
        wheel_file = next(n for n in names if n.endswith(".dist-info/WHEEL"))
        metadata = zipfile.ZipFile(wheel).read(wheel_file).decode()
        assert f"Tag: py3-none-{_platform()}" in metadata and "Root-Is-Purelib: false" in metadata

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
        "from nsysq.export import pages;"
        "print(json.dumps({'file': nsysq.__file__, 'rows': len(t.census()), 'cats': len(t.lineup()),"
        " 'reader': t.session.kernel_reader, 'decoder': pages.available(),"
        " 'sums': __import__('nsysq.analyses.nvtx_native').analyses.nvtx_native.library() is not None}))"
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
        assert doc["sums"], doc  # the wheel's NVTX sums load from where it is installed


def test_wheel_without_a_compiler_is_pure(tmp_path: Path) -> None:
    """No C compiler ($CC names none): the wheel still builds, without the decoder, as py3-none-any."""
    wheel = _build_wheel(tmp_path, env={**os.environ, "CC": str(tmp_path / "no-such-cc")})
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    assert "nsysq/export/_pages.so" not in names and "nsysq/analyses/_sweep.so" not in names


def _compiler() -> str | None:
    import hatch_build

    return shutil.which(hatch_build.compiler()[0])


def test_decoder_is_built_wherever_a_compiler_exists() -> None:
    """Where a C compiler exists (CI included) the page decoder must load, or the page-decoding
    tests would all be skipped silently (conftest builds it for the checkout the suite imports)."""
    from nsysq.export import pages

    if _compiler() is None:
        import pytest

        pytest.skip("no C compiler: nsysq reads through the sqlite scanner")
    assert pages.available()
    from nsysq.analyses import nvtx_native

    assert nvtx_native.library() is not None  # and the NVTX sums, or nvtx's tests run numpy alone


def test_decoder_build_treats_warnings_as_errors(tmp_path: Path) -> None:
    """The wheel build's flags turn a warning in _pages.c into a failed build (and say why); the
    unchanged source builds cleanly under the same flags."""
    if _compiler() is None:
        import pytest

        pytest.skip("no C compiler")
    import hatch_build

    assert hatch_build.compile_decoder(ROOT, tmp_path / "clean.so") is None
    (tmp_path / "nsysq" / "export").mkdir(parents=True)
    source = (ROOT / "nsysq" / "export" / "_pages.c").read_text()
    # an implicit int64 -> int32 narrowing: only -Wconversion warns, and -Werror makes it fatal
    narrowing = (
        "int32_t nsysq_abi_version(void) { int64_t wide = NSYSQ_ABI_VERSION; int32_t v = wide; return v; }"
    )
    (tmp_path / "nsysq" / "export" / "_pages.c").write_text(
        source.replace("int32_t nsysq_abi_version(void) { return NSYSQ_ABI_VERSION; }", narrowing)
    )
    (tmp_path / "nsysq" / "export" / "_pages.h").write_text(
        (ROOT / "nsysq" / "export" / "_pages.h").read_text()
    )
    why = hatch_build.compile_decoder(tmp_path, tmp_path / "warned.so")
    assert why is not None and "-Werror=conversion" in why, why
