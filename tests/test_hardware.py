"""Grid vs SMs: blocks, SM count, fill and theoretical waves per launch, the under-filled share in
census and lineup, the under-filled view, the GPU limits in info. Checked against tests/oracle.py
(raw sqlite3 SQL) on the real exports with GPU info, the bundled examples and the fixtures."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from nsysq.analyses.census import census, underfilled
from nsysq.analyses.info import info
from nsysq.analyses.lineup import lineup
from nsysq.analyses.stakeout import stakeout
from nsysq.session import Session
from nsysq.trace import Trace
from tests import oracle
from tests.conftest import REAL_DIR, REAL_TRACES, ROOT

EXAMPLES = [ROOT / "examples" / "bs1.sqlite", ROOT / "examples" / "bs16.sqlite"]
WITH_KERNELS = [
    p
    for p in [*REAL_TRACES, *EXAMPLES]
    if p.exists() and "CUPTI_ACTIVITY_KIND_KERNEL" in oracle.tables(p) and oracle.kernel_count(p)
]


def _ids(paths: list[Path]) -> list[str]:
    return [p.stem for p in paths]


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def test_fixtures_fill_matches_the_oracle(fixture_trace: Path) -> None:
    if "CUPTI_ACTIVITY_KIND_KERNEL" not in oracle.tables(fixture_trace) or not oracle.kernel_count(
        fixture_trace
    ):
        pytest.skip("no kernels in this fixture")
    check_fill(fixture_trace)
    test_underfilled_time_matches_the_oracle(fixture_trace)


@pytest.mark.parametrize("path", WITH_KERNELS, ids=_ids(WITH_KERNELS))
def test_stakeout_fill_matches_the_oracle(path: Path) -> None:
    expected = oracle.launch_fill(path)
    # GPU info (SM counts) is recorded by most exports; where it is not (the 2026.2 derived
    # exports have no TARGET_INFO_GPU), every launch's SM count and fill are unknown, never 0.
    if not any(sms for _, sms, _ in expected.values()):
        assert not oracle.device_sms(path)
    check_fill(path)


def check_fill(path: Path) -> None:
    expected = oracle.launch_fill(path)
    with Session(path, cache=False) as trace:
        rows = stakeout(trace, "%", like=True).records()
    # LIKE '%' selects every launch with a resolvable short or demangled name
    named = oracle.scalar(
        path,
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE k.shortName IN (SELECT id FROM StringIds) "
        "OR k.demangledName IN (SELECT id FROM StringIds)",
    )
    # ... and every execution of a CUDA graph traced whole, by its census name 'graph <id>' (no grid)
    graph_rows = [r for r in rows if r["grid_x"] is None and str(r["name"]).startswith("graph ")]
    graph_table = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
    executions = oracle.count(path, graph_table) if graph_table in oracle.tables(path) else 0
    assert len(graph_rows) == executions
    assert all(r["blocks"] is None and r["sm_fill_pct"] is None for r in graph_rows)
    rows = [r for r in rows if r not in graph_rows]
    assert len(rows) == named and named >= len(expected) - 2
    t0 = oracle.trace_t0(path)
    for r in rows:
        blocks, sms, fill = expected[(r["start_ns"] + t0, r["correlation_id"])]
        assert (r["blocks"], r["sms"]) == (blocks, sms)
        assert _close(r["sm_fill_pct"], fill)
        assert r["threads_per_block"] == r["block_x"] * r["block_y"] * r["block_z"]


@pytest.mark.parametrize("path", WITH_KERNELS, ids=_ids(WITH_KERNELS))
def test_underfilled_time_matches_the_oracle(path: Path) -> None:
    expected = oracle.underfilled_by_short_name(path)
    with Session(path, cache=False) as trace:
        rows = census(trace).records()
        view = underfilled(trace)
        lineup_rows = lineup(trace).records()
    got = {r["name"]: r["underfilled_ns"] for r in rows if r["underfilled_ns"]}
    assert got == expected
    for r in rows:
        if not oracle.device_sms(path) or r["underfilled_ns"] is None:  # no SMs, or a whole-graph row
            assert r["underfilled_pct"] is None
            continue
        assert _close(
            r["underfilled_pct"], 100.0 * r["underfilled_ns"] / r["total_ns"] if r["total_ns"] else None
        )
    per_name: dict[str, int] = {}
    for r in view.records():
        assert r["sm_fill_pct"] < 50 and r["blocks"] * 2 < r["sms"]
        assert r["meaning"].startswith(f"grid {r['grid']} on {r['sms']} SMs: ")
        assert r["meaning"].endswith(f", {r['sms'] - r['blocks']} idle")
        per_name[r["name"]] = per_name.get(r["name"], 0) + r["total_ns"]
    assert per_name == expected
    if oracle.device_sms(path):
        assert view.footer["underfilled_kernel_ns"] == sum(expected.values())
    else:  # no SM count for any launch: the under-filled time is unknown, not 0
        assert view.footer["underfilled_kernel_ns"] is None and expected == {}
    assert sum((r["underfilled_pct"] or 0) * r["total_ns"] for r in lineup_rows) == pytest.approx(
        100.0 * sum(expected.values())
    )


def test_underfilled_view_on_the_example() -> None:
    with Session(EXAMPLES[1], cache=False) as trace:
        rows = underfilled(trace, limit=1).records()
    assert rows[0]["name"] == "vectorized_elementwise_kernel"
    assert rows[0]["meaning"] == "grid 64x1x1 on 132 SMs: 64 SMs busy, 68 idle"
    real = REAL_DIR / "nsys2025.1_pytorch-nvfuser_cublas_nvtx_H200.sqlite"
    if not real.exists():
        pytest.skip(f"real exports not present ({REAL_DIR})")
    with Session(real, cache=False) as trace:
        top = underfilled(trace, limit=1).records()[0]
    assert top["meaning"] == "grid 1x1x1 on 132 SMs: 1 SM busy, 131 idle"


# The research's occupancy table (kernel-names-and-hardware.md §2.3), measured there in Python and
# in DuckDB from the cuda_occupancy.h model: (export, kernel, blocks/SM, limited_by, waves).
OCCUPANCY = [
    (
        "nsys2025.1_pytorch-nvfuser_cublas_nvtx_H200",
        "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN",
        1,
        "registers & shared memory",
        1.0,
    ),
    (
        "nsys2025.1_pytorch-nvfuser_cublas_nvtx_H200",
        "nvfuser_pointwise_f0_c1_r0_g4",
        16,
        "warps",
        256512 / 2112,
    ),
    (
        "nsys2024.6_pytorch-llama-sim_cublas_nvtx_RTX4060Ti",
        "ampere_sgemm_128x64_nn",
        4,
        "registers & shared memory",
        3584 / 136,
    ),
    ("nsys2022.2_saxpy-mpi-cuda_nvtx_A100_nonlazy", "saxpy", 4, "warps & registers", 2 / 432),
    ("nsys2023.3_openmp-heat_memcpy_T4", "nvkernel_solve_F1L204_2", 8, "warps", 500000 / 320),
    ("nsys2025.5_windows_gemm_RTX5070Ti", "tiled_gemm", 6, "warps & registers", 112 / 276),
]


@pytest.mark.parametrize(
    ("stem", "kernel", "per_sm", "limit", "waves"), OCCUPANCY, ids=[o[1] for o in OCCUPANCY]
)
def test_theoretical_occupancy_of_known_launches(
    stem: str, kernel: str, per_sm: int, limit: str, waves: float
) -> None:
    path = REAL_DIR / f"{stem}.sqlite"
    if not path.exists():
        pytest.skip("real exports not present")
    with Session(path, cache=False) as trace:
        first = stakeout(trace, kernel, limit=1).records()[0]
    assert (first["blocks_per_sm"], first["limited_by"]) == (per_sm, limit)
    assert first["waves"] == pytest.approx(waves)


def test_unknown_limit_leaves_waves_unknown() -> None:
    """The RTX 6000 export records maxBlocksPerSm = 0: the block limit is unknown, so are waves."""
    path = REAL_DIR / "nsys2021.2_cuda-hashjoin_memcpy-memset_RTX6000.sqlite"
    if not path.exists():
        pytest.skip("real exports not present")
    with Session(path, cache=False) as trace:
        rows = stakeout(trace, "%", like=True).records()
        data = info(trace)
    assert all(r["sms"] == 72 and r["waves"] is None and r["limited_by"] is None for r in rows)
    assert data["gpus"][0]["max_blocks_per_sm"] is None


def test_info_maps_devices_by_cuda_ordinal_not_gpu_id() -> None:
    """4xA100: device 0 is TARGET_INFO_GPU id 3 (cuDevice 0, bus 03:00.0), not id 0."""
    path = REAL_DIR / "nsys2024.5export_cloverleaf_4xA100.sqlite"
    if not path.exists():
        pytest.skip("real exports not present")
    with Session(path, cache=False) as trace:
        devices = trace.sql_table("SELECT device_id, gpu_id, mapping, sms FROM nsysq_launch_devices").rows
        data = info(trace)
    assert devices == [(0, 3, "cuDevice", 108)]
    assert len(data["gpus"]) == 4
    for gpu in data["gpus"]:
        assert gpu["sm_count"] == 108 and gpu["max_threads_per_sm"] == 2048
        assert gpu["max_shared_memory_per_sm"] == 167936 and gpu["reserved_shared_memory_per_block"] == 1024


def test_legacy_gpu_table_gives_sms_per_process() -> None:
    path = REAL_DIR / "nsys2020.3_openmp-offload_2xV100.sqlite"
    if not path.exists():
        pytest.skip("real exports not present")
    with Session(path, cache=False) as trace:
        data = info(trace)
        devices = trace.sql_table(
            "SELECT mapping, sms, reserved_shared_memory_per_block FROM nsysq_launch_devices"
        )
    assert [g["source"] for g in data["gpus"]] == ["TARGET_INFO_CUDA_GPU"] * 2
    assert devices.rows == [("TARGET_INFO_CUDA_GPU", 80, 0)]


def test_no_gpu_info_gives_nulls(fixture_dir: Path) -> None:
    """A trace without GPU tables: sms and fill are NULL, never a guess; census says unknown."""
    import shutil
    import sqlite3

    src = fixture_dir / "v2025_5.sqlite"
    tmp = fixture_dir / "no_gpu.sqlite"
    shutil.copy(src, tmp)
    con = sqlite3.connect(tmp)
    for table in ("TARGET_INFO_GPU", "TARGET_INFO_CUDA_DEVICE", "TARGET_INFO_CUDA_GPU"):
        con.execute(f"DROP TABLE IF EXISTS {table}")
    con.commit()
    con.close()
    with Session(tmp, cache=False) as trace:
        rows = census(trace).records()
        launches = stakeout(trace, "%", like=True, limit=5).records()
        view = underfilled(trace)
    assert all(r["underfilled_pct"] is None for r in rows)
    assert all(r["sms"] is None and r["sm_fill_pct"] is None and r["waves"] is None for r in launches)
    assert view.rows == [] and view.footer["underfilled_pct"] is None and view.notes


def test_plots_show_fill() -> None:
    import matplotlib

    matplotlib.use("Agg")
    from nsysq.plot import plot_census, plot_stakeout

    with Trace(EXAMPLES[1], cache=False) as trace:
        census_df = trace.census(limit=5)
        stake_df = trace.stakeout("vectorized_elementwise_kernel")
    ax = plot_census(census_df, top=5, fill=True)
    hatched = [p for p in ax.patches if p.get_hatch()]
    under = census_df.set_index("name")["underfilled_ns"]["vectorized_elementwise_kernel"]
    assert hatched and max(p.get_width() for p in hatched) == pytest.approx(under / 1e6, rel=1e-6)
    assert not [p for p in plot_census(census_df, top=5).patches if p.get_hatch()]
    labels = plot_stakeout(stake_df).get_legend_handles_labels()[1]
    assert "under-filled: 48% of 132 SMs busy (183)" in labels


@pytest.mark.parametrize(
    "args",
    [
        ("census", "{a}", "--underfilled", "-n", "3"),
        ("explain", "device_kernel", "--trace", "{a}"),
        ("stakeout", "{a}", "act_and_mul_kernel", "-n", "3"),
    ],
    ids=["underfilled", "explain", "stakeout"],
)
def test_show_sql_scripts_reproduce_the_rows(args: tuple[str, ...]) -> None:
    """The last statement of --show-sql gives the rows the command prints (explain: its configs)."""
    import json
    import subprocess
    import sys

    import duckdb

    full = [a.format(a=EXAMPLES[0]) for a in args]
    run = [sys.executable, "-m", "nsysq", *full]
    script = subprocess.run([*run, "--show-sql"], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    doc = json.loads(
        subprocess.run([*run, "-f", "json"], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    )
    con = duckdb.connect()
    rows: list[tuple[object, ...]] = []
    for statement in duckdb.extract_statements(script):
        rows = con.execute(statement).fetchall()
    con.close()
    expected = doc["launch_configs"] if args[0] == "explain" else doc["rows"]
    assert len(rows) == len(expected) and rows
    for got, want in zip(rows, expected, strict=True):
        assert [pytest.approx(v) if isinstance(v, float) else v for v in got] == list(want.values())


def test_grids_beyond_32_bits_are_counted_exactly(fixture_dir: Path) -> None:
    """A grid of 65536 x 32768 blocks (2^31, one past the 32-bit range) and the largest grid CUDA
    allows: blocks are exact in every command that reads grids, never an overflow error."""
    import shutil
    import sqlite3

    tmp = fixture_dir / "huge_grids.sqlite"
    shutil.copy(fixture_dir / "v2025_5.sqlite", tmp)
    con = sqlite3.connect(tmp)
    first, second = (r[0] for r in con.execute("SELECT rowid FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 2"))
    grids = {first: (65536, 32768, 1), second: (2**31 - 1, 65535, 65535)}
    for rowid, (x, y, z) in grids.items():
        con.execute(
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET gridX = ?, gridY = ?, gridZ = ? WHERE rowid = ?",
            (x, y, z, rowid),
        )
    con.commit()
    con.close()
    expected = oracle.launch_fill(tmp)
    assert {b for b, _, _ in expected.values()} >= {2**31, (2**31 - 1) * 65535 * 65535}
    check_fill(tmp)
    test_underfilled_time_matches_the_oracle(tmp)
    name = oracle.scalar(
        tmp,
        "SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName "
        f"WHERE k.rowid = {first}",
    )
    with Session(tmp, cache=False) as trace:
        assert census(trace).rows and lineup(trace).rows and underfilled(trace).footer
        configs = trace.run("launch_configs", kernel=name).records()
    assert 2**31 in {c["blocks"] for c in configs}


# CUDA_VISIBLE_DEVICES, where the v2024_6 fixture (no TARGET_INFO_CUDA_DEVICE) records it, with a
# second GPU of another size (cuDevice 1, 132 SMs, uuid 4f1a2b3c-...) beside its RTX 4060 Ti (34 SMs):
# (META_DATA_CAPTURE values, DeviceEnvironment or None) -> (sms, mapping) of the process's ordinal 0.
VISIBLE = {
    "ordinal": ((b'"1"',), None, (132, "CUDA_VISIBLE_DEVICES")),
    "uuid": ((b"GPU-4f1a2b",), None, (132, "CUDA_VISIBLE_DEVICES")),
    "mig": ((b"MIG-GPU-4f1a2b3c/1/0",), None, (None, "MIG instance")),
    "same_set": ((b'"1,0"',), None, (34, "cuDevice")),  # nsys lists only the GPUs the process saw
    "nsys_env": ((), b"A=1;CUDA_VISIBLE_DEVICES=1;B=\xff\xfe", (132, "CUDA_VISIBLE_DEVICES")),
    "differs": ((b"1", b"0"), None, (34, "cuDevice")),  # two processes, two lists: not decided
}


def _with_visible(fixture_dir: Path, case: str) -> Path:
    import shutil
    import sqlite3

    captured, environment, _ = VISIBLE[case]
    tmp = fixture_dir / f"visible_{case}.sqlite"
    shutil.copy(fixture_dir / "v2024_6.sqlite", tmp)
    con = sqlite3.connect(tmp)
    con.execute("CREATE TEMP TABLE g AS SELECT * FROM TARGET_INFO_GPU")
    con.execute(
        "UPDATE g SET id = 1, cuDevice = 1, smCount = 132, busLocation = '0000:41:00.0', "
        "uuid = '4f1a2b3c-0000-0000-0000-000000000001'"
    )
    con.execute("INSERT INTO TARGET_INFO_GPU SELECT * FROM g")
    for i, value in enumerate(captured):  # bytes: stored as TEXT whatever their encoding
        con.execute(
            "INSERT INTO META_DATA_CAPTURE VALUES (?, CAST(? AS TEXT))",
            (f"PROCESS_{i}:ENVIRONMENT_VARIABLE", b"CUDA_VISIBLE_DEVICES=" + value),
        )
    if environment is not None:
        con.execute(
            "CREATE TABLE TARGET_INFO_SYSTEM_ENV (globalVid INTEGER, devStateName TEXT NOT NULL, "
            "name TEXT NOT NULL, nameEnum INTEGER NOT NULL, value TEXT NOT NULL)"
        )
        con.execute(
            "INSERT INTO TARGET_INFO_SYSTEM_ENV "
            "VALUES (0, 'Local (CLI)', 'DeviceEnvironment', 610, CAST(? AS TEXT))",
            (environment,),
        )
    con.commit()
    con.close()
    return tmp


@pytest.mark.parametrize("case", list(VISIBLE))
def test_ordinals_map_through_cuda_visible_devices(fixture_dir: Path, case: str) -> None:
    """The process's ordinal 0 is the GPU CUDA_VISIBLE_DEVICES names (by UUID, or by system ordinal
    when nsys listed more GPUs than the process saw); a MIG instance's SM count is unknown; an
    undecided list leaves the cuDevice mapping. Direct read, cached copy and the oracle agree."""
    path = _with_visible(fixture_dir, case)
    sms, mapping = VISIBLE[case][2]
    assert set(oracle.device_sms(path).values()) == ({sms} if sms else set())
    for cache in (False, "build"):
        with Session(path, cache=cache) as trace:
            rows = trace.sql_table("SELECT sms, mapping FROM nsysq_launch_devices").rows
        assert rows == [(sms, mapping)]
    check_fill(path)
    if sms is None:  # no SM count known: the under-filled share is unknown, never 0
        with Session(path, cache=False) as trace:
            assert underfilled(trace).footer["underfilled_kernel_ns"] is None
    else:
        test_underfilled_time_matches_the_oracle(path)
