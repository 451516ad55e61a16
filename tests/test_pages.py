"""The SQLite page decoder (nsysq.export.pages): every value equal to what SQLite itself returns, every
unhandled part of a valid file refused with PagesUnsupported (so the caller reads through SQLite),
every contradiction of the file format reported as PagesDamaged naming the table and page, and
no crash or other exception on any damaged file. The oracle is Python's sqlite3 module on the same
file; the decoder's interface is checked against its header, nsysq/export/_pages.h."""

from __future__ import annotations

import ctypes
import dataclasses
import itertools
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from nsysq.base.errors import DamagedTraceError
from nsysq.export import pages, schema
from nsysq.export.check import read_schema, sqlite_reading
from nsysq.export.decoded import CORE as DECODED
from nsysq.session import Session
from tests.conftest import REAL_TRACES, sha256
from tests.corpus import Pages, image_rowid

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


def _runs_table(path: Path, rows: int) -> None:
    """Columns holding one value, one value per run of rows (runs that cross chunk boundaries), one
    value but for the last row, NULL everywhere, one value with some NULLs, and NULL in one run."""
    con = sqlite3.connect(path)
    con.execute("PRAGMA page_size = 512")
    con.execute(
        "CREATE TABLE t (same INTEGER NOT NULL, runs INTEGER NOT NULL, tail INTEGER NOT NULL, "
        "never INTEGER, holes INTEGER, nullrun INTEGER, pid INTEGER)"
    )
    con.executemany(
        "INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (
                -7,
                i // 700,
                5 if i < rows - 1 else 6,
                None,
                None if i % 333 == 1 else 3,
                None if 900 <= i < 1500 else i % 2,
                1 << 40,
            )
            for i in range(rows)
        ],  # fmt: skip
    )
    con.commit()
    con.close()


@pytest.mark.parametrize("chunk_pages", [1, 3, 1024])
def test_columns_holding_one_value_are_not_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk_pages: int
) -> None:
    """The decoder writes a column only from its first differing row (back-filling the rows before):
    a column (or NULL mask) that holds one value in every row comes back as that value with no
    memory of its own, and every other column exactly as SQLite reads it, whatever the chunks."""
    path = tmp_path / "t.sqlite"
    _runs_table(path, 4000)
    monkeypatch.setattr(pages, "CHUNK_PAGES", chunk_pages)
    cols = ["same", "runs", "tail", "never", "holes", "nullrun", "pid"]
    assert _decoded(path, "t", cols) == _oracle(path, "t", cols)
    got = pages.read_columns(path, "t", cols)
    constant = {c for c in cols if pages.is_constant(got.values[c])}
    assert constant == {"same", "never", "pid"}  # never: NULL in every row (value 0); holes: 3 or 0
    assert got.values["pid"].dtype.itemsize == 8 and int(got.values["pid"][0]) == 1 << 40
    assert pages.is_constant(got.nulls["never"]) and bool(got.nulls["never"][0])
    assert not pages.is_constant(got.nulls["holes"]) and "same" not in got.nulls


def test_trace_views_read_columns_holding_one_value(fixture_dir: Path, tmp_path: Path) -> None:
    """A column the decoder kept as one value is a constant in the view: queries read it as SQLite
    has it (here every launch of the export in one process, on one device)."""
    path = fixture_dir / "v2024_6.sqlite"
    with Session(path, cache=False) as trace:
        got = trace.sql_table(
            "SELECT count(*) AS n, count(DISTINCT globalPid) AS pids, min(globalPid) AS pid, "
            "count(DISTINCT deviceId) AS devices FROM CUPTI_ACTIVITY_KIND_KERNEL"
        ).records()[0]
        assert trace._decoded is not None and trace._decoded.from_pages(schema.KERNEL)
        values = trace._decoded.tables[schema.KERNEL].arrays(("globalPid", "start"))
    assert values is not None and pages.is_constant(values["globalPid"][0])
    assert not pages.is_constant(values["start"][0])
    want = _oracle_sql(
        path,
        "SELECT count(*), count(DISTINCT globalPid), min(globalPid), count(DISTINCT deviceId) "
        "FROM CUPTI_ACTIVITY_KIND_KERNEL",
    )
    assert tuple(int(got[k]) for k in ("n", "pids", "pid", "devices")) == want


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
    sql = f'SELECT count(*), sum(gridX), sum("end" - start) FROM {schema.KERNEL}'
    with Session(path, cache=False) as t:
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
    with Session(path, cache=False) as t:
        assert t.kernel_reader == "pages"
        got = t.sql_table(f"SELECT sum(gridZ), sum(localMemoryTotal), count(*) FROM {schema.KERNEL}").rows
        assert "gridZ" in t._decoded.tables[schema.KERNEL].loaded
    sql = f"SELECT sum(gridZ), sum(localMemoryTotal), count(*) FROM {schema.KERNEL}"
    assert got == [_oracle_sql(path, sql)]


DAMAGE_SCRIPT = """
import json, random, shutil, sqlite3, sys
from pathlib import Path
from nsysq.export import pages
from nsysq.export import schema
from tests.corpus import damaged_copies

pages.CHUNK_PAGES = 4  # many chunks: rowid order is checked across their boundaries too
work = Path(sys.argv[1])
sources = [Path(a) for a in sys.argv[2:]]


def random_flips(src, trials):
    # random bytes anywhere in the kernel table's root or any page (the corpus flips chosen pages)
    con = sqlite3.connect(src)
    root = con.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (schema.KERNEL,)).fetchone()[0]
    size = con.execute("PRAGMA page_size").fetchone()[0]
    count = con.execute("PRAGMA page_count").fetchone()[0]
    con.close()
    rng = random.Random(1234)
    for trial in range(trials):
        data = bytearray(src.read_bytes())
        for _ in range(rng.choice([1, 4, 32])):
            at = (rng.choice([root, rng.randint(1, count)]) - 1) * size + rng.randrange(size)
            data[at] = rng.randrange(256)
        path = work / f"flips{trial}.sqlite"
        path.write_bytes(bytes(data))
        yield path


def sqlite_scan(path, columns):
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        quoted = ", ".join(f'"{c}"' for c in columns)
        return con.execute(f'SELECT {quoted} FROM "{schema.KERNEL}"').fetchall()
    except sqlite3.DatabaseError as exc:
        return f"sqlite3 failed: {exc}"
    finally:
        con.close()


def decoded(path, columns):
    got = pages.read_columns(path, schema.KERNEL, columns)
    out = []
    for c in columns:
        mask = got.nulls[c].tolist() if c in got.nulls else [False] * got.rows
        out.append([None if m else v for v, m in zip(got.values[c].tolist(), mask)])
    return list(zip(*out))


files = [d.path for src in sources for d in damaged_copies(src, work / src.stem, per_kind=6)]
files += list(random_flips(sources[-1], 150))
outcomes = {"decoded": 0, "unsupported": 0, "damaged": 0}
wrong = []
for path in files:
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        present = {r[1] for r in con.execute(f"PRAGMA table_info('{schema.KERNEL}')")}
    except (sqlite3.DatabaseError, ValueError):  # a damaged schema: the reader must say so too
        present = {c for c, _ in schema.CANONICAL[schema.KERNEL]}
    con.close()
    columns = [c for c, _ in schema.CANONICAL[schema.KERNEL] if c in present]
    try:
        rows = decoded(path, columns)
    except pages.PagesDamaged as exc:
        assert exc.table == schema.KERNEL and exc.detail, exc
        outcomes["damaged"] += 1
        continue
    except pages.PagesUnsupported:
        outcomes["unsupported"] += 1
        continue
    outcomes["decoded"] += 1
    expected = sqlite_scan(path, columns)
    if rows != expected:
        scan = expected if isinstance(expected, str) else f"{len(expected)} rows"
        wrong.append(f"{path.name}: {len(rows)} rows decoded, sqlite3: {scan}")
print(json.dumps({"outcomes": outcomes, "wrong": wrong}))
"""


def test_damaged_files_decode_exactly_or_are_refused(fixture_dir: Path, tmp_path: Path) -> None:
    """Every damaged copy of the bundled example and a fixture (tests/corpus.py: leaf and interior
    flips, rowids out of order, invalid UTF-8 in StringIds, flips in other tables) and 150 copies with
    random bytes flipped: read_columns returns exactly what sqlite3's single-threaded full scan
    returns, or raises PagesUnsupported or PagesDamaged naming the table -- no other exception and
    no crash (it runs in a child process, so a crash fails the test, not pytest)."""
    root = Path(__file__).resolve().parents[1]
    sources = [root / "examples" / "bs16.sqlite", fixture_dir / "v2025_5.sqlite"]
    done = subprocess.run(
        [sys.executable, "-c", DAMAGE_SCRIPT, str(tmp_path), *map(str, sources)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["wrong"] == []
    assert all(n > 0 for n in report["outcomes"].values()), report


def test_cancelled_read_stops(fixture_dir: Path) -> None:
    """A background decode nobody will collect (its trace is closed) stops at the next chunk."""
    import threading

    stop = threading.Event()
    stop.set()
    with pytest.raises(pages.PagesUnsupported, match="cancelled"):
        pages.read_columns(fixture_dir / "v2024_6.sqlite", schema.KERNEL, ["start"], cancel=stop)
    t = Session(fixture_dir / "v2024_6.sqlite", cache=False)  # prefetches the census columns
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

    modules = "nsysq.trace, nsysq.export.cache, nsysq.export.decoded, nsysq.export.pages"
    code = f"import sys, {modules}; print('duckdb' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- The decoder's interface: defined once in _pages.h, checked here -----------------------------

HEADER = Path(pages.__file__).with_name("_pages.h")
_CTYPES = {"int64_t": ctypes.c_int64, "int32_t": ctypes.c_int32, "uint8_t": ctypes.c_uint8}


def _ctype(declaration: str, *, result: bool = False) -> object:
    """The ctypes type pages.py must use for a C parameter or result declaration."""
    if "*" in declaration:
        return ctypes.c_char_p if result and "char" in declaration else ctypes.c_void_p
    return _CTYPES[declaration.replace("const", "").split()[0]]


def _prototypes() -> dict[str, tuple[object, list[object]]]:
    """Every NSYSQ_API prototype of _pages.h as (restype, argtypes)."""
    found = {}
    text = HEADER.read_text()
    for ret, name, params in re.findall(r"NSYSQ_API\s+([\w\s*]+?)\s*\b(nsysq_\w+)\(([^)]*)\);", text):
        args = [] if params.strip() == "void" else [p.rsplit(None, 1)[0] for p in params.split(",")]
        stars = ["*" * p.split(None)[-1].count("*") for p in params.split(",")] if args else []
        found[name] = (
            _ctype(ret, result=True),
            [_ctype(a + s) for a, s in zip(args, stars, strict=True)],
        )
    return found


def _defines() -> dict[str, int]:
    return {k: int(v) for k, v in re.findall(r"#define (NSYSQ_\w+) (-?\d+)", HEADER.read_text())}


def _error_table() -> list[tuple[str, int, str, str]]:
    """The X(name, code, class, message) rows of _pages.h's NSYSQ_ERRORS list."""
    rows = re.findall(r'X\((\w+), (-?\d+), (NSYSQ_\w+), "([^"]*)"\)', HEADER.read_text())
    return [(name, int(code), cls, message) for name, code, cls, message in rows]


def test_ctypes_signatures_match_the_c_prototypes() -> None:
    prototypes = _prototypes()
    assert set(prototypes) == set(pages.SIGNATURES) and "nsysq_decode_leaves" in prototypes
    for name, (restype, argtypes) in pages.SIGNATURES.items():
        assert prototypes[name] == (restype, argtypes), name


def test_python_constants_match_the_header() -> None:
    defines = _defines()
    assert pages.ABI_VERSION == defines["NSYSQ_ABI_VERSION"]
    assert (pages.UNSUPPORTED, pages.DAMAGED, pages.TOO_NARROW) == (
        defines["NSYSQ_UNSUPPORTED"],
        defines["NSYSQ_DAMAGED"],
        defines["NSYSQ_TOO_NARROW"],
    )
    codes = {n: c for n, c, _, _ in _error_table()}
    assert (pages.ERR_ROWID_ORDER, pages.ERR_ROWID_BOUNDS) == (codes["ROWID_ORDER"], codes["ROWID_BOUNDS"])


def test_error_messages_and_classes_come_from_the_library() -> None:
    """The built library answers for every code of the header's table (so pages.py holds no copy),
    and for no other code."""
    lib = pages._decoder()
    defines = _defines()
    table = _error_table()
    assert len(table) >= 14 and len({code for _, code, _, _ in table}) == len(table)
    for _, code, cls, message in table:
        assert lib.message(code).decode() == message
        assert lib.error_class(code) == defines[cls]
    for unknown in (0, -1, -8, -100, 5):
        assert lib.message(unknown) is None and lib.error_class(unknown) == -1


def test_a_library_built_from_another_version_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    library = Path(pages.__file__).with_name("_pages.so")
    assert pages._load(library) is not None
    monkeypatch.setattr(pages, "ABI_VERSION", pages.ABI_VERSION + 1)
    assert pages._load(library) is None


def test_no_compiled_decoder_is_unsupported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.sqlite"
    _table(path, 4096, rows=100)
    monkeypatch.setattr(pages, "_lib", False)
    with pytest.raises(pages.PagesUnsupported, match="not built"):
        pages.read_columns(path, "t", ["a"])


# --- Damage: every contradiction of the file format is PagesDamaged, naming table and page -------

FIRST_ROWID = 1000  # rowids 1000.. all take 2-byte varints, so they can be rewritten in place


def _btree(path: Path, rows: int = 3000) -> tuple[Pages, int, list[int]]:
    """A table t (a INTEGER, b INTEGER NOT NULL) of ``rows`` small records in 4 KiB pages, its rowids
    from FIRST_ROWID: an interior root over about ten leaves. Returns the file's pages (read by
    tests/corpus.py's own b-tree walk), the root and the leaves in rowid order."""
    con = sqlite3.connect(path)
    con.execute("PRAGMA page_size = 4096")
    con.execute("CREATE TABLE t (a INTEGER, b INTEGER NOT NULL)")
    con.execute("CREATE TABLE filler (x BLOB)")
    con.executemany("INSERT INTO filler VALUES (?)", [(b"f" * 3000,)] * 60)  # pages to point at
    con.executemany(
        "INSERT INTO t (rowid, a, b) VALUES (?, ?, ?)", [(FIRST_ROWID + i, i % 7, i) for i in range(rows)]
    )
    con.commit()
    root = con.execute("SELECT rootpage FROM sqlite_master WHERE name = 't'").fetchone()[0]
    con.close()
    image = Pages(path.read_bytes())
    leaves = image.tree(root).leaves
    assert image.kind(root) == 0x05 and len(leaves) >= 6
    return image, root, leaves


def _patch(path: Path, edits: dict[int, bytes]) -> None:
    data = bytearray(path.read_bytes())
    for at, raw in edits.items():
        data[at : at + len(raw)] = raw
    path.write_bytes(bytes(data))


def _cell_pointer(image: Pages, page: int, index: int) -> int:
    """File offset of the cell pointer ``index`` of leaf ``page``."""
    return image.header_at(page) + 8 + 2 * index


def _cell_at_page_end(image: Pages, page: int, raw: bytes) -> dict[int, bytes]:
    """Edits making the first cell of leaf ``page`` the bytes ``raw`` at the very end of the page."""
    at = image.usable - len(raw)
    return {_cell_pointer(image, page, 0): at.to_bytes(2, "big"), image.start(page) + at: raw}


def _record_header(image: Pages, page: int) -> int:
    """File offset of the record header (its length byte) of leaf ``page``'s first cell."""
    return image.leaf_cells(page)[0].payload_at


def _varint2(value: int) -> bytes:
    assert 128 <= value < 1 << 14
    return bytes([0x80 | value >> 7, value & 0x7F])


def _leaf_kinds(image: Pages, root: int, leaves: list[int]) -> dict[str, tuple[dict[int, bytes], int, str]]:
    """Damage of one leaf or interior page: (edits, page the error must name, message pattern)."""
    first, middle, last = leaves[0], leaves[len(leaves) // 2], leaves[-1]
    cells = image.leaf_cells(middle)
    header = _record_header(image, first)
    root_cells = image.cell_pointers(root)
    return {
        "not a leaf": ({image.start(middle): b"\x0a"}, middle, "not a table leaf page"),
        "not interior": ({image.start(root): b"\x02"}, root, "not an interior table page"),
        "cell count": ({image.start(middle) + 3: b"\xff\xff"}, middle, "cell pointer array does not fit"),
        "cell pointer": (
            {_cell_pointer(image, middle, 5): b"\xff\xf0"},
            middle,
            "cell pointer points outside",
        ),
        "varint": (_cell_at_page_end(image, first, b"\xff"), first, "a varint runs past"),
        "record past page": (
            _cell_at_page_end(image, first, b"\x50\x01\x02"),
            first,
            "record runs past its page",
        ),
        "overflow past page": (
            _cell_at_page_end(image, first, b"\xa7\x08\x01\x02"),  # 5000 bytes, local part cut off
            first,
            "record runs past its page",
        ),
        "header past record": ({header: b"\x7f"}, first, "header past the record"),
        "value past record": ({header + 2: b"\x06"}, first, "a value runs past its record"),
        "reserved serial type": ({header + 1: b"\x0a"}, first, r"reserved serial type \(10 or 11\)"),
        "rowid order in a page": (
            {cells[3].rowid_at: image.image[cells[2].rowid_at : cells[2].rowid_at + 2]},
            middle,
            f"rowid {image_rowid(image, cells[2])} out of order",
        ),
        "rowid range": (
            {image.leaf_cells(last)[-1].rowid_at: _varint2(FIRST_ROWID + 1)},
            first,
            "more rows than the b-tree's rowid range allows",
        ),
        "child outside the file": ({root_cells[1]: b"\x00\xff\xff\xff"}, root, "child page 16777215 outside"),
        "second reference": (
            {root_cells[1]: image.image[root_cells[0] : root_cells[0] + 4]},
            root,
            "a child page the b-tree already holds",
        ),
        "loop": ({image.header_at(root) + 8: root.to_bytes(4, "big")}, root, "already holds"),
        "interior keys out of order": (
            {root_cells[2] + 4: image.image[root_cells[0] + 4 : root_cells[0] + 6]},
            root,
            f"interior key {image.varint(root_cells[0] + 4)[0]} out of order",
        ),
        "rowid past its parent's key": (
            {image.leaf_cells(leaves[1])[-1].rowid_at: b"\xff\x7f"},
            leaves[1],
            "rowid 16383 outside the key range its parent page gives",
        ),
    }


DAMAGE_KINDS = (
    "not a leaf", "not interior", "cell count", "cell pointer", "varint", "record past page",
    "overflow past page", "header past record", "value past record", "reserved serial type",
    "rowid order in a page", "rowid range", "child outside the file", "second reference", "loop",
    "interior keys out of order", "rowid past its parent's key",
)  # fmt: skip
# The kinds pages.check_tree (the scanner's guard, no compiled decoder) finds the same way.
TREE_KINDS = (
    "not a leaf", "not interior", "cell count", "child outside the file", "second reference", "loop",
    "interior keys out of order", "rowid past its parent's key",
)  # fmt: skip


@pytest.mark.parametrize("kind", DAMAGE_KINDS)
def test_damaged_page_is_named(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "t.sqlite"
    image, root, leaves = _btree(path)
    kinds = _leaf_kinds(image, root, leaves)
    assert set(kinds) == set(DAMAGE_KINDS)
    edits, page, message = kinds[kind]
    _patch(path, edits)
    with pytest.raises(pages.PagesDamaged, match=message) as caught:
        pages.read_columns(path, "t", ["a", "b"])
    assert (caught.value.table, caught.value.page) == ("t", page)


@pytest.mark.parametrize("kind", TREE_KINDS)
def test_the_tree_check_names_the_same_damage(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pages.check_tree (the guard of a table read through DuckDB's sqlite scanner) finds b-tree
    damage as the decoder does, without the compiled decoder."""
    path = tmp_path / "t.sqlite"
    image, root, leaves = _btree(path)
    pages.check_tree(path, "t")  # intact
    edits, page, message = _leaf_kinds(image, root, leaves)[kind]
    _patch(path, edits)
    monkeypatch.setattr(pages, "_lib", False)
    with pytest.raises(pages.PagesDamaged, match=message) as caught:
        pages.check_tree(path, "t")
    assert (caught.value.table, caught.value.page) == ("t", page)


def test_a_child_interior_page_key_outside_its_parents_range(tmp_path: Path) -> None:
    """In a three-level b-tree, a key of a child interior page beyond the key its parent gives it
    (the child's own keys still increase) is damage on that child page, in both checks."""
    path = tmp_path / "t.sqlite"
    con = sqlite3.connect(path)
    con.execute("PRAGMA page_size = 512")
    con.execute("CREATE TABLE t (a INTEGER, b INTEGER NOT NULL)")
    con.executemany(
        "INSERT INTO t (rowid, a, b) VALUES (?, ?, ?)", [(FIRST_ROWID + i, i, i) for i in range(12000)]
    )
    con.commit()
    root = con.execute("SELECT rootpage FROM sqlite_master WHERE name = 't'").fetchone()[0]
    con.close()
    image = Pages(path.read_bytes())
    child = image.children(root)[0]
    assert image.kind(child) == 0x05  # three levels
    parent_key = image.varint(image.cell_pointers(root)[0] + 4)[0]
    last = image.cell_pointers(child)[-1] + 4
    assert image.varint(last)[1] == 2 and parent_key + 1 < 1 << 14
    _patch(path, {last: _varint2(parent_key + 1)})
    for check in (lambda: pages.read_columns(path, "t", ["a"]), lambda: pages.check_tree(path, "t")):
        with pytest.raises(pages.PagesDamaged, match=f"interior key {parent_key + 1} out of order") as caught:
            check()
        assert (caught.value.table, caught.value.page) == ("t", child)


def test_rowids_out_of_order_across_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks decode in parallel; the rowid at a chunk boundary is checked against the previous
    chunk's last one. A rowid raised to the largest its varint holds runs ahead of the next chunk,
    and first past its parent's key: the decoder names its own page; the check across chunks, a
    second line behind the parent's key range, is tried on chunks as the decoder reports them."""
    path = tmp_path / "t.sqlite"
    image, _, leaves = _btree(path)
    monkeypatch.setattr(pages, "CHUNK_PAGES", 2)
    assert pages.read_columns(path, "t", ["a", "b"]).rows == 3000  # many chunks, in order
    _patch(path, {image.leaf_cells(leaves[1])[-1].rowid_at: b"\xff\x7f"})
    with pytest.raises(pages.PagesDamaged, match="rowid 16383 outside the key range") as caught:
        pages.read_columns(path, "t", ["a", "b"])
    assert (caught.value.table, caught.value.page) == ("t", leaves[1])
    ahead = pages._Chunk(leaves[:2], rows=10, first_rowid=1000, last_rowid=16383)
    behind = pages._Chunk(leaves[2:4], 2, rows=10, first_page=leaves[2], first_rowid=1774, last_rowid=2000)
    with pytest.raises(pages.PagesDamaged, match="rowid 1774 out of order") as caught:
        pages._check_rowid_order([ahead, behind], "t")
    assert caught.value.page == leaves[2]


def test_null_in_a_not_null_column_is_damage(tmp_path: Path) -> None:
    """SQLite never writes a NULL into a NOT NULL column, and PRAGMA integrity_check reports one
    ("NULL value in t.b"): a contradiction of the file, so damage rather than a reason to fall back."""
    path = tmp_path / "t.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (a INTEGER, b INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, ?)", [(i, None if i == 500 else i) for i in range(1000)])
    con.commit()
    con.execute("PRAGMA writable_schema = ON")
    con.execute(
        "UPDATE sqlite_master SET sql = 'CREATE TABLE t (a INTEGER, b INTEGER NOT NULL)' WHERE name = 't'"
    )
    con.commit()
    con.close()
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "NULL value in t.b"
    con.close()
    with pytest.raises(pages.PagesDamaged, match="NULL in a column declared NOT NULL") as caught:
        pages.read_columns(path, "t", ["b"])
    assert caught.value.table == "t" and caught.value.page is not None
    assert _decoded(path, "t", ["a"]) == _oracle(path, "t", ["a"])


def test_a_damaged_schema_is_damage(tmp_path: Path) -> None:
    """A root page number SQLite itself rejects ("malformed database schema")."""
    path = tmp_path / "t.sqlite"
    _btree(path)
    con = sqlite3.connect(path)
    con.execute("PRAGMA writable_schema = ON")
    con.execute("UPDATE sqlite_master SET rootpage = 99999 WHERE name = 't'")
    con.commit()
    con.close()
    with pytest.raises(pages.PagesDamaged, match="malformed database schema") as caught:
        pages.read_columns(path, "t", ["a"])
    assert (caught.value.table, caught.value.page) == ("t", None)


def test_root_page_outside_the_file(tmp_path: Path) -> None:
    """SQLite rejects such a schema first (above); the walk checks the root on its own anyway."""
    path = tmp_path / "t.sqlite"
    _btree(path)
    layout = dataclasses.replace(pages._layout(path, "t"), root=99999)
    fd = os.open(path, os.O_RDONLY)
    try:
        with pytest.raises(pages.PagesDamaged, match="root page outside the file") as caught:
            pages._leaves(fd, layout, "t")
    finally:
        os.close(fd)
    assert (caught.value.table, caught.value.page) == ("t", 99999)


def test_a_tree_deeper_than_sqlite_allows(tmp_path: Path) -> None:
    """A chain of 41 interior pages, each with only a right-most child: deeper than any b-tree."""
    path = tmp_path / "t.sqlite"
    image, root, _ = _btree(path)
    others = [p for p in range(2, len(image.image) // image.page_size + 1) if p != root]
    chain = [root, *others[: pages.MAX_DEPTH + 1]]
    edits = {}
    for page, child in itertools.pairwise(chain):
        edits[image.start(page)] = b"\x05\x00\x00\x00\x00\x10\x00\x00" + child.to_bytes(4, "big")
    _patch(path, edits)
    with pytest.raises(pages.PagesDamaged, match=f"deeper than {pages.MAX_DEPTH} levels") as caught:
        pages.read_columns(path, "t", ["a"])
    assert (caught.value.table, caught.value.page) == ("t", root)


def test_a_short_read_is_damage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file shrinks between reading its header and its pages (truncated while being read)."""
    path = tmp_path / "t.sqlite"
    _, _, leaves = _btree(path)
    layout = pages._layout

    def then_truncate(p: Path, table: str) -> object:
        found = layout(p, table)
        os.truncate(p, (leaves[-1] - 1) * found.page_size + 100)
        return found

    monkeypatch.setattr(pages, "_layout", then_truncate)
    with pytest.raises(pages.PagesDamaged, match="short read") as caught:
        pages.read_columns(path, "t", ["a"])
    assert (caught.value.table, caught.value.page) == ("t", leaves[-1])


def test_damage_after_an_unsupported_value_is_still_damage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A text value in the first chunk would send the read to SQLite; rowids out of order in a
    later chunk must still be reported (the chunks after an unsupported one are decoded anyway)."""
    path = tmp_path / "t.sqlite"
    image, _, leaves = _btree(path)
    con = sqlite3.connect(path)
    con.execute("UPDATE t SET a = 'x' WHERE rowid = ?", (FIRST_ROWID + 1,))  # same size: stays in place
    con.commit()
    con.close()
    image = Pages(path.read_bytes())
    monkeypatch.setattr(pages, "CHUNK_PAGES", 2)
    with pytest.raises(pages.PagesUnsupported, match="real, text or blob"):
        pages.read_columns(path, "t", ["a"])
    cells = image.leaf_cells(leaves[-2])
    _patch(path, {cells[1].rowid_at: image.image[cells[0].rowid_at : cells[0].rowid_at + 2]})
    with pytest.raises(pages.PagesDamaged, match="out of order") as caught:
        pages.read_columns(path, "t", ["a"])
    assert (caught.value.table, caught.value.page) == ("t", leaves[-2])


def test_an_invalid_page_size_is_damage(tmp_path: Path) -> None:
    path = tmp_path / "t.sqlite"
    _btree(path)
    _patch(path, {16: (768).to_bytes(2, "big")})  # not a power of two
    with pytest.raises(pages.PagesDamaged, match="invalid page size") as caught:
        pages.read_columns(path, "t", ["a"])
    assert (caught.value.table, caught.value.page) == ("t", 1)


# -- the text check of a table read through DuckDB's sqlite scanner (pages.check_text) -------------

# Byte strings Python's strict decoder refuses (the oracle), each hidden in otherwise ASCII text.
INVALID_UTF8 = [
    b"\x80", b"\xc3", b"\xc3(", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
    b"\xf5\x80\x80\x80", b"\xff", b"\xe2\x82", b"\xf0\x9f\x98",
]  # fmt: skip
VALID_UTF8 = ["plain", "é", "日本語", "😀", "\u07ff\u0800\uffff\U00010000\U0010ffff", "a\x00b", ""]


def _texts(path: Path, values: list[object], *, key: bool = False, page_size: int = 4096) -> None:
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA page_size = {page_size}")
    ident = "id INTEGER PRIMARY KEY" if key else "id INTEGER"
    con.execute(f"CREATE TABLE t ({ident}, n INTEGER, text TEXT, other BLOB)")
    rows = [(i, i * 3, values[i % len(values)], b"\xff" if i % 5 == 0 else None) for i in range(3000)]
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", rows)
    con.commit()
    con.close()


def _sqlite_count(path: Path, table: str) -> int:
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        return int(con.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0])
    finally:
        con.close()


@pytest.mark.parametrize("key", [False, True], ids=["rowid", "integer-primary-key"])
def test_text_check_counts_valid_text_as_sqlite_does(tmp_path: Path, key: bool) -> None:
    path = tmp_path / "t.sqlite"
    _texts(path, [*VALID_UTF8, 7, 1.5, None], key=key)
    assert pages.check_text(path, "t", ["text"]) == _sqlite_count(path, "t") == 3000
    assert pages.check_text(path, "t", []) == 3000
    first = 0 if key else 1  # the first row's rowid: its id, or SQLite's own numbering
    with pytest.raises(pages.PagesDamaged, match=f"the other value of row {first} is not valid UTF-8"):
        pages.check_text(path, "t", ["text", "other"])  # a blob is read as text too, as GLOB does


@pytest.mark.parametrize("bad", INVALID_UTF8, ids=[b.hex() for b in INVALID_UTF8])
def test_text_check_refuses_what_python_refuses(tmp_path: Path, bad: bytes) -> None:
    with pytest.raises(UnicodeDecodeError):
        (b"ok " + bad + b" ok").decode("utf-8")
    path = tmp_path / "t.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (n INTEGER, text TEXT)")
    con.executemany("INSERT INTO t VALUES (?, ?)", [(i, "fine") for i in range(2000)])
    con.execute("UPDATE t SET text = CAST(? AS TEXT) WHERE rowid = 1234", (b"ok " + bad + b" ok",))
    con.commit()
    con.close()
    with pytest.raises(pages.PagesDamaged, match="the text value of row 1234 is not valid UTF-8") as caught:
        pages.check_text(path, "t", ["text"])
    assert caught.value.page is not None
    with pytest.raises(pages.PagesDamaged, match="the text value of row 1234 is not valid UTF-8") as coded:
        pages.read_texts(path, "t", "text")  # the text column as codes refuses it too, on the same page
    assert coded.value.page == caught.value.page
    with pytest.raises(DamagedTraceError, match="row 1234 is not valid UTF-8"):
        pages.verified_rows(path, "t", ["text"])
    assert pages.check_text(path, "t", ["n"]) == 2000  # the column not asked for is not read


def test_text_check_leaves_overflow_and_utf16_to_sqlite(tmp_path: Path) -> None:
    """A record spilling into overflow pages, or a UTF-16 file (nsys writes UTF-8): PagesUnsupported;
    verified_rows then answers through SQLite's own reading (the count, for the overflow file)."""
    spill = tmp_path / "spill.sqlite"
    _texts(spill, ["short", "é" * 3000])
    wide = tmp_path / "utf16.sqlite"
    con = sqlite3.connect(wide)
    con.execute("PRAGMA encoding = 'UTF-16le'")
    con.execute("CREATE TABLE t (n INTEGER, text TEXT)")
    con.executemany("INSERT INTO t VALUES (?, ?)", [(i, "é") for i in range(500)])
    con.commit()
    con.close()
    for path in (spill, wide):
        with pytest.raises(pages.PagesUnsupported):
            pages.check_text(path, "t", ["text"])
    assert pages.verified_rows(spill, "t", ["text"]) == 3000


def _tree_damage_is_named(tmp_path: Path, read: Callable[[Path], object]) -> Path:
    """Each of TREE_KINDS' damage to _btree's table t: ``read`` raises PagesDamaged naming its page.
    Returns the undamaged file."""
    path = tmp_path / "t.sqlite"
    image, root, leaves = _btree(path)
    for kind in TREE_KINDS:
        edits, page, message = _leaf_kinds(image, root, leaves)[kind]
        damaged = tmp_path / f"{kind.replace(' ', '_')}.sqlite"
        shutil.copy(path, damaged)
        _patch(damaged, edits)
        with pytest.raises(pages.PagesDamaged, match=message) as caught:
            read(damaged)
        assert (caught.value.table, caught.value.page) == ("t", page), kind
    return path


def test_text_check_finds_the_tree_damage_check_tree_finds(tmp_path: Path) -> None:
    _tree_damage_is_named(tmp_path, lambda damaged: pages.check_text(damaged, "t", []))


@pytest.mark.skipif(not REAL_TRACES, reason="no real exports beside the checkout")
@pytest.mark.parametrize("path", REAL_TRACES, ids=[p.stem for p in REAL_TRACES])
def test_real_text_tables_check_as_sqlite_reads_them(path: Path) -> None:
    """Every table of a real export with text columns: the text check's count is SQLite's, or it
    leaves the table to SQLite (overflow records)."""
    source = read_schema(path)
    checked = 0
    for table in (t for t in schema.CANONICAL if source.has(t)):
        texts = schema.text_columns(table, source)
        try:
            rows = pages.check_text(path, table, texts)
        except pages.PagesUnsupported:
            continue
        assert rows == sqlite_reading(path, table, texts), table
        checked += 1
    assert checked


# -- a text column as codes into its distinct texts (pages.read_texts) -------------------------------


def _sqlite_texts(path: Path, table: str, column: str) -> list[object]:
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        return [v for (v,) in con.execute(f'SELECT "{column}" FROM "{table}" ORDER BY rowid')]
    finally:
        con.close()


def _decoded_texts(path: Path, table: str, column: str) -> list[object]:
    codes, texts = pages.read_texts(path, table, column)
    assert texts[0] is None and len(set(texts[1:])) == len(texts) - 1  # each distinct text once
    return [texts[c] for c in codes.tolist()]


@pytest.mark.parametrize("page_size", [512, 4096, 65536])
def test_text_codes_are_sqlites_texts(tmp_path: Path, page_size: int) -> None:
    """Every text SQLite returns, NULLs included, in rowid order, across many chunks of pages (the
    512-byte pages) and one (65536); codes number the texts in order of first appearance."""
    path = tmp_path / "t.sqlite"
    values: list[object] = [*VALID_UTF8, None, *(f"range {i}" for i in range(50)), "é" * 40]
    _texts(path, values, page_size=page_size)
    assert _decoded_texts(path, "t", "text") == _sqlite_texts(path, "t", "text")
    codes, texts = pages.read_texts(path, "t", "text")
    firsts = [int(codes.tolist().index(c)) for c in range(1, len(texts))]
    assert firsts == sorted(firsts)


def test_text_codes_of_a_column_added_later(tmp_path: Path) -> None:
    path = tmp_path / "t.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (n INTEGER)")
    con.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(1500)])
    con.execute("ALTER TABLE t ADD COLUMN text TEXT")
    con.executemany("INSERT INTO t VALUES (?, ?)", [(i, f"late {i % 7}") for i in range(1500)])
    con.commit()
    con.close()
    assert _decoded_texts(path, "t", "text") == _sqlite_texts(path, "t", "text")
    assert _decoded_texts(path, "t", "text")[:1500] == [None] * 1500


@pytest.mark.parametrize("value", [7, 1.5], ids=["integer", "real"])
def test_numbers_in_a_text_column_are_stored_as_text(tmp_path: Path, value: object) -> None:
    path = tmp_path / "t.sqlite"
    _texts(path, ["a", "b", value])  # TEXT affinity: SQLite stores them as text
    assert _decoded_texts(path, "t", "text") == _sqlite_texts(path, "t", "text")


@pytest.mark.parametrize("value", [b"blob", 7, 1.5], ids=["blob", "integer", "real"])
def test_a_value_that_is_not_text_is_left_to_sqlite(tmp_path: Path, value: object) -> None:
    path = tmp_path / "t.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (n INTEGER, v)")  # no affinity: values stay as they are
    con.executemany("INSERT INTO t VALUES (?, ?)", [(i, "text" if i != 700 else value) for i in range(900)])
    con.commit()
    con.close()
    with pytest.raises(pages.PagesUnsupported, match="holds an integer, real or blob value"):
        pages.read_texts(path, "t", "v")


def test_text_codes_leave_overflow_to_sqlite_and_name_damage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record in overflow pages: PagesUnsupported. The tree damage check_tree finds, named on the
    same page, even though every undamaged page holds integers (unsupported) in the column: a page
    per chunk, and damage is reported before any chunk's refusal."""
    spill = tmp_path / "spill.sqlite"
    _texts(spill, ["short", "é" * 3000])
    with pytest.raises(pages.PagesUnsupported, match="overflow"):
        pages.read_texts(spill, "t", "text")
    monkeypatch.setattr(pages, "CHUNK_PAGES", 1)
    path = _tree_damage_is_named(tmp_path, lambda damaged: pages.read_texts(damaged, "t", "a"))
    with pytest.raises(pages.PagesUnsupported, match="holds an integer"):
        pages.read_texts(path, "t", "a")  # undamaged: every page refuses


@pytest.mark.skipif(not REAL_TRACES, reason="no real exports beside the checkout")
@pytest.mark.parametrize("path", REAL_TRACES, ids=[p.stem for p in REAL_TRACES])
def test_real_nvtx_texts_decode_as_sqlite_reads_them(path: Path) -> None:
    source = read_schema(path)
    if "text" not in source.columns.get(schema.NVTX, ()):
        pytest.skip("no NVTX text in this export")
    assert _decoded_texts(path, schema.NVTX, "text") == _sqlite_texts(path, schema.NVTX, "text")
