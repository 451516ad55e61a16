"""``nsysq explain NAME [--trace T]``: a kernel name's fields, their meaning and confidence, and,
with a trace, the launches checked against them. Registered by :mod:`nsysq.cli.root`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from nsysq.base import json_text
from nsysq.cli.common import (
    Format,
    FormatOpt,
    ShowSqlOpt,
    Takes,
    TraceOptions,
    UnitOpt,
    emit,
    open_trace,
    say,
    show_sql,
    trace_options,
)


@trace_options(Takes.NO_CACHE)
def explain_command(
    name: Annotated[
        str,
        typer.Argument(help="A kernel name, short or demangled (quote it).", show_default=False),
    ],
    trace: Annotated[
        Path | None,
        typer.Option(
            "--trace",
            "-t",
            help="An nsys SQLite export: decode the name's demangled form there, list its launch "
            "configurations and check them against the decoded fields.",
        ),
    ] = None,
    fmt: FormatOpt = Format.table,
    unit: UnitOpt = None,
    sql: ShowSqlOpt = False,
    *,
    options: TraceOptions,
) -> None:
    """What a kernel's name says: each field with its meaning and confidence (documented, inferred,
    unknown), for cuBLASLt nvjet, cuBLAS, xmma, CUTLASS 2/3, cuDNN, TensorRT, FlashAttention 2/3,
    vLLM, Triton, nvFuser and NCCL kernels (docs/hardware.md)."""
    from nsysq.analyses.explain import explain, tables

    if trace is None:
        if sql:
            raise typer.BadParameter("--show-sql needs --trace: without a trace explain runs no SQL.")
        data = explain(name)
    else:
        with open_trace(trace, options, prefetch="launch_configs") as t:
            data = explain(name, t)
            if sql:
                show_sql([t])
                return
    if fmt == Format.json:
        sys.stdout.write(json_text.dumps(data) + "\n")
    else:
        sections = tables(data)
        if fmt == Format.csv:
            sections = sections[:1]
        for i, (title, table) in enumerate(sections):
            if i:
                sys.stdout.write("\n")
            emit(table, fmt, unit, title=title)
    if data["family"] is None:
        say(f"no decoder for this family: {data['decoded_from'][:80]} (its template arguments are listed)")
    if data["disagreements"]:
        say(f"warning: {data['disagreements']} check(s) of the decoded fields disagree with the launches.")
