"""info warns where the file shows the data cannot be trusted whole, and stays quiet otherwise."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from nsysq.analyses.info import info
from nsysq.session import Session
from tests import oracle

ROOT = Path(__file__).resolve().parents[1]


def _warnings(path: Path) -> list[str]:
    with Session(path) as trace:
        return info(trace)["warnings"]


def test_graphs_traced_whole_are_reported_with_their_count(fixture_dir: Path, tmp_path: Path) -> None:
    path = fixture_dir / "graph_trace.sqlite"
    executions = oracle.count(path, "CUPTI_ACTIVITY_KIND_GRAPH_TRACE")
    assert executions > 0
    (warning,) = [w for w in _warnings(path) if "graphs" in w]
    assert f"({executions} graph executions)" in warning and "--cuda-graph-trace=node" in warning

    # Without the graph table, the cudaGraphLaunch API calls still give it away.
    copy = tmp_path / "launches_only.sqlite"
    shutil.copy(path, copy)
    with sqlite3.connect(copy) as con:
        con.execute("DROP TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE")
        launches = con.execute(
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass IN (0, 1) AND nameId IN "
            "(SELECT id FROM StringIds WHERE value LIKE 'cudaGraphLaunch%')"
        ).fetchone()[0]
    assert launches > 0
    (warning,) = [w for w in _warnings(copy) if "graphs" in w]
    assert f"({launches} cudaGraphLaunch calls)" in warning


def test_graph_mode_without_graph_launches_is_quiet() -> None:
    """nsys records MODE=Graph by default; with no graph launched nothing is missing."""
    path = ROOT / "examples" / "bs16.sqlite"
    with oracle.connect(path) as con:
        mode = con.execute(
            "SELECT value FROM META_DATA_CAPTURE WHERE name LIKE '%CUDA_GRAPH_TRACE_OPTIONS:MODE'"
        ).fetchall()
    assert ("Graph",) in mode
    assert _warnings(path) == []


def test_partial_export_is_reported(fixture_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "partial.sqlite"
    shutil.copy(fixture_dir / "v2024_6.sqlite", copy)
    with sqlite3.connect(copy) as con:
        con.execute(
            "UPDATE META_DATA_EXPORT SET value = '1000000000-2000000000' "
            "WHERE name = 'EXPORT_PARAM_TIMES_TO_EXPORT'"
        )
        assert con.total_changes == 1
    (warning,) = [w for w in _warnings(copy) if "partial export" in w]
    assert "EXPORT_PARAM_TIMES_TO_EXPORT=1000000000-2000000000" in warning


def test_unresolved_names_are_counted(fixture_dir: Path) -> None:
    path = fixture_dir / "edge_cases.sqlite"
    unresolved = oracle.scalar(
        path,
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN StringIds s ON s.id = k.shortName "
        "WHERE s.id IS NULL",
    )
    assert unresolved > 0
    with Session(path) as trace:
        data = info(trace)
    assert data["unresolved_kernel_names"] == unresolved
    assert any(f"{unresolved} kernel launches have a name id missing" in w for w in data["warnings"])
