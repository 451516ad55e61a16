"""The MCP tools, generated from the CLI's own command tree: one tool per command that prints JSON
(``--format json``) or writes a file (``--output``), with an input schema made from the command's
own click parameters (names, types, defaults, choices, help). Nothing here is written twice: a
command added to the CLI is a tool as soon as it exists.

A tool's arguments become the command line the CLI parses (:meth:`ToolSpec.argv`): the same
parsing, conversion and checks as ``nsysq COMMAND ...`` in a shell.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import typer.main

from nsysq.base.errors import UsageError

EXCLUDED: dict[str, str] = {
    "cache list": "manages nsysq's cache, not a trace",
    "cache clear": "deletes nsysq's cache",
    "cache build": "manages nsysq's cache (every read builds it anyway)",
    "mcp": "the server itself",
}
"""Commands that are no tool, and why: the one list (tests/test_mcp.py fails on a command that is
neither a tool nor here)."""

WITHHELD: dict[str, str] = {
    "fmt": "always json",
    "show_sql": "prints SQL instead of the result",
    "show_sql_": "prints SQL instead of the result",
    "engine": "the server reads on this machine only (no Ray cluster)",
    "address": "the server reads on this machine only (no Ray cluster)",
}
"""Parameters (click names) of a command that its tool does not offer, and why."""

LIMIT = "limit"
DEFAULT_LIMIT = 20
LIMIT_HELP = (
    "At most this many rows in every list of the result (0 = every row, up to the size cap); "
    "what was cut is named in the result's `cut`."
)
OUTPUT = "output"


@dataclass(frozen=True)
class Param:
    """One command parameter as a tool argument: ``name`` in the tool's schema, ``dest`` the click name."""

    name: str
    dest: str
    schema: dict[str, Any]
    required: bool
    positional: bool
    flag: str | None = None  # the option's long flag (None: an argument)
    off_flag: str | None = None  # --no-x of a --x/--no-x boolean
    is_flag: bool = False
    many: bool = False
    path: bool = False


@dataclass(frozen=True)
class ToolSpec:
    """One command as a tool: ``command`` its words (``("fleet", "census")``)."""

    name: str
    command: tuple[str, ...]
    description: str
    params: tuple[Param, ...]
    json: bool  # the command takes --format json
    writes: bool  # the command writes a file (--output)
    own_limit: bool = False  # the command has a --limit of its own (it receives the tool's limit)
    schema: dict[str, Any] = field(default_factory=dict)

    def argv(self, arguments: Mapping[str, Any]) -> list[str]:
        """The command line for ``arguments`` (checked with :func:`check_arguments` first)."""
        options: list[str] = []
        positional: list[str] = []
        for p in self.params:
            if not p.dest or p.name not in arguments or arguments[p.name] is None:
                continue  # no dest: the server's own limit, no option of the command
            value = arguments[p.name]
            if p.positional:
                positional.extend(str(v) for v in (value if p.many else [value]))
            elif p.is_flag:
                if value:
                    options.append(str(p.flag))
                elif p.off_flag:
                    options.append(p.off_flag)
            else:
                for v in value if p.many else [value]:
                    options += [str(p.flag), str(v)]
        fmt = ["--format", "json"] if self.json else []
        return [*self.command, *fmt, *options, "--", *positional]


def root_command() -> Any:
    """The click command of the CLI's root (``nsysq mcp`` is there once nsysq.agents.entry added it;
    it is no tool either way)."""
    from nsysq.cli.root import app

    return typer.main.get_command(app)


def leaf_commands(
    cmd: Any = None, path: tuple[str, ...] = (), parent: Any = None
) -> Iterator[tuple[str, Any]]:
    """Every command that runs (no group), as (``"fleet census"``, click command), in --help order."""
    cmd = root_command() if cmd is None else cmd
    ctx = cmd.context_class(cmd, info_name=path[-1] if path else "nsysq", parent=parent)
    if hasattr(cmd, "list_commands"):
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is not None and not getattr(sub, "hidden", False):
                yield from leaf_commands(sub, (*path, name), ctx)
        return
    yield " ".join(path), cmd


def build_tools(*, writes: bool) -> dict[str, ToolSpec]:
    """Every tool by name; with ``writes`` (``--out DIR`` given) the commands that write files too."""
    tools = {}
    for path, cmd in leaf_commands():
        if path in EXCLUDED:
            continue
        spec = tool_spec(path, cmd)
        if spec is not None and (writes or not spec.writes):
            tools[spec.name] = spec
    return tools


def tool_spec(path: str, cmd: Any) -> ToolSpec | None:
    """The tool of one command, or None when it neither prints JSON nor writes a file."""
    params = {p.name: p for p in cmd.params}
    fmt = params.get("fmt")
    takes_json = fmt is not None and "json" in choices(fmt)
    # A command whose file output is optional and prints JSON without it (nsysq stats -o PREFIX)
    # is a reading tool, its --output withheld; one that always writes (export, report) a writer.
    optional_output = OUTPUT in params and takes_json and not params[OUTPUT].required
    writes = OUTPUT in params and not optional_output
    if not (takes_json or writes):
        return None
    withheld = {*WITHHELD, *([OUTPUT] if optional_output else [])}
    offered = tuple(
        _param(p) for p in cmd.params if p.name not in withheld and getattr(p, "expose_value", True)
    )
    own_limit = any(p.name == LIMIT for p in offered)
    if own_limit:
        offered = tuple(_merged_limit(p) if p.name == LIMIT else p for p in offered)
    else:
        offered += (_limit_param(),)
    help_text = (cmd.help or cmd.short_help or "").strip()
    spec = ToolSpec(
        name=path.replace(" ", "_"),
        command=tuple(path.split()),
        description=f"nsysq {path}: {help_text}",
        params=offered,
        json=takes_json,
        writes=writes,
        own_limit=own_limit,
    )
    return ToolSpec(**{**spec.__dict__, "schema": input_schema(spec)})


def input_schema(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {p.name: p.schema for p in spec.params},
        "required": [p.name for p in spec.params if p.required],
        "additionalProperties": False,
    }


def choices(param: Any) -> list[str]:
    """The values a parameter accepts (typer keeps the Enum; plain click keeps ``type.choices``)."""
    return [str(getattr(c, "value", c)) for c in getattr(param.type, "choices", None) or ()]


def _name(param: Any) -> str:
    """The argument's name in the tool: the long flag without dashes (``--time-unit`` is
    ``time_unit``, ``--from`` is ``from``), an argument's own name."""
    long_flags = [o for o in param.opts if o.startswith("--")]
    if param.param_type_name == "argument" or not long_flags:
        return str(param.name)
    return str(long_flags[0][2:].replace("-", "_"))


_KINDS = {"IntParamType": "integer", "FloatParamType": "number", "BoolParamType": "boolean"}


def _json_type(param: Any) -> dict[str, Any]:
    """The JSON type of a parameter's click type (IntRange is an IntParamType, ...; else a string)."""
    names = [cls.__name__ for cls in type(param.type).__mro__]
    kind = next((_KINDS[n] for n in names if n in _KINDS), "string")
    out: dict[str, Any] = {"type": kind}
    if choices(param):
        out["enum"] = choices(param)
    return out


def _default(param: Any) -> Any:
    value = param.default
    if callable(value) or value is None or param.required:
        return None
    return getattr(value, "value", value)


def _param(param: Any) -> Param:
    item = _json_type(param)
    many = bool(param.multiple or param.nargs == -1)
    schema: dict[str, Any] = {"type": "array", "items": item} if many else dict(item)
    is_flag = bool(getattr(param, "is_flag", False))
    if is_flag:
        schema = {"type": "boolean"}
    help_text = (getattr(param, "help", None) or "").strip()
    is_path = type(param.type).__name__ in ("TyperPath", "Path") and _name(param) != OUTPUT
    if is_path:
        help_text += " A path under the server's --root folders."
    if _name(param) == OUTPUT:
        help_text += " A file name under the server's --out folder."
    if help_text:
        schema["description"] = help_text
    default = _default(param)
    if default is not None and not many:
        schema["default"] = default
    long_flags = [o for o in param.opts if o.startswith("--")]
    off = [o for o in getattr(param, "secondary_opts", []) if o.startswith("--")]
    return Param(
        name=_name(param),
        dest=str(param.name),
        schema=schema,
        required=bool(param.required),
        positional=param.param_type_name == "argument",
        flag=long_flags[0] if long_flags else None,
        off_flag=off[0] if off else None,
        is_flag=is_flag,
        many=many,
        path=is_path or _name(param) == OUTPUT,
    )


def _limit_param() -> Param:
    schema = {"type": "integer", "minimum": 0, "default": DEFAULT_LIMIT, "description": LIMIT_HELP}
    return Param(name=LIMIT, dest="", schema=schema, required=False, positional=False)


def _merged_limit(own: Param) -> Param:
    """A command's own --limit is the tool's limit: the command gets it, and the cap allows its one
    summary row (census's 'other') beyond it."""
    described = f"{own.schema.get('description', '')} {LIMIT_HELP}".strip()
    schema = {**own.schema, "minimum": 0, "default": DEFAULT_LIMIT, "description": described}
    return Param(**{**own.__dict__, "schema": schema})


def check_arguments(spec: ToolSpec, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """``arguments`` checked against the tool's schema (types, choices, required), with the tool's
    ``limit`` filled in; a bad one is a UsageError naming it."""
    known = {p.name: p for p in spec.params}
    unknown = sorted(set(arguments) - set(known))
    if unknown:
        raise UsageError(f"{spec.name} takes no argument {', '.join(unknown)}; it takes {', '.join(known)}.")
    out = dict(arguments)
    for p in spec.params:
        if p.name not in out or out[p.name] is None:
            if p.required:
                raise UsageError(f"{spec.name} needs the argument {p.name}.")
            continue
        values = out[p.name] if p.many else [out[p.name]]
        if p.many and not isinstance(out[p.name], list):
            raise UsageError(f"argument {p.name} must be a list.")
        item = p.schema["items"] if p.many else p.schema
        for value in values:
            _check_value(p.name, value, item)
    out.setdefault(LIMIT, DEFAULT_LIMIT)
    return out


_PY_TYPES: dict[str, tuple[type, ...]] = {
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "string": (str,),
}


def _check_value(name: str, value: Any, schema: Mapping[str, Any]) -> None:
    kind = schema["type"]
    wrong_bool = isinstance(value, bool) and kind != "boolean"
    if wrong_bool or not isinstance(value, _PY_TYPES[kind]):
        raise UsageError(
            f"argument {name} must be {'an' if kind == 'integer' else 'a'} {kind}, not {value!r}."
        )
    if "enum" in schema and value not in schema["enum"]:
        raise UsageError(f"argument {name} takes {', '.join(schema['enum'])}, not {value!r}.")
    if "minimum" in schema and value < schema["minimum"]:
        raise UsageError(f"argument {name} must be {schema['minimum']} or more.")
