"""Explain: what a kernel's name says (nsysq.catalog.kernel_names) and, with a trace, whether its
launches agree."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from nsysq import catalog
from nsysq.base.errors import UsageError
from nsysq.base.table import Table
from nsysq.catalog import kernel_names

if TYPE_CHECKING:
    from nsysq.session import Session

NO_DECODER = "no decoder for this family"


def explain(name: str, trace: Session | None = None) -> dict[str, Any]:
    """The decoded fields of ``name`` and, with ``trace``, its launch configurations there and the
    checks of the fields against each; a JSON-ready dict with stable keys (docs/json.md)."""
    queries: list[str] = []
    demangled, others = (None, 0)
    if trace is not None:
        demangled, others, queries = _demangled(trace, name)
    decoded = kernel_names.decode(demangled or name)
    out: dict[str, Any] = {
        "name": name,
        "demangled_name": demangled,
        "other_demangled_names": others,
        "decoded_from": decoded.decoded_from,
        "launcher": decoded.launcher,
        "family": decoded.family.id if decoded.family else None,
        "family_name": decoded.family.name if decoded.family else None,
        "library": decoded.family.library if decoded.family else None,
        "source": decoded.family.source if decoded.family else None,
        "decoder": f"queries/{kernel_names.RULES_FILE}" if decoded.family else NO_DECODER,
        "fields": [asdict(f) for f in decoded.fields],
        "template_arguments": list(decoded.template_arguments),
        "trace": None,
        "launch_configs": [],
        "checks": [],
        "disagreements": 0,
        "queries": queries,
    }
    if trace is not None:
        _with_launches(out, decoded, trace, name)
    return out


def _demangled(trace: Session, name: str) -> tuple[str | None, int, list[str]]:
    """The demangled name with the most launches among those ``name`` stands for in ``trace``, how
    many others there are, and the query labels read."""
    trace.require_kernels()
    summary = trace.run("stakeout_summary", kernel=name, match="exact")
    if not summary.rows:
        raise UsageError(f"no kernel is named {name!r} in {trace.path.name}; list names with nsysq census.")
    records = sorted(summary.records(), key=lambda r: (-r["instances"], -r["total_ns"]))
    return records[0]["demangled_name"], len(records) - 1, list(summary.queries)


def _with_launches(out: dict[str, Any], decoded: kernel_names.Decoded, trace: Session, name: str) -> None:
    configs = trace.run("launch_configs", kernel=name)
    out["trace"] = str(trace.path)
    out["queries"] += list(configs.queries)
    for index, config in enumerate(configs.records()):
        out["launch_configs"].append(config)
        for check in kernel_names.checks(decoded, config):
            out["checks"].append({"config": index, **asdict(check)})
    out["disagreements"] = sum(1 for c in out["checks"] if c["agrees"] is False)


def tables(data: dict[str, Any]) -> list[tuple[str, Table]]:
    """The sections of ``explain()`` as (title, Table) pairs for table, markdown and CSV output."""
    queries = tuple(data["queries"])
    family = data["family_name"] or NO_DECODER
    title = f"{data['name']}: {family}" + (f" (via {data['launcher']})" if data["launcher"] else "")
    fields = Table(
        kind="explain",
        columns=("field", "value", "confidence", "meaning", "evidence"),
        rows=[(f["field"], f["value"], f["confidence"], f["meaning"], f["evidence"]) for f in data["fields"]],
        queries=queries,
        footer={"family": data["family"], "source": data["source"] or NO_DECODER},
    )
    out = [(title, fields)]
    if data["template_arguments"]:
        rows = [(i, arg) for i, arg in enumerate(data["template_arguments"])]
        out.append(("template arguments", Table(kind="explain", columns=("index", "argument"), rows=rows)))
    if data["launch_configs"]:
        columns = tuple(data["launch_configs"][0])
        rows = [tuple(c.values()) for c in data["launch_configs"]]
        out.append(("launch configurations", Table(kind="explain", columns=columns, rows=rows)))
    if data["checks"]:
        columns = ("config", "check", "agrees", "detail")
        rows = [tuple(c[k] for k in columns) for c in data["checks"]]
        out.append(("checks against the launches", Table(kind="explain", columns=columns, rows=rows)))
    return out


def label() -> str:
    """The label of the query explain reads per launch configuration."""
    return catalog.get("launch_configs").label
