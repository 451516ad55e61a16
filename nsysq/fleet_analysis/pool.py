"""The local engine's slots: one on a thread of this process, the others in worker processes.

A worker is a fresh interpreter (``sys.executable``, spawned, never forked: a fork would copy the
driver's threads' locks and DuckDB's state mid-flight) that pays nsysq's per-process set-up once
(imports, DuckDB's start-up and its sqlite extension load) and then reads trace after trace, with
no lock shared with the driver or with the other workers. It is started with the driver's
``sys.path``, environment (``NSYSQ_CACHE_DIR`` and the rest) and working directory, writes nothing
of its own (its stdout is its stderr: the protocol runs on a private pipe), ignores Ctrl-C (the
driver stops its workers) and exits when the driver closes its pipe or dies.

Tasks are ``(fn, item)`` pickled to the worker and ``fn(item)`` pickled back. A worker that dies
(a crash, the OOM killer) is replaced and its task retried once; dying twice on the same task is
an error naming the item. An exception ``fn`` raises comes back and is raised on the driver.
"""

from __future__ import annotations

import itertools
import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, TypeVar

from nsysq.base.errors import WorkerLostError
from nsysq.base.threads import before_threads
from nsysq.export import engine

T = TypeVar("T")

#: What a fleet question imports on the thread that answers it: opening the trace, and the
#: questions of nsysq.fleet_analysis.partial and collective_partial (the lineup's rules, the gaps).
#: Imported before the slots start (base.threads; tests/test_reader.py runs the fleet's commands).
FLEET_THREAD_IMPORTS = (
    "duckdb",
    "json",
    "hashlib",
    "zipfile",
    "importlib.readers",
    "importlib.resources.readers",
    "nsysq.trace",
    "nsysq.catalog.rules",
    "tomllib",
    "nsysq.gputime.gaps",
    "nsysq.gputime.gap_unions",
    "nsysq.gputime.overlap",
    "nsysq.gputime.gpu_ops",
    "numpy.ma",
)
D = TypeVar("D")


def windowed(
    items: Sequence[T], window: int, submit: Callable[[int, T], object], take: Callable[[], D]
) -> Iterator[D]:
    """Every item submitted (``submit(index, item)``) with at most ``window`` in flight: yields what
    ``take()`` returns for each one finished, after submitting the next item in its place. The one
    bounded queue of the local engine's threads and processes and of Ray's tasks."""
    queue_ = iter(enumerate(items))
    running = 0
    for index, item in itertools.islice(queue_, max(1, window)):
        submit(index, item)
        running += 1
    while running:
        done = take()
        running -= 1
        for index, item in itertools.islice(queue_, 1):
            submit(index, item)
            running += 1
        yield done


_BOOT = "import sys; sys.path[:] = sys.argv[1:]; from nsysq.fleet_analysis.pool import serve; serve()"
STOP_GRACE_S = 2.0
"""Seconds a worker has to exit after its pipe closes before it is killed."""


def travels(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` can be sent to a worker process (picklable: a module-level function or a
    functools.partial of one, not a closure)."""
    try:
        pickle.dumps(fn, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # pickle raises PicklingError, AttributeError, TypeError, ...
        return False
    return True


@dataclass
class _Task:
    fn: Callable[[Any], Any]
    index: int
    item: Any
    results: queue.SimpleQueue[tuple[int, bool, Any]]
    cancelled: threading.Event


class _Worker:
    """One worker process and its pipes."""

    def __init__(self, share: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _BOOT, *sys.path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.send: IO[bytes] = self.proc.stdin
        self.receive: IO[bytes] = self.proc.stdout
        self.busy = False
        self.send.write(pickle.dumps(share, protocol=pickle.HIGHEST_PROTOCOL))
        self.send.flush()

    def call(self, fn: Callable[[Any], Any], item: Any) -> tuple[bool, Any]:
        """``fn(item)`` in the worker: (True, result) or (False, the exception it raised). Raises
        EOFError when the worker died."""
        payload = pickle.dumps((fn, item), protocol=pickle.HIGHEST_PROTOCOL)
        self.busy = True
        try:
            self.send.write(payload)
            self.send.flush()
            data = _frame(self.receive)
        except (OSError, ValueError) as exc:
            raise EOFError(str(exc)) from exc
        finally:
            self.busy = False
        try:
            reply: tuple[bool, Any] = pickle.loads(data)
        except Exception as exc:  # an answer this process cannot rebuild (an exception's own class)
            return False, RuntimeError(f"a fleet worker's answer could not be read: {exc}")
        return reply

    def death(self) -> str:
        """How the worker ended (waits for it briefly)."""
        try:
            code = self.proc.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            self.stop()
            return "it stopped answering"
        return f"killed by signal {-code}" if code < 0 else f"exit code {code}"

    def stop(self) -> None:
        """Close the pipes (an idle worker exits); a worker in the middle of a task is terminated."""
        if self.busy:
            self.proc.terminate()
        for stream in (self.send, self.receive):
            try:
                stream.close()
            except OSError:
                pass
        try:
            self.proc.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@dataclass
class Pool:
    """``slots`` slots: slot 0 a thread of this process, slots 1.. a thread each that hands its
    tasks to its worker process. Each slot runs one task at a time; DuckDB gets ``share`` threads
    per slot (export.engine.share_cores)."""

    slots: int
    share: int
    _tasks: queue.SimpleQueue[_Task | None] = field(default_factory=queue.SimpleQueue)
    _threads: list[threading.Thread] = field(default_factory=list)
    _workers: dict[int, _Worker] = field(default_factory=dict)
    _closing: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        try:
            for slot in range(1, self.slots):  # started first: their imports overlap the driver's
                self._workers[slot] = _Worker(self.share)
            before_threads(FLEET_THREAD_IMPORTS)  # slot 0 opens traces, the others unpickle answers
        except BaseException:  # Ctrl-C during the imports: no pool to close, so stop the workers here
            for worker in self._workers.values():
                worker.stop()
            raise
        for slot in range(self.slots):
            thread = threading.Thread(
                target=self._serve, args=(slot,), name=f"nsysq-fleet_{slot}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        """``(index, fn(items[index]))`` in completion order; at most ``slots`` tasks in flight."""
        results: queue.SimpleQueue[tuple[int, bool, Any]] = queue.SimpleQueue()
        cancelled = threading.Event()

        def submit(index: int, item: Any) -> None:
            self._tasks.put(_Task(fn, index, item, results, cancelled))

        try:
            for index, ok, value in windowed(items, self.slots, submit, results.get):
                if not ok:
                    raise value
                yield index, value
        finally:
            cancelled.set()  # tasks not started yet are skipped

    def close(self) -> None:
        """Stop every slot: the workers' pipes close (each exits, or is killed), slot 0 finishes
        the task it is running."""
        with self._lock:
            self._closing.set()
            workers = list(self._workers.values())
        for _ in self._threads:
            self._tasks.put(None)
        for worker in workers:
            worker.stop()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join()

    def _serve(self, slot: int) -> None:
        engine.share_cores(self.share)
        while True:
            task = self._tasks.get()
            if task is None:
                return
            if task.cancelled.is_set():
                continue
            try:
                ok, value = self._local(task) if slot == 0 else self._remote(slot, task)
            except BaseException as exc:  # the slot must answer, or map would wait forever
                ok, value = False, exc
            task.results.put((task.index, ok, value))

    @staticmethod
    def _local(task: _Task) -> tuple[bool, Any]:
        try:
            return True, task.fn(task.item)
        except BaseException as exc:  # raised again on the driver's thread
            return False, exc

    def _remote(self, slot: int, task: _Task) -> tuple[bool, Any]:
        """The task on this slot's worker; a worker that dies is replaced and the task retried once."""
        how = ""
        for _ in range(2):
            worker = self._workers[slot]
            try:
                return worker.call(task.fn, task.item)
            except EOFError:
                if self._closing.is_set():
                    return False, KeyboardInterrupt()
                how = worker.death()
                with self._lock:  # close() stops the workers it finds: none may start after
                    if self._closing.is_set():
                        return False, KeyboardInterrupt()
                    self._workers[slot] = _Worker(self.share)
            except Exception as exc:  # the task or its answer could not be pickled
                return False, exc
        what = getattr(task.item, "path", task.item)
        return False, WorkerLostError(f"a fleet worker process died twice reading {what} ({how}).")


def serve() -> None:
    """A worker's main loop: read (fn, item), answer (True, fn(item)) or (False, exception)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's: it stops its workers
    before_threads()
    receive = sys.stdin.buffer
    send = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a stray print cannot break the protocol
    try:
        engine.share_cores(pickle.load(receive))
        while True:
            fn, item = pickle.load(receive)
            try:
                reply = pickle.dumps((True, fn(item)), protocol=pickle.HIGHEST_PROTOCOL)
            except BaseException as exc:
                reply = _failure(exc)
            send.write(len(reply).to_bytes(8, "little") + reply)
            send.flush()
    except (EOFError, OSError, pickle.UnpicklingError):  # the driver closed the pipe, or is gone
        sys.stderr.flush()
        os._exit(0)  # nothing left to flush into a closed pipe at exit


def _frame(stream: IO[bytes]) -> bytes:
    """One length-prefixed answer; EOFError when the stream ends first (the worker died)."""
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError("the worker's pipe closed")
    size = int.from_bytes(head, "little")
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the worker's pipe closed mid-answer")
    return data


def _failure(exc: BaseException) -> bytes:
    try:
        return pickle.dumps((False, exc), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        return pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: {exc}")))
