"""The local engine's worker processes (nsysq.fleet_analysis.pool): answers come back whole, a dead
worker is replaced and its task retried once, errors reach the driver, closing (or Ctrl-C) leaves
no worker, and the workers read the fleet's traces with the driver's environment.

The functions mapped are module-level (a worker imports this module to run them); each gets the
driver's pid so it can tell whether it runs in a worker or on the driver's own slot.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import nsysq
from nsysq.base.errors import WorkerLostError
from nsysq.fleet_analysis import LocalEngine
from nsysq.fleet_analysis.pool import travels
from nsysq.synth import rank_set
from tests.conftest import ROOT

os.environ.setdefault("NSYSQ_TEST_POOL_DRIVER", str(os.getpid()))  # a worker inherits the driver's
DRIVER = int(os.environ["NSYSQ_TEST_POOL_DRIVER"])


def where(item: int) -> tuple[int, int]:
    """The item doubled and the pid it ran in (the driver's slot is slowed so a worker gets tasks)."""
    if os.getpid() == DRIVER:
        time.sleep(0.05)
    return item * 2, os.getpid()


def die_once_in_a_worker(item: tuple[str, int]) -> int:
    """Kills its worker the first time it sees ``item`` (a marker file records it), then answers."""
    marker, value = item
    if os.getpid() == DRIVER:
        time.sleep(0.2)
        return value
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return value
    os.close(fd)
    os._exit(9)


def always_die_in_a_worker(item: int) -> int:
    if os.getpid() == DRIVER:
        time.sleep(0.2)
        return item
    os._exit(9)


def fail(item: int) -> int:
    raise ValueError(f"no answer for {item}")


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii") as stat:
                    if int(stat.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(entry))
            except OSError:
                pass
    return out


def test_tasks_run_in_worker_processes_and_every_answer_comes_back() -> None:
    got = dict(LocalEngine(3).map(where, list(range(30))))
    assert {i: v for i, (v, _) in got.items()} == {i: i * 2 for i in range(30)}
    pids = {pid for _, pid in got.values()}
    assert DRIVER in pids and len(pids) > 1
    assert not any(alive(pid) for pid in pids - {DRIVER}), "a worker outlived its map"


def test_a_closure_runs_on_threads() -> None:
    seen = []
    assert not travels(lambda x: seen.append(x))
    assert travels(where)


def test_a_dead_worker_is_replaced_and_its_task_retried(tmp_path: Path) -> None:
    items = [(str(tmp_path / f"died{i}"), i) for i in range(8)]
    got = dict(LocalEngine(2).map(die_once_in_a_worker, items))
    assert got == {i: i for i in range(8)}
    assert list(tmp_path.glob("died*")), "no task reached a worker"


def test_a_worker_dying_twice_on_one_task_is_an_error() -> None:
    with pytest.raises(WorkerLostError, match="died twice"):
        dict(LocalEngine(2).map(always_die_in_a_worker, list(range(8))))


def test_an_exception_in_a_worker_is_raised_on_the_driver() -> None:
    with pytest.raises(ValueError, match="no answer for"):
        dict(LocalEngine(2).map(fail, list(range(4))))


def test_workers_are_kept_inside_with_and_stopped_after() -> None:
    engine = LocalEngine(2)
    with engine:
        first = {pid for _, (_, pid) in engine.map(where, list(range(10)))}
        again = {pid for _, (_, pid) in engine.map(where, list(range(10)))}
        workers = (first | again) - {DRIVER}
        assert workers and all(alive(pid) for pid in workers)
    assert not any(alive(pid) for pid in workers)


def test_ctrl_c_leaves_no_worker(tmp_path: Path) -> None:
    ranks = rank_set(tmp_path / "ranks", 24, 30_000, slow_rank=3)
    env = dict(os.environ, NSYSQ_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "nsysq", "fleet", "census", "--workers", "3", str(ranks[0].parent)],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    workers: list[int] = []
    deadline = time.monotonic() + 120
    while not workers and proc.poll() is None and time.monotonic() < deadline:
        workers = children(proc.pid)
        time.sleep(0.01)
    assert workers, "the fleet started no worker"
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    if proc.returncode == 0:
        pytest.skip("the fleet finished before Ctrl-C")
    assert proc.returncode == 130 and "Traceback" not in err and "Error" not in err, err
    assert not any(alive(pid) for pid in workers)


def test_workers_respect_the_cache_folder_and_write_nothing_beside_the_traces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "ranks"
    rank_set(folder, 6, 3_000, slow_rank=1)
    before = sorted(p.name for p in folder.iterdir())
    monkeypatch.setenv("NSYSQ_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("NSYSQ_CACHE_MIN_BYTES", "0")
    built = nsysq.fleet(folder, engine=LocalEngine(3), cache="build")
    again = nsysq.fleet(folder, engine=LocalEngine(3))
    assert set(again.traces["reader"]) == {"cached copy"}
    assert again.census_table.rows == built.census_table.rows
    assert sorted(p.name for p in folder.iterdir()) == before
    assert any((tmp_path / "cache").iterdir())


def test_ctrl_c_while_the_pool_starts_leaves_no_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C after the workers are spawned and before the slots run (the driver importing what the
    slots will, base.threads.before_threads): the pool is never made, so it stops its workers
    itself (CI caught a worker left alive by a Ctrl-C in that window)."""
    from nsysq.fleet_analysis import pool as pool_mod

    spawned: list[int] = []
    real_worker = pool_mod._Worker

    def worker(share: int) -> object:
        made = real_worker(share)
        spawned.append(made.proc.pid)
        return made

    def interrupted(imports: object = ()) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(pool_mod, "_Worker", worker)
    monkeypatch.setattr(pool_mod, "before_threads", interrupted)
    with pytest.raises(KeyboardInterrupt):
        pool_mod.Pool(3, 1)
    assert len(spawned) == 2
    assert not any(alive(pid) for pid in spawned)
