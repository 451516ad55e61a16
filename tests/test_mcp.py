"""``nsysq mcp``: the tools are the CLI's commands (one each, schemas from their options), and a real
client (the SDK's own stdio client) gets the CLI's JSON from them, bounded, and is refused whatever
the safety rules forbid, while the server keeps answering.

One server per module (started once, with --root and --out), one raw JSON-RPC server for garbage,
a server without --out and a tiny --timeout."""

from __future__ import annotations

import concurrent.futures
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main

from tests.conftest import REAL_TRACES, ROOT

pytest.importorskip("mcp", reason="the MCP SDK is the extra nsysq[mcp]: pip install -e '.[mcp]'")

import anyio  # noqa: E402  (installed with mcp)
from anyio.from_thread import BlockingPortal, start_blocking_portal  # noqa: E402
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from nsysq.agents import tools as tools_mod  # noqa: E402
from nsysq.agents.bounds import MAX_BYTES, bound, cut_rows  # noqa: E402
from nsysq.agents.entry import INSTALL_HINT, full_app  # noqa: E402

EXAMPLES = ROOT / "examples"
A, B = EXAMPLES / "bs1.sqlite", EXAMPLES / "bs16.sqlite"
NSYSQ = [sys.executable, "-m", "nsysq"]
SMALL_REAL = min(REAL_TRACES, key=lambda p: p.stat().st_size) if REAL_TRACES else None


# -- the tools are the commands ---------------------------------------------------------------------
def test_every_command_is_a_tool_or_excluded() -> None:
    commands = dict(tools_mod.leaf_commands(typer.main.get_command(full_app())))  # nsysq mcp included
    tools = tools_mod.build_tools(writes=True)
    by_command = {" ".join(t.command): t for t in tools.values()}
    missing = [c for c in commands if c not in by_command and c not in tools_mod.EXCLUDED]
    assert missing == [], f"commands without a tool (add --format json or list them in EXCLUDED): {missing}"
    assert set(tools_mod.EXCLUDED) <= set(commands), "EXCLUDED names a command that does not exist"
    analyses = "info census lineup stakeout timeline explain nvtx graphs gaps overlap diff queries sql"
    later = "stats check iters fleet_collectives"  # the commands of issues 24 and 25: reading tools
    for name in [*analyses.split(), *later.split(), "fleet_traces", "fleet_census", "fleet_lineup"]:
        assert name in tools and not tools[name].writes, name
    writers = {n for n, t in tools.items() if t.writes}
    assert {"report", "export", "plot_census", "plot_diff"} <= writers
    assert writers.isdisjoint(tools_mod.build_tools(writes=False)), "file writers need --out"


def _expected_property(param: Any) -> tuple[str, dict[str, Any]]:
    """What a click parameter must look like in a tool's schema (written here, not taken from the
    code under test)."""
    long_flags = [o for o in param.opts if o.startswith("--")]
    name = param.name if param.param_type_name == "argument" else long_flags[0][2:].replace("-", "_")
    kinds = {"IntParamType": "integer", "FloatParamType": "number", "BoolParamType": "boolean"}
    mro = [cls.__name__ for cls in type(param.type).__mro__]
    kind = (
        "boolean"
        if getattr(param, "is_flag", False)
        else next((kinds[n] for n in mro if n in kinds), "string")
    )
    item: dict[str, Any] = {"type": kind}
    values = [str(getattr(c, "value", c)) for c in getattr(param.type, "choices", None) or ()]
    if values:
        item["enum"] = values
    many = param.multiple or param.nargs == -1
    schema = {"type": "array", "items": item} if many else item
    if name == "limit":
        schema["default"] = tools_mod.DEFAULT_LIMIT
    elif not many and not param.required and param.default is not None:
        schema["default"] = getattr(param.default, "value", param.default)
    return name, {**schema, "description": (param.help or "").strip()}


def schema_drift(tool: tools_mod.ToolSpec, command: Any) -> list[str]:
    """How ``tool``'s schema differs from its command's options (empty: not at all)."""
    props = dict(tool.schema["properties"])
    required = set(tool.schema["required"])
    problems = []
    for param in command.params:
        if param.name in tools_mod.WITHHELD or (param.name == tools_mod.OUTPUT and not tool.writes):
            continue  # withheld: a reading tool's optional file output (nsysq stats -o) too
        name, expected = _expected_property(param)
        if name not in props:
            problems.append(f"{tool.name}: no argument for {param.opts}")
            continue
        got = props.pop(name)
        problems += [
            f"{tool.name}.{name}: {key} {got.get(key)!r} != {expected.get(key)!r}"
            for key in ("type", "enum", "items", "default")
            if got.get(key) != expected.get(key)
        ]
        if not got["description"].startswith(expected["description"]):
            problems.append(f"{tool.name}.{name}: description")
        if (name in required) != bool(param.required):
            problems.append(f"{tool.name}.{name}: required")
    if list(props) not in ([], ["limit"]):
        problems.append(f"{tool.name}: arguments of no option: {list(props)}")
    if tool.schema["additionalProperties"] is not False:
        problems.append(f"{tool.name}: takes arguments it does not name")
    return problems


def test_every_schema_is_its_commands_options() -> None:
    """Names, types, choices, defaults and help of every option (but the few a tool withholds) are
    the command's own; a tool has one more argument, limit, unless the command has its own."""
    commands = dict(tools_mod.leaf_commands())
    problems = [
        p for tool in tools_mod.build_tools(writes=True).values()
        for p in schema_drift(tool, commands[" ".join(tool.command)])
    ]  # fmt: skip
    assert problems == []


def test_a_drifted_schema_is_caught() -> None:
    """The check above can fail: a changed default, a lost option and a stray argument are told."""
    command = dict(tools_mod.leaf_commands())["gaps"]
    spec = tools_mod.tool_spec("gaps", command)
    assert spec is not None and schema_drift(spec, command) == []
    props = json.loads(json.dumps(spec.schema["properties"]))
    props["top"]["default"] = 11
    del props["min_gap"]
    props["shell"] = {"type": "string"}
    drifted = tools_mod.ToolSpec(**{**spec.__dict__, "schema": {**spec.schema, "properties": props}})
    assert schema_drift(drifted, command) == [
        "gaps.top: default 11 != 10",
        "gaps: no argument for ['--min-gap']",
        "gaps: arguments of no option: ['limit', 'shell']",
    ]


def test_the_prompt_without_a_baseline_has_no_diff() -> None:
    from nsysq.agents.server import investigate_text

    alone, paired = investigate_text("t.sqlite", None), investigate_text("t.sqlite", "a.sqlite")
    assert "diff" not in alone and "diff (a=a.sqlite, b=t.sqlite)" in paired


# -- bounds, as pure functions ---------------------------------------------------------------------
def test_rows_are_cut_and_said() -> None:
    doc = {"rows": [{"i": i} for i in range(30)], "footer": {"n": 30}, "columns": list("abc" * 10)}
    out = bound(doc, 20)
    assert len(out["rows"]) == 20 and out["columns"] == doc["columns"] and len(doc["rows"]) == 30
    assert out["cut"]["lists"] == [{"path": "rows", "kept": 20, "total": 30}]
    assert "limit" in out["cut"]["how"] and out["cut"]["reason"] == "limit"
    assert "cut" not in bound(doc, 30) and "cut" not in bound(doc, None)


def test_a_large_result_is_halved_until_it_fits() -> None:
    doc = {"rows": [{"text": "x" * 1000} for _ in range(1000)]}
    out = bound(doc, None)
    size = len(json.dumps(out))
    assert size <= MAX_BYTES and len(out["rows"]) >= 100
    assert out["cut"]["reason"].startswith("size")
    assert cut_rows(doc, 3)[1] == [{"path": "rows", "kept": 3, "total": 1000}]


# -- the server, through the SDK's client ------------------------------------------------------------
class Client:
    """A connected ClientSession, driven from the tests' thread through a blocking portal."""

    def __init__(self, portal: BlockingPortal, session: ClientSession) -> None:
        self.portal, self.session = portal, session

    def call(self, name: str, arguments: dict[str, Any], **kw: Any) -> Any:
        return self.portal.call(lambda: self.session.call_tool(name, arguments, **kw))

    def refused(self, name: str, arguments: dict[str, Any]) -> str:
        result = self.call(name, arguments)
        assert result.is_error, result
        text: str = result.content[0].text
        assert "\n" not in text.strip() and "Traceback" not in text
        return text


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("mcp")
    root, out, outside = base / "root", base / "out", base / "outside"
    for folder in (root, out, outside):
        folder.mkdir()
    (outside / "secret.sqlite").write_bytes(A.read_bytes()[:4096])
    (root / "out-link.sqlite").symlink_to(outside / "secret.sqlite")
    (root / "in-link.sqlite").symlink_to(A)
    (root / "notes.txt").write_text("not a trace\n", encoding="utf-8")
    return {"root": root, "out": out, "outside": outside, "cache": base / "cache"}


@pytest.fixture(scope="module")
def client(folders: dict[str, Path]) -> Iterator[Client]:
    roots = [EXAMPLES, folders["root"], *([SMALL_REAL.parent] if SMALL_REAL else [])]
    args = ["-m", "nsysq", "mcp", "--out", str(folders["out"]), "--jobs", "3"]
    for r in roots:
        args += ["--root", str(r)]
    env = {**os.environ, "NSYSQ_CACHE_DIR": str(folders["cache"])}
    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(ROOT), env=env)
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(stdio_client(params)) as (read, write):
            with portal.wrap_async_context_manager(ClientSession(read, write)) as session:
                portal.call(session.initialize)
                yield Client(portal, session)


def cli_json(*args: str | Path) -> Any:
    proc = subprocess.run([*NSYSQ, *map(str, args), "--format", "json"], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def trimmed(document: Any, keep: int) -> Any:
    """``document`` with every list of objects cut to ``keep`` items (the tests' own trim)."""
    if isinstance(document, dict):
        return {k: trimmed(v, keep) for k, v in document.items()}
    if isinstance(document, list):
        items = document[:keep] if document and all(isinstance(v, dict) for v in document) else document
        return [trimmed(v, keep) for v in items]
    return document


def ok(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    document: dict[str, Any] = result.structured_content
    assert json.loads(result.content[0].text) == document
    return document


def test_tools_listed_are_the_generated_ones(client: Client) -> None:
    listed = client.portal.call(client.session.list_tools).tools
    expected = tools_mod.build_tools(writes=True)
    assert [t.name for t in listed] == list(expected)
    for tool in listed:
        assert tool.input_schema == expected[tool.name].schema
        assert "limit" in tool.input_schema["properties"]


def test_census_is_the_clis_json_with_progress(client: Client) -> None:
    seen: list[str] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append(str(message))

    got = ok(client.call("census", {"trace": str(A), "limit": 5}, progress_callback=progress))
    expected = trimmed(cli_json("census", A, "--limit", "5"), 6)  # the top 5 and the 'other' row
    assert got == expected and len(got["rows"]) == 6
    assert any("started" in m for m in seen) and any("done" in m for m in seen)


def test_diff_is_the_clis_json_cut_by_limit(client: Client) -> None:
    got = ok(client.call("diff", {"a": str(A), "b": str(B), "limit": 4}))
    cut = got.pop("cut")
    assert got == trimmed(cli_json("diff", A, B, "--limit", "4"), 5)
    assert {c["path"] for c in cut["lists"]} >= {"kernels", "totals"}
    assert all(c["kept"] == 5 < c["total"] for c in cut["lists"])


def test_gaps_is_the_clis_json(client: Client) -> None:
    got = ok(client.call("gaps", {"trace": str(B), "top": 30, "limit": 7}))
    assert got.pop("cut")["lists"] == [{"path": "gaps", "kept": 7, "total": 30}]
    assert got == trimmed(cli_json("gaps", B, "--top", "30"), 7)


@pytest.mark.skipif(SMALL_REAL is None, reason="no real exports (tests/conftest.py REAL_DIR)")
def test_census_of_a_real_export(client: Client) -> None:
    assert SMALL_REAL is not None
    got = ok(client.call("census", {"trace": str(SMALL_REAL)}))
    got.pop("cut", None)
    assert got == trimmed(cli_json("census", SMALL_REAL), 21)


def test_a_relative_path_and_a_symlink_inside_are_read(client: Client, folders: dict[str, Path]) -> None:
    got = ok(client.call("info", {"trace": str(folders["root"] / "in-link.sqlite")}))
    assert got["path"] == str(A.resolve())
    assert ok(client.call("info", {"trace": A.name}))["path"] == str(A.resolve())  # from the first root
    assert ok(client.call("queries", {"limit": 0}))["rows"]


def test_paths_outside_the_roots_are_refused(client: Client, folders: dict[str, Path]) -> None:
    assert "outside" in client.refused("census", {"trace": str(folders["outside"] / "secret.sqlite")})
    assert "outside" in client.refused("census", {"trace": "/etc/hostname"})
    assert "outside" in client.refused("census", {"trace": str(folders["root"] / "out-link.sqlite")})
    assert "'..'" in client.refused("census", {"trace": str(EXAMPLES / ".." / "examples" / "bs1.sqlite")})
    assert "outside" in client.refused("lineup", {"trace": str(A), "rules": "/etc/passwd"})
    pattern = str(folders["root"] / "*.sqlite")  # a glob inside whose matches lead out
    assert "outside" in client.refused("fleet_traces", {"traces": [pattern]})


def test_sql_reads_only_the_trace(client: Client) -> None:
    count = ok(client.call("sql", {"trace": str(A), "query": "SELECT count(*) AS n FROM StringIds"}))
    assert count["rows"][0]["n"] > 0
    assert "read_csv" in client.refused(
        "sql", {"trace": str(A), "query": "SELECT * FROM read_csv('/etc/hostname')"}
    )
    assert "sqlite_scan" in client.refused(
        "sql", {"trace": str(A), "query": f"SELECT * FROM sqlite_scan('{B}', 'StringIds')"}
    )
    for query in ("SELECT 1; SELECT 2", "UPDATE StringIds SET value = 'x'", f"ATTACH '{B}' AS other",
                  "COPY StringIds TO '/tmp/nsysq-mcp.csv'", "INSTALL httpfs", "LOAD httpfs"):  # fmt: skip
        assert "exactly one read-only SELECT" in client.refused("sql", {"trace": str(A), "query": query})
    assert "does not exist" in client.refused(
        "sql", {"trace": str(A), "query": "SELECT * FROM '/etc/hostname'"}
    )


def test_a_result_is_capped_at_256_kb(client: Client) -> None:
    query = "SELECT i, repeat('x', 1000) AS text FROM range(1000) t(i)"  # about 1 MB of rows
    got = ok(client.call("sql", {"trace": str(A), "query": query, "limit": 0}))
    assert len(json.dumps(got, ensure_ascii=False)) <= MAX_BYTES
    (cut,) = got["cut"]["lists"]
    assert cut["path"] == "rows" and cut["total"] == 1000 and cut["kept"] == len(got["rows"]) > 100
    assert got["cut"]["reason"].startswith("size") and [r["i"] for r in got["rows"]] == list(
        range(cut["kept"])
    )


def test_writes_only_under_out(client: Client, folders: dict[str, Path]) -> None:
    got = ok(client.call("plot_lineup", {"trace": str(A), "output": "lineup.png"}))
    assert got["output"] == str(folders["out"].resolve() / "lineup.png") and got["bytes"] > 1000
    assert "outside" in client.refused(
        "report", {"traces": [str(A)], "output": str(folders["outside"] / "r.html")}
    )
    assert "'..'" in client.refused("report", {"traces": [str(A)], "output": "../r.html"})
    assert not (folders["outside"] / "r.html").exists()


def test_bad_inputs_are_tool_errors_and_the_server_goes_on(client: Client, folders: dict[str, Path]) -> None:
    assert "no tool" in client.refused("rm", {"path": "/"})
    assert "integer" in client.refused("census", {"trace": str(A), "limit": "many"})
    assert "integer" in client.refused("census", {"trace": str(A), "device": True})
    assert "takes short, demangled" in client.refused("census", {"trace": str(A), "names": "long"})
    assert "no argument" in client.refused("census", {"trace": str(A), "format": "csv"})
    assert "needs the argument trace" in client.refused("census", {})
    assert "not a SQLite file" in client.refused("census", {"trace": str(folders["root"] / "notes.txt")})
    sentence = client.refused("stakeout", {"trace": str(A), "kernel": "no_such_kernel"})
    assert "no_such_kernel" in sentence
    assert ok(client.call("lineup", {"trace": str(A)}))["kind"] == "lineup"


def test_ten_calls_at_once(client: Client) -> None:
    kernel = "nvjet_tst_64x8_64x16_4x1_v_bz_TNT"
    calls = [("census", {"trace": str(A)}), ("info", {"trace": str(B)}), ("queries", {}),
             ("explain", {"name": kernel}), ("lineup", {"trace": str(B)})] * 2  # fmt: skip

    async def all_at_once() -> list[Any]:
        results: list[Any] = [None] * len(calls)

        async def one(i: int) -> None:
            results[i] = await client.session.call_tool(*calls[i])

        async with anyio.create_task_group() as group:
            for i in range(len(calls)):
                group.start_soon(one, i)
        return results

    documents = [ok(r) for r in client.portal.call(all_at_once)]
    assert documents[:5] == documents[5:]
    assert [d.get("kind") for d in documents[:5]] == ["census", None, "queries", None, "lineup"]
    assert documents[0] == ok(client.call(*calls[0]))


def test_docs_are_resources_and_the_prompt_walks_the_method(client: Client) -> None:
    resources = client.portal.call(client.session.list_resources).resources
    uris = {str(r.uri) for r in resources}
    assert {"nsysq://docs/agents.md", "nsysq://docs/json.md"} <= uris
    page = client.portal.call(lambda: client.session.read_resource("nsysq://docs/agents.md"))
    assert "--root" in page.contents[0].text
    prompts = client.portal.call(client.session.list_prompts).prompts
    assert [p.name for p in prompts] == ["investigate"]
    got = client.portal.call(
        lambda: client.session.get_prompt("investigate", {"trace": "t.sqlite", "baseline": "a.sqlite"})
    )
    text = got.messages[0].content.text
    order = [
        text.index(step) for step in ("census", "lineup", "stakeout", "timeline", "gaps", "nvtx", "diff")
    ]
    assert order == sorted(order)


# -- raw JSON-RPC: garbage, no --out, a tiny --timeout ---------------------------------------------
def test_garbage_no_out_and_a_timeout(folders: dict[str, Path]) -> None:
    env = {**os.environ, "NSYSQ_CACHE_DIR": str(folders["cache"])}
    server = subprocess.Popen(
        [*NSYSQ, "mcp", "--root", str(EXAMPLES), "--timeout", "0.01"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT,
        env=env,
    )  # fmt: skip
    assert server.stdin and server.stdout

    def send(message: Any) -> None:
        assert server.stdin
        server.stdin.write((message if isinstance(message, str) else json.dumps(message)) + "\n")
        server.stdin.flush()

    reader = concurrent.futures.ThreadPoolExecutor(1)

    def answer(request_id: int) -> dict[str, Any]:
        assert server.stdout
        while True:  # a bounded wait: a server that stopped answering fails the test, never hangs it
            line = reader.submit(server.stdout.readline).result(timeout=120)
            message: dict[str, Any] = json.loads(line)
            if message.get("id") == request_id:
                return message

    try:
        send("{this is not json")
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        }
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
        assert answer(1)["result"]["serverInfo"]["name"] == "nsysq"
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "no/such/method"})
        assert "error" in answer(2)
        send('{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": 7}')  # no valid message: dropped
        send(
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "census", "arguments": 7}}
        )
        assert "error" in answer(3)
        send({"jsonrpc": "2.0", "id": 4, "method": "tools/list"})
        names = [t["name"] for t in answer(4)["result"]["tools"]]
        assert "census" in names and not {"report", "export", "plot_census"} & set(names)
        report = {"name": "report", "arguments": {"traces": [str(A)], "output": "r.html"}}
        send({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": report})
        refused = answer(7)["result"]
        assert refused["isError"] and "no tool 'report'" in refused["content"][0]["text"]
        send({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
              "params": {"name": "census", "arguments": {"trace": str(A)}}})  # fmt: skip
        result = answer(5)["result"]
        assert result["isError"] and "did not finish within" in result["content"][0]["text"]
        send({"jsonrpc": "2.0", "id": 6, "method": "ping"})
        assert answer(6)["result"] == {}
    finally:
        server.stdin.close()
        server.wait(timeout=30)
        reader.shutdown(wait=False)


def test_without_the_extra_one_sentence_and_exit_2() -> None:
    code = "import sys; sys.modules['mcp'] = None\nfrom nsysq.agents.entry import main\nmain()"
    proc = subprocess.run(
        [sys.executable, "-c", code, "mcp"], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"nsysq: error: {INSTALL_HINT}\n" and "pip install 'nsysq[mcp]'" in INSTALL_HINT


def test_cli_sql_is_sealed_too() -> None:
    proc = subprocess.run([*NSYSQ, "sql", str(A), "SELECT * FROM read_csv('/etc/hostname')"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)  # fmt: skip
    assert proc.returncode == 2 and proc.stdout == "" and "read_csv() is refused" in proc.stderr


# The server's threads (the fork server's start, each tool call waited for) import nothing: what
# they would is imported before they start (server.THREAD_IMPORTS; base/threads.before_threads).
_THREAD_AUDIT = """
import sys, threading
def hook(event, args):
    if event == "import" and threading.current_thread() is not threading.main_thread():
        if sys.modules.get(args[0], 0) is not None:  # None: an import refused on purpose
            sys.stderr.write(f"IMPORT {args[0]}\\n")
sys.addaudithook(hook)
from nsysq.agents import server, worker
from nsysq.base.threads import before_threads
before_threads(server.THREAD_IMPORTS)
thread = threading.Thread(target=worker.warm_up)
thread.start()
thread.join()
outcome = worker.Running(["--version"]).run(60.0)
assert outcome is not None and outcome.code == 0, outcome
"""


def test_the_servers_threads_import_nothing() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _THREAD_AUDIT], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "IMPORT " not in proc.stderr, proc.stderr
