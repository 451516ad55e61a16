"""Columnar cache: a DuckDB copy of an export's canonical tables, so repeat queries skip SQLite.

Design (issue 4):

* **Where.** ``NSYSQ_CACHE_DIR``, else ``$XDG_CACHE_HOME/nsysq``, else ``~/.cache/nsysq``; never
  beside the trace.
* **Key.** sha256 of the trace's resolved path, size, mtime_ns, ctime_ns, inode, device, its first
  100 bytes (the SQLite header, with its change counter) and the cache format version plus the
  DuckDB version. A changed or replaced trace gets a different key, so it is never answered from
  a stale copy; stale entries age out by LRU.
* **Two levels per trace**, each one DuckDB file built atomically (temporary file in the cache
  directory, ``os.replace`` when complete; a ``nsysq_cache_meta`` row written last is checked on
  open):

  - ``core``: the kernel columns census / lineup / kernel totals read (start, end, shortName,
    demangledName) plus StringIds and the enum tables. Reading four columns of 5M kernels out of
    SQLite costs about as much as one direct census, so the first census builds it synchronously
    and every later census / lineup is answered from it.
  - ``full``: every canonical table with every canonical column. Reading all of it out of SQLite
    takes several times longer than a census, so after the first open it is built by a detached,
    ``nice``-d background process; once it exists every query reads only the cache.

* **Views.** Queries in ``queries/`` read the ``main.*`` views only. With ``full`` they point at
  the cache; with ``core`` the kernel view exposes only the four core columns (other tables stay
  on the SQLite file), and a query needing more kernel columns switches the kernel view back to
  the SQLite file first (decided from the query header, with a retry on a binder error as a safety
  net), so a missing column can never read as NULL.
* **Bounded** by ``NSYSQ_CACHE_MAX_BYTES`` (default 10 GiB), least recently used first.
* Traces smaller than ``NSYSQ_CACHE_MIN_BYTES`` (default 32 MiB) are read directly: measured on
  this project's 2-core box, the direct path answers them in the time it takes to start Python.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import duckdb

from nsysq import extension, schema
from nsysq.source import SourceSchema, connect_readonly

FORMAT_VERSION = 1
DEFAULT_MAX_BYTES = 10 * 1024**3
DEFAULT_MIN_TRACE_BYTES = 32 * 1024**2
CORE_KERNEL_COLUMNS = ("start", "end", "shortName", "demangledName")
CORE_TABLES = (schema.STRINGS, schema.COPY_KIND, schema.MEM_KIND)
CACHE_ALIAS = "nsysq_cache"
Level = Literal["core", "full"]
LEVELS: tuple[Level, ...] = ("full", "core")


# -- configuration ------------------------------------------------------------------------------
def cache_dir() -> Path:
    """The cache directory (not created here)."""
    env = os.environ.get("NSYSQ_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg).expanduser() / "nsysq"
    return Path.home() / ".cache" / "nsysq"


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    units = {"k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
    try:
        if raw[-1] in units:
            return int(float(raw[:-1]) * units[raw[-1]])
        return int(raw)
    except ValueError:
        return default


def max_bytes() -> int:
    return _env_int("NSYSQ_CACHE_MAX_BYTES", DEFAULT_MAX_BYTES)


def min_trace_bytes() -> int:
    return _env_int("NSYSQ_CACHE_MIN_BYTES", DEFAULT_MIN_TRACE_BYTES)


def background_allowed() -> bool:
    return os.environ.get("NSYSQ_CACHE_BACKGROUND", "1").strip().lower() not in ("0", "no", "off")


# -- identity -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Identity:
    """What makes a trace file *this* trace: any change gives a different key."""

    path: Path
    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int
    device: int
    header: bytes

    @property
    def key(self) -> str:
        text = "|".join(
            str(v)
            for v in (
                FORMAT_VERSION,
                duckdb.__version__,
                self.path,
                self.size,
                self.mtime_ns,
                self.ctime_ns,
                self.inode,
                self.device,
                self.header.hex(),
            )
        )
        return hashlib.sha256(text.encode()).hexdigest()[:32]


def identity(path: Path) -> Identity:
    path = Path(path).resolve()
    with path.open("rb") as fh:
        st = os.fstat(fh.fileno())
        header = fh.read(100)
    return Identity(path, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev, header)


def entry_file(key: str, level: Level) -> Path:
    return cache_dir() / f"{key}.{level}.duckdb"


def _info_file(key: str) -> Path:
    return cache_dir() / f"{key}.json"


def _lock_file(key: str) -> Path:
    return cache_dir() / f"{key}.lock"


# -- what goes into each level -----------------------------------------------------------------
def _plan(src: SourceSchema, level: Level) -> list[tuple[str, str]]:
    """(table, SELECT over ``src``) for every table the level stores."""
    present = schema.present_tables(src)
    out: list[tuple[str, str]] = []
    for table in schema.CANONICAL:
        if table not in present:
            continue
        if level == "full" or table in CORE_TABLES:
            out.append((table, schema.view_sql(table, src, "src")))
        elif table == schema.KERNEL:
            have = set(src.columns.get(table, ()))
            types = dict(schema.CANONICAL[table])
            items = [
                schema._q(c) if c in have else f"CAST(NULL AS {types[c]}) AS {schema._q(c)}"
                for c in CORE_KERNEL_COLUMNS
            ]
            out.append((table, f"SELECT {', '.join(items)} FROM src.{schema._q(table)}"))
    return out


def _width(table: str, level: Level) -> int:
    if level == "core" and table == schema.KERNEL:
        return len(CORE_KERNEL_COLUMNS)
    return len(schema.CANONICAL[table])


def _estimate_rows(path: Path, tables: list[str]) -> dict[str, int]:
    """max(rowid) per table: an O(log n) estimate of its row count, for the progress bar."""
    rows: dict[str, int] = {}
    try:
        con = connect_readonly(path)
        try:
            for table in tables:
                try:
                    value = con.execute(f"SELECT max(rowid) FROM {schema._q(table)}").fetchone()
                    rows[table] = int(value[0] or 0) if value else 0
                except Exception:  # noqa: BLE001 - an estimate only
                    rows[table] = 0
        finally:
            con.close()
    except Exception:  # noqa: BLE001
        pass
    return rows


# -- progress -----------------------------------------------------------------------------------
class _Progress:
    """A rich progress bar on stderr, shown only on a terminal and only after ``delay`` seconds."""

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
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> _Progress:
        if self.enabled:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def start(self, table: str) -> None:
        self.current, self.current_started = table, time.monotonic()

    def finish(self, table: str) -> None:
        self.done += self.weights.get(table, 0.0)
        self.current = None

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
                table = self.current
                desc = f"{self.label}: {table}" if table else self.label
                bar.update(task, completed=self._value(), description=desc)


def _progress_wanted(progress: bool | None) -> bool:
    if progress is not None:
        return progress
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


# -- locking, validity --------------------------------------------------------------------------
@contextlib.contextmanager
def _locked(key: str, *, wait: bool) -> Iterator[bool]:
    """Hold the per-key builder lock; yields False when ``wait`` is off and another holds it."""
    fd = os.open(_lock_file(key), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def build_running(key: str) -> bool:
    """True when some process holds the builder lock for ``key``."""
    lock = _lock_file(key)
    if not lock.exists():
        return False
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _check_meta(con: duckdb.DuckDBPyConnection, alias: str, key: str, level: Level) -> bool:
    try:
        row = con.execute(f"SELECT key, level, format_version FROM {alias}.nsysq_cache_meta").fetchone()
    except duckdb.Error:
        return False
    return row is not None and row[0] == key and row[1] == level and row[2] == FORMAT_VERSION


def valid(key: str, level: Level) -> bool:
    """Whether a complete cache file for ``key`` and ``level`` exists (opens it read-only)."""
    path = entry_file(key, level)
    if not path.is_file():
        return False
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error:
        return False
    try:
        return _check_meta(con, "main", key, level)
    finally:
        con.close()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_orphans(key: str) -> None:
    """Temporary files of builders that died (we hold the key's lock, so nobody else writes)."""
    for tmp in cache_dir().glob(f"{key}.*.duckdb.tmp-*"):
        _unlink(tmp)


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


# -- building -----------------------------------------------------------------------------------
def build(
    path: Path,
    src: SourceSchema,
    level: Level,
    *,
    wait: bool = True,
    progress: bool | None = None,
    threads: int | None = None,
) -> Path | None:
    """Build (or find) the ``level`` cache of ``path``; return its file, or None when not built.

    Safe against concurrent builders (a per-key ``flock``; the loser waits, then finds the file)
    and against being killed (the file only appears, by rename, once complete).
    """
    ident = identity(path)
    key = ident.key
    final = entry_file(key, level)
    directory = cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    with _locked(key, wait=wait) as got:
        if not got:
            return None
        if valid(key, level) or (level == "core" and valid(key, "full")):
            return final if final.is_file() else entry_file(key, "full")
        _remove_orphans(key)
        tmp = directory / f"{key}.{level}.duckdb.tmp-{os.getpid()}-{os.urandom(4).hex()}"
        plan = _plan(src, level)
        rows = _estimate_rows(ident.path, [t for t, _ in plan])
        weights = {t: float(max(rows.get(t, 0), 1) * _width(t, level)) for t, _ in plan}
        label = "nsysq: caching " + ("census columns" if level == "core" else "trace")
        started = time.time()
        try:
            with _Progress(label, weights, _progress_wanted(progress)) as bar:
                _write(tmp, ident, src, level, plan, bar, threads)
            if identity(ident.path) != ident:  # the trace changed while we read it
                _unlink(tmp)
                return None
            _write_info(ident, level, started, time.time() - started)
            os.replace(tmp, final)
        except BaseException:
            _unlink(tmp)
            _unlink(Path(str(tmp) + ".wal"))
            raise
        finally:
            _unlink(Path(str(tmp) + ".wal"))
        if level == "full":
            _unlink(entry_file(key, "core"))
    evict(keep=final)
    return final


def _write(
    tmp: Path,
    ident: Identity,
    src: SourceSchema,
    level: Level,
    plan: list[tuple[str, str]],
    bar: _Progress,
    threads: int | None,
) -> None:
    con = extension.connect(str(tmp))
    try:
        con.execute("SET enable_progress_bar = false")
        con.execute("SET preserve_insertion_order = true")
        con.execute(f"SET memory_limit = '{_env_int('NSYSQ_CACHE_MEMORY_MB', 600)}MB'")
        con.execute(f"SET temp_directory = '{_sql_str(str(tmp) + '.spill')}'")
        if threads:
            con.execute(f"SET threads = {int(threads)}")
        con.execute(f"ATTACH '{_sql_str(str(ident.path))}' AS src (TYPE sqlite, READ_ONLY)")
        for table, select in plan:
            bar.start(table)
            con.execute(f"CREATE TABLE main.{schema._q(table)} AS {select}")
            bar.finish(table)
        tables = json.dumps([t for t, _ in plan])
        con.execute(
            "CREATE TABLE main.nsysq_cache_meta AS SELECT "
            f"'{ident.key}' AS key, '{level}' AS level, {FORMAT_VERSION} AS format_version, "
            f"'{_sql_str(str(ident.path))}' AS trace, {ident.size} AS trace_size, "
            f"{ident.mtime_ns} AS trace_mtime_ns, '{_sql_str(tables)}' AS tables, "
            f"now() AS created"
        )
        con.execute("CHECKPOINT")
    finally:
        con.close()
    with open(tmp, "rb+") as fh:
        os.fsync(fh.fileno())


def _sql_str(text: str) -> str:
    return text.replace("'", "''")


def _write_info(ident: Identity, level: Level, started: float, seconds: float) -> None:
    info_path = _info_file(ident.key)
    data: dict[str, Any] = {}
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(info_path.read_text())
    data.update(
        {
            "key": ident.key,
            "trace": str(ident.path),
            "trace_size": ident.size,
            "trace_mtime_ns": ident.mtime_ns,
            "format_version": FORMAT_VERSION,
        }
    )
    data.setdefault("created", started)
    data.setdefault("build_seconds", {})[level] = round(seconds, 3)
    tmp = info_path.with_name(f"{info_path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, info_path)


def spawn_background(path: Path) -> bool:
    """Start a detached, low-priority process that builds the ``full`` level; True if started."""
    if not background_allowed():
        return False
    try:
        key = identity(path).key
        cache_dir().mkdir(parents=True, exist_ok=True)
        if build_running(key):
            return False
        subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", "nsysq.cache", "build-background", str(path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        return False
    return True


# -- using a cache ------------------------------------------------------------------------------
@dataclass
class CacheState:
    """How an open Trace uses the cache."""

    mode: str  # "off", "small", "full", "core", "direct", "error"
    key: str | None = None
    file: Path | None = None
    note: str = ""
    kernel_view: str = "direct"  # "cache" or "direct" (core level only)
    core_tables: set[str] = field(default_factory=set)


def _attach(con: duckdb.DuckDBPyConnection, file: Path, key: str, level: Level) -> bool:
    try:
        con.execute(f"ATTACH '{_sql_str(str(file))}' AS {CACHE_ALIAS} (READ_ONLY)")
    except duckdb.Error:
        return False
    if _check_meta(con, CACHE_ALIAS, key, level):
        return True
    with contextlib.suppress(duckdb.Error):
        con.execute(f"DETACH {CACHE_ALIAS}")
    return False


def _touch(file: Path) -> None:
    with contextlib.suppress(OSError):
        os.utime(file)


def use(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    src: SourceSchema,
    mode: bool | str,
    *,
    progress: bool | None = None,
) -> CacheState:
    """Point the connection's ``main.*`` views at the cache when one applies; build if needed.

    ``mode``: False (never touch the cache), True (use it; for traces above the size threshold
    build the census columns now and the rest in the background), "build" (build everything now).
    The direct views must already exist: whatever fails here leaves them in place.
    """
    if mode is False or mode == "off":
        return CacheState("off", note="disabled (--no-cache)")
    ident = identity(path)
    key = ident.key

    def attached(level: Level) -> Path | None:
        file = entry_file(key, level)
        return file if file.is_file() and _attach(con, file, key, level) else None

    def full_state(file: Path) -> CacheState:
        _views_full(con, src)
        _touch(file)
        return CacheState("full", key, file, note=f"full copy, {_human(file.stat().st_size)}")

    file = attached("full")
    if file is not None:
        return full_state(file)
    if mode is True and ident.size < min_trace_bytes():
        return CacheState("small", key, note="not cached (small trace: read directly)")
    if mode == "build":
        build(path, src, "full", progress=progress)
        file = attached("full")
        return full_state(file) if file else CacheState("direct", key, note="no cached copy")
    file = attached("core")
    if file is None:
        build(path, src, "core", progress=progress)
        file = attached("full")
        if file is not None:
            return full_state(file)
        file = attached("core")
        if file is None:
            return CacheState("direct", key, note="no cached copy")
    _touch(file)
    state = CacheState("core", key, file, core_tables=set(_plan_tables(src, "core")))
    _views_core(con, src, state)
    running = build_running(key) or spawn_background(path)
    state.note = "census columns cached" + ("; full copy being built in the background" if running else "")
    return state


def open_full(
    path: Path, src: SourceSchema, mode: bool | str
) -> tuple[duckdb.DuckDBPyConnection, CacheState] | None:
    """A connection whose views read a complete cached copy of ``path``, or None if there is none.

    Skips loading the sqlite extension, which is most of the cost of opening a trace.
    """
    if mode is False or mode == "off":
        return None
    try:
        key = identity(path).key
        file = entry_file(key, "full")
        if not file.is_file():
            return None
        con = extension.connect(sqlite=False)
    except (OSError, duckdb.Error):
        return None
    try:
        if _attach(con, file, key, "full"):
            _views_full(con, src)
            _touch(file)
            note = f"full copy, {_human(file.stat().st_size)}"
            return con, CacheState("full", key, file, note=note)
    except (OSError, duckdb.Error):
        pass
    con.close()
    return None


def prepare(con: duckdb.DuckDBPyConnection, src: SourceSchema, state: CacheState, tables: str) -> None:
    """Before a catalog query at the core level: kernels from the cache iff its header allows."""
    if state.mode != "core":
        return
    needed = kernel_columns_needed(tables)
    if needed is None:
        return
    where = "cache" if needed <= set(CORE_KERNEL_COLUMNS) else "direct"
    set_kernel_view(con, src, state, where)


def widen(con: duckdb.DuckDBPyConnection, src: SourceSchema, state: CacheState) -> bool:
    """Read kernels from the file (all columns); True if that changed anything (worth a retry)."""
    if state.mode != "core" or state.kernel_view == "direct":
        return False
    set_kernel_view(con, src, state, "direct")
    return True


def reset_views(con: duckdb.DuckDBPyConnection, src: SourceSchema) -> None:
    """Back to reading everything from the file (after a cache error)."""
    schema.create_views(con, src, "src")
    with contextlib.suppress(duckdb.Error):
        con.execute(f"DETACH {CACHE_ALIAS}")


def _plan_tables(src: SourceSchema, level: Level) -> list[str]:
    return [t for t, _ in _plan(src, level)]


def _cache_schema(src: SourceSchema, tables: set[str]) -> SourceSchema:
    return SourceSchema(
        path=src.path,
        columns={t: tuple(c for c, _ in schema.CANONICAL[t]) for t in tables},
    )


def _views_full(con: duckdb.DuckDBPyConnection, src: SourceSchema) -> None:
    stored = schema.present_tables(src)
    cached = _cache_schema(src, stored)
    for table in schema.CANONICAL:
        sql = schema.view_sql(table, cached, CACHE_ALIAS)
        con.execute(f"CREATE OR REPLACE VIEW main.{schema._q(table)} AS {sql}")


def _views_core(con: duckdb.DuckDBPyConnection, src: SourceSchema, state: CacheState) -> None:
    cached = _cache_schema(src, state.core_tables - {schema.KERNEL})
    for table in state.core_tables - {schema.KERNEL}:
        sql = schema.view_sql(table, cached, CACHE_ALIAS)
        con.execute(f"CREATE OR REPLACE VIEW main.{schema._q(table)} AS {sql}")
    set_kernel_view(con, src, state, "cache")


def set_kernel_view(con: duckdb.DuckDBPyConnection, src: SourceSchema, state: CacheState, where: str) -> None:
    """At the core level: read kernels from the cache (core columns only) or from the file."""
    if state.mode != "core" or state.kernel_view == where:
        return
    if where == "cache" and schema.KERNEL in state.core_tables:
        cols = ", ".join(schema._q(c) for c in CORE_KERNEL_COLUMNS)
        sql = f"SELECT {cols} FROM {CACHE_ALIAS}.{schema._q(schema.KERNEL)}"
    else:
        sql = schema.view_sql(schema.KERNEL, src, "src")
        where = "direct"
    con.execute(f"CREATE OR REPLACE VIEW main.{schema._q(schema.KERNEL)} AS {sql}")
    state.kernel_view = where


def kernel_columns_needed(tables_header: str) -> set[str] | None:
    """Kernel columns a query header lists; empty set = row counts only; None = not listed."""
    marker = schema.KERNEL
    at = tables_header.find(marker)
    if at < 0:
        return None
    rest = tables_header[at + len(marker) :]
    if not rest.startswith("("):
        return set()
    inner = rest[1 : rest.find(")")]
    return {c.strip().strip('"') for c in inner.split(",") if c.strip()}


# -- listing, eviction --------------------------------------------------------------------------
@dataclass
class Entry:
    key: str
    trace: str
    levels: list[str]
    size_bytes: int
    created: float | None
    last_used: float
    trace_exists: bool


def entries() -> list[Entry]:
    directory = cache_dir()
    if not directory.is_dir():
        return []
    by_key: dict[str, list[Path]] = {}
    for file in directory.glob("*.duckdb"):
        parts = file.name.split(".")
        if len(parts) == 3 and parts[1] in LEVELS:
            by_key.setdefault(parts[0], []).append(file)
    out: list[Entry] = []
    for key, files in by_key.items():
        data: dict[str, Any] = {}
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(_info_file(key).read_text())
        stats = []
        for f in files:
            with contextlib.suppress(OSError):
                stats.append((f, f.stat()))
        if not stats:
            continue
        trace = str(data.get("trace", "?"))
        out.append(
            Entry(
                key=key,
                trace=trace,
                levels=sorted(f.name.split(".")[1] for f, _ in stats),
                size_bytes=sum(s.st_size for _, s in stats),
                created=data.get("created"),
                last_used=max(s.st_mtime for _, s in stats),
                trace_exists=Path(trace).exists(),
            )
        )
    return sorted(out, key=lambda e: e.last_used, reverse=True)


def evict(limit: int | None = None, keep: Path | None = None) -> list[str]:
    """Delete least recently used entries until the cache holds at most ``limit`` bytes."""
    limit = max_bytes() if limit is None else limit
    items = entries()
    total = sum(e.size_bytes for e in items)
    removed: list[str] = []
    for entry in sorted(items, key=lambda e: e.last_used):
        if total <= limit:
            break
        if keep is not None and keep.name.startswith(entry.key + "."):
            continue
        remove(entry.key)
        total -= entry.size_bytes
        removed.append(entry.key)
    return removed


def remove(key: str) -> None:
    directory = cache_dir()
    for level in LEVELS:
        _unlink(entry_file(key, level))
    _unlink(_info_file(key))
    for tmp in directory.glob(f"{key}.*.duckdb.tmp-*"):
        pid = tmp.name.rsplit("tmp-", 1)[-1].split("-")[0]
        if not (pid.isdigit() and _pid_alive(int(pid))):
            _unlink(tmp)


def clear() -> tuple[int, int]:
    """Remove every cache entry (and stale temporary files); return (entries, bytes) removed."""
    items = entries()
    for entry in items:
        remove(entry.key)
    directory = cache_dir()
    if directory.is_dir():
        for tmp in directory.glob("*.duckdb.tmp-*"):
            pid = tmp.name.rsplit("tmp-", 1)[-1].split("-")[0]
            if not (pid.isdigit() and _pid_alive(int(pid))):
                _unlink(tmp)
        for stray in directory.glob("*.json"):
            key = stray.name.split(".")[0]
            if not any(entry_file(key, lv).exists() for lv in LEVELS):
                _unlink(stray)
        for lock in directory.glob("*.lock"):
            key = lock.name.split(".")[0]
            if not build_running(key):
                _unlink(lock)
    return len(items), sum(e.size_bytes for e in items)


def describe(path: Path) -> str:
    """One line for ``nsysq info``: which cached copies of this trace exist."""
    try:
        key = identity(path).key
    except OSError:
        return "unknown"
    have = [lv for lv in LEVELS if entry_file(key, lv).is_file()]
    size = sum(entry_file(key, lv).stat().st_size for lv in have)
    running = build_running(key) if cache_dir().is_dir() else False
    if "full" in have:
        text = f"full copy ({_human(size)}) in {cache_dir()}"
    elif "core" in have:
        text = f"census columns only ({_human(size)}) in {cache_dir()}"
    else:
        text = "no cached copy"
    if running and "full" not in have:
        text += "; full copy being built"
    return text


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


# -- background entry point ---------------------------------------------------------------------
def _main(argv: list[str]) -> int:
    from nsysq.source import check_path, read_schema

    if len(argv) != 2 or argv[0] not in ("build-background", "build"):
        sys.stderr.write("usage: python -m nsysq.cache build|build-background PATH\n")
        return 2
    background = argv[0] == "build-background"
    if background:
        with contextlib.suppress(OSError):
            os.nice(10)
    path = check_path(argv[1])
    src = read_schema(path)
    try:
        built = build(path, src, "full", wait=not background, progress=False if background else None)
    except Exception:  # noqa: BLE001 - a background build failing must stay silent
        return 1
    return 0 if built is not None else 1


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
