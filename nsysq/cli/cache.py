"""``nsysq cache list|clear|build``: inspect, empty or fill the columnar cache (see nsysq.export.cache).

The sub-app ``cache_app`` is added to the root by :mod:`nsysq.cli.root`.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from nsysq.base.units import fmt_file_size
from nsysq.cli.common import Format, FormatOpt, NsysOpt, Unit, emit, say

cache_app = typer.Typer(
    name="cache",
    help="Inspect or empty nsysq's cache (NSYSQ_CACHE_DIR, ~/.cache/nsysq): the columnar copies of "
    "traces and the SQLite exports of .nsys-rep reports.",
    no_args_is_help=True,
)


def _when(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts).isoformat(timespec="seconds")


@cache_app.command("list")
def list_(fmt: FormatOpt = Format.table) -> None:
    """List cached traces and exported reports: key, kind (copy: a columnar copy and answers; export: a
    .nsys-rep's SQLite export), trace or report path, size, answers kept, created, last used (most
    recent first)."""
    from nsysq.base.table import Table
    from nsysq.export import cache

    rows = [
        (
            e.key,
            e.kind,
            e.trace,
            e.size_bytes,
            e.answers,
            _when(e.created),
            _when(e.last_used),
            e.trace_exists,
        )
        for e in cache.entries()
    ]
    total = sum(r[3] for r in rows)
    table = Table(
        kind="cache",
        columns=("key", "kind", "trace", "size_bytes", "answers", "created", "last_used", "trace_exists"),
        rows=rows,
        footer={
            "cache_dir": str(cache.cache_dir()),
            "entries": len(rows),
            "total_bytes": total,
            "max_bytes": cache.max_bytes(),
        },
    )
    emit(table, fmt, Unit.ns, title="nsysq cache")


@cache_app.command("clear")
def clear() -> None:
    """Delete every cached copy and every exported report (traces and reports are never touched)."""
    from nsysq.export import cache

    exports = sum(1 for e in cache.entries() if e.kind == "export")
    count, size = cache.clear()
    copies = count - exports
    what = f"{copies} cached trace{'s' if copies != 1 else ''} and {exports} exported report"
    say(f"removed {what}{'s' if exports != 1 else ''} ({fmt_file_size(size)}) from {cache.cache_dir()}")


@cache_app.command("build")
def build(
    trace: Annotated[
        Path, typer.Argument(help="nsys SQLite export (or .nsys-rep, exported first) to cache now.")
    ],
    background: Annotated[
        bool,
        typer.Option(
            "--background",
            help="Run niced and silent, and give up if another process is "
            "already building this trace (what nsysq starts by itself after a first read).",
        ),
    ] = False,
    nsys: NsysOpt = None,
) -> None:
    """Build the cached copy of a trace now, and keep the answers to the default questions.

    After the copy, census (short and demangled names, default limit) and lineup are answered once
    from it, so asking them later reads a kept answer.
    """
    import os

    from nsysq.analyses.census import DEFAULT_LIMIT, census
    from nsysq.analyses.lineup import lineup
    from nsysq.base.errors import CacheError, NoDataError
    from nsysq.export import cache
    from nsysq.export.check import read_schema
    from nsysq.export.nsys_rep import resolve
    from nsysq.trace import Trace

    if background and hasattr(os, "nice"):
        os.nice(10)
    path = resolve(trace, nsys=nsys).path
    built = cache.build(path, read_schema(path), wait=not background, progress=False if background else None)
    if built is None:
        if background:
            return
        raise CacheError(f"{path} changed while it was being read; run the command again.")
    with Trace(path) as opened:
        try:
            for names in ("short", "demangled"):
                census(opened.session, limit=DEFAULT_LIMIT, names=names)
            lineup(opened.session)
        except NoDataError:
            pass
    if not background:
        say(f"cached {path.name} in {built} ({fmt_file_size(built.stat().st_size)})")
