"""A rich progress bar on stderr for reads that take more than a second: shown only when stderr is
a terminal (never on stdout, never in a pipe or a log), after ``delay`` seconds, and gone when done."""

from __future__ import annotations

import sys
import threading
import time


class ProgressBar:
    """Progress over weighted parts (tables, pages, ...). Use as a context manager; report with
    start/finish (a part, with a time-based guess in between) or advance (exact amounts)."""

    RATE = 15e6  # values per second the sqlite scanner copies on one core of the reference box

    def __init__(self, label: str, weights: dict[str, float], enabled: bool, delay: float = 1.0):
        self.label = label
        self.weights = weights
        self.total = max(1.0, sum(weights.values()))
        self.enabled = enabled
        self.delay = delay
        self.done = 0.0
        self.current: str | None = None
        self.current_started = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ProgressBar:
        if self.enabled:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def start(self, part: str) -> None:
        self.current, self.current_started = part, time.monotonic()

    def finish(self, part: str) -> None:
        self.done += self.weights.get(part, 0.0)
        self.current = None

    def advance(self, amount: float) -> None:
        """Count ``amount`` more done (callable from several threads)."""
        with self._lock:
            self.done += amount

    def _value(self) -> float:
        value = self.done
        if self.current is not None:
            share = self.weights.get(self.current, 0.0)
            guess = (time.monotonic() - self.current_started) * self.RATE
            value += min(share * 0.95, guess)
        return value

    def _run(self) -> None:
        if self._stop.wait(self.delay):
            return
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        console = Console(stderr=True)
        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.percentage:>3.0f}%"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        ) as bar:
            task = bar.add_task(self.label, total=self.total)
            while not self._stop.wait(0.1):
                part = self.current
                desc = f"{self.label}: {part}" if part else self.label
                bar.update(task, completed=self._value(), description=desc)


def progress_wanted(progress: bool | None = None) -> bool:
    """``progress`` if given, else whether stderr is a terminal."""
    if progress is not None:
        return progress
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False
