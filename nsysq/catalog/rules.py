"""Lineup and danger rules: ordered SQL LIKE patterns kept as TOML data in ``queries/``.

A rule matches a kernel when ``lower(NAME) LIKE pattern``, NAME being the kernel's short name
(``field = "short"``) or demangled name (``field = "demangled"``). Rules are tried in file order
and the first match wins; a kernel no rule matches is in category "Other" (and has no danger
kind). The engine runs the same test in DuckDB SQL; :func:`first_match` is the pure-Python
equivalent used for validation, tests and listings.
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any, Literal, cast

from nsysq.base.errors import RulesError

Field = Literal["short", "demangled"]

OTHER = "Other"
"""The category of a kernel that no lineup rule matches."""

_FIELDS: tuple[str, ...] = ("short", "demangled")
_KIND_RE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
_LINEUP_KEYS = {"category": True, "field": True, "like": True, "note": False}
_DANGER_KEYS = {"kind": True, "field": True, "like": True, "reason": True}


@dataclass(frozen=True)
class Rule:
    """One lineup rule: kernels whose ``field`` name is LIKE ``like`` belong to ``category``."""

    order: int
    category: str
    field: Field
    like: str
    note: str = ""


@dataclass(frozen=True)
class DangerRule:
    """One danger rule: kernels whose ``field`` name is LIKE ``like`` can change numerics."""

    order: int
    kind: str
    field: Field
    like: str
    reason: str


def load_lineup_rules(path: str | Path | None = None) -> list[Rule]:
    """Read and validate a lineup rules file; ``None`` reads the packaged ``lineup_rules.toml``
    (parsed once per process: a fleet worker asks for it once per trace)."""
    return list(_packaged_lineup_rules()) if path is None else _lineup_rules(path)


@functools.cache
def _packaged_lineup_rules() -> tuple[Rule, ...]:
    return tuple(_lineup_rules(None))


def _lineup_rules(path: str | Path | None) -> list[Rule]:
    name, raw = _read("lineup_rules.toml", path)
    rules: list[Rule] = []
    for n, entry in enumerate(_rule_tables(name, raw, _LINEUP_KEYS), start=1):
        field, like = _field_and_like(name, n, entry)
        category = _text(name, n, entry, "category")
        note = _text(name, n, entry, "note", required=False)
        rules.append(Rule(order=n, category=category, field=field, like=like, note=note))
    _check_repeats(name, [(r.order, r.field, r.like) for r in rules])
    return rules


def load_danger_rules(path: str | Path | None = None) -> list[DangerRule]:
    """Read and validate a danger rules file; ``None`` reads the packaged ``danger_rules.toml``."""
    name, raw = _read("danger_rules.toml", path)
    rules: list[DangerRule] = []
    reasons: dict[str, tuple[int, str]] = {}
    for n, entry in enumerate(_rule_tables(name, raw, _DANGER_KEYS), start=1):
        field, like = _field_and_like(name, n, entry)
        kind = _text(name, n, entry, "kind")
        if not _KIND_RE.fullmatch(kind):
            raise RulesError(
                f"{name}: rule {n} has kind {kind!r}, which is not snake_case; "
                "use lower-case letters, digits and single underscores, e.g. 'split_k'."
            )
        reason = _text(name, n, entry, "reason")
        if "\n" in reason:
            raise RulesError(
                f"{name}: rule {n} has a reason that spans several lines; "
                "write the reason as one line of plain English."
            )
        first = reasons.setdefault(kind, (n, reason))
        if first[1] != reason:
            raise RulesError(
                f"{name}: rule {n} repeats kind {kind!r} from rule {first[0]} with a different "
                "reason; give every rule of one kind the same reason, or rename the kind."
            )
        rules.append(DangerRule(order=n, kind=kind, field=field, like=like, reason=reason))
    _check_repeats(name, [(r.order, r.field, r.like) for r in rules])
    return rules


@functools.lru_cache(maxsize=4096)
def like_to_regex(pattern: str) -> re.Pattern[str]:
    """The Python regex equivalent to SQL ``LIKE pattern``: ``%`` any run, ``_`` any one char.

    There is no escape character: every other character, backslash included, is literal.
    """
    parts = [".*" if ch == "%" else "." if ch == "_" else re.escape(ch) for ch in pattern]
    return re.compile("".join(parts), re.DOTALL)


def matches(rule: Rule | DangerRule, short: str | None, demangled: str | None) -> bool:
    """True when ``lower(NAME) LIKE rule.like``, NAME per the rule's field; None never matches."""
    name = demangled if rule.field == "demangled" else short
    return name is not None and like_to_regex(rule.like).fullmatch(name.lower()) is not None


def first_match(
    rules: Sequence[Rule] | Sequence[DangerRule],
    short: str | None,
    demangled: str | None,
    default: str = OTHER,
) -> str:
    """The category (lineup rules) or kind (danger rules) of the first rule that matches.

    ``default`` ("Other") is returned when no rule matches; pass ``default=""`` for danger rules.
    """
    for rule in rules:
        if matches(rule, short, demangled):
            return rule.category if isinstance(rule, Rule) else rule.kind
    return default


def rules_rows(rules: Sequence[Rule] | Sequence[DangerRule]) -> list[tuple[int, str, str, str]]:
    """Rows ``(rule_order, category_or_kind, field, pattern)`` for the engine's rules table."""
    return [(r.order, r.category if isinstance(r, Rule) else r.kind, r.field, r.like) for r in rules]


# -- reading and validation ---------------------------------------------------------------------
def _read(packaged: str, path: str | Path | None) -> tuple[str, dict[str, Any]]:
    """(display name, parsed TOML) of a rules file, raising RulesError for anything unreadable."""
    if path is None:
        resource = files("nsysq") / "queries" / "rules" / packaged
        name = f"packaged {packaged}"
        try:
            text = resource.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise RulesError(
                f"The {name} cannot be read ({exc}); reinstall nsysq or pass your own rules file."
            ) from exc
    else:
        p = Path(path)
        name = str(p)
        if not p.is_file():
            what = "is a directory" if p.is_dir() else "does not exist"
            raise RulesError(f"Rules file {name} {what}; pass the path of a .toml rules file.")
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise RulesError(
                f"Rules file {name} cannot be read as UTF-8 text ({exc}); pass a .toml rules file."
            ) from exc
    try:
        return name, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RulesError(
            f"{name} is not a valid TOML file ({exc}); fix the syntax, see docs/rules.md for the format."
        ) from exc


def _rule_tables(name: str, raw: dict[str, Any], keys: dict[str, bool]) -> list[dict[str, Any]]:
    """The ``[[rule]]`` tables after checking the top level and each table's keys."""
    unknown = sorted(set(raw) - {"version", "rule"})
    if unknown:
        raise RulesError(
            f"{name} has unknown top-level key {unknown[0]!r}; "
            "a rules file holds only 'version = 1' and [[rule]] tables."
        )
    if raw.get("version") != 1:
        got = "no version" if "version" not in raw else f"version = {raw['version']!r}"
        raise RulesError(f"{name} has {got}; put 'version = 1' at the top of the file.")
    tables = raw.get("rule")
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        raise RulesError(
            f"{name} has no [[rule]] tables; add at least one [[rule]] table "
            "(see docs/rules.md for the format)."
        )
    allowed = ", ".join(keys)
    for n, entry in enumerate(tables, start=1):
        extra = sorted(set(entry) - set(keys))
        if extra:
            raise RulesError(f"{name}: rule {n} has unknown key {extra[0]!r}; use only {allowed}.")
        missing = [k for k, required in keys.items() if required and k not in entry]
        if missing:
            key = missing[0]
            raise RulesError(f'{name}: rule {n} is missing {key!r}; add {key} = "..." to it.')
    return cast(list[dict[str, Any]], tables)


def _text(name: str, n: int, entry: dict[str, Any], key: str, required: bool = True) -> str:
    value = entry.get(key, "")
    if not isinstance(value, str):
        raise RulesError(f'{name}: rule {n} has a non-string {key}; write {key} = "...".')
    if required and not value.strip():
        raise RulesError(f"{name}: rule {n} has an empty {key}; give it a non-empty value.")
    return value.strip()


def _field_and_like(name: str, n: int, entry: dict[str, Any]) -> tuple[Field, str]:
    field = entry["field"]
    if field not in _FIELDS:
        raise RulesError(f'{name}: rule {n} has field {field!r}; use field = "short" or field = "demangled".')
    like = entry["like"]
    if not isinstance(like, str) or not like:
        raise RulesError(
            f"{name}: rule {n} has an empty or non-string pattern; "
            'write like = "%text%" with % for any run of characters.'
        )
    if like != like.lower():
        raise RulesError(
            f"{name}: rule {n} has pattern {like!r} with upper-case letters, which can never match "
            f"because names are lower-cased first; write like = {like.lower()!r}."
        )
    return cast(Field, field), like


def _check_repeats(name: str, keyed: list[tuple[int, str, str]]) -> None:
    seen: dict[tuple[str, str], int] = {}
    for n, field, like in keyed:
        first = seen.setdefault((field, like), n)
        if first != n:
            raise RulesError(
                f"{name}: rule {n} repeats field {field!r} and pattern {like!r} of rule {first}, "
                f"so it can never match; delete rule {n} or change its pattern."
            )


@dataclass(frozen=True)
class LikeRule:
    """One rule of a small "label + lower-case LIKE pattern" rules file (gap causes, collective
    kinds): ``order`` from 1, the ``label`` it gives, its ``like`` pattern and an optional note."""

    order: int
    label: str
    like: str
    note: str


def load_like_rules(
    packaged: str, path: str | Path | None, key: str, field: str, check: Callable[[str], str | None]
) -> list[LikeRule]:
    """Read and validate a rules file whose entries are ``{key = "...", like = "...", note = "..."}``
    (the packaged ``packaged`` unless ``path``). ``check(label)`` returns why a label is refused, or
    None; ``field`` names what the patterns match, for the repeated-pattern check."""
    name, raw = _read(packaged, path)
    out: list[LikeRule] = []
    for n, entry in enumerate(_rule_tables(name, raw, {key: True, "like": True, "note": False}), start=1):
        label = _text(name, n, entry, key)
        why = check(label)
        if why is not None:
            raise RulesError(f"{name}: rule {n} has {key} {label!r}; {why}.")
        like = _text(name, n, entry, "like")
        if like != like.lower():
            raise RulesError(f"{name}: rule {n} has upper-case pattern {like!r}; write {like.lower()!r}.")
        out.append(LikeRule(n, label, like, _text(name, n, entry, "note", required=False)))
    _check_repeats(name, [(r.order, field, r.like) for r in out])
    return out
