"""Kernel names split into named fields, each with its meaning and how sure nsysq is of it.

The rules are data (``queries/rules/kernel_name_rules.toml``, its header says how they read); this module
applies them: drop ``void`` and the argument list, unwrap generic launchers
(``cutlass::device_kernel<Op>`` decodes as ``Op``), find the family, read its fields, and check
them against a launch (shared memory vs tile x stages, threads vs warps, persistent grids).
A name no family matches gets its template arguments split from the demangled name instead.
"""

from __future__ import annotations

import functools
import importlib.resources
import math
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any

from nsysq.base.errors import UsageError

CONFIDENCES = ("documented", "inferred", "unknown")
RULES_FILE = "kernel_name_rules.toml"


@dataclass(frozen=True)
class Field:
    """One decoded field: ``value`` as read from the name, with its meaning and confidence."""

    field: str
    label: str
    value: str
    meaning: str
    confidence: str
    evidence: str


@dataclass(frozen=True)
class Family:
    id: str
    name: str
    library: str
    source: str
    match: re.Pattern[str]
    patterns: tuple[re.Pattern[str], ...]
    required: tuple[str, ...]
    fields: dict[str, dict[str, Any]]
    tokens: dict[str, dict[str, Any]]
    tokens_field: str | None
    checks: tuple[dict[str, Any], ...]
    family_key: tuple[str, ...]


@dataclass(frozen=True)
class Decoded:
    """What a kernel name says. ``family`` is None when no decoder matches."""

    name: str
    decoded_from: str
    launcher: str | None
    family: Family | None
    values: dict[str, str]
    fields: tuple[Field, ...]
    template_arguments: tuple[str, ...]
    notes: tuple[str, ...] = field(default=())

    def field_value(self, name: str) -> str | None:
        for f in self.fields:
            if f.field == name:
                return f.value
        return None

    @property
    def family_key(self) -> str | None:
        """The family and the fields that stay the same across a variant swap (e.g. nvjet: types and
        layout), so two names with the same key are variants of one kernel."""
        if self.family is None:
            return None
        parts = [self.family.id, *(f"{k}={self.values.get(k, '')}" for k in self.family.family_key)]
        return "|".join(parts)


# -- rules --------------------------------------------------------------------------------------------
@functools.cache
def rules() -> tuple[tuple[str, ...], tuple[Family, ...]]:
    """(launcher names, families) from the packaged rules file."""
    text = (importlib.resources.files("nsysq") / "queries" / "rules" / RULES_FILE).read_text(encoding="utf-8")
    data = tomllib.loads(text)
    launchers = tuple(data["launchers"]["names"])
    return launchers, tuple(_family(raw) for raw in data["family"])


def _family(raw: dict[str, Any]) -> Family:
    fields = raw.get("fields", {})
    for name, spec in (*fields.items(), *raw.get("tokens", {}).items()):
        if spec.get("confidence") not in CONFIDENCES:
            raise UsageError(f"{RULES_FILE}: {raw['id']}.{name} has no confidence among {CONFIDENCES}.")
    for check in raw.get("checks", ()):
        kind = check.get("kind")
        if kind not in _CHECKS:
            known = ", ".join(sorted(_CHECKS))
            raise UsageError(f"{RULES_FILE}: {raw['id']} has a check of kind {kind!r}; known: {known}.")
    return Family(
        id=raw["id"],
        name=raw["name"],
        library=raw["library"],
        source=raw["source"],
        match=re.compile(raw["match"]),
        patterns=tuple(re.compile(p) for p in raw["patterns"]),
        required=tuple(raw.get("required", ())),
        fields=fields,
        tokens=raw.get("tokens", {}),
        tokens_field=raw.get("tokens_field"),
        checks=tuple(raw.get("checks", ())),
        family_key=tuple(raw.get("family_key", ())),
    )


# -- names --------------------------------------------------------------------------------------------
def _depth_scan(text: str) -> list[tuple[int, str, int]]:
    """(index, char, depth before the char) for every bracket and comma at any depth. ``<unnamed>``
    (an anonymous namespace) and ``->`` are not brackets."""
    masked = text.replace("<unnamed>", "\x01unnamed\x02").replace("->", "\x03\x03")
    out, depth = [], 0
    for i, ch in enumerate(masked):
        if ch in "([<":
            out.append((i, ch, depth))
            depth += 1
        elif ch in ")]>":
            depth = max(depth - 1, 0)
            out.append((i, ch, depth))
        elif ch == ",":
            out.append((i, ch, depth))
    return out


def head_of(name: str) -> str:
    """The name without ``void`` and without its argument list: ``ns::kernel<T, 4>``."""
    text = name.strip()
    if text.startswith("void "):
        text = text[5:].strip()
    for i, ch, depth in _depth_scan(text):
        if ch == "(" and depth == 0:
            return text[:i].strip()
    return text


def template_arguments(name: str) -> tuple[str, tuple[str, ...]]:
    """(base name, top-level template arguments) of a demangled name; () when it has none."""
    head = head_of(name)
    args: list[str] = []
    start = None
    base = head
    for i, ch, depth in _depth_scan(head):
        if ch == "<" and depth == 0 and start is None:
            base, start = head[:i], i + 1
        elif ch == "," and depth == 1 and start is not None:
            args.append(head[start:i].strip())
            start = i + 1
        elif ch == ">" and depth == 0 and start is not None:
            args.append(head[start:i].strip())
            break
    return base.strip(), tuple(a for a in args if a)


def unwrap(name: str) -> tuple[str, str | None]:
    """(the text to decode, the generic launcher it was wrapped in, or None)."""
    launchers, _ = rules()
    head = head_of(name)
    base, args = template_arguments(head)
    if base in launchers and args:
        return head_of(args[0]), base
    return head, None


# -- decoding -----------------------------------------------------------------------------------------
def decode(name: str) -> Decoded:
    """Split ``name`` (a short or demangled kernel name) into fields by the packaged rules."""
    if not name or not name.strip():
        raise UsageError("give a kernel name to explain.")
    text, launcher = unwrap(name)
    _, args = template_arguments(name if launcher is None else text)
    for family in rules()[1]:
        if not family.match.search(text):
            continue
        values = _values(family, text)
        if all(values.get(r) for r in family.required):
            return Decoded(name, text, launcher, family, values, _fields(family, values), args)
    return Decoded(name, text, launcher, None, {}, (), args, ("no decoder for this family",))


def _values(family: Family, text: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for pattern in family.patterns:
        match = pattern.search(text)
        if match:
            for key, value in match.groupdict().items():
                value = (value or "").strip("_") if key == "epilogue" else (value or "")
                if value and key not in values:
                    values[key] = value
    return values


def _fields(family: Family, values: dict[str, str]) -> tuple[Field, ...]:
    out: list[Field] = []
    for key, spec in family.fields.items():
        parts = spec.get("parts")
        if parts:
            if not all(values.get(p) for p in parts):
                continue
            value = "x".join(values[p] for p in parts)
        elif values.get(key):
            value = values[key]
        else:
            continue
        meaning = spec["meaning"]
        per_value = spec.get("values", {})
        if value in per_value:
            meaning = f"{per_value[value]} ({meaning})"
        out.append(Field(key, spec["label"], value, meaning, spec["confidence"], spec["evidence"]))
    if family.tokens_field and values.get(family.tokens_field):
        out.extend(_token_fields(family, values[family.tokens_field]))
    return tuple(out)


def _token_fields(family: Family, text: str) -> list[Field]:
    out = []
    for token in (t for t in text.split("_") if t):
        spec = family.tokens.get(token)
        if spec is None:
            out.append(
                Field("flag", "flag", token, "not decoded (shown raw)", "unknown", "no rule for this token")
            )
        else:
            out.append(Field("flag", "flag", token, spec["meaning"], spec["confidence"], spec["evidence"]))
    return out


# -- checks against launches ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Check:
    """One decoded field checked against one launch configuration."""

    check: str
    expected: int | None
    observed: int | None
    relation: str
    agrees: bool | None
    detail: str


def checks(decoded: Decoded, launch: dict[str, Any]) -> list[Check]:
    """The family's checks of ``decoded`` against one launch configuration (keys as in
    queries/launch/configs.sql); a check whose inputs are missing is left out."""
    if decoded.family is None:
        return []
    out = []
    for spec in decoded.family.checks:
        made = _CHECKS[spec["kind"]](decoded.values, spec, launch)
        if made is not None:
            out.append(made)
    return out


def _int(values: dict[str, str], key: str) -> int | None:
    value = values.get(key)
    return int(value) if value is not None and value.isdigit() else None


def _element_bytes(values: dict[str, str], spec: dict[str, Any]) -> int | None:
    value = values.get(spec.get("element_bytes_field", ""), "")
    table: dict[str, int] = spec.get("element_bytes", {})
    for key in sorted(table, key=len, reverse=True):
        if value.startswith(key):
            return table[key]
    default = spec.get("element_bytes_default")
    return int(default) if default is not None else None


def _shared_memory(values: dict[str, str], spec: dict[str, Any], launch: dict[str, Any]) -> Check | None:
    m, n, k, s = (_int(values, spec[key]) for key in ("m", "n", "k", "stages"))
    size = _element_bytes(values, spec)
    static_raw, dynamic_raw = launch.get("static_shared_memory"), launch.get("dynamic_shared_memory")
    if m is None or n is None or k is None or s is None or size is None:
        return None
    if static_raw is None or dynamic_raw is None:
        return None
    static, dynamic = int(static_raw), int(dynamic_raw)
    expected = (m + n) * k * size * s
    observed = static + dynamic
    relation = spec["relation"]
    agrees = expected == observed if relation == "equal" else expected <= observed
    sign = ("=" if agrees else "≠") if relation == "equal" else ("<=" if agrees else ">")
    detail = (
        f"tile ({m} + {n}) x {k} x {size} B x {s} stages = {expected:,} B {sign} "
        f"{observed:,} B launched (static {static:,} + dynamic {dynamic:,})"
    )
    return Check("shared memory vs tile x stages", expected, observed, relation, agrees, detail)


def _block_threads(values: dict[str, str], spec: dict[str, Any], launch: dict[str, Any]) -> Check | None:
    warps = [_int(values, key) for key in spec["warps"]]
    threads = launch.get("threads_per_block")
    if threads is None or any(w is None for w in warps):
        return None
    unit = int(spec.get("threads_per_warp_unit", 32))
    expected = unit * math.prod(w for w in warps if w is not None)
    detail = f"{unit} x {' x '.join(str(w) for w in warps)} = {expected} threads, {int(threads)} launched"
    return Check("block threads vs warp layout", expected, int(threads), "equal", expected == threads, detail)


def _persistent_grid(values: dict[str, str], spec: dict[str, Any], launch: dict[str, Any]) -> Check | None:
    blocks, sms = launch.get("blocks"), launch.get("sms")
    if blocks is None or not sms:
        return None
    agrees = int(blocks) <= int(sms)
    detail = f"grid of {int(blocks):,} blocks on {int(sms)} SMs: " + (
        "at most one block per SM (persistent)" if agrees else "more blocks than SMs: not one persistent wave"
    )
    return Check("persistent grid vs SMs", int(sms), int(blocks), "at_most", agrees, detail)


def _cluster_shape(values: dict[str, str], spec: dict[str, Any], launch: dict[str, Any]) -> Check | None:
    """The cluster the name gives against the one launched (clusterX/Y/Z, nsys 2025.5+, where 0
    means no cluster: one block). Sizes must match, and the dimensions above 1 up to their order:
    which of the name's two numbers is X is not known."""
    named = [_int(values, key) for key in spec["cluster"]]
    launched = [launch.get(f"cluster_{axis}") for axis in "xyz"]
    if any(d is None for d in named) or any(v is None for v in launched):
        return None
    name_dims = [int(d) for d in named if d is not None]
    run_dims = [max(int(v), 1) for v in launched if v is not None]
    expected, observed = math.prod(name_dims), math.prod(run_dims)
    same_shape = sorted(d for d in name_dims if d > 1) == sorted(d for d in run_dims if d > 1)
    agrees = expected == observed and same_shape
    shown = "x".join(str(int(v)) for v in launched if v is not None)
    detail = (
        f"cluster {'x'.join(map(str, name_dims))} in the name ({expected} blocks), {shown} launched "
        f"({observed} block{'s' if observed != 1 else ''}"
        + (", 0 = no cluster)" if any(int(v) == 0 for v in launched if v is not None) else ")")
    )
    return Check("cluster shape vs launch", expected, observed, "equal", agrees, detail)


_CHECKS = {
    "shared_memory": _shared_memory,
    "block_threads": _block_threads,
    "persistent_grid": _persistent_grid,
    "cluster_shape": _cluster_shape,
}


# -- variant swaps ------------------------------------------------------------------------------------
def field_changes(old: Decoded, new: Decoded) -> list[str]:
    """What differs between two decoded names of one family ("tile 192x192 → 128x64",
    "stages 4 → 8", "flag coopB removed"), in the rules' field order."""
    if old.family is None or new.family is None or old.family.id != new.family.id:
        return []
    changes = []
    old_fields = {f.field: f.value for f in old.fields if f.field != "flag"}
    new_fields = {f.field: f.value for f in new.fields if f.field != "flag"}
    for key, spec in old.family.fields.items():
        a, b = old_fields.get(key), new_fields.get(key)
        if a != b:
            short = _SHORT_LABELS.get(key, spec["label"])
            changes.append(f"{short} {a or '-'} → {b or '-'}")
    old_flags = [f.value for f in old.fields if f.field == "flag"]
    new_flags = [f.value for f in new.fields if f.field == "flag"]
    changes += [f"flag {t} removed" for t in old_flags if t not in new_flags]
    changes += [f"flag {t} added" for t in new_flags if t not in old_flags]
    return changes


_SHORT_LABELS = {
    "tile": "tile",
    "tile_k": "K tile",
    "stages": "stages",
    "cluster": "cluster",
    "warps": "warps",
}
