"""The layers hold: the import contracts in pyproject.toml ([tool.importlinter]) are kept, every
module belongs to a layer, no import statement anywhere in nsysq/ (at the top, inside a function or
under TYPE_CHECKING) closes a circle, the package has at most 16 entries and ``nsysq.Trace`` at most
12 public names, and the library and ``nsysq --help`` load no heavy module they do not need."""

from __future__ import annotations

import ast
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
COMMAND_MODULES = sorted(
    p.stem for p in (ROOT / "nsysq" / "cli").glob("*.py") if p.stem not in ("__init__", "root")
)
PACKAGE = ROOT / "nsysq"
#: The fixture generator has contracts of its own (it imports nothing of nsysq, nothing imports it).
OUTSIDE_LAYERS = ("nsysq", "nsysq.__main__", "nsysq.synth")


def module_names() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its __init__)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def imported(tree: ast.AST, modules: set[str]) -> set[str]:
    """The nsysq modules every import statement of ``tree`` names, wherever the statement stands
    (module level, a function, ``if TYPE_CHECKING:``). ``from a import b`` names ``a.b`` when that
    is a module, else ``a``."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                out.add(full if full in modules else node.module)
    return {name for name in out if name in modules}


def import_graph() -> dict[str, set[str]]:
    modules = module_names()
    return {
        name: imported(ast.parse(path.read_text(encoding="utf-8")), set(modules)) - {name}
        for name, path in modules.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The circles of ``graph``: its strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


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


@pytest.mark.parametrize("option", ["--help", "--version"])
def test_help_loads_no_engine(option: str) -> None:
    """``nsysq --help`` (and ``--version``; shell completion is on) imports typer and the command
    modules, not the engine or the plots."""
    code = (
        f"import runpy, sys\nsys.argv = ['nsysq', '{option}']\n"
        "try:\n    runpy.run_module('nsysq', run_name='__main__')\nexcept SystemExit:\n    pass"
    )
    heavy = (
        "rich", "matplotlib", "duckdb", "pandas", "numpy", "nsysq.trace", "nsysq.session.session",
        "nsysq.export.reader", "nsysq.export.cache",
    )  # fmt: skip
    assert loaded_modules(code, *heavy) == []


def test_the_programs_first_duckdb_import_skips_importlib_metadata() -> None:
    """``nsysq`` (nsysq.cli.root.main) has duckdb read its version from its dist-info without
    importing importlib.metadata (nsysq.export.engine.quick_duckdb_import): the same version, and
    nothing of the stand-in left behind."""
    code = (
        "import sys\nfrom nsysq.export import engine\nengine.quick_duckdb_import()\nimport duckdb\n"
        "assert 'importlib.metadata' not in sys.modules\n"
        "assert not any(type(f).__name__ == '_DuckDBFirstImport' for f in sys.meta_path)\n"
        "import importlib.metadata\nassert duckdb.__version__ == importlib.metadata.version('duckdb')\n"
        "assert importlib.metadata.distribution('duckdb').metadata['Name'] == 'duckdb'"
    )
    assert loaded_modules(code) == []


def test_the_programs_first_duckdb_import_opens_no_instance_of_its_own() -> None:
    """duckdb's import opens its default connection (a whole instance) to parse type names; under
    quick_duckdb_import that connection is the one nsysq's first connect() takes, with nsysq's
    settings and the sqlite extension, and a second connect() opens a new one."""
    code = """
from nsysq.export import engine
setting = "SELECT current_setting('{}')".format
loaded = "SELECT count(*) FROM duckdb_extensions() WHERE extension_name = 'sqlite_scanner' AND loaded"
engine.quick_duckdb_import()
import duckdb
spare = engine._SPARE[True]
assert duckdb.default_connection() is spare
first = engine.connect()
assert first is spare and not engine._SPARE
assert first.execute(setting("allow_unsigned_extensions")).fetchone() == (True,)
assert first.execute(setting("autoload_known_extensions")).fetchone() == (False,)
assert first.execute(loaded).fetchone() == (1,)
assert engine.connect() is not first
cached = engine.connect(sqlite=False)
assert cached.execute(setting("allow_unsigned_extensions")).fetchone() == (False,)
assert duckdb.NUMBER == duckdb.sqltypes.BIGINT and duckdb.STRING == duckdb.sqltypes.VARCHAR
"""
    assert loaded_modules(code) == []
    cached_first = """
from nsysq.export import engine
setting = "SELECT current_setting('allow_unsigned_extensions')"
engine.quick_duckdb_import()
engine.first_connection_reads(export=False)
import duckdb
spare = engine._SPARE[False]
assert engine.connect() is not spare
cached = engine.connect(sqlite=False)
assert cached is spare and cached.execute(setting).fetchone() == (False,)
"""
    assert loaded_modules(cached_first) == []
    refused = """
import _duckdb
real, calls = _duckdb.connect, []
def refuse_first(*args, **kwargs):  # the spare's connection fails: duckdb opens its own default
    calls.append(1)
    if len(calls) == 1:
        raise _duckdb.IOException("refused")
    return real(*args, **kwargs)
_duckdb.connect = refuse_first
from nsysq.export import engine
engine.quick_duckdb_import()
import duckdb
assert calls and not engine._SPARE
assert engine.connect().execute("SELECT 1").fetchone() == (1,)
"""
    assert loaded_modules(refused) == []


def test_no_import_circle_anywhere() -> None:
    """No circle among nsysq's modules, counting every import statement: module level, inside
    functions and under TYPE_CHECKING (only imports of third-party libraries may be lazy)."""
    assert cycles(import_graph()) == []


def test_the_circle_check_can_fail() -> None:
    """A function-level import back to a module's importer is a circle the check reports."""
    a = ast.parse("from nsysq.session import Session\n")
    b = ast.parse("def f():\n    from nsysq import trace\n")
    modules = {"nsysq.trace", "nsysq.session"}
    graph = {"nsysq.trace": imported(a, modules), "nsysq.session": imported(b, modules)}
    assert cycles(graph) == [["nsysq.session", "nsysq.trace"]]


def test_every_module_is_in_a_layer() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    layers = next(c for c in config["contracts"] if c["type"] == "layers")["layers"]
    packages = [p.strip(" ()") for layer in layers for p in layer.replace("|", ":").split(":")]
    homeless = [
        name
        for name in module_names()
        if name not in OUTSIDE_LAYERS
        and not name.startswith("nsysq.synth.")
        and not any(name == p or name.startswith(p + ".") for p in packages)
    ]
    assert homeless == [], f"modules in no layer of pyproject.toml's layers contract: {homeless}"


def test_the_house_has_at_most_16_rooms() -> None:
    """Directly under nsysq/: at most 16 modules and packages (__init__ and __main__ not counted)."""
    rooms = [
        p.name
        for p in PACKAGE.iterdir()
        if not p.is_symlink()
        and ((p.suffix == ".py" and p.stem not in ("__init__", "__main__")) or (p / "__init__.py").is_file())
    ]
    assert len(rooms) <= 16, sorted(rooms)


def test_the_trace_face_is_small() -> None:
    """``nsysq.Trace`` keeps what a notebook user calls: at most 12 public names."""
    from nsysq.trace import Trace

    with_session = {"session", "path"}  # set in __init__
    public = {n for n in dir(Trace) if not n.startswith("_")} | with_session
    assert len(public) <= 12, sorted(public)
    assert {"census", "lineup", "stakeout", "timeline", "nvtx", "graphs", "info", "sql", "close"} <= public


def test_tests_find_the_shared_folder_only_through_conftest() -> None:
    """Every test reaches ``../shared`` through tests/conftest.py's SHARED_DIR / REAL_DIR (which
    NSYSQ_SHARED_DIR moves), so .ci/run's second pass with the folder hidden covers every test that
    reads it: a test module that builds the path on its own would escape that run."""
    import re

    own_path = re.compile(r"""parents\[2\]|["']\.\./shared|/work/shared|["']shared["']|shared/traces""")
    offenders = [
        f"{path.name}:{number}"
        for path in sorted((ROOT / "tests").glob("*.py"))
        if path.name != "conftest.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if own_path.search(line) and not line.lstrip().startswith("#") and "own_path" not in line
    ]
    assert offenders == []
