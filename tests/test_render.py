"""The table format written by hand (nsysq.base.render._by_hand) is rich's own, byte for byte: a pipe
or a file gets the text rich would print, for random tables (odd widths, empty ones, headers that
fold, cells and footers that cannot be written by hand) and for every table command on the
examples and the real exports."""

from __future__ import annotations

import builtins
import io
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from nsysq.base import render as render_mod
from nsysq.base.table import Table
from tests.conftest import REAL_TRACES, ROOT

EXAMPLES = sorted((ROOT / "examples").glob("*.sqlite"))
WORDS = ["void", "gemm", "nccl_AllReduce", "k<[T=float]>", "a b", "x::y", "[bold]", ":smile:", "…", "–"]
ODD = ["ñame", "tab\there", "  pad", "", "全角", "a  b", "\x1b[1m"]
COLUMN_NAMES = [
    "name", "total_ns", "instances", "advice", "value", "rank", "share_pct", "a_very_long_column_name",
    "x", "ratio", "underfilled_kernel_share_pct", "id",
]  # fmt: skip


@pytest.fixture(autouse=True)
def no_notebook(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test run earlier in the session may have imported IPython (the notebook card's tests): the
    hand path stands aside under a notebook, so the comparison runs as a plain CLI process does."""
    for module in ("IPython", "idlelib"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    monkeypatch.delattr(builtins, "get_ipython", raising=False)


def both(table: Table, title: str | None, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str, bool]:
    """``table`` rendered as a pipe gets it, and by rich alone; whether the first was by hand."""
    drawn: list[bool] = []
    by_hand = render_mod._by_hand

    def spy(*args: Any) -> str | None:
        text = by_hand(*args)
        drawn.append(text is not None)
        return text

    fast, slow = io.StringIO(), io.StringIO()
    with monkeypatch.context() as patch:
        patch.setattr(render_mod, "_by_hand", spy)
        render_mod.render(table, "table", fast, title=title)
    with monkeypatch.context() as only_rich:
        only_rich.setattr(render_mod, "_plain_stream", lambda out: False)
        render_mod.render(table, "table", slow, title=title)
    return fast.getvalue(), slow.getvalue(), drawn == [True]


def random_table(rng: random.Random, case: int) -> Table:
    words = WORDS if case % 3 else [*WORDS, *ODD]
    columns = tuple(rng.sample(COLUMN_NAMES, rng.randrange(1, 7)))
    n_rows = rng.choice([0, 1, 2, 5, 30, 45])

    def value(column: str) -> Any:
        if column in ("name", "advice", "value", "x"):
            length = rng.choice([1, 2, 3, 3, 12, 40]) if column != "name" else rng.randrange(1, 14)
            return ("_" if column == "name" else " ").join(rng.choice(words) for _ in range(length))
        return rng.choice([None, rng.randrange(0, 10**12), rng.random() * 1e6, True, -3, 0.5])

    rows = [tuple(value(c) for c in columns) for _ in range(n_rows)]
    footer: dict[str, Any] = {"rows": n_rows, "total_ns": rng.randrange(10**9)}
    if case % 4 == 0:
        footer["advice"] = " ".join(rng.choice(words) for _ in range(rng.randrange(1, 60)))
    if case % 5 == 0:
        footer["distinct_names"] = rng.choice(["x", "ñ", "a  b"])
    return Table("case", columns, rows, unit=rng.choice(["ns", "ms"]), footer=footer)


@pytest.mark.parametrize("columns", ["", "37", "80", "120", "500"])
def test_random_tables_by_hand_are_richs(columns: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if columns:
        monkeypatch.setenv("COLUMNS", columns)
    else:
        monkeypatch.delenv("COLUMNS", raising=False)
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)
    rng = random.Random(int(columns or 0))
    by_hand = by_rich = 0
    for case in range(120):
        table = random_table(rng, case)
        title = rng.choice([None, "census", "a title " * rng.randrange(1, 40), "ñ title"])
        fast, slow, hand = both(table, title, monkeypatch)
        assert fast == slow, f"case {case}"
        by_hand, by_rich = by_hand + hand, by_rich + (not hand)
    assert by_hand >= 20 and by_rich >= 10, (by_hand, by_rich)


def test_empty_and_one_column_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    tables = [
        Table("census", ("rank", "name", "total_ns"), []),
        Table("census", ("name",), [("k",)]),
        Table("census", ("total_ns",), [(None,), (5,)], footer={"shown_rows": 0}),
        Table("info", ("section", "key", "value"), [("file", "path", "/a/b.sqlite")]),
    ]
    for table in tables:
        fast, slow, hand = both(table, "t", monkeypatch)
        assert fast == slow and hand, table


@pytest.mark.parametrize("columns", ["60", "80", "120", "200"])
def test_sentences_folded_by_hand_are_richs(columns: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sentence column (terminal.PROSE: iters' cause, check's advice) longer than its column is
    folded at its spaces by hand as rich folds it, the row's other cells at the top: the iters
    table of a long trace is then written without rich (its 6 long causes in 12,500 rows had rich
    draw all of them)."""
    monkeypatch.setenv("COLUMNS", columns)
    rng = random.Random(int(columns))
    words = ["gemm", "kernel_name_x", "(absent", "from", "a", "typical", "iteration):", "+76.7", "us", "…"]
    for case in range(40):
        rows = [
            (
                i,
                "step_" + str(i),
                rng.randrange(10**9),
                " ".join(rng.choice(words) for _ in range(rng.randrange(1, 30))),
            )
            for i in range(rng.randrange(1, 12))
        ]
        table = Table("iters", ("iteration", "name", "gpu_busy_ns", "cause"), rows, unit="ms")
        fast, slow, hand = both(table, rng.choice([None, "iters"]), monkeypatch)
        assert fast == slow, f"case {case}"
        assert hand, f"case {case}: drawn by rich"
    folded = Table("iters", ("iteration", "cause"), [(1, "word " * 60 + "end")], unit="ms")
    fast, slow, hand = both(folded, None, monkeypatch)
    assert fast == slow and hand and len(fast.splitlines()) > 6, fast


def test_rich_draws_at_a_terminal_or_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A TTY, FORCE_COLOR or TTY_COMPATIBLE, a notebook, a non-UTF-8 stream: rich decides."""

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    class Latin(io.StringIO):
        @property
        def encoding(self) -> str:  # type: ignore[override]
            return "latin-1"

    assert render_mod._plain_stream(io.StringIO())
    assert not render_mod._plain_stream(Tty())
    assert not render_mod._plain_stream(Latin())
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        with monkeypatch.context() as env:
            env.setenv(name, "0")
            assert not render_mod._plain_stream(io.StringIO())


COMMANDS = [
    ["info"], ["census"], ["census", "--wide"], ["census", "-n", "3", "--unit", "us"], ["lineup"],
    ["timeline"], ["nvtx"], ["gaps"], ["overlap"], ["stats"],
]  # fmt: skip


def cli_both(args: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    from nsysq.cli.root import app

    runner = CliRunner()
    fast = runner.invoke(app, args)
    with monkeypatch.context() as only_rich:
        only_rich.setattr(render_mod, "_plain_stream", lambda out: False)
        slow = runner.invoke(app, args)
    assert fast.exit_code == slow.exit_code
    return fast.stdout, slow.stdout


@pytest.mark.parametrize("trace", [*EXAMPLES, *REAL_TRACES], ids=lambda p: Path(p).stem)
def test_every_table_command_by_hand_is_richs(trace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    for args in COMMANDS:
        fast, slow = cli_both([*args[:1], str(trace), *args[1:]], monkeypatch)
        assert fast == slow, args
    if trace in EXAMPLES:
        fast, slow = cli_both(["diff", *map(str, EXAMPLES[:2])], monkeypatch)
        assert fast == slow


def _json_value(rng: random.Random, depth: int = 0) -> Any:
    """A value of every kind json.dumps meets in nsysq's documents (and some it should not)."""
    import decimal

    import numpy as np

    scalars: list[Any] = [
        None, True, False, 0, -7, 2**70, 1.5, -0.0, 1e300, 1 / 3, float("nan"), float("inf"),
        float("-inf"), "", "plain", 'quote " and \\ back', "tab\tnew\nline", "née 🚀 ✓", "\x00\x1f",
        np.float64(2.25), np.int64(5), np.bool_(True), decimal.Decimal("1.25"), Path("/x"),
    ]  # fmt: skip
    if depth < 2 and rng.random() < 0.2:
        if rng.random() < 0.5:
            return [_json_value(rng, depth + 1) for _ in range(rng.randrange(3))]
        return {f"k{i}": _json_value(rng, depth + 1) for i in range(rng.randrange(3))}
    return rng.choice(scalars)


@pytest.mark.parametrize("seed", range(40))
def test_json_text_is_json_dumps_byte_for_byte(seed: int) -> None:
    """base.json_text.dumps writes what json.dumps(indent=2, default=str, ensure_ascii=False)
    writes: tables of rows at every depth (one column of one kind, or mixed), rows that do not
    share their keys, empty lists and dicts, nested values inside rows, and a text that holds the
    token the rows are placed by."""
    import json

    from nsysq.base import json_text

    rng = random.Random(seed)
    keys = ["a", "b é", 'q"k', "n"][: rng.randrange(5)]
    kinds = [rng.choice(["int", "str", "bool", "float", "any"]) for _ in keys]

    def cell(kind: str) -> Any:
        if kind == "int":
            return rng.randrange(-(10**12), 10**12)
        if kind == "str":
            return rng.choice(["x", "", "é 🚀", "a\nb", '"'])
        if kind == "bool":
            return rng.random() < 0.5
        if kind == "float":  # now and then one that is not finite
            return rng.choice([0.1, -2.5e-9, 1e22, 3.0]) if rng.random() < 0.9 else float("nan")
        return _json_value(rng)

    rows = [{k: cell(kind) for k, kind in zip(keys, kinds, strict=True)} for _ in range(rng.randrange(4))]
    odd = [dict(r) for r in rows] + [{"other": 1}]  # keys differ: written by json.dumps
    doc: dict[str, Any] = {
        "kind": "t", "columns": keys, "rows": rows, "footer": {"n": len(rows), "nested": {"rows": rows}},
        "notes": ["\x00nsysq-rows-0\x00"] if seed % 7 == 0 else [], "odd": odd, "sections": [rows, []],
        "tuple": tuple(rows), "empty": {},
    }  # fmt: skip
    for value in (doc, rows, odd, [doc, doc], _json_value(rng)):
        assert json_text.dumps(value) == json.dumps(value, indent=2, default=str, ensure_ascii=False)


@pytest.mark.parametrize("seed", range(4))
def test_column_cells_are_cell_by_cell(seed: int) -> None:
    """render.column_cells (a column's usual values formatted by its name once) gives cell()'s
    text for every value: None, bools, ints, strs, finite and non-finite floats and Decimals, in
    columns named by unit, id, percent, score, ratio, rank and name, in every unit, cut or not."""
    from decimal import Decimal

    rng = random.Random(seed)
    columns = ("total_ns", "kernel_ms", "correlation_id", "gpu_pct", "share_percent", "score",
               "z_score", "ratio", "speed_ratio", "rank", "name", "value", "instances", "cause")  # fmt: skip
    pool: list[Any] = [None, True, False, 0, 7, -3, 1234567, 2**40, "", "gemm", "x" * 100, 0.0,
                       -2.5, 3.14159, 1e16, 12345.678, float("nan"), float("inf"), Decimal("2.5"),
                       0.001]  # fmt: skip
    for column in columns:
        for unit in ("ns", "us", "ms", "s"):
            for cut in (True, False):
                values = [rng.choice(pool) for _ in range(60)]
                values = [v for v in values if not (isinstance(v, str) and column.endswith(_NUMBERED))]
                want = [render_mod.cell(column, v, unit, cut=cut) for v in values]
                assert render_mod.column_cells(column, values, unit, cut=cut) == want, (column, unit)


_NUMBERED = ("_pct", "_percent", "score", "ratio")  # cell() formats a str there as a number: an error
