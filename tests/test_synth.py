"""Tests of the synthetic nsys-export writer (nsysq.synth) and the fixtures built with it.

The oracle everywhere is raw SQL through Python's ``sqlite3``, never nsysq's own engine.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from nsysq.synth import example_pair, schemas
from nsysq.synth.scenarios import (
    DANGLING_DEMANGLED_ID,
    DANGLING_SHORT_ID,
    FIXTURE_VERSIONS,
    big,
    fixture,
)
from nsysq.synth.writer import TraceSpec, write_trace

try:
    from tests.conftest import REAL_DIR
    from tests.fixtures import FIXTURE_NAMES, build
except ImportError:  # tests/ itself on sys.path (rootdir-less pytest invocation)
    from conftest import REAL_DIR  # type: ignore[no-redef]
    from fixtures import FIXTURE_NAMES, build  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parents[1]
REAL = REAL_DIR
EXAMPLES = REPO / "examples"
KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"


def _ro(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def _tables(con: sqlite3.Connection) -> list[str]:
    return [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]


def _cols(con: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]


@pytest.fixture(scope="module")
def fixture_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("synth_fixtures")
    for name in FIXTURE_NAMES:
        build(name, d)
    return d


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return example_pair(tmp_path_factory.mktemp("example"))


# --- (a) column names/order equal the real exports ------------------------------------------


def _real_file(version: str) -> Path | None:
    if not REAL.is_dir():
        return None
    hits = sorted(REAL.glob(f"nsys{version}_*.sqlite"))
    return hits[0] if hits else None


@pytest.mark.real
@pytest.mark.parametrize("name", [n for n, v in FIXTURE_VERSIONS.items() if v])
def test_fixture_columns_match_real_export(name: str, fixture_dir: Path) -> None:
    version = FIXTURE_VERSIONS[name]
    assert version is not None
    real = _real_file(version)
    if real is None:
        pytest.skip(f"no real {version} export in {REAL}")
    with closing(_ro(fixture_dir / f"{name}.sqlite")) as syn, closing(_ro(real)) as ref:
        real_tables = set(_tables(ref))
        compared = 0
        for table in _tables(syn):
            if table not in real_tables:
                continue
            want = _cols(ref, table)
            if (
                version == "2022.2"
                and want[-1] == "name"
                and table in ("CUPTI_ACTIVITY_KIND_RUNTIME", MEMCPY)
            ):
                want = want[:-1]  # post-export ALTER TABLE artefact of that file
            assert _cols(syn, table) == want, table
            compared += 1
        assert compared >= 3


@pytest.mark.real
@pytest.mark.parametrize("version", schemas.VERSIONS)
def test_schema_module_matches_real_export(version: str) -> None:
    real = _real_file(version)
    if real is None:
        pytest.skip(f"no real {version} export")
    with closing(_ro(real)) as ref:
        for table in set(_tables(ref)) & set(schemas.tables(version)):
            want = _cols(ref, table)
            if (
                version == "2022.2"
                and want[-1] == "name"
                and table in ("CUPTI_ACTIVITY_KIND_RUNTIME", MEMCPY)
            ):
                want = want[:-1]
            assert schemas.columns(version, table) == want, table


# --- fixture properties ------------------------------------------------------------------------


def test_fixture_shapes(fixture_dir: Path) -> None:
    def tables(name: str) -> set[str]:
        with closing(_ro(fixture_dir / f"{name}.sqlite")) as con:
            return set(_tables(con))

    t = tables("v2020_3")
    assert {KERNEL, MEMCPY, "TARGET_INFO_CUDA_GPU"} <= t
    assert not t & {MEMSET, "NVTX_EVENTS", "EXPORT_META_DATA", "META_DATA_EXPORT"}
    assert not any(x.startswith("ENUM_") for x in t)
    assert {MEMCPY, MEMSET} <= tables("v2021_2")
    t = tables("v2022_2_nonlazy")
    assert "EXPORT_META_DATA" in t and MEMSET in t
    assert "ENUM_CUDA_KRENEL_LAUNCH_TYPE" in tables("v2023_1")
    t = tables("no_kernels")
    assert "CUPTI_ACTIVITY_KIND_RUNTIME" in t
    assert not t & {KERNEL, MEMCPY, MEMSET, "NVTX_EVENTS"}
    assert "StringIds" not in tables("not_nsys")
    assert "TARGET_INFO_CUDA_DEVICE" in tables("v2025_5")

    with closing(_ro(fixture_dir / "v2022_2_nonlazy.sqlite")) as con:
        assert con.execute(f"SELECT count(*) FROM {MEMSET}").fetchone() == (0,)
        n_text, n_id = con.execute(
            "SELECT count(text), count(textId) FROM NVTX_EVENTS WHERE eventType = 59"
        ).fetchone()
        assert n_text > 0 and n_id > 0
        lazy = con.execute("SELECT value FROM EXPORT_META_DATA WHERE name = 'EXPORT_LAZY'").fetchone()
        assert lazy == ("false",)
    with closing(_ro(fixture_dir / "v2023_1.sqlite")) as con:
        assert con.execute("SELECT min(start) < 0 FROM NVTX_EVENTS").fetchone() == (1,)
        assert (
            con.execute("SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 34 AND end IS NULL").fetchone()[0]
            >= 1
        )
    with closing(_ro(fixture_dir / "v2024_6.sqlite")) as con:
        assert con.execute("SELECT count(binaryData) FROM NVTX_EVENTS").fetchone()[0] > 0
        assert (
            con.execute(
                f"SELECT count(*) FROM {KERNEL} k JOIN StringIds s ON s.id = k.demangledName "
                "WHERE s.value LIKE '%cublas%'"
            ).fetchone()[0]
            > 0
        )
    with closing(_ro(fixture_dir / "v2025_5.sqlite")) as con:
        assert con.execute(f"SELECT max(copyCount) FROM {MEMCPY}").fetchone() == (4,)
        assert con.execute(f"SELECT max(clusterX) FROM {KERNEL}").fetchone() == (2,)
        names = {r[0] for r in con.execute("SELECT name FROM TARGET_INFO_GPU")}
        assert "Intel(R) UHD Graphics" in names
    with closing(_ro(fixture_dir / "graph_trace.sqlite")) as con:
        mode = con.execute(
            "SELECT value FROM META_DATA_CAPTURE WHERE name LIKE '%CUDA_GRAPH_TRACE_OPTIONS:MODE'"
        ).fetchall()
        assert mode == [("Graph",)]
        assert con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE").fetchone()[0] == 12


def test_edge_cases(fixture_dir: Path) -> None:
    with closing(_ro(fixture_dir / "edge_cases.sqlite")) as con:
        ids = {r[0] for r in con.execute("SELECT id FROM StringIds")}
        assert DANGLING_SHORT_ID not in ids and DANGLING_DEMANGLED_ID not in ids
        dangling = con.execute(
            f"SELECT count(*) FROM {KERNEL} k LEFT JOIN StringIds s ON s.id = k.shortName WHERE s.id IS NULL"
        ).fetchone()[0]
        assert dangling == 1
        assert con.execute(f"SELECT count(*) FROM {KERNEL} WHERE start = end").fetchone()[0] == 2
        assert con.execute(f"SELECT count(*) FROM {KERNEL} WHERE mangledName IS NULL").fetchone()[0] > 0
        by_short = dict(
            con.execute(
                f"SELECT s.value, count(DISTINCT k.demangledName) FROM {KERNEL} k "
                "JOIN StringIds s ON s.id = k.shortName GROUP BY 1"
            ).fetchall()
        )
        assert by_short["device_kernel"] == 2
        assert by_short["vectorized_elementwise_kernel"] == 3
        for name in (
            "Kernel2",
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
            "merge_attn_states_kernel",
            "triton_poi_fused_mul_silu_0",
            "triton_per_fused_softmax_2",
            "カーネル",
        ):
            assert name in by_short
        assert con.execute(
            f"SELECT count(DISTINCT deviceId), count(DISTINCT streamId) FROM {KERNEL}"
        ).fetchone() == (2, 3)
        assert (
            con.execute("SELECT count(*) FROM NVTX_EVENTS WHERE text IS NULL AND textId IS NULL").fetchone()[
                0
            ]
            >= 1
        )


def test_no_overlap_per_stream_in_fixtures(fixture_dir: Path) -> None:
    for name in FIXTURE_NAMES:
        if name == "not_nsys":
            continue
        with closing(_ro(fixture_dir / f"{name}.sqlite")) as con:
            if KERNEL not in _tables(con):
                continue
            assert _overlaps(con) == 0, name


# --- writer behaviour --------------------------------------------------------------------------


def test_writer_lazy_and_nonlazy(tmp_path: Path) -> None:
    k = {"start": 10, "end": 20, "shortName": "k", "demangledName": "k(void)"}
    lazy = write_trace(tmp_path / "lazy.sqlite", TraceSpec(version="2024.6", kernels=[k]))
    full = write_trace(tmp_path / "full.sqlite", TraceSpec(version="2024.6", kernels=[k], lazy=False))
    with closing(_ro(lazy)) as con:
        t = set(_tables(con))
        assert KERNEL in t and "StringIds" in t and MEMCPY not in t and "NVTX_EVENTS" not in t
        assert con.execute("PRAGMA journal_mode").fetchone() == ("delete",)
        row = con.execute(
            f"SELECT s.value, k.gridId FROM {KERNEL} k JOIN StringIds s ON s.id = k.shortName"
        ).fetchone()
        assert row == ("k", 1)
    with closing(_ro(full)) as con:
        assert set(_tables(con)) == set(schemas.tables("2024.6"))
    assert not Path(str(lazy) + "-wal").exists()


def test_writer_rejects_bad_rows(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no such column"):
        write_trace(
            tmp_path / "x.sqlite",
            TraceSpec(kernels=[{"start": 1, "end": 2, "shortName": "a", "demangledName": "a", "bogus": 1}]),
        )
    with pytest.raises(ValueError, match="NOT NULL"):
        write_trace(tmp_path / "y.sqlite", TraceSpec(kernels=[{"start": 1, "end": 2}]))
    with pytest.raises(ValueError, match="unknown nsys schema version"):
        write_trace(tmp_path / "z.sqlite", TraceSpec(version="1999.1"))


def test_deterministic_bytes(tmp_path: Path) -> None:
    a = fixture("edge_cases", tmp_path / "a.sqlite").read_bytes()
    b = fixture("edge_cases", tmp_path / "b.sqlite").read_bytes()
    assert a == b


# --- (b) the article's numbers -----------------------------------------------------------------


def _one(con: sqlite3.Connection, sql: str) -> tuple:
    return tuple(con.execute(sql).fetchone())


CENSUS = (
    f"SELECT s.value, COUNT(*), ROUND(SUM(k.end - k.start) / 1e6, 2) AS ms FROM {KERNEL} k "
    "JOIN StringIds s ON k.shortName = s.id GROUP BY s.value ORDER BY ms DESC"
)


def test_example_pair_article_numbers(pair: tuple[Path, Path]) -> None:
    bs1, bs16 = pair
    with closing(_ro(bs1)) as a, closing(_ro(bs16)) as b:
        for con, total_s in ((a, 1.25), (b, 1.37)):
            n, total = _one(con, f"SELECT COUNT(*), SUM(end - start) FROM {KERNEL}")
            assert n == 8955
            assert round(total / 1e9, 2) == total_s
            assert _one(con, "SELECT name, smCount FROM TARGET_INFO_GPU") == ("NVIDIA H200", 132)
        top = a.execute(CENSUS + " LIMIT 3").fetchall()
        assert top == [
            ("device_kernel", 748, 877.38),
            ("vectorized_elementwise_kernel", 883, 60.98),
            ("nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN", 28, 51.94),
        ]
        flash_sql = (
            f"SELECT COUNT(*), SUM(k.end - k.start), COUNT(DISTINCT s.value) FROM {KERNEL} "
            "k JOIN StringIds s ON k.shortName = s.id WHERE LOWER(s.value) LIKE "
            "'%flash%'"
        )
        n1, t1, d1 = _one(a, flash_sql)
        n16, t16, d16 = _one(b, flash_sql)
        assert (n1, n16, d1, d16) == (392, 392, 1, 1)
        assert (round(t1 / 1e6, 2), round(t16 / 1e6, 2)) == (1.20, 6.17)
        assert round(t16 / t1, 2) == 5.15
        for con, ops, d2d, mb, sets in ((a, 1099, 29, 81, 345), (b, 1147, 53, 163, 429)):
            assert _one(con, f"SELECT COUNT(*) FROM {MEMCPY}") == (ops,)
            n, byt = _one(con, f"SELECT COUNT(*), SUM(bytes) FROM {MEMCPY} WHERE copyKind = 8")
            assert (n, round(byt / 1e6)) == (d2d, mb)
            assert _one(con, f"SELECT COUNT(*) FROM {MEMSET}") == (sets,)

        def nvjet(con: sqlite3.Connection) -> dict[str, int]:
            return dict(
                con.execute(
                    f"SELECT s.value, SUM(k.end - k.start) FROM {KERNEL} k JOIN StringIds s "
                    "ON k.shortName = s.id WHERE s.value LIKE 'nvjet_tst_%' GROUP BY 1"
                ).fetchall()
            )

        g1, g16 = nvjet(a), nvjet(b)
        only1 = set(g1) - set(g16)
        only16 = set(g16) - set(g1)
        assert len(only1) == 7 and len(only16) == 7
        assert round(sum(g1[k] for k in only1) / 1e6) == 18
        assert round(sum(g16[k] for k in only16) / 1e6) == 88

        def by_short(con: sqlite3.Connection) -> dict[str, tuple[int, int]]:
            return {
                r[0]: (r[1], r[2])
                for r in con.execute(
                    f"SELECT s.value, COUNT(*), SUM(k.end - k.start) FROM {KERNEL} k "
                    "JOIN StringIds s ON k.shortName = s.id GROUP BY 1"
                )
            }

        s1, s16 = by_short(a), by_short(b)
        ratios = {k: s16[k][1] / s1[k][1] for k in set(s1) & set(s16)}
        assert 1.05 <= sum(v for k, v in g16.items()) / sum(g1.values()) <= 1.5
        assert 1.4 <= ratios["rms_norm_kernel"] <= 1.6
        assert 1.1 <= ratios["act_and_mul_kernel"] <= 1.3
        assert 1.03 <= ratios["device_kernel"] <= 1.1
        outliers = [k for k, v in ratios.items() if v > 2.0 or v < 0.5]
        assert outliers == ["reshape_and_cache_flash_kernel"]
        for con in (a, b):
            assert _overlaps(con) == 0
            assert _one(con, "SELECT COUNT(*) > 100 FROM NVTX_EVENTS") == (1,)
            n_api = _one(con, "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME")[0]
            assert 9000 < n_api < 12000
    for p in pair:
        assert p.stat().st_size < 3_000_000


def test_example_pair_bytes_are_deterministic(pair: tuple[Path, Path], tmp_path: Path) -> None:
    again = example_pair(tmp_path)
    for old, new in zip(pair, again, strict=True):
        assert old.read_bytes() == new.read_bytes()


# --- (c) committed examples equal fresh ones --------------------------------------------------


def _content(path: Path) -> Iterator[tuple[str, list[tuple]]]:
    with closing(_ro(path)) as con:
        for table in sorted(_tables(con)):
            yield table, con.execute(f'SELECT * FROM "{table}" ORDER BY rowid').fetchall()


@pytest.mark.parametrize("name", ["bs1.sqlite", "bs16.sqlite"])
def test_committed_examples_match_generator(name: str, pair: tuple[Path, Path]) -> None:
    committed = EXAMPLES / name
    if not committed.exists():
        pytest.skip("examples/ not present")
    fresh = {p.name: p for p in pair}[name]
    assert dict(_content(committed)) == dict(_content(fresh))


# --- (d) big -----------------------------------------------------------------------------------


def _overlaps(con: sqlite3.Connection) -> int:
    return con.execute(f"""
        SELECT COUNT(*) FROM (
            SELECT start, LAG(end) OVER (PARTITION BY deviceId, streamId
                                         ORDER BY start, end) AS prev_end
            FROM {KERNEL})
        WHERE prev_end > start""").fetchone()[0]


def test_big_small_n(tmp_path: Path) -> None:
    n = 20_000
    path = big(tmp_path / "big.sqlite", n, seed=3, devices=2, streams=4)
    with closing(_ro(path)) as con:
        assert _one(con, f"SELECT COUNT(*) FROM {KERNEL}") == (n,)
        assert _overlaps(con) == 0
        assert _one(con, f"SELECT COUNT(DISTINCT deviceId), COUNT(DISTINCT streamId) FROM {KERNEL}") == (2, 4)
        distinct = _one(con, f"SELECT COUNT(DISTINCT shortName || '/' || demangledName) FROM {KERNEL}")[0]
        assert 100 <= distinct <= 200
        assert _one(con, f"SELECT COUNT(*) FROM {MEMCPY}") == (n // 8,)
        assert _one(con, f"SELECT COUNT(*) FROM {MEMSET}") == (n // 25,)
        nvtx = _one(con, "SELECT COUNT(*) FROM NVTX_EVENTS")[0]
        assert 0.23 * n <= nvtx <= 0.26 * n
        api = _one(con, "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME")[0]
        assert 1.05 * n <= api <= 1.25 * n
        # every kernel's correlationId has an API call
        assert _one(
            con,
            f"SELECT COUNT(*) FROM {KERNEL} k LEFT JOIN "
            "CUPTI_ACTIVITY_KIND_RUNTIME r USING (correlationId) "
            "WHERE r.correlationId IS NULL",
        ) == (0,)
        # heavy tail: the top 10% of launches hold >40% of the time (uniform: 10%)
        durs = [r[0] for r in con.execute(f"SELECT end - start FROM {KERNEL} ORDER BY 1 DESC")]
        assert sum(durs[: n // 10]) > 0.4 * sum(durs)
        assert all(d > 0 for d in durs)
        # no dangling names
        assert _one(
            con,
            f"SELECT COUNT(*) FROM {KERNEL} k LEFT JOIN StringIds s ON s.id = k.shortName WHERE s.id IS NULL",
        ) == (0,)
