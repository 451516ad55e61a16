"""Diff: compare two traces and name the change that is out of line with the rest.

Each trace is read once (``queries/diff_side_kernels.sql`` plus ``copies`` and the time span);
the small per-name aggregates of both sides are then joined in a scratch DuckDB database by the
SQL files in ``queries/diff/``. Python only turns the few resulting rows into findings.

The outlier method (documented in ``docs/diff.md``): for every row present in both traces with
at least ``min_time_ms`` on one side, take the log-ratio ``ln(B/A)`` of its time. The trace's
typical change is the time-weighted median of those log-ratios; the spread is the time-weighted
median absolute deviation (scaled by 1.4826 to match a standard deviation), never below
``MAD_FLOOR``. A row is an outlier when ``|log_ratio - median| / spread >= threshold``.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nsysq import catalog
from nsysq.errors import UsageError
from nsysq.table import TIME_UNITS, Table, check_unit

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

    from nsysq.rules import DangerRule, Rule
    from nsysq.trace import Trace

DEFAULT_MIN_TIME_MS = 0.5
"""Rows whose larger side is below this (ms) are never outliers and do not set the typical change."""
DEFAULT_THRESHOLD = 3.0
"""A row is an outlier when its robust score reaches this many spreads from the typical change."""
MAD_FLOOR = 0.25
"""Smallest spread (natural-log units): changes within ~1.28x of typical are never outliers."""
COPY_CHANGE = 1.2
"""A memcpy kind / memset whose operation count changes by this factor (either way) is a finding."""

FINDING_KINDS = (
    "outlier",
    "new_variants",
    "removed_variants",
    "danger",
    "copy_change",
    "launch_config",
)
FAIL_ON_ALIASES: dict[str, tuple[str, ...]] = {
    "new": ("new_variants",),
    "removed": ("removed_variants",),
    "variants": ("new_variants", "removed_variants"),
    "copy": ("copy_change",),
    "copies": ("copy_change",),
    "launch": ("launch_config",),
    "any": FINDING_KINDS,
}
SECTIONS = ("totals", "categories", "kernels", "variants", "launch_config", "danger", "copies")
_SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2}

RulesArg = str | Path | Sequence[Any] | None


# -- findings and the result --------------------------------------------------------------------
@dataclass
class Finding:
    """One line of the evidence board: the clue, the evidence with numbers, and a verdict.

    ``numbers`` holds the values behind the evidence; times in it are nanoseconds (keys end ``_ns``).
    """

    kind: str
    subject: str
    clue: str
    evidence: str
    verdict: str
    severity: str = "medium"
    numbers: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return _jsonable(asdict(self))


@dataclass
class DiffResult:
    """What ``nsysq.diff(a, b)`` returns. Section properties are pandas DataFrames (time in ns);
    ``tables`` holds the same sections as :class:`nsysq.table.Table` for rendering without pandas.
    """

    a: dict[str, Any]
    b: dict[str, Any]
    tables: dict[str, Table]
    findings: list[Finding]
    warnings: list[str]
    params: dict[str, Any]

    # DataFrame views for notebooks
    @property
    def totals(self) -> pd.DataFrame:
        return self.tables["totals"].to_pandas()

    @property
    def categories(self) -> pd.DataFrame:
        return self.tables["categories"].to_pandas()

    @property
    def kernels(self) -> pd.DataFrame:
        return self.tables["kernels"].to_pandas()

    @property
    def variants(self) -> pd.DataFrame:
        return self.tables["variants"].to_pandas()

    @property
    def launch_config(self) -> pd.DataFrame:
        return self.tables["launch_config"].to_pandas()

    @property
    def danger(self) -> pd.DataFrame:
        return self.tables["danger"].to_pandas()

    @property
    def copies(self) -> pd.DataFrame:
        return self.tables["copies"].to_pandas()

    @property
    def board(self) -> pd.DataFrame:
        return self.board_table().to_pandas()

    def findings_of(self, *kinds: str) -> list[Finding]:
        return [f for f in self.findings if f.kind in kinds]

    def section(self, name: str, unit: str = "ns") -> Table:
        """One section as a Table with every time in ``unit`` (totals included)."""
        if name not in self.tables:
            raise UsageError(f"unknown diff section {name!r}; use one of {', '.join(SECTIONS)}.")
        check_unit(unit)
        table = self.tables[name]
        if name == "totals":
            return _totals_in_unit(table, unit)
        return table.in_unit(unit)

    def board_table(self) -> Table:
        """The evidence board: one row per finding, most anomalous first."""
        rows = [
            (i, f.kind, f.severity, f.clue, f.evidence, f.verdict)
            for i, f in enumerate(self.findings, start=1)
        ]
        return Table(
            kind="diff_board",
            columns=("rank", "kind", "severity", "clue", "evidence", "verdict"),
            rows=rows,
        )

    def to_dict(self, unit: str = "ns") -> dict[str, Any]:
        """The JSON document (schema in docs/diff.md)."""
        check_unit(unit)
        out: dict[str, Any] = {
            "kind": "diff",
            "unit": unit,
            "a": self.a,
            "b": self.b,
            "params": self.params,
            "warnings": list(self.warnings),
            "queries": sorted({q for t in self.tables.values() for q in t.queries}),
        }
        for name in SECTIONS:
            out[name] = self.section(name, unit).records()
        out["findings"] = [f.to_dict() for f in self.findings]
        return _jsonable(out)

    def to_json(self, unit: str = "ns", indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(unit), indent=indent, ensure_ascii=False)

    def fails_on(self, kinds: Sequence[str]) -> list[Finding]:
        """The findings whose kind is in ``kinds`` (aliases: new, removed, variants, copy, launch, any)."""
        wanted = set(parse_fail_on(",".join(kinds)))
        return [f for f in self.findings if f.kind in wanted]


def parse_fail_on(text: str) -> tuple[str, ...]:
    """``"outlier,danger,new"`` -> finding kinds; raises UsageError for an unknown word."""
    kinds: list[str] = []
    for word in (w.strip().lower() for w in text.split(",")):
        if not word:
            continue
        if word in FINDING_KINDS:
            kinds.append(word)
        elif word in FAIL_ON_ALIASES:
            kinds.extend(FAIL_ON_ALIASES[word])
        else:
            choices = ", ".join((*FINDING_KINDS, *FAIL_ON_ALIASES))
            raise UsageError(f"--fail-on does not know {word!r}; use a comma list of {choices}.")
    return tuple(dict.fromkeys(kinds))


# -- the entry point ----------------------------------------------------------------------------
def diff(
    a: str | Path | Trace,
    b: str | Path | Trace,
    *,
    rules: RulesArg = None,
    danger_rules: RulesArg = None,
    min_time_ms: float = DEFAULT_MIN_TIME_MS,
    threshold: float = DEFAULT_THRESHOLD,
) -> DiffResult:
    """Compare trace ``a`` (before) with trace ``b`` (after); paths or open :class:`Trace` objects.

    ``rules`` / ``danger_rules``: a TOML file or a list of rules replacing the packaged ones.
    ``min_time_ms``: noise floor for the outlier test; ``threshold``: robust score cut-off.
    """
    from nsysq import rules as rules_mod
    from nsysq.trace import Trace

    if min_time_ms < 0 or not math.isfinite(min_time_ms):
        raise UsageError("--min-time must be a number of milliseconds >= 0.")
    if threshold <= 0 or not math.isfinite(threshold):
        raise UsageError("--threshold must be a positive number (robust spreads, default 3).")
    lineup_rules, rules_source = _lineup_rules(rules)
    if isinstance(danger_rules, (str, Path)):
        danger, danger_source = rules_mod.load_danger_rules(danger_rules), str(danger_rules)
    elif danger_rules is None:
        danger, danger_source = rules_mod.load_danger_rules(), "packaged danger_rules.toml"
    else:
        danger, danger_source = list(danger_rules), "given rules"

    opened: list[Trace] = []
    try:
        ta = a if isinstance(a, Trace) else _remember(opened, Trace(a))
        tb = b if isinstance(b, Trace) else _remember(opened, Trace(b))
        side_a = _read_side(ta, lineup_rules, rules_source)
        side_b = _read_side(tb, lineup_rules, rules_source)
    finally:
        for t in opened:
            t.close()

    params = {
        "min_time_ms": float(min_time_ms),
        "threshold": float(threshold),
        "mad_floor": MAD_FLOOR,
        "copy_change": COPY_CHANGE,
        "rules": rules_source,
        "danger_rules": danger_source,
    }
    tables = _combine(side_a, side_b, danger, min_ns=min_time_ms * 1e6, threshold=threshold)
    tables["totals"] = _totals(side_a, side_b)
    findings = _findings(tables, threshold)
    warnings = _warnings(side_a, side_b)
    return DiffResult(
        a=side_a["about"],
        b=side_b["about"],
        tables=tables,
        findings=findings,
        warnings=warnings,
        params=params,
    )


def _remember(opened: list[Trace], trace: Trace) -> Trace:
    opened.append(trace)
    return trace


def _lineup_rules(rules: RulesArg) -> tuple[list[Rule] | None, str]:
    from nsysq import rules as rules_mod

    if rules is None:
        return None, "packaged lineup_rules.toml"
    if isinstance(rules, (str, Path)):
        return rules_mod.load_lineup_rules(rules), str(rules)
    return list(rules), "given rules"


# -- reading one side ---------------------------------------------------------------------------
def _read_side(trace: Trace, rules: list[Rule] | None, source: str) -> dict[str, Any]:
    from nsysq import schema

    trace.materialize("kernel_groups", "nsysq_kernel_groups")  # the one pass over the kernel table
    if rules is None:
        trace.use_rules()
    else:
        trace.use_rules(rules, source=source)
    kernels = trace.run("diff_side_kernels")
    copies = trace.run("copies")
    span = _gpu_span(trace, copies)
    meta = _meta(trace)
    has_kernel_table = trace.schema.has(schema.KERNEL)
    about = {
        "path": str(trace.path),
        "name": trace.path.name,
        "nsys_version": meta["nsys_version"],
        "gpus": meta["gpus"],
        "kernels": int(sum(r[kernels.columns.index("calls")] for r in kernels.rows)),
        "has_kernel_table": has_kernel_table,
    }
    return {"about": about, "kernels": kernels, "copies": copies, "span": span}


def _gpu_span(trace: Trace, copies: Table) -> dict[str, Any]:
    """First GPU operation's start to the last one's end (kernels, memcpys, memsets), from rows
    already read: no extra pass over the trace (the CUDA API table alone is as large as the
    kernel table)."""
    ((first, last),) = trace.sql_table("SELECT min(first_start), max(last_end) FROM nsysq_kernel_groups").rows
    starts = [first, *(r["first_start"] for r in copies.records())]
    ends = [last, *(r["last_end"] for r in copies.records())]
    lo = min((v for v in starts if v is not None), default=None)
    hi = max((v for v in ends if v is not None), default=None)
    return {"t0": lo, "t_end": hi, "span_ns": None if lo is None or hi is None else hi - lo}


def _meta(trace: Trace) -> dict[str, Any]:
    """nsys version and GPU names, read cheaply (no full ``info``)."""
    from nsysq.info import identity

    return identity(trace)


# -- combining both sides in a scratch DuckDB ---------------------------------------------------
_TEXT_COLUMNS = {
    "short_name",
    "demangled_name",
    "category",
    "name_config_sig",
    "top_config",
    "top_grid",
    "top_block",
    "operation",
    "kind",
    "side",
    "field",
    "pattern",
    "reason",
}


@functools.cache
def _diff_query(filename: str) -> catalog.Query:
    root = importlib.resources.files("nsysq") / "queries" / "diff"
    return catalog.parse((root / filename).read_text(encoding="utf-8"), f"diff/{filename}")


def _load(con: duckdb.DuckDBPyConnection, name: str, columns: Sequence[str], rows: list[Any]) -> None:
    """Create temp table ``name`` from Python rows in one statement (one list parameter per column)."""
    cols = list(zip(*rows, strict=True)) if rows else [() for _ in columns]
    select = ", ".join(f"unnest($c{i}::{_sql_type(c)}[]) AS {c}" for i, c in enumerate(columns))
    params = {f"c{i}": [None if v is None else v for v in col] for i, col in enumerate(cols)}
    con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT {select}", params)


def _run(con: duckdb.DuckDBPyConnection, filename: str, **params: Any) -> Table:
    query = _diff_query(filename)
    bound = {p: params[p] for p in query.params}
    cur = con.execute(query.sql, bound) if bound else con.execute(query.sql)
    columns = tuple(d[0] for d in cur.description or ())
    return Table(
        kind=query.name, columns=columns, rows=cur.fetchall(), queries=(f"{query.name}@{query.version}",)
    )


def _materialize(con: duckdb.DuckDBPyConnection, name: str, filename: str, **params: Any) -> str:
    query = _diff_query(filename)
    bound = {p: params[p] for p in query.params}
    sql = f"CREATE OR REPLACE TEMP TABLE {name} AS {query.sql}"
    if bound:
        con.execute(sql, bound)
    else:
        con.execute(sql)
    return f"{query.name}@{query.version}"


def _scored(
    con: duckdb.DuckDBPyConnection,
    source: str,
    key: str,
    columns: str,
    *,
    min_ns: float,
    threshold: float,
) -> tuple[Table, str]:
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW score_input AS SELECT {key} AS key, a_ns, b_ns, status FROM {source}"
    )
    label = _materialize(con, "scores", "outliers.sql", min_ns=min_ns, threshold=threshold, floor=MAD_FLOOR)
    cur = con.execute(
        f"SELECT {columns}, s.log_ratio, s.center AS typical_log_ratio, s.score, s.eligible, s.outlier "
        f"FROM {source} AS t JOIN scores AS s ON s.key = t.{key} "
        "ORDER BY s.outlier DESC, greatest(t.a_ns, t.b_ns) DESC, t." + key
    )
    cols = tuple(d[0] for d in cur.description or ())
    return Table(kind=source, columns=cols, rows=cur.fetchall()), label


def _combine(
    side_a: dict[str, Any],
    side_b: dict[str, Any],
    danger: list[DangerRule],
    *,
    min_ns: float,
    threshold: float,
) -> dict[str, Table]:
    import duckdb

    con = duckdb.connect(":memory:")
    try:
        kcols = ("side", *side_a["kernels"].columns)
        _load(
            con,
            "side_kernels",
            kcols,
            [("a", *r) for r in side_a["kernels"].rows] + [("b", *r) for r in side_b["kernels"].rows],
        )
        ccols = ("side", "operation", "kind", "operations", "bytes", "total_ns")
        _load(
            con,
            "side_copies",
            ccols,
            [
                (
                    "a" if s is side_a else "b",
                    r["operation"],
                    r["kind"],
                    r["operations"],
                    r["bytes"],
                    r["total_ns"],
                )
                for s in (side_a, side_b)
                for r in s["copies"].records()
            ],
        )
        _load(
            con,
            "danger_rules",
            ("rule_order", "kind", "field", "pattern", "reason"),
            [(r.order, r.kind, r.field, r.like, r.reason) for r in danger],
        )
        base = ("diff_side_kernels@" + str(catalog.get("diff_side_kernels").version), "copies@1")

        k_label = _materialize(con, "kernel_rows", "kernels.sql")
        kernels, s_label = _scored(
            con,
            "kernel_rows",
            "name",
            "t.name, t.category, t.status, t.calls_a, t.calls_b, t.a_ns, t.b_ns, t.avg_a_ns, "
            "t.avg_b_ns, t.ratio, t.calls_ratio, t.per_call_ratio, t.pattern, t.family, "
            "t.variants_a, t.variants_b",
            min_ns=min_ns,
            threshold=threshold,
        )
        kernels = replace(kernels, kind="diff_kernels", queries=(*base, k_label, s_label))

        c_label = _materialize(con, "category_rows", "categories.sql")
        categories, _ = _scored(
            con,
            "category_rows",
            "category",
            "t.category, t.status, t.calls_a, t.calls_b, t.a_ns, t.b_ns, t.avg_a_ns, t.avg_b_ns, "
            "t.ratio, t.calls_ratio, t.per_call_ratio, t.kernels_a, t.kernels_b, t.top_kernel",
            min_ns=min_ns,
            threshold=threshold,
        )
        categories = replace(categories, kind="diff_categories", queries=(*base, c_label, s_label))

        variants = _run(con, "variants.sql")
        variants = replace(variants, queries=(*base, k_label, *variants.queries))
        launch = _run(con, "launch_config.sql")
        launch = replace(launch, queries=(*base, *launch.queries))
        danger_t = _run(con, "danger.sql")
        danger_t = replace(danger_t, queries=(*base, *danger_t.queries))
        copies = _run(con, "copies.sql")
        copies = replace(copies, queries=("copies@1", *copies.queries))
    finally:
        con.close()
    return {
        "categories": categories,
        "kernels": kernels,
        "variants": variants,
        "launch_config": launch,
        "danger": danger_t,
        "copies": copies,
    }


# -- totals ---------------------------------------------------------------------------------------
def _kind_slug(label: str) -> str:
    """'Device-to-Device' -> 'DtoD'; anything else -> a snake_case-ish token."""
    parts = label.split("-to-")
    if len(parts) == 2 and all(p.strip() for p in parts):
        return f"{parts[0].strip()[0].upper()}to{parts[1].strip()[0].upper()}"
    return "".join(ch if ch.isalnum() else "_" for ch in label).strip("_") or "unknown"


def _ratio(a: Any, b: Any) -> float | None:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a:
        return float(b) / float(a)
    return None


def _totals(side_a: dict[str, Any], side_b: dict[str, Any]) -> Table:
    def kernel_facts(side: dict[str, Any]) -> dict[str, Any]:
        recs = side["kernels"].records()
        return {
            "kernels": sum(int(r["calls"]) for r in recs),
            "kernel_time_ns": sum(int(r["total_ns"]) for r in recs),
            "distinct_kernel_names": len({r["short_name"] for r in recs}),
        }

    def copy_facts(side: dict[str, Any]) -> dict[str, Any]:
        recs = side["copies"].records()
        memcpy = [r for r in recs if r["operation"] == "memcpy"]
        memset = [r for r in recs if r["operation"] == "memset"]
        out: dict[str, Any] = {
            "memcpy_ops": sum(int(r["operations"]) for r in memcpy),
            "memcpy_bytes": sum(int(r["bytes"]) for r in memcpy),
        }
        for r in memcpy:
            slug = _kind_slug(str(r["kind"]))
            out[f"memcpy_ops_{slug}"] = int(r["operations"])
            out[f"memcpy_bytes_{slug}"] = int(r["bytes"])
        out["memset_ops"] = sum(int(r["operations"]) for r in memset)
        out["memset_bytes"] = sum(int(r["bytes"]) for r in memset)
        return out

    ka, kb = kernel_facts(side_a), kernel_facts(side_b)
    ca, cb = copy_facts(side_a), copy_facts(side_b)
    rows: list[tuple[Any, ...]] = []
    for key in ka:
        rows.append((key, ka[key], kb[key], _ratio(ka[key], kb[key])))
    copy_keys = list(dict.fromkeys([*ca, *cb]))
    per_kind = [k for k in copy_keys if k.startswith(("memcpy_ops_", "memcpy_bytes_"))]
    per_kind.sort(key=lambda k: (k.split("_", 2)[2], k.startswith("memcpy_bytes")))
    for key in ["memcpy_ops", "memcpy_bytes", *per_kind, "memset_ops", "memset_bytes"]:
        va, vb = ca.get(key, 0), cb.get(key, 0)
        rows.append((key, va, vb, _ratio(va, vb)))
    sa, sb = side_a["span"].get("span_ns"), side_b["span"].get("span_ns")
    rows.append(("gpu_span_ns", sa, sb, _ratio(sa, sb)))
    ga = ", ".join(side_a["about"]["gpus"]) or "unknown"
    gb = ", ".join(side_b["about"]["gpus"]) or "unknown"
    rows.append(("gpus", ga, gb, None))
    rows.append(("nsys_version", side_a["about"]["nsys_version"], side_b["about"]["nsys_version"], None))
    return Table(
        kind="diff_totals",
        columns=("metric", "a", "b", "ratio"),
        rows=rows,
        queries=tuple(
            f"{q.name}@{q.version}"
            for q in map(catalog.get, ("kernel_groups", "diff_side_kernels", "copies"))
        ),
    )


def _totals_in_unit(table: Table, unit: str) -> Table:
    if unit == "ns":
        return table
    scale = TIME_UNITS[unit]
    rows = [
        (
            (m[:-3] + "_" + unit, *(None if v is None else v / scale for v in (a, b)), r)
            if m.endswith("_ns")
            else (m, a, b, r)
        )
        for m, a, b, r in table.rows
    ]
    return replace(table, rows=rows, unit=unit)


# -- findings -------------------------------------------------------------------------------------
def fmt_time(ns: float | None) -> str:
    """88 ms, 6.17 ms, 1.25 s, 45.2 us: what a person would write."""
    if ns is None:
        return "-"
    v = float(ns)
    for div, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "us")):
        if abs(v) >= div:
            x = v / div
            return (
                f"{x:.2f} {unit}"
                if abs(x) < 10
                else f"{x:.3g} {unit}"
                if abs(x) < 1000
                else f"{x:,.0f} {unit}"
            )
    return f"{v:.0f} ns"


def fmt_bytes(n: float | None) -> str:
    """Decimal units, as nsys and the article use them: 81 MB, 163 MB, 8.88 MB."""
    if n is None:
        return "-"
    v = float(n)
    for div, unit in ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if abs(v) >= div:
            return f"{v / div:.3g} {unit}"
    return f"{v:.0f} B"


def _x(r: float | None) -> str:
    return "-" if r is None else f"{r:.2f}x"


def _per_call_verdict(calls_a: int, calls_b: int, per_call: float | None) -> str:
    same_calls = calls_a == calls_b
    steady = per_call is not None and abs(math.log(max(per_call, 1e-12))) < math.log(1.05)
    if same_calls and not steady and per_call is not None and per_call > 1:
        return (
            "More work per call, not more calls: the same launches process more data or take a different path"
        )
    if same_calls and not steady:
        return "Less work per call with the same launches: smaller inputs or a cheaper path"
    if steady and calls_b > calls_a:
        return "More launches of the same work: the kernel runs more often"
    if steady:
        return "Fewer launches of the same work"
    return "Both the number of launches and the work per launch changed"


def _findings(tables: dict[str, Table], threshold: float) -> list[Finding]:
    cats = tables["categories"].records()
    kerns = tables["kernels"].records()
    launch = {r["name"]: r for r in tables["launch_config"].records()}
    found: list[tuple[tuple[Any, ...], Finding]] = []

    def typical(rows: list[dict[str, Any]]) -> float | None:
        centers = [r["typical_log_ratio"] for r in rows if r["typical_log_ratio"] is not None]
        return math.exp(centers[0]) if centers else None

    cat_typical = typical(cats)
    kern_typical = typical(kerns)

    def launch_note(name: str) -> str:
        lc = launch.get(name)
        if not lc:
            return ""
        parts = []
        for fld, label in (
            ("grid", "grid"),
            ("block", "block"),
            ("registers", "registers"),
            ("smem", "smem"),
        ):
            va, vb = lc[f"{fld}_a"], lc[f"{fld}_b"]
            if va != vb:
                parts.append(f"{label} {va} → {vb}")
        return ("; launch " + ", ".join(parts)) if parts else ""

    # 1. outliers: categories, then kernels not explained by a flagged category
    flagged_cats = {r["category"] for r in cats if r["outlier"]}
    for r in cats:
        if not r["outlier"]:
            continue
        members = [k for k in kerns if k["category"] == r["category"] and k["status"] == "both"]
        members.sort(key=lambda k: (not k["outlier"], -abs(k["score"] or 0), -(k["b_ns"] or 0)))
        top = members[0] if members else None
        direction = "longer" if (r["ratio"] or 0) >= 1 else "shorter"
        evidence = (
            f"{r['category']}: {fmt_time(r['a_ns'])} → {fmt_time(r['b_ns'])} ({_x(r['ratio'])}), "
            f"{r['calls_a']:,} → {r['calls_b']:,} calls"
        )
        if top is not None:
            evidence += f"; {top['name']}: {top['pattern']}" + launch_note(top["name"])
        verdict = _per_call_verdict(int(r["calls_a"]), int(r["calls_b"]), r["per_call_ratio"])
        verdict += f"; out of line with the trace's typical {_x(cat_typical)} (score {r['score']:+.1f})"
        numbers = {
            "category": r["category"],
            "a_ns": r["a_ns"],
            "b_ns": r["b_ns"],
            "ratio": r["ratio"],
            "calls_a": r["calls_a"],
            "calls_b": r["calls_b"],
            "per_call_ratio": r["per_call_ratio"],
            "typical_ratio": cat_typical,
            "score": r["score"],
            "threshold": threshold,
            "kernel": top["name"] if top else None,
            "kernel_ratio": top["ratio"] if top else None,
            "kernel_per_call_ratio": top["per_call_ratio"] if top else None,
        }
        found.append(
            (
                (0, -abs(r["score"])),
                Finding(
                    kind="outlier",
                    subject=r["category"],
                    clue=f"{_x(r['ratio'])} {r['category']} time ({direction}; typical {_x(cat_typical)})",
                    evidence=evidence,
                    verdict=verdict,
                    severity="high",
                    numbers=numbers,
                ),
            )
        )
    for k in kerns:
        if not k["outlier"] or k["category"] in flagged_cats:
            continue
        direction = "longer" if (k["ratio"] or 0) >= 1 else "shorter"
        verdict = _per_call_verdict(int(k["calls_a"]), int(k["calls_b"]), k["per_call_ratio"])
        verdict += f"; out of line with the trace's typical {_x(kern_typical)} (score {k['score']:+.1f})"
        found.append(
            (
                (0, -abs(k["score"])),
                Finding(
                    kind="outlier",
                    subject=k["name"],
                    clue=f"{_x(k['ratio'])} {k['name']} time ({direction}; typical {_x(kern_typical)})",
                    evidence=(
                        f"{k['name']} ({k['category']}): {fmt_time(k['a_ns'])} → {fmt_time(k['b_ns'])}, "
                        f"{k['calls_a']:,} → {k['calls_b']:,} calls: {k['pattern']}" + launch_note(k["name"])
                    ),
                    verdict=verdict,
                    severity="high",
                    numbers={
                        "kernel": k["name"],
                        "category": k["category"],
                        "a_ns": k["a_ns"],
                        "b_ns": k["b_ns"],
                        "ratio": k["ratio"],
                        "calls_a": k["calls_a"],
                        "calls_b": k["calls_b"],
                        "per_call_ratio": k["per_call_ratio"],
                        "typical_ratio": kern_typical,
                        "score": k["score"],
                        "threshold": threshold,
                    },
                ),
            )
        )

    # 2. danger kernels whose presence differs
    danger_rows = tables["danger"].records()
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for r in danger_rows:
        by_kind.setdefault(r["kind"], []).append(r)
    for kind, rows in by_kind.items():
        presence = rows[0]["kind_presence"]
        only_a = [r for r in rows if r["presence"] == "A only"]
        only_b = [r for r in rows if r["presence"] == "B only"]
        if presence == "both" and not only_a and not only_b:
            continue  # the same danger kernels ran in both: listed in the danger section only

        def names(rs: list[dict[str, Any]], col: str, calls: str) -> str:
            shown = ", ".join(f"{r['name']} ({r[calls]:,} calls, {fmt_time(r[col])})" for r in rs[:3])
            return shown + (f" and {len(rs) - 3} more" if len(rs) > 3 else "")

        if presence == "B only":
            clue, severity, sort = f"{kind} kernels only in B", "high", 1
            evidence = "in B only: " + names(only_b, "b_ns", "calls_b")
        elif presence == "A only":
            clue, severity, sort = f"{kind} kernels only in A", "high", 1
            evidence = "in A only: " + names(only_a, "a_ns", "calls_a")
        else:
            clue, severity, sort = f"{kind}: different kernels picked", "medium", 4
            parts = []
            if only_a:
                parts.append("only in A: " + names(only_a, "a_ns", "calls_a"))
            if only_b:
                parts.append("only in B: " + names(only_b, "b_ns", "calls_b"))
            evidence = "; ".join(parts)
        found.append(
            (
                (sort, -sum(max(r["a_ns"], r["b_ns"]) for r in rows)),
                Finding(
                    kind="danger",
                    subject=kind,
                    clue=clue,
                    evidence=evidence,
                    verdict=rows[0]["reason"],
                    severity=severity,
                    numbers={
                        "danger_kind": kind,
                        "presence": presence,
                        "kernels_only_a": [r["name"] for r in only_a],
                        "kernels_only_b": [r["name"] for r in only_b],
                        "calls_a": sum(r["calls_a"] for r in rows),
                        "calls_b": sum(r["calls_b"] for r in rows),
                        "a_ns": sum(r["a_ns"] for r in rows),
                        "b_ns": sum(r["b_ns"] for r in rows),
                    },
                ),
            )
        )

    # 3. variants: kernels in only one trace, grouped by category / family
    for v in tables["variants"].records():
        n_new, n_old = int(v["new_kernels"]), int(v["removed_kernels"])
        cat, fam = v["category"], v["family"]
        fam_note = f" ({fam} family)" if fam else ""
        gemmish = any(w in cat.lower() for w in ("gemm", "cublas", "cutlass"))
        if n_new and n_old:
            kind = "new_variants"
            clue = f"{n_new} new {cat} variants"
            evidence = (
                f"{n_new} new {cat} variants ({fmt_time(v['new_ns'])}) replaced {n_old} "
                f"({fmt_time(v['removed_ns'])}){fam_note}"
            )
            if gemmish:
                verdict = (
                    "The library's heuristic / autotuner picked other tiles for the new shapes: "
                    "same math, different kernels and rounding"
                )
            elif "triton" in cat.lower():
                verdict = "torch.compile generated different kernels (re-fused or renumbered)"
            else:
                verdict = "Different kernel variants run for the same work"
        elif n_new:
            kind = "new_variants"
            clue = f"{n_new} new {cat} kernel{'s' if n_new > 1 else ''}"
            evidence = f"{n_new} {cat} kernel{_s(n_new)} only in B ({fmt_time(v['new_ns'])}): " + _short_list(
                v["new_names"]
            )
            verdict = "Code that did not run in A"
        else:
            kind = "removed_variants"
            clue = f"{n_old} {cat} kernel{'s' if n_old > 1 else ''} gone"
            evidence = (
                f"{n_old} {cat} kernel{_s(n_old)} only in A ({fmt_time(v['removed_ns'])}): "
                + _short_list(v["removed_names"])
            )
            verdict = "Code that ran in A no longer runs in B"
        total = float(v["new_ns"]) + float(v["removed_ns"])
        found.append(
            (
                (2, -total),
                Finding(
                    kind=kind,
                    subject=f"{cat}" + (f": {fam}" if fam else ""),
                    clue=clue,
                    evidence=evidence,
                    verdict=verdict,
                    severity="medium",
                    numbers={
                        "category": cat,
                        "family": fam,
                        "new_kernels": n_new,
                        "new_calls": v["new_calls"],
                        "new_ns": v["new_ns"],
                        "removed_kernels": n_old,
                        "removed_calls": v["removed_calls"],
                        "removed_ns": v["removed_ns"],
                        "new_names": _split(v["new_names"]),
                        "removed_names": _split(v["removed_names"]),
                    },
                ),
            )
        )

    # 4. copy changes (operation counts)
    for c in tables["copies"].records():
        oa, ob = int(c["ops_a"]), int(c["ops_b"])
        if max(oa, ob) < 5:
            continue
        r = ob / oa if oa else None
        if r is not None and 1 / COPY_CHANGE < r < COPY_CHANGE:
            continue
        what = "memsets" if c["operation"] == "memset" else f"{c['kind']} copies"
        if r is None:
            clue = f"{what} only in B"
        elif r == 0:
            clue = f"{what} only in A"
        else:
            pct = (r - 1) * 100
            clue = f"{abs(pct):.0f}% {'more' if pct > 0 else 'fewer'} {what}"
        evidence = f"{oa:,} → {ob:,} ops, {fmt_bytes(c['bytes_a'])} → {fmt_bytes(c['bytes_b'])}"
        kind_l = str(c["kind"]).lower()
        if c["operation"] == "memset":
            verdict = "More or fewer buffers zeroed: a different workspace or allocation pattern"
        elif "device-to-device" in kind_l or "dtod" in kind_l:
            verdict = "Copies inside the GPU changed: tensors are split, concatenated or staged differently"
        elif "host" in kind_l:
            verdict = "Host-device traffic changed: inputs or outputs move differently"
        else:
            verdict = "Memory traffic changed"
        found.append(
            (
                (3, -abs(math.log(r)) if r else -99.0),
                Finding(
                    kind="copy_change",
                    subject=f"{c['operation']} {c['kind']}" if c["operation"] == "memcpy" else "memset",
                    clue=clue,
                    evidence=evidence,
                    verdict=verdict,
                    severity="medium",
                    numbers={
                        "operation": c["operation"],
                        "copy_kind": c["kind"],
                        "ops_a": oa,
                        "ops_b": ob,
                        "ops_ratio": r,
                        "bytes_a": c["bytes_a"],
                        "bytes_b": c["bytes_b"],
                        "bytes_ratio": c["bytes_ratio"],
                    },
                ),
            )
        )

    # 5. launch configuration changes, one grouped finding
    lrows = tables["launch_config"].records()
    if lrows:
        shown = []
        for lc in lrows[:3]:
            parts = [
                f"{label} {lc[f'{fld}_a']} → {lc[f'{fld}_b']}"
                for fld, label in (
                    ("grid", "grid"),
                    ("block", "block"),
                    ("registers", "registers"),
                    ("smem", "smem"),
                )
                if lc[f"{fld}_a"] != lc[f"{fld}_b"]
            ]
            if not parts:
                parts = [f"{lc['configs_a']} → {lc['configs_b']} distinct configurations"]
            shown.append(f"{lc['name']} " + ", ".join(parts))
        more = f"; and {len(lrows) - 3} more" if len(lrows) > 3 else ""
        found.append(
            (
                (5, -len(lrows)),
                Finding(
                    kind="launch_config",
                    subject=f"{len(lrows)} kernels",
                    clue=f"Launch configuration changed for {len(lrows)} kernel{_s(len(lrows))}",
                    evidence="; ".join(shown) + more,
                    verdict="Same kernels launched with other grids, blocks, registers or shared memory: "
                    "the work per launch changed (expected when input shapes change)",
                    severity="low",
                    numbers={
                        "kernels": len(lrows),
                        "changes": [{"kernel": lc["name"], "changed": lc["changed"]} for lc in lrows],
                    },
                ),
            )
        )

    found.sort(key=lambda item: item[0])
    return [f for _, f in found]


def _s(n: int) -> str:
    return "s" if n != 1 else ""


def _sql_type(column: str) -> str:
    if column in _TEXT_COLUMNS:
        return "VARCHAR"
    return "DOUBLE" if column.endswith("_ratio") else "BIGINT"


def _split(names: str | None) -> list[str]:
    return [n for n in (names or "").split(", ") if n]


def _short_list(names: str | None, n: int = 3) -> str:
    items = _split(names)
    return ", ".join(items[:n]) + (f" and {len(items) - n} more" if len(items) > n else "")


def _warnings(side_a: dict[str, Any], side_b: dict[str, Any]) -> list[str]:
    out: list[str] = []
    a, b = side_a["about"], side_b["about"]
    if sorted(a["gpus"]) != sorted(b["gpus"]):
        out.append(
            f"the traces ran on different GPUs (A: {', '.join(a['gpus']) or 'unknown'}; "
            f"B: {', '.join(b['gpus']) or 'unknown'}): time ratios mix hardware and workload."
        )
    if a["nsys_version"] != b["nsys_version"]:
        out.append(
            f"the traces come from different nsys versions (A: {a['nsys_version']}; B: {b['nsys_version']})."
        )
    for label, side in (("A", a), ("B", b)):
        if not side["kernels"]:
            out.append(
                f"{label} ({side['name']}) recorded no CUDA kernels: only copies and totals are "
                "compared; profile with nsys profile --trace=cuda to capture kernels."
            )
    return out


def _jsonable(value: Any) -> Any:
    """Plain JSON values: NaN/inf -> None, Decimal -> float, tuples -> lists."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)
