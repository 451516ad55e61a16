"""What a table looks like at a terminal: which columns (a compact set per table kind, ``--wide``,
``--columns``), names shortened in the middle to fit, grids as ``16x1x1``, and a footer of short
aligned lines. Plain strings only: :mod:`nsysq.base.render` draws the result with rich.

The choice applies where a person reads (stdout is a terminal) or when asked (``--wide``,
``--columns``). Otherwise (a pipe, a file) every column is printed as before: CSV, JSON and
markdown always keep every column.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from nsysq.base.errors import UsageError
from nsysq.base.units import TIME_UNITS

__all__ = [
    "PROSE",
    "UNKNOWN",
    "Column",
    "TerminalView",
    "View",
    "choose_columns",
    "fit_widths",
    "footer_lines",
    "middle_ellipsis",
    "several_tables",
    "terminal_view",
    "view_in_force",
]

UNKNOWN = "–"
"""What a cell or footer value prints when the export does not say (never a blank)."""
ELLIPSIS = "…"
"""Where a name is cut in the middle."""
_MIN_NAME = 14  # a name column never shrinks below this many characters
_COMFORT_NAME = 30  # ... and, before a column is left out, not below this many
_GAP = 3  # per column: rich's padding (a space either side) and the column separator
_PAIR_GAP = 4  # between two label-value pairs of a footer line
_LONG_PAIR = 28  # a footer pair this long gets a line of its own


PROSE = frozenset({"value", "meaning", "reason", "advice", "verdict", "returns", "params", "cause", "detail"})
"""Columns of sentences: at a terminal they wrap inside their column instead of being shortened."""


@dataclass(frozen=True)
class View:
    """A table kind's terminal columns, most important first: ``columns`` always (names without
    their unit suffix: ``total`` is ``total_ms`` at ``--time-unit ms``; ``grid``/``block`` join the
    ``_x``, ``_y``, ``_z`` columns), ``quiet`` only when a row's value differs from the one given
    (a diagnostic column that says nothing in most traces)."""

    columns: tuple[str, ...]
    quiet: Mapping[str, Any] = field(default_factory=dict)


_STATS = ("instances", "total", "avg", "med", "min", "max", "stddev")
VIEWS: dict[str, View] = {
    "census": View(
        (
            "rank",
            "name",
            "instances",
            "total",
            "share_pct",
            *_STATS[2:],
            "variants",
            "kernel_names",
            "unresolved",
            "zero_length",
        ),
        {"variants": 1, "kernel_names": 1, "unresolved": 0, "zero_length": 0},
    ),
    "info": View(("key", "value")),
    "census_underfilled": View(
        ("rank", "name", "grid", "sms", "sm_fill_pct", "instances", "total", "share_pct")
    ),
    "lineup": View(("category", "instances", "total", "avg", "share_pct", "kernels", "top_kernel")),
    "stakeout": View(
        (
            "start",
            "duration",
            "grid",
            "block",
            "registers_per_thread",
            "sm_fill_pct",
            "waves",
            "limited_by",
            "name",
        )
    ),
    "stakeout_summary": View(("name", *_STATS)),
    "timeline": View(
        ("kind", "start", "duration", "name", "device_id", "stream_id", "bytes", "throughput_gbps")
    ),
    "nvtx": View(
        ("rank", "name", "instances", "total", "avg", "kernels", "kernel", "gpu_busy"), {"domain": ""}
    ),
    "gaps": View(("device_id", "span", "busy", "idle", "busy_pct", "idle_gaps", "launch_bound", "host_busy")),
    "gaps_streams": View(("device_id", "stream_id", "ops", "span", "busy", "busy_pct")),
    "gaps_list": View(("rank", "device_id", "start", "gap", "cause", "before_name", "after_name")),
    "overlap": View(
        ("device_id", "comm_kernels", "comm", "overlap", "exposed", "overlap_pct", "memcpy", "memcpy_exposed")
    ),
    "fleet": View(("path", "status", "gpu", "kernels", "kernel", "busy_pct", "straggler", "reason")),
    "fleet_census": View(("rank", "name", "instances", "total", "avg", "share_pct", "traces")),
    "fleet_lineup": View(("category", "instances", "total", "avg", "share_pct", "kernels", "traces")),
    "diff_kernels": View(("name", "a", "b", "ratio", "outlier", "calls_a", "calls_b", "category")),
    "diff_categories": View(("category", "a", "b", "ratio", "outlier", "calls_a", "calls_b", "top_kernel")),
    "diff_launch_config": View(
        ("name", "grid_a", "grid_b", "block_a", "block_b", "registers_a", "registers_b")
    ),
    "iters": View(
        ("iteration", "duration", "gpu_busy", "gpu_idle", "outlier", "score", "cause", "kernels", "warmup"),
        {"warmup": False},
    ),
    "check": View(("rule", "status", "count", "total", "advice", "reason"), {"reason": ""}),
    "check_findings": View(
        ("rule", "start", "duration", "api_name", "kernel", "bytes", "device_id", "nvtx", "detail")
    ),
    "fleet_collectives": View(("name", "seq", "ranks", "skew", "wait", "duration", "last_path")),
    "fleet_collective_ranks": View(("path", "collectives", "last_arrivals", "caused_wait", "waited")),
    **{
        kind: View(("name", "time_pct", "total", count, "avg", "med", "min", "max", "stddev"))
        for kind, count in (
            ("cuda_api_sum", "num_calls"),
            ("cuda_gpu_kern_sum", "instances"),
            ("osrt_sum", "num_calls"),
            ("cuda_gpu_mem_time_sum", "count"),
        )
    },  # fmt: skip
    "cuda_gpu_mem_size_sum": View(("operation", "total_mb", "count", "avg_mb", "med_mb", "min_mb", "max_mb")),
    "nvtx_sum": View(
        ("range", "style", "time_pct", "total", "instances", "avg", "med", "min", "max", "stddev")
    ),
}
"""The compact column set of each table kind at a terminal; a kind not here shows every column."""


@dataclass(frozen=True)
class TerminalView:
    """What ``--wide`` and ``--columns`` asked for (the CLI sets it around a command). In a result
    of several tables (``several``), each prints the asked columns it has (:func:`several_tables`
    then checks every name was found in one); a single table must have them all."""

    wide: bool = False
    columns: tuple[str, ...] = ()
    several: bool = False
    found: set[str] = field(default_factory=set)


_VIEW: ContextVar[TerminalView | None] = ContextVar("nsysq_terminal_view", default=None)


@contextmanager
def terminal_view(view: TerminalView) -> Iterator[None]:
    """Render every table inside the block as ``view`` asks."""
    token = _VIEW.set(view)
    try:
        yield
    finally:
        _VIEW.reset(token)


def view_in_force() -> TerminalView:
    """The view asked for around this rendering (none asked: the default)."""
    return _VIEW.get() or TerminalView()


@dataclass(frozen=True)
class Column:
    """One printed column: its header and, per row, its value (a table column's, or a joined
    ``grid``/``block``)."""

    name: str
    value: Callable[[tuple[Any, ...]], Any]
    source: str  # the table column it reads (the first of three for grid/block): cell formatting
    index: int | None = None  # the position of the table column it is, as it is (value: row[index])


def choose_columns(
    kind: str, columns: Sequence[str], rows: Sequence[tuple[Any, ...]], unit: str, *, at_terminal: bool
) -> tuple[list[Column], list[str]]:
    """The columns to print and the ones left out (named in the footer). ``--columns`` first, then
    ``--wide`` (every column), then at a terminal the kind's :data:`VIEWS` entry."""
    asked = view_in_force()
    every = [_plain_column(columns, name) for name in columns]
    if asked.columns:
        if not asked.several:
            return [_lookup(name, columns, unit, kind) for name in asked.columns], []
        found = {name: _lookup_or_none(name, columns, unit) for name in asked.columns}
        asked.found.update(name for name, column in found.items() if column is not None)
        picked = [column for column in found.values() if column is not None]
        if picked:
            return picked, []
    view = VIEWS.get(kind)
    if asked.wide or not at_terminal:
        return every, []
    if view is None:  # every column, each grid/block/cluster triple joined
        view = View(tuple(dict.fromkeys(_joined_name(c, columns) for c in columns)))
    chosen = []
    for name in view.columns:
        column = _find(name, columns, unit)
        if column is not None and _says_something(column, rows, view.quiet.get(name, _ALWAYS)):
            chosen.append(column)
    shown = {c.source for c in chosen} | {s for c in chosen for s in _sources(c.name, columns)}
    return chosen, [c for c in columns if c not in shown]


_ALWAYS = object()


def _says_something(column: Column, rows: Sequence[tuple[Any, ...]], quiet: Any) -> bool:
    if quiet is _ALWAYS:
        return True
    return any(column.value(r) not in (None, quiet) for r in rows)


def _plain_column(columns: Sequence[str], name: str) -> Column:
    i = list(columns).index(name)
    return Column(name, lambda row: row[i], name, i)


def _joined_name(column: str, columns: Sequence[str]) -> str:
    """``grid`` for ``grid_x`` when the table has ``grid_x``, ``grid_y`` and ``grid_z``."""
    stem, _, axis = column.rpartition("_")
    return stem if axis in ("x", "y", "z") and _sources(stem, columns) else column


def _sources(name: str, columns: Sequence[str]) -> list[str]:
    parts = [f"{name}_{axis}" for axis in "xyz"]
    return parts if all(p in columns for p in parts) else []


def _find(name: str, columns: Sequence[str], unit: str) -> Column | None:
    """``name`` as a column of this table: itself, itself with the unit suffix, or a joined grid."""
    for candidate in (name, f"{name}_{unit}"):
        if candidate in columns:
            return _plain_column(columns, candidate)
    parts = _sources(name, columns)
    if parts:
        index = [list(columns).index(p) for p in parts]
        return Column(name, lambda row: _joined([row[i] for i in index]), parts[0])
    return None


def _joined(values: list[Any]) -> str | None:
    if any(v is None for v in values):
        return None
    return "x".join(str(int(v)) for v in values)


def _lookup(name: str, columns: Sequence[str], unit: str, kind: str) -> Column:
    column = _lookup_or_none(name, columns, unit)
    if column is None:
        raise UsageError(f"{kind} has no column {name!r}; its columns: {', '.join(columns)}.")
    return column


def _lookup_or_none(name: str, columns: Sequence[str], unit: str) -> Column | None:
    """``--columns``' ``name`` in this table: as :func:`_find`, its unit suffix any unit's."""
    base = name.strip()
    for suffix in TIME_UNITS:
        if base.endswith("_" + suffix) and base[: -len(suffix) - 1] + "_" + unit in columns:
            base = base[: -len(suffix) - 1]
    return _find(base, columns, unit)


@contextmanager
def several_tables() -> Iterator[None]:
    """Render a result of several tables: ``--columns`` applies to each table that has the names,
    and a name that no table has is an error at the end."""
    asked = view_in_force()
    if not asked.columns:
        yield
        return
    token = _VIEW.set(TerminalView(asked.wide, asked.columns, several=True))
    try:
        yield
        missing = [name for name in asked.columns if name not in view_in_force().found]
    finally:
        _VIEW.reset(token)
    if missing:
        raise UsageError(f"no table of this result has the column {missing[0]!r} (--columns).")


def middle_ellipsis(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, its middle replaced by an ellipsis when it is longer."""
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    head = width // 2
    tail = width - 1 - head
    return text[:head] + ELLIPSIS + (text[-tail:] if tail else "")


def fit_widths(
    naturals: Sequence[int],
    floors: Sequence[int],
    shrinkable: Sequence[bool],
    width: int,
    *,
    tight: bool = False,
) -> list[int]:
    """Column widths that fit ``width`` (separators counted): the shrinkable (text) columns give
    way, the widest first, never below :data:`_COMFORT_NAME` (``tight``: :data:`_MIN_NAME`) or
    their header's longest word; numbers never shrink. The result may still be too wide: the
    caller then leaves columns out."""
    widths = list(naturals)
    least = _MIN_NAME if tight else _COMFORT_NAME
    lows = [max(f, min(n, least)) if s else n for n, f, s in zip(naturals, floors, shrinkable, strict=True)]
    excess = table_width(widths) - width
    while excess > 0:
        candidates = [i for i, w in enumerate(widths) if w > lows[i]]
        if not candidates:
            break
        widest = max(candidates, key=lambda i: widths[i])
        others = [widths[i] for i in candidates if i != widest]
        step = max(1, min(excess, widths[widest] - max(lows[widest], max(others, default=0))))
        widths[widest] -= step
        excess -= step
    return widths


def table_width(widths: Sequence[int]) -> int:
    """The printed width of a table whose columns are ``widths`` wide (separators and edges counted)."""
    return sum(w + _GAP for w in widths) + 1


def footer_lines(pairs: Sequence[tuple[str, str]], width: int) -> list[str]:
    """``label value`` pairs in aligned columns, as many per line as fit ``width`` (at most 3); a
    pair too long to share a line gets one of its own, after the others."""
    short = [(label, value) for label, value in pairs if len(label) + len(value) < _LONG_PAIR]
    long = [(label, value) for label, value in pairs if len(label) + len(value) >= _LONG_PAIR]
    lines = []
    if short:
        label_w = max(len(label) for label, _ in short)
        value_w = max(len(value) for _, value in short)
        per_line = max(1, min(3, (width + _PAIR_GAP) // (label_w + 1 + value_w + _PAIR_GAP)))
        for start in range(0, len(short), per_line):
            chunk = short[start : start + per_line]
            cells = (f"{label:<{label_w}} {value:>{value_w}}" for label, value in chunk)
            lines.append((" " * _PAIR_GAP).join(cells).rstrip())
    for label, value in long:
        lines.extend(
            textwrap.wrap(f"{label}: {value}", width, subsequent_indent="  ", break_on_hyphens=False)
        )
    return lines
