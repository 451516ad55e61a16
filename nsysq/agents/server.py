"""``nsysq mcp``: the Model Context Protocol server, on stdin/stdout, built on the official SDK
(``mcp``, the optional extra ``nsysq[mcp]``; imported only here).

Every tool call is checked (arguments against the tool's schema, every path against the --root
and --out folders), run as the CLI runs it in a child process (:mod:`nsysq.agents.worker`) with
a time limit and a bound on calls at once, and its JSON bounded (:mod:`nsysq.agents.bounds`).
A bad call is a tool error (``isError``) carrying nsysq's one sentence; the server goes on.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from nsysq.agents import worker
from nsysq.agents.bounds import Folders, bound
from nsysq.agents.tools import LIMIT, OUTPUT, Param, ToolSpec, build_tools, check_arguments
from nsysq.base.errors import UsageError
from nsysq.base.threads import before_threads
from nsysq.base.version import __version__

#: What the server's threads import: each tool call runs in a child process of the fork server
#: (worker.py), which a thread starts and waits for. Imported before the threads start.
THREAD_IMPORTS = (
    "multiprocessing.connection",
    "multiprocessing.forkserver",
    "multiprocessing.popen_fork",
    "multiprocessing.popen_forkserver",
    "multiprocessing.resource_tracker",
    "multiprocessing.spawn",
    "runpy",
)
_PACKAGED_DOCS = Path(__file__).resolve().parents[1] / "docs"  # in a wheel (hatch_build.py puts them there)
DOCS = _PACKAGED_DOCS if _PACKAGED_DOCS.is_dir() else Path(__file__).resolve().parents[2] / "docs"
PROGRESS_EVERY_S = 5.0
INSTRUCTIONS = (
    "nsysq reads Nsight Systems SQLite exports (nsys export --type=sqlite), read-only. Start with "
    "census (where GPU time goes), lineup (by category), then stakeout (one kernel's launches), "
    "timeline, gaps (why the GPU waited), nvtx (where in the program) and diff (two traces). Every "
    "result is nsysq's documented JSON (the docs are resources); lists are cut to `limit` rows."
)


@dataclass(frozen=True)
class Config:
    folders: Folders
    timeout_s: float
    jobs: int

    @classmethod
    def make(cls, roots: list[Path], out: Path | None, timeout_s: float, jobs: int) -> Config:
        return cls(Folders.make(roots, out), timeout_s, jobs)


def serve(config: Config) -> None:
    """Serve until stdin closes."""
    before_threads(THREAD_IMPORTS)  # the tool calls are waited for on threads
    anyio.run(_serve, config)


def build_server(config: Config) -> Server[Any]:
    tools = build_tools(writes=config.folders.out is not None)
    calls = anyio.Semaphore(config.jobs)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[_tool(spec) for spec in tools.values()])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        spec = tools.get(params.name)
        if spec is None:
            return error(f"there is no tool {params.name!r}; tools/list names them.")
        try:
            arguments = _confined(spec, check_arguments(spec, params.arguments or {}), config.folders)
            argv = spec.argv(arguments)
        except UsageError as exc:
            return error(str(exc))
        async with calls:
            done: types.CallToolResult = await _run(ctx, spec, argv, arguments, config.timeout_s)
        return done

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[_resource(p) for p in doc_pages()])

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        pages = {_uri(p): p for p in doc_pages()}
        page = pages.get(str(params.uri))
        if page is None:
            raise ValueError(f"no resource {params.uri}; resources/list names them.")
        text = page.read_text(encoding="utf-8")
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=_uri(page), mime_type="text/markdown", text=text)]
        )

    async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[PROMPT])

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        if params.name != PROMPT.name:
            raise ValueError(f"no prompt {params.name!r}; the one prompt is {PROMPT.name!r}.")
        args = params.arguments or {}
        text = investigate_text(args.get("trace", "TRACE"), args.get("baseline"))
        return types.GetPromptResult(
            description=PROMPT.description,
            messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))],
        )

    return Server(
        "nsysq",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )


async def _serve(config: Config) -> None:
    server = build_server(config)
    async with stdio_server() as (read, write), anyio.create_task_group() as group:
        group.start_soon(anyio.to_thread.run_sync, worker.warm_up)  # fd 1 is diverted by now
        await server.run(read, write, server.create_initialization_options())
        group.cancel_scope.cancel()


def _tool(spec: ToolSpec) -> types.Tool:
    annotations = types.ToolAnnotations(
        read_only_hint=not spec.writes, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )
    return types.Tool(
        name=spec.name, description=spec.description, input_schema=spec.schema, annotations=annotations
    )


def error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def _confined(spec: ToolSpec, arguments: dict[str, Any], folders: Folders) -> dict[str, Any]:
    """``arguments`` with every path replaced by its real path, checked against the folders."""
    out = dict(arguments)
    for p in spec.params:
        if p.path and out.get(p.name) is not None:
            out[p.name] = _real_paths(p, out[p.name], folders)
    return out


def _real_paths(p: Param, value: Any, folders: Folders) -> Any:
    if p.name == OUTPUT:
        return folders.writable(value)
    if not p.many:
        return folders.readable(value)
    from nsysq.fleet_analysis.inputs import expand

    given = [folders.readable(v) for v in value]  # a glob or a folder must lie inside, too
    return [folders.readable(v) for v in expand(given)]  # and so must each file it names


async def _run(ctx: Any, spec: ToolSpec, argv: list[str], arguments: dict[str, Any], timeout_s: float) -> Any:
    started = time.monotonic()
    await _progress(ctx, 0.0, f"{spec.name}: started")
    running = worker.Running(argv)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_report_while_running, ctx, spec.name, started)
            outcome = await anyio.to_thread.run_sync(running.run, timeout_s, abandon_on_cancel=True)
            group.cancel_scope.cancel()
    except BaseException:
        running.kill()
        raise
    elapsed = time.monotonic() - started
    await _progress(ctx, 1.0, f"{spec.name}: done in {elapsed:.1f} s")
    if outcome is None:
        return error(
            f"{spec.name} did not finish within the server's {timeout_s:g} s limit (--timeout); "
            "ask for less (a narrower scope: device, stream, pid, nvtx, a time window)."
        )
    return result(spec, outcome, arguments)


async def _report_while_running(ctx: Any, name: str, started: float) -> None:
    while True:
        await anyio.sleep(PROGRESS_EVERY_S)
        await _progress(ctx, 0.5, f"{name}: running for {time.monotonic() - started:.0f} s")


async def _progress(ctx: Any, progress: float, message: str) -> None:
    try:
        await ctx.session.report_progress(progress, 1.0, message)
    except Exception:  # progress is a courtesy: a client that cannot take it still gets the result
        pass


def result(spec: ToolSpec, outcome: worker.Outcome, arguments: dict[str, Any]) -> types.CallToolResult:
    """The tool's result for what the command did: its JSON, bounded, or its error sentence."""
    if outcome.error is not None:
        return error(outcome.error)
    try:
        document = _document(spec, outcome, arguments)
    except UsageError as exc:
        return error(str(exc))
    limit = int(arguments.get(LIMIT) or 0)
    keep = None if limit == 0 else limit + 1 if spec.own_limit else limit
    try:
        bounded = bound(document, keep)
    except UsageError as exc:
        return error(str(exc))
    content: list[types.ContentBlock] = [
        types.TextContent(type="text", text=json.dumps(bounded, ensure_ascii=False))
    ]
    if outcome.stderr:
        content.append(types.TextContent(type="text", text="\n".join(outcome.stderr)))
    return types.CallToolResult(content=content, structured_content=bounded, is_error=False)


def _document(spec: ToolSpec, outcome: worker.Outcome, arguments: dict[str, Any]) -> Any:
    if outcome.stdout.strip():
        try:
            document = json.loads(outcome.stdout)
        except json.JSONDecodeError:
            raise UsageError(f"{spec.name} printed no JSON (exit code {outcome.code}).") from None
    elif spec.writes:
        output = Path(arguments[OUTPUT])
        document = {"output": str(output), "bytes": output.stat().st_size if output.exists() else None}
    else:
        raise UsageError(f"{spec.name} printed nothing (exit code {outcome.code}).")
    if not isinstance(document, dict):
        document = {"result": document}
    if outcome.code:
        document["exit_code"] = outcome.code
    return document


def doc_pages() -> list[Path]:
    """The documentation pages served as resources: docs/*.md, shipped in the wheel or the checkout's."""
    return sorted(DOCS.glob("*.md")) if DOCS.is_dir() else []


def _uri(page: Path) -> str:
    return f"nsysq://docs/{page.name}"


def _resource(page: Path) -> types.Resource:
    first = next((ln.lstrip("# ").strip() for ln in page.read_text(encoding="utf-8").splitlines() if ln), "")
    return types.Resource(
        uri=_uri(page),
        name=page.name,
        title=first,
        description=f"nsysq docs: {first}",
        mime_type="text/markdown",
    )


PROMPT = types.Prompt(
    name="investigate",
    title="Investigate this trace",
    description="Investigate an Nsight Systems trace with nsysq's tools: census, lineup, stakeout, timeline, "
    "then gaps and nvtx, and diff against a baseline when one is given.",
    arguments=[
        types.PromptArgument(
            name="trace", description="The nsys SQLite export to investigate.", required=True
        ),
        types.PromptArgument(
            name="baseline", description="A baseline export to compare it with (diff).", required=False
        ),
    ],
)


def investigate_text(trace: str, baseline: str | None) -> str:
    steps = [
        f"Investigate the Nsight Systems export {trace} with the nsysq tools, one step at a time, "
        "saying after each what it shows and what to look at next:",
        f"1. census (trace={trace}): where GPU time goes, per kernel; note the top kernels, their share, "
        "`variants` above 1 and `underfilled_pct`.",
        f"2. lineup (trace={trace}): the same time by category (GEMM, attention, communication, ...).",
        f"3. stakeout (trace={trace}, kernel=<the top kernel>): every launch of the kernel that "
        "matters most; look for outliers in duration and for grid/block changes.",
        f"4. timeline (trace={trace}, from/to around the interesting region, in ms): what ran when, "
        "on which stream.",
        f"5. gaps (trace={trace}): why the GPU waited: idle time per device and stream, the longest gaps and "
        "their causes.",
        f"6. nvtx (trace={trace}): where in the program the GPU time was launched (NVTX "
        "ranges), if the trace has any.",
    ]
    if baseline:
        steps.append(
            f"7. diff (a={baseline}, b={trace}): what changed against the baseline; start from the evidence "
            "board (`findings`) and check its first clue with stakeout on both traces."
        )
    steps.append(
        "Finish with the two or three findings that explain most of the time, each with its numbers. "
        "Results are cut to `limit` rows (`cut` says what was cut); raise limit or narrow the scope for more."
    )
    return "\n".join(steps)
