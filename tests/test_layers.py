"""The layers hold: the import contracts in pyproject.toml ([tool.importlinter]) are kept, the CLI
has no runtime cycle, and the library and ``nsysq --help`` load no heavy module they do not need."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import KEEP_RUNNING, ROOT

pytest.importorskip("importlinter", reason="import-linter is in the [test] extra: pip install -e .[test]")

CONTRACTS = [
    "Layers: each package imports only the packages below it",
    "Command modules never import the CLI root",
    "Only the CLI imports typer",
    "rich only where output is drawn: tables, the diff board, the progress bar",
    "matplotlib only in the plot modules",
    "Nothing in nsysq imports the fixture generator nsysq.synth",
    "The fixture generator nsysq.synth stands alone (it writes exports, it never reads them)",
]
COMMAND_MODULES = ["analyses", "sql", "diff", "cache", "plot"]


def lint_imports(config: Path) -> subprocess.CompletedProcess[str]:
    """Run import-linter on this checkout's nsysq with ``config``; exit code 0 when all are kept."""
    code = (
        "import sys; from importlinter.cli import lint_imports; "
        "sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True, no_logo=True))"
    )
    return subprocess.run(
        [sys.executable, "-c", code, str(config)], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def loaded_modules(code: str, *names: str) -> list[str]:
    """Which of ``names`` are in sys.modules after running ``code`` in a fresh interpreter."""
    report = f"sys.stderr.write('LOADED:' + ','.join(m for m in {names!r} if m in sys.modules))"
    probe = f"{KEEP_RUNNING}{code}\nimport sys\n{report}"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "LOADED:" in out.stderr, out.stderr
    return [m for m in out.stderr.rpartition("LOADED:")[2].strip().split(",") if m]


def test_every_contract_is_configured() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    assert [c["name"] for c in config["contracts"]] == CONTRACTS


def test_import_contracts_are_kept() -> None:
    proc = lint_imports(ROOT / "pyproject.toml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in CONTRACTS:
        assert f"{name} KEPT" in " ".join(proc.stdout.split()), proc.stdout


def test_a_broken_contract_fails(tmp_path: Path) -> None:
    """The check can fail: a contract that the code breaks (the CLI imports the library) is reported."""
    config = tmp_path / "pyproject.toml"
    config.write_text(
        '[tool.importlinter]\nroot_package = "nsysq"\n\n[[tool.importlinter.contracts]]\n'
        'name = "the library imports the CLI (false)"\ntype = "layers"\n'
        'layers = ["nsysq.analyses.census", "nsysq.cli"]\n',
        encoding="utf-8",
    )
    proc = lint_imports(config)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "BROKEN" in proc.stdout and "nsysq.cli" in proc.stdout


def test_command_modules_load_without_the_root() -> None:
    """No runtime cycle: importing every command module (and the package) never runs the root."""
    imports = "; ".join(f"import nsysq.cli.{m}" for m in COMMAND_MODULES)
    assert loaded_modules(f"import nsysq.cli; {imports}", "nsysq.cli.root") == []


def test_import_nsysq_stays_light() -> None:
    heavy = ("typer", "click", "rich", "matplotlib", "duckdb", "pandas", "numpy")
    assert loaded_modules("import nsysq", *heavy) == []


def test_help_loads_no_engine() -> None:
    """``nsysq --help`` imports typer and the command modules, not the engine or the plots."""
    code = (
        "import runpy, sys\nsys.argv = ['nsysq', '--help']\n"
        "try:\n    runpy.run_module('nsysq', run_name='__main__')\nexcept SystemExit:\n    pass"
    )
    heavy = ("rich", "matplotlib", "duckdb", "pandas", "numpy", "nsysq.trace")
    assert loaded_modules(code, *heavy) == []
