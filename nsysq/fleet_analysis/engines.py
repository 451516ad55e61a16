"""Where the per-trace work runs: a small interface and two engines.

An :class:`Engine` maps one picklable function over items and yields ``(index, result)`` pairs as
they finish; it knows nothing about traces. :class:`LocalEngine` (the default) runs on this
machine: one slot on a thread of this process and the others in worker processes
(:mod:`nsysq.fleet_analysis.pool`), each paying nsysq's per-process set-up once for many traces and
sharing no lock (threads alone serialize on the GIL in each trace's Python set-up); the number of
slots is the number of cores, lowered so that the traces open at once and the workers' interpreters
fit in the memory available. A function that cannot be pickled (a closure) runs on threads only.
:class:`RayEngine` submits the same function as Ray tasks (``pip install
'nsysq[ray]'``) to a local Ray instance or a cluster; a task whose worker dies is retried.
Both keep at most a bounded number of items in flight, so results are folded as they arrive.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol, TypeVar

from nsysq.base.errors import UsageError
from nsysq.base.threads import before_threads
from nsysq.export import engine
from nsysq.fleet_analysis.pool import FLEET_THREAD_IMPORTS, Pool, travels, windowed

T = TypeVar("T")
R = TypeVar("R")

ENGINES = ("local", "ray")
PER_TRACE_BASE_BYTES = 96 * 1024**2
"""Memory one open trace needs beyond its file's size (DuckDB, decoded columns, partial rows)."""
PER_TRACE_FILE_FACTOR = 1.5
"""Memory one open trace needs per byte of its file (its decoded kernel columns, at most)."""
PER_WORKER_BYTES = 96 * 1024**2
"""Memory a worker process needs beyond its open trace (its interpreter, nsysq, DuckDB, numpy)."""
RAY_MAX_RETRIES = 3
"""Times Ray reruns a task whose worker process or node died."""


class Engine(Protocol):
    """Runs ``fn`` over ``items``; yields ``(index, fn(items[index]))`` in completion order."""

    name: str

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[tuple[int, R]]: ...


def available_memory() -> int:
    """Bytes of memory available to new work (MemAvailable), or 4 GiB when unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 4 * 1024**3


def pool_size(largest_trace_bytes: int, *, cores: int | None = None, memory: int | None = None) -> int:
    """Slots for the local engine: one per core, but never more than fit in half the available
    memory: each slot an open trace (estimated from the largest input), and each slot but the
    first the interpreter of its worker process."""
    cores = cores or os.cpu_count() or 1
    budget = (memory if memory is not None else available_memory()) // 2
    per_trace = PER_TRACE_BASE_BYTES + int(PER_TRACE_FILE_FACTOR * largest_trace_bytes)
    return max(1, min(cores, (budget + PER_WORKER_BYTES) // (per_trace + PER_WORKER_BYTES)))


class LocalEngine:
    """``workers`` slots on this machine, so ``workers`` traces open at most: one on a thread of
    this process, the others in worker processes (threads only for a function that cannot be
    pickled, or ``processes=False``). The workers live for one ``map``, or, inside ``with engine:``,
    for every ``map`` of the block (nsysq fleet collectives asks its ranks twice)."""

    name = "local"

    def __init__(self, workers: int = 1, *, processes: bool = True) -> None:
        if workers < 1:
            raise UsageError("--workers must be 1 or more.")
        self.workers = workers
        self.processes = processes and bool(sys.executable)
        self._held = 0
        self._pool: Pool | None = None

    def __enter__(self) -> LocalEngine:
        self._held += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self._held -= 1
        if not self._held:
            self.close()

    def close(self) -> None:
        """Stop the worker processes (a later ``map`` starts new ones)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[tuple[int, R]]:
        """``fn`` over ``items`` on the slots; each slot's DuckDB gets its share of the cores
        (export.engine.share_cores)."""
        share = max(1, (os.cpu_count() or 1) // max(1, min(self.workers, len(items))))
        if self._pool is not None:
            yield from self._pool.map(fn, items)
        elif self.processes and self.workers > 1 and len(items) > 1 and travels(fn):
            with self:
                self._pool = Pool(min(self.workers, len(items)), share)
                yield from self._pool.map(fn, items)
        else:
            yield from _thread_map(fn, items, self.workers, share)


def held(runner: Engine) -> AbstractContextManager[object]:
    """Keeps a local engine's worker processes for every ``map`` inside the block."""
    return runner if isinstance(runner, LocalEngine) else nullcontext()


def _thread_map(
    fn: Callable[[T], R], items: Sequence[T], workers: int, share: int
) -> Iterator[tuple[int, R]]:
    """``fn`` over ``items`` on ``workers`` threads of this process."""
    before_threads(FLEET_THREAD_IMPORTS)  # each thread opens traces
    pool = ThreadPoolExecutor(
        max_workers=workers,
        thread_name_prefix="nsysq-fleet",
        initializer=engine.share_cores,
        initargs=(share,),
    )
    with pool:
        running: dict[Future[R], int] = {}

        def submit(index: int, item: T) -> None:
            running[pool.submit(fn, item)] = index

        def take() -> tuple[int, Future[R]]:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            future = next(iter(done))
            return running.pop(future), future

        for index, future in windowed(items, workers, submit, take):
            yield index, future.result()


class RayEngine:
    """Ray tasks on a local instance (``address`` None) or a cluster (``"auto"``, ``ray://...``).

    Each task reads its trace where the worker runs (the paths must be visible there); a task whose
    worker dies is retried up to RAY_MAX_RETRIES times; at most twice the cluster's CPUs are in
    flight, and results are handed back as they finish.
    """

    name = "ray"

    def __init__(self, address: str | None = None, *, init_options: dict[str, Any] | None = None) -> None:
        self.address = address
        self.init_options = dict(init_options or {})

    def _ray(self) -> Any:
        try:
            import ray
        except ModuleNotFoundError:
            raise UsageError("--engine ray needs Ray; install it with: pip install 'nsysq[ray]'") from None
        if not ray.is_initialized():
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False, **self.init_options)
        return ray

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[tuple[int, R]]:
        ray = self._ray()
        task = ray.remote(num_cpus=1, max_retries=RAY_MAX_RETRIES)(_apply)
        window = max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
        running: dict[Any, int] = {}

        def submit(index: int, item: T) -> None:
            running[task.remote(fn, item)] = index

        def take() -> tuple[int, Any]:
            (ref,), _ = ray.wait(list(running), num_returns=1)
            return running.pop(ref), ref

        for index, ref in windowed(items, window, submit, take):
            yield index, ray.get(ref)


def _apply(fn: Callable[[T], R], item: T) -> R:
    """The Ray task: ``fn`` travels with the task (cloudpickle), so any picklable callable runs."""
    return fn(item)


def make_engine(
    name: str, *, address: str | None = None, workers: int | None = None, largest_trace_bytes: int = 0
) -> Engine:
    """The engine ``--engine`` names; ``workers`` overrides the local pool's size."""
    if name == "local":
        if address is not None:
            raise UsageError("--address is for --engine ray; the local engine runs on this machine.")
        return LocalEngine(workers if workers is not None else pool_size(largest_trace_bytes))
    if name == "ray":
        if workers is not None:
            raise UsageError(
                "--workers is for --engine local; Ray runs as many tasks as the cluster has CPUs."
            )
        return RayEngine(address)
    raise UsageError(f"unknown engine {name!r}; use one of {', '.join(ENGINES)}.")
