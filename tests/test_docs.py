"""Docs that stay true: docs/cli.md is the CLI's own --help (regenerated, compared), every command
is in it, and docs/json.md names every key the commands really print."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from enum import Enum
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

DOCS = ROOT / "docs"


def _gen_cli() -> Any:
    spec = importlib.util.spec_from_file_location("gen_cli", DOCS / "gen_cli.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gen_cli() -> Any:
    return _gen_cli()


def test_cli_reference_is_current(gen_cli: Any) -> None:
    current = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert current == gen_cli.render(), (
        "docs/cli.md does not match the CLI's --help; run: python docs/gen_cli.py"
    )


def test_every_command_is_documented(gen_cli: Any) -> None:
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    paths = gen_cli.command_paths()
    for expected in ("nsysq census", "nsysq diff", "nsysq plot timeline", "nsysq plot diff"):
        assert expected in paths
    missing = [p for p in paths if f"\n## {p}\n" not in text]
    assert not missing, f"undocumented commands {missing}; run: python docs/gen_cli.py"


def test_docs_link_each_other() -> None:
    cli = (DOCS / "cli.md").read_text(encoding="utf-8")
    js = (DOCS / "json.md").read_text(encoding="utf-8")
    for page in ("json.md", "diff.md", "rules.md"):
        assert f"]({page}" in cli
    for page in ("cli.md", "diff.md", "rules.md"):
        assert f"]({page}" in js
    for link in re.findall(r"\]\(([\w.]+\.(?:md|ipynb))", cli + js):
        assert (DOCS / link).exists(), f"docs link to missing page {link}"


# -- docs/json.md against real output ----------------------------------------------------------------
def _section(title: str) -> str:
    text = (DOCS / "json.md").read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, f"docs/json.md has no '## {title}' section"
    return match.group(1)


def _named(text: str) -> set[str]:
    """Every key written in backticks (``a`, `b``, ```x`, `y```)."""
    out: set[str] = set()
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    for chunk in re.findall(r"`([^`\n]+)`", text):
        out.update(p.strip() for p in chunk.split(","))
    return out


def _choices(param: Any) -> list[str]:
    """The values an option accepts (typer keeps the Enum; plain click keeps ``type.choices``)."""
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return [str(m.value) for m in annotation]
    return [str(c) for c in getattr(getattr(param, "type", None), "choices", ()) or ()]


def _json_commands(gen_cli: Any) -> list[str]:
    """Commands with a ``--format`` option that offers json."""
    found = []

    def visit(cmd: Any, path: str) -> None:
        for param in getattr(cmd, "params", []):
            if "--format" in getattr(param, "opts", []):
                if "json" in _choices(param):
                    found.append(path)
        for name, sub in getattr(cmd, "commands", {}).items():
            visit(sub, f"{path} {name}".strip())

    visit(gen_cli.root_command(), "")
    return found


def test_every_json_command_has_a_schema_section(gen_cli: Any) -> None:
    commands = _json_commands(gen_cli)
    assert {"info", "census", "lineup", "stakeout", "timeline", "diff"} <= set(commands)
    for command in commands:
        _section(command)


@cache
def _run_json(*args: str) -> Any:
    proc = subprocess.run(
        [sys.executable, "-c", "from nsysq.cli import main; main()", *args, "--format", "json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    a, b = ROOT / "examples" / "bs1.sqlite", ROOT / "examples" / "bs16.sqlite"
    if not (a.exists() and b.exists()):
        from nsysq.synth.scenarios import example_pair

        a, b = list(example_pair(tmp_path_factory.mktemp("examples")))[:2]
    return str(a), str(b)


def _undocumented(keys: set[str], section: str) -> set[str]:
    return keys - _named(_section(section))


TABLE_COMMANDS = [
    ("census", ("census", "{a}", "--limit", "5")),
    ("lineup", ("lineup", "{a}")),
    ("stakeout", ("stakeout", "{a}", "reshape_and_cache_flash_kernel", "--limit", "3")),
    ("timeline", ("timeline", "{a}", "--nvtx-lanes", "--limit", "50")),
    ("nvtx", ("nvtx", "{a}", "--limit", "0")),
    ("sql", ("sql", "{a}", "SELECT 1 AS one")),
    ("queries", ("queries",)),
    ("cache list", ("cache", "list")),
]


@pytest.mark.parametrize(("section", "args"), TABLE_COMMANDS, ids=[c[0] for c in TABLE_COMMANDS])
def test_table_documents_match_json_md(section: str, args: tuple[str, ...], example: tuple[str, str]) -> None:
    doc = _run_json(*(a.format(a=example[0]) for a in args))
    assert not _undocumented(set(doc), "The table document")
    assert doc["kind"] == section.split()[0]
    keys = set(doc["footer"])
    for value in doc["footer"].values():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            keys |= set(value[0])
    if section != "sql":
        keys |= set(doc["columns"])
    missing = _undocumented(keys, section)
    assert not missing, f"docs/json.md section '{section}' does not name {sorted(missing)}"


def test_info_matches_json_md(example: tuple[str, str]) -> None:
    doc = _run_json("info", example[0])
    keys = set(doc) | set(doc["gpus"][0]) | set(doc["counts"]) | set(doc["event_tables"])
    missing = _undocumented(keys, "info")
    assert not missing, f"docs/json.md section 'info' does not name {sorted(missing)}"


def test_diff_matches_json_md(example: tuple[str, str]) -> None:
    doc = _run_json("diff", example[0], example[1])
    keys = set(doc) | set(doc["a"]) | set(doc["params"]) | set(doc["findings"][0])
    missing = _undocumented(keys, "diff")
    assert not missing, f"docs/json.md section 'diff' does not name {sorted(missing)}"
    # every section's columns are named in json.md or in diff.md (which documents them in full)
    named = _named((DOCS / "json.md").read_text(encoding="utf-8")) | _named(
        (DOCS / "diff.md").read_text(encoding="utf-8")
    )
    columns = {k for v in doc.values() if isinstance(v, list) and v and isinstance(v[0], dict) for k in v[0]}
    assert not columns - named, f"diff columns documented nowhere: {sorted(columns - named)}"


# -- the walkthrough notebook ------------------------------------------------------------------------
def test_walkthrough_notebook_executes(example: tuple[str, str], tmp_path: Path) -> None:
    """docs/walkthrough.ipynb runs top to bottom against the current code, plots included."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    import os

    path = DOCS / "walkthrough.ipynb"
    nb = nbformat.read(path, as_version=4)
    committed = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert path.stat().st_size < 200_000 and len(committed) < 40, "strip the notebook's outputs"
    env = {"NSYSQ_EXAMPLES": str(Path(example[0]).parent), "MPLBACKEND": ""}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    os.environ.pop("MPLBACKEND")
    try:
        client = nbclient.NotebookClient(
            nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(DOCS)}}
        )
        client.execute()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 5, "every plot cell should show a figure"
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("nsysq.Trace" in h and "8,955" in h for h in html)  # the Trace summary card
    assert any("5.15" in h for h in html)  # the lineup ratio / diff categories


# -- exit codes ----------------------------------------------------------------------------------------
def test_every_exit_code_is_documented(gen_cli: Any) -> None:
    """docs/cli.md lists every code main() can exit with; the internal-error code is nobody else's."""
    from nsysq.cli import diff, root

    documented = set(root.EXIT_CODES)
    by_errors = {cls.exit_code for cls in gen_cli.error_classes()}
    assert by_errors <= documented, (
        f"exit codes of nsysq.base.errors not in EXIT_CODES: {by_errors - documented}"
    )
    assert {0, 2, diff.FAIL_EXIT_CODE, root.INTERRUPTED_EXIT_CODE} <= documented
    others = by_errors | {0, 2, diff.FAIL_EXIT_CODE, root.INTERRUPTED_EXIT_CODE}
    assert root.INTERNAL_ERROR_EXIT_CODE not in others
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    table = text.split("\n## Exit codes\n", 1)[1]
    for code in documented:
        assert f"\n| {code} | " in table
    for cls in gen_cli.error_classes():
        assert f"`{cls.__name__}`" in table
