"""The SQLite page decoder (nsysq.pages): every value equal to what SQLite itself returns, every
unhandled part of the file format refused (so the caller reads through SQLite), and no crash on a
damaged file. The oracle is Python's sqlite3 module on the same file."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nsysq import pages, schema
from nsysq.decoded import CORE as DECODED
from nsysq.trace import Trace
from tests.conftest import REAL_TRACES, sha256

pytestmark = pytest.mark.skipif(not pages.available(), reason="the page decoder was not built")



def _oracle(path: Path, table: str, columns: list[str]) -> list[tuple[object, ...]]:
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        quoted = ", ".join(f'"{c}"' for c in columns)
        return con.execute(f'SELECT {quoted} FROM "{table}" ORDER BY rowid').fetchall()
    finally:
        con.close()


def _decoded(path: Path, table: str, columns: list[str]) -> list[tuple[object, ...]]:
    got = pages.read_columns(path, table, columns)
    out = []
    for c in columns:
        values = got.values[c].tolist()
        mask = got.nulls[c].tolist() if c in got.nulls else [False] * got.rows
        out.append([None if m else v for v, m in zip(values, mask, strict=True)])
    return list(zip(*out, strict=True)) if columns else []


def _canonical_columns(path: Path, table: str) -> list[str]:
    """The canonical columns (all integers) ``table`` has in this export."""
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        present = {r[1] for r in con.execute(f"PRAGMA table_info('{table}')")}
    finally:
        con.close()
    return [c for c, _ in schema.CANONICAL[table] if c in present]


def _check_tables(path: Path) -> int:
    checked = 0
    for table in DECODED:
        columns = _canonical_columns(path, table)
        if columns:
            assert _decoded(path, table, columns) == _oracle(path, table, columns), table
            checked += 1
    return checked


def test_fixture_event_tables_decode_exactly(fixture_trace: Path) -> None:
    if not _check_tables(fixture_trace):
        pytest.skip("no decodable event table")


@pytest.mark.skipif(not REAL_TRACES, reason="no real exports beside the checkout")
@pytest.mark.parametrize("path", REAL_TRACES, ids=[p.stem for p in REAL_TRACES])
def test_real_event_tables_decode_exactly(path: Path) -> None:
    before = sha256(path)
    assert _check_tables(path)
    assert sha256(path) == before


# Every integer serial type (1, 2, 3, 4, 6 and 8 bytes, the constants 0 and 1, NULL), both signs.
EDGES = [
    None, 0, 1, -1, 2, 127, -128, 128, 32767, -32768, 32768, 8388607, -8388608, 8388608,
    2**31 - 1, -(2**31), 2**31, 2**47 - 1, -(2**47), 2**47, 2**63 - 1, -(2**63),
]  # fmt: skip


def _table(path: Path, page_size: int, rows: int = 20_000) -> None:
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA page_size = {page_size}")
    con.execute("CREATE TABLE t (a INTEGER, b INTEGER NOT NULL, gridX INTEGER, pad INTEGER)")
    con.executemany(
        "INSERT INTO t VALUES (?, ?, ?, ?)",
        [(EDGES[i % len(EDGES)], i * 7919 - 10**6, EDGES[(i * 3) % len(EDGES)] or 0, i) for i in range(rows)],
    )
    con.execute("DELETE FROM t WHERE pad % 97 = 5")  # rowid gaps and freeblocks
    con.commit()
    con.close()


@pytest.mark.parametrize("page_size", [512, 4096, 65536])
def test_every_integer_serial_type_and_a_deep_btree(tmp_path: Path, page_size: int) -> None:
    path = tmp_path / "t.sqlite"
    _table(path, page_size)
    cols = ["a", "b", "gridX", "pad"]
    assert _decoded(path, "t", cols) == _oracle(path, "t", cols)
    # gridX is decoded as int32 first; values past 32 bits make the read start again as int64
    got = pages.read_columns(path, "t", ["gridX"])
    assert got.values["gridX"].dtype.itemsize == 8


def test_columns_added_later_read_as_their_default(tmp_path: Path) -> None:
    path = tmp_path / "t.sqlite"
    _table(path, 4096, rows=3000)
    con = sqlite3.connect(path)
    con.execute("ALTER TABLE t ADD COLUMN late INTEGER")  # old records lack it: NULL
    con.execute("INSERT INTO t (a, b, gridX, pad, late) VALUES (1, 2, 3, 4, 5)")
    con.execute("ALTER TABLE t ADD COLUMN dflt INTEGER DEFAULT 7")  # old records: 7, not NULL
    con.commit()
    con.close()
    assert _decoded(path, "t", ["a", "late"]) == _oracle(path, "t", ["a", "late"])
    with pytest.raises(pages.PagesUnsupported, match="default"):
        pages.read_columns(path, "t", ["dflt"])


@pytest.mark.parametrize(
    ("value", "reason"),
    [("text", "real, text or blob"), (1.5, "real, text or blob"), (b"x" * 9000, "overflow")],
)
def test_values_the_decoder_leaves_to_sqlite(tmp_path: Path, value: object, reason: str) -> None:
    path = tmp_path / "t.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (a INTEGER, b)")
    con.executemany("INSERT INTO t VALUES (?, ?)", [(i, i) for i in range(100)])
    con.execute("INSERT INTO t VALUES (1, ?)", (value,))
    con.commit()
    con.close()
    if reason == "overflow":
        with pytest.raises(pages.PagesUnsupported, match=reason):
            pages.read_columns(path, "t", ["a"])  # the record spills over, whatever the column
    else:
        assert _decoded(path, "t", ["a"]) == _oracle(path, "t", ["a"])
        with pytest.raises(pages.PagesUnsupported, match=reason):
            pages.read_columns(path, "t", ["b"])


@pytest.mark.parametrize(
    ("ddl", "reason"),
    [
        ("CREATE TABLE t (a INTEGER PRIMARY KEY, b INTEGER)", "INTEGER PRIMARY KEY"),
        ("CREATE TABLE t (a INTEGER, b INTEGER, PRIMARY KEY (a)) WITHOUT ROWID", "WITHOUT ROWID"),
    ],
)
def test_tables_the_decoder_leaves_to_sqlite(tmp_path: Path, ddl: str, reason: str) -> None:
    path = tmp_path / "t.sqlite"
    con = sqlite3.connect(path)
    con.execute(ddl)
    con.execute("INSERT INTO t VALUES (1, 2)")
    con.commit()
    con.close()
    with pytest.raises(pages.PagesUnsupported, match=reason):
        pages.read_columns(path, "t", ["b"])


def test_wal_mode_file_is_left_to_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "t.sqlite"
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode = WAL")
    con.execute("CREATE TABLE t (a INTEGER)")
    con.execute("INSERT INTO t VALUES (1)")
    con.commit()
    con.close()
    with pytest.raises(pages.PagesUnsupported, match="WAL"):
        pages.read_columns(path, "t", ["a"])


def test_empty_table(tmp_path: Path) -> None:
    path = tmp_path / "t.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (a INTEGER)")
    con.commit()
    con.close()
    got = pages.read_columns(path, "t", ["a"])
    assert got.rows == 0 and got.values["a"].size == 0


def test_trace_falls_back_to_sqlite_with_the_same_answers(fixture_dir: Path, tmp_path: Path) -> None:
    """A kernel table the decoder refuses (one record spilling into overflow pages) is read through
    SQLite instead: the same answers SQLite gives, nothing written beside the trace."""
    path = tmp_path / "t.sqlite"
    shutil.copy(fixture_dir / "v2024_6.sqlite", path)
    con = sqlite3.connect(path)
    con.execute(f"ALTER TABLE {schema.KERNEL} ADD COLUMN note BLOB")
    con.execute(f"UPDATE {schema.KERNEL} SET note = ? WHERE rowid = 3", (b"x" * 9000,))
    con.commit()
    con.close()
    before = sha256(path)
    sql = f"SELECT count(*), sum(gridX), sum(\"end\" - start) FROM {schema.KERNEL}"
    with Trace(path, cache=False) as t:
        assert t.kernel_reader == "pages"
        rows = t.sql_table(sql).rows
        assert t.kernel_reader == "sqlite (a record spills into overflow pages)"
    assert rows == [_oracle_sql(path, sql)]
    assert sha256(path) == before
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def _oracle_sql(path: Path, sql: str) -> tuple[object, ...]:
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        return con.execute(sql).fetchone()
    finally:
        con.close()


def test_columns_are_decoded_on_first_use(fixture_dir: Path) -> None:
    """A query reading a kernel column nobody declared still gets it (decoded, then run again)."""
    path = fixture_dir / "edge_cases.sqlite"
    with Trace(path, cache=False) as t:
        assert t.kernel_reader == "pages"
        got = t.sql_table(f"SELECT sum(gridZ), sum(localMemoryTotal), count(*) FROM {schema.KERNEL}").rows
        assert "gridZ" in t._decoded.tables[schema.KERNEL].loaded
    sql = f"SELECT sum(gridZ), sum(localMemoryTotal), count(*) FROM {schema.KERNEL}"
    assert got == [_oracle_sql(path, sql)]


def test_damaged_pages_never_crash(fixture_dir: Path, tmp_path: Path) -> None:
    """Random bytes in the kernel table's pages: every read either decodes or is refused with
    PagesUnsupported. Run in a child process so that a crash would fail the test, not pytest."""
    src = fixture_dir / "v2025_5.sqlite"
    script = textwrap.dedent(
        f"""
        import random, shutil, sqlite3
        from pathlib import Path
        from nsysq import pages
        src, work = Path({str(src)!r}), Path({str(tmp_path / "fuzz.sqlite")!r})
        con = sqlite3.connect(src)
        root = con.execute("SELECT rootpage FROM sqlite_master WHERE name = '{schema.KERNEL}'").fetchone()[0]
        size = con.execute("PRAGMA page_size").fetchone()[0]
        count = con.execute("PRAGMA page_count").fetchone()[0]
        con.close()
        rng = random.Random(1234)
        outcomes = {{"decoded": 0, "refused": 0}}
        for trial in range(300):
            shutil.copy(src, work)
            data = bytearray(work.read_bytes())
            for _ in range(rng.choice([1, 4, 32])):
                page = rng.choice([root, rng.randint(1, count)])
                at = (page - 1) * size + rng.randrange(size)
                data[at] = rng.randrange(256)
            work.write_bytes(bytes(data))
            try:
                pages.read_columns(work, "{schema.KERNEL}", ["start", "end", "shortName", "gridX"])
                outcomes["decoded"] += 1
            except pages.PagesUnsupported:
                outcomes["refused"] += 1
        print(outcomes)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "refused" in done.stdout


def test_cancelled_read_stops(fixture_dir: Path) -> None:
    """A background decode nobody will collect (its trace is closed) stops at the next chunk."""
    import threading

    stop = threading.Event()
    stop.set()
    with pytest.raises(pages.PagesUnsupported, match="cancelled"):
        pages.read_columns(fixture_dir / "v2024_6.sqlite", schema.KERNEL, ["start"], cancel=stop)
    t = Trace(fixture_dir / "v2024_6.sqlite", cache=False)  # prefetches the census columns
    pending = t._decoded.tables[schema.KERNEL]._pending
    t.close()
    assert t._decoded.tables[schema.KERNEL]._cancel.is_set()
    if pending is not None:  # finished before the close, or stopped by it: never hangs, never crashes
        pending.exception(timeout=10)


def test_opening_a_trace_does_not_import_duckdb_before_decoding_starts() -> None:
    """The page decode starts before DuckDB is imported (it overlaps the 0.07 s import): the
    modules a Trace is built from import DuckDB where they use it, not at module level."""
    import subprocess
    import sys

    code = "import sys, nsysq.trace, nsysq.cache, nsysq.decoded, nsysq.pages; print('duckdb' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
