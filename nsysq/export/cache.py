"""Columnar cache: a DuckDB copy of an export's canonical tables, and the answers already given.

One mechanism, three rules:

* **Where.** ``NSYSQ_CACHE_DIR``, else ``$XDG_CACHE_HOME/nsysq``, else ``~/.cache/nsysq``; never
  beside the trace. Traces smaller than ``NSYSQ_CACHE_MIN_BYTES`` (32 MiB) are not cached: the
  direct path answers them in about the time Python takes to start.
* **Key.** sha256 of the trace's resolved path, size, mtime_ns, ctime_ns, inode, device, its first
  100 bytes (the SQLite header with its change counter), the cache format version and DuckDB's
  version. A changed or replaced trace gets another key, so it is never answered from stale data.
* **What.** ``<key>.duckdb`` holds every canonical table (``nsysq.export.schema.CANONICAL``); once it
  exists a Trace opens it instead of the SQLite file (the sqlite extension is not even loaded) and
  every query in ``queries/`` runs unchanged on the same views. Reading everything out of SQLite
  takes several times one census, so the first open of a large trace answers directly from the
  file and starts a detached, ``nice``-d process that builds the copy (``nsysq cache build`` does
  it in the foreground). ``<key>.results/`` keeps the rows of queries already answered (keyed by
  the query's SQL text, its parameters and the lineup rules loaded), so asking the same question
  again costs a file read.

Both are written atomically: a temporary file in the cache directory under a per-key ``flock``,
a metadata row written last, fsync, ``os.replace``; readers only open final names and check the
metadata row. The directory is bounded by ``NSYSQ_CACHE_MAX_BYTES`` (10 GiB), least recently used
first.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nsysq import catalog
from nsysq.base.errors import CacheError, DamagedTraceError
from nsysq.base.units import fmt_file_size
from nsysq.export import engine, pages, schema
from nsysq.export.check import SourceSchema, checked_count, connect_readonly, damage_message
from nsysq.export.progress import ProgressBar, progress_wanted

if TYPE_CHECKING:
    import duckdb

# 5: the graph-execution table joined the canonical tables; 6: GPU tables, fill; 7: launch devices
# mapped through CUDA_VISIBLE_DEVICES; 8: OSRT_API (the OS runtime calls nsysq stats reads).
FORMAT_VERSION = 8
DEFAULT_MAX_BYTES = 10 * 1024**3
DEFAULT_MIN_TRACE_BYTES = 32 * 1024**2
CACHE_ALIAS = "nsysq_cache"
EXPORTS = "exports"
EXPORT_INFO = "export.json"


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


def exports_dir() -> Path:
    """Where the SQLite exports of ``.nsys-rep`` reports go (nsysq.export.nsys_rep): one folder per
    report and nsys, inside the cache directory."""
    return cache_dir() / EXPORTS


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
        import duckdb

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


def may_have_copy(path: Path) -> bool:
    """A cheap hint that needs no DuckDB (the cache key includes its version): False when no
    cached copy of ``path`` can exist (below the size worth caching, no cache directory, or no
    entry's info file names this path and size); True when there may be one, or when unsure."""
    try:
        size = path.stat().st_size
        if size < min_trace_bytes():
            return False
        directory = cache_dir()
        if not directory.is_dir():
            return False
        resolved = str(Path(path).resolve())
        for info in directory.glob("*.json"):
            data = json.loads(info.read_text())
            if data.get("trace") == resolved and data.get("trace_size") == size:
                return True
        return False
    except (OSError, ValueError, AttributeError):
        return True


def entry_file(key: str) -> Path:
    return cache_dir() / f"{key}.duckdb"


def _results_dir(key: str) -> Path:
    return cache_dir() / f"{key}.results"


def _info_file(key: str) -> Path:
    return cache_dir() / f"{key}.json"


def _lock_file(key: str) -> Path:
    return cache_dir() / f"{key}.lock"


def _estimate_rows(path: Path, tables: list[str]) -> dict[str, int]:
    """max(rowid) per table: an O(log n) estimate of its row count, for the progress bar."""
    rows: dict[str, int] = {}
    try:
        con = connect_readonly(path)
        try:
            for table in tables:
                try:
                    value = con.execute(f"SELECT max(rowid) FROM {schema.quote(table)}").fetchone()
                    rows[table] = int(value[0] or 0) if value else 0
                except Exception:  # noqa: BLE001 - an estimate only
                    rows[table] = 0
        finally:
            con.close()
    except Exception:  # noqa: BLE001
        pass
    return rows


# -- locking ------------------------------------------------------------------------------------
# The per-key builder lock: fcntl.flock on POSIX, msvcrt.locking on Windows. Where neither exists
# the cache is off (a copy built without a lock could be read half-written).
def _lock_module() -> Any:
    for name in ("fcntl", "msvcrt"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


_LOCKS = _lock_module()
NO_LOCKING_NOTE = "off (this platform offers no file locking: read directly, nothing cached)"


def locking_available() -> bool:
    """Whether this platform can lock a cache entry (fcntl or msvcrt); without it nothing is cached."""
    return _LOCKS is not None


def _try_lock(fd: int) -> bool:
    """Take the exclusive lock on ``fd`` without waiting; False when another process holds it."""
    try:
        if hasattr(_LOCKS, "flock"):
            _LOCKS.flock(fd, _LOCKS.LOCK_EX | _LOCKS.LOCK_NB)
        else:
            _LOCKS.locking(fd, _LOCKS.LK_NBLCK, 1)
    except OSError:  # BlockingIOError (flock) or PermissionError (msvcrt)
        return False
    return True


def _unlock(fd: int) -> None:
    if hasattr(_LOCKS, "flock"):
        _LOCKS.flock(fd, _LOCKS.LOCK_UN)
    else:
        os.lseek(fd, 0, os.SEEK_SET)
        _LOCKS.locking(fd, _LOCKS.LK_UNLCK, 1)


def _lock(fd: int, *, wait: bool) -> bool:
    if not wait or not hasattr(_LOCKS, "flock"):
        while not _try_lock(fd):
            if not wait:
                return False
            time.sleep(0.1)
        return True
    _LOCKS.flock(fd, _LOCKS.LOCK_EX)
    return True


@contextlib.contextmanager
def _locked(key: str, *, wait: bool) -> Iterator[bool]:
    """Hold the per-key builder lock; yields False when ``wait`` is off and another holds it."""
    if not locking_available():
        raise CacheError(f"the cache is {NO_LOCKING_NOTE}; run without nsysq cache build.")
    with holding(_lock_file(key), wait=wait) as got:
        yield got


@contextlib.contextmanager
def holding(lock: Path, *, wait: bool = True) -> Iterator[bool]:
    """Hold the exclusive lock on the file ``lock`` (created if need be); yields False when ``wait``
    is off and another process holds it, and True without locking where the platform cannot lock."""
    if not locking_available():
        yield True
        return
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if not _lock(fd, wait=wait):
            yield False
            return
        try:
            yield True
        finally:
            _unlock(fd)
    finally:
        os.close(fd)


def build_running(key: str) -> bool:
    """True when some process holds the builder lock for ``key``."""
    lock = _lock_file(key)
    if not locking_available() or not lock.exists():
        return False
    fd = os.open(lock, os.O_RDWR)
    try:
        if not _try_lock(fd):
            return True
        _unlock(fd)
    finally:
        os.close(fd)
    return False


def _pid_alive(pid: int) -> bool:
    if os.name == "nt":  # os.kill(pid, 0) would end the process there: assume it still runs
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_orphans(key: str) -> None:
    """Temporary files of builders that died (we hold the key's lock, so nobody else writes)."""
    for tmp in cache_dir().glob(f"{key}.duckdb.tmp-*"):
        _unlink(tmp)


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


# -- validity -----------------------------------------------------------------------------------
def _check_meta(con: duckdb.DuckDBPyConnection, alias: str, key: str) -> bool:
    import duckdb

    try:
        row = con.execute(f"SELECT key, format_version FROM {alias}.nsysq_cache_meta").fetchone()
    except duckdb.Error:
        return False
    return row is not None and row[0] == key and row[1] == FORMAT_VERSION


def valid(key: str) -> bool:
    """Whether a complete cached copy for ``key`` exists (opens it read-only to check)."""
    import duckdb

    path = entry_file(key)
    if not path.is_file():
        return False
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error:
        return False
    try:
        return _check_meta(con, "main", key)
    finally:
        con.close()


# -- building -----------------------------------------------------------------------------------
def build(path: Path, src: SourceSchema, *, wait: bool = True, progress: bool | None = None) -> Path | None:
    """Build (or find) the cached copy of ``path``; return its file, or None when not built.

    Safe against concurrent builders (a per-key ``flock``; the loser waits, then finds the file)
    and against being killed (the file only appears, by rename, once complete).
    """
    ident = identity(path)
    key = ident.key
    final = entry_file(key)
    directory = cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    with _locked(key, wait=wait) as got:
        if not got:
            return None
        if valid(key):
            return final
        _remove_orphans(key)
        tmp = directory / f"{key}.duckdb.tmp-{os.getpid()}-{os.urandom(4).hex()}"
        tables = sorted(schema.present_tables(src))
        rows = _estimate_rows(ident.path, tables)
        weights = {t: float(max(rows.get(t, 0), 1) * len(schema.CANONICAL[t])) for t in tables}
        started = time.time()
        try:
            with ProgressBar("nsysq: caching trace", weights, progress_wanted(progress)) as bar:
                _write(tmp, ident, src, tables, bar)
            if identity(ident.path) != ident:  # the trace changed while we read it
                _unlink(tmp)
                return None
            _write_info(ident, started, time.time() - started)
            os.replace(tmp, final)
        finally:
            _unlink(tmp)
            _unlink(Path(str(tmp) + ".wal"))
            shutil.rmtree(str(tmp) + ".spill", ignore_errors=True)
    evict(keep=key)
    return final


def _write(tmp: Path, ident: Identity, src: SourceSchema, tables: list[str], bar: ProgressBar) -> None:
    con = engine.connect(str(tmp))
    try:
        con.execute("SET enable_progress_bar = false")
        con.execute(f"SET memory_limit = '{_env_int('NSYSQ_CACHE_MEMORY_MB', 600)}MB'")
        con.execute(f"SET temp_directory = '{_sql_str(str(tmp) + '.spill')}'")
        con.execute(f"ATTACH '{_sql_str(str(ident.path))}' AS src (TYPE sqlite, READ_ONLY)")
        for table in tables:
            bar.start(table)
            _copy_table(con, ident.path, src, table)
            bar.finish(table)
        for table in schema.CANONICAL:  # tables the export lacks: empty (temp, not stored) views
            if table not in tables:
                empty = schema.view_sql(table, SourceSchema(path=ident.path, columns={}))
                con.execute(f"CREATE TEMP VIEW {schema.quote(table)} AS {empty}")
        con.execute(schema.visible_devices_view(src))
        for macro in catalog.macros():  # the derived tables' queries call them
            con.execute(macro.sql)
        for derived, query in schema.DERIVED.items():  # computed from the copy, stored with it
            con.execute(f"CREATE TABLE main.{derived} AS {catalog.get(query).sql}")
        con.execute(
            "CREATE TABLE main.nsysq_cache_meta AS SELECT "
            f"'{ident.key}' AS key, {FORMAT_VERSION} AS format_version, "
            f"'{_sql_str(str(ident.path))}' AS trace, {ident.size} AS trace_size, "
            f"'{_sql_str(json.dumps(tables))}' AS tables, now() AS created"
        )
        con.execute("CHECKPOINT")
    finally:
        con.close()
    with open(tmp, "rb+") as fh:
        os.fsync(fh.fileno())


def _copy_table(con: duckdb.DuckDBPyConnection, path: Path, src: SourceSchema, table: str) -> None:
    """Copy one table through DuckDB's sqlite scanner, then check it holds SQLite's own count of
    rows, its text checked for valid UTF-8 first (the scanner's parallel scan skips rows of a
    malformed b-tree, and DuckDB mangles or trips on invalid UTF-8, without saying so), and that
    its b-tree is well formed (``pages.verified_rows``: SQLite's count does not look at the keys)."""
    import duckdb

    select = schema.view_sql(table, src, "src") + _ORDER.get(table, "")
    expected = pages.verified_rows(path, table, schema.text_columns(table, src))
    try:
        con.execute(f"CREATE TABLE main.{schema.quote(table)} AS {select}")
        row = con.execute(f"SELECT count(*) FROM main.{schema.quote(table)}").fetchone()
    except duckdb.Error as exc:
        first = str(exc).splitlines()[0]
        if damage_message(first):
            raise DamagedTraceError(path, table, None, first) from None
        raise
    checked_count(path, table, expected, int(row[0]) if row else 0, "DuckDB's sqlite scanner")


# Kernels stored grouped by name, shortest first: per-name statistics (census, stakeout, the
# "other" row) then read contiguous runs; measured on 5M kernels, census on the copy 0.37 s -> 0.19 s.
_ORDER = {schema.KERNEL: ' ORDER BY "shortName", "demangledName", "end" - "start"'}


def _sql_str(text: str) -> str:
    return text.replace("'", "''")


def _write_json(target: Path, data: Any) -> None:
    tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}-{os.urandom(4).hex()}")
    try:
        tmp.write_text(json.dumps(data))
        os.replace(tmp, target)
    finally:
        _unlink(tmp)


def _write_info(ident: Identity, started: float, seconds: float) -> None:
    _write_json(
        _info_file(ident.key),
        {
            "key": ident.key,
            "trace": str(ident.path),
            "trace_size": ident.size,
            "format_version": FORMAT_VERSION,
            "created": started,
            "build_seconds": round(seconds, 3),
        },
    )


def spawn_background(path: Path) -> bool:
    """Start a detached, low-priority ``nsysq cache build --background``; True if one was started."""
    if not background_allowed() or not locking_available():
        return False
    try:
        key = identity(path).key
        cache_dir().mkdir(parents=True, exist_ok=True)
        if build_running(key):
            return False
        subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", "nsysq", "cache", "build", "--background", str(path)],
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
@dataclass(frozen=True)
class CacheState:
    """How an open Trace uses the cache. ``key`` is set when answers may be memoized."""

    # "cached", "direct" (large trace, copy not built yet), "kept" (the same, none wanted), "small", "off"
    mode: str
    key: str | None = None
    file: Path | None = None
    note: str = ""


def open_copy(
    path: Path, src: SourceSchema, mode: bool | str
) -> tuple[duckdb.DuckDBPyConnection | None, CacheState]:
    """What the cache offers a trace being opened: a connection to its complete copy (built first
    when ``mode`` is "build"), or None and how a direct read of the file uses the cache."""
    if mode == "build":
        build(path, src)
    opened = open_cached(path, src) if mode else None
    if opened is not None:
        return opened
    return None, direct_state(path, bool(mode), build_later=mode != "reuse")


def open_cached(path: Path, src: SourceSchema) -> tuple[duckdb.DuckDBPyConnection, CacheState] | None:
    """A connection whose views read the complete cached copy of ``path``, or None if there is none."""
    import duckdb

    if not locking_available():
        return None
    try:
        key = identity(path).key
        file = entry_file(key)
        if not file.is_file():
            return None
        con = engine.connect(sqlite=False)
    except (OSError, duckdb.Error):
        return None
    try:
        con.execute(f"ATTACH '{_sql_str(str(file))}' AS {CACHE_ALIAS} (READ_ONLY)")
        if _check_meta(con, CACHE_ALIAS, key):
            stored = schema.present_tables(src)
            cached = SourceSchema(
                path=src.path, columns={t: tuple(c for c, _ in schema.CANONICAL[t]) for t in stored}
            )
            con.execute("BEGIN")  # one commit for the views, not one each
            schema.create_views(con, cached, CACHE_ALIAS)
            for derived in schema.DERIVED:
                con.execute(f"CREATE OR REPLACE VIEW main.{derived} AS SELECT * FROM {CACHE_ALIAS}.{derived}")
            con.execute("COMMIT")
            _touch(file)
            return con, CacheState("cached", key, file, f"cached copy, {fmt_file_size(file.stat().st_size)}")
    except (OSError, duckdb.Error):
        pass
    con.close()
    return None


def direct_state(path: Path, mode: bool, *, build_later: bool = True) -> CacheState:
    """For a trace read from the file: whether answers are kept, and whether a copy is wanted
    (``build_later`` False: answers are kept but no background build starts, as nsysq fleet reads
    hundreds of traces and must not start a build per trace)."""
    if not mode:
        return CacheState("off", note="disabled (--no-cache)")
    if not locking_available():
        return CacheState("off", note=NO_LOCKING_NOTE)
    ident = identity(path)
    if ident.size < min_trace_bytes():
        return CacheState("small", note="not cached (small trace: read directly)")
    if not build_later:
        return CacheState("kept", ident.key, note="read directly; answers kept, no copy built")
    running = build_running(ident.key)
    note = "read directly; cached copy " + (
        "being built in the background" if running else "to be built in the background after this read"
    )
    return CacheState("direct", ident.key, note=note)


def after_direct_read(path: Path, state: CacheState) -> None:
    """Start the background copy once the first answers are out, so it never slows them down."""
    if state.mode == "direct" and state.key is not None and not build_running(state.key):
        spawn_background(path)


def touch(file: Path) -> None:
    """Mark a cache entry (a file or an export's folder) as just used, for the eviction order."""
    _touch(file)


def _touch(file: Path) -> None:
    with contextlib.suppress(OSError):
        os.utime(file)


# -- memoized answers ---------------------------------------------------------------------------
def answer_digest(sql: str, params: dict[str, Any], salt: str = "") -> str:
    text = json.dumps([FORMAT_VERSION, sql, sorted(params.items()), salt], default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def recall(key: str, digest: str) -> tuple[tuple[str, ...], list[tuple[Any, ...]]] | None:
    """Rows of a query already answered for this trace, or None."""
    file = _results_dir(key) / f"{digest}.json"
    try:
        data = json.loads(file.read_text())
    except (OSError, ValueError):
        return None
    _touch(file)
    return tuple(data["columns"]), [tuple(r) for r in data["rows"]]


def remember(key: str, digest: str, columns: tuple[str, ...], rows: list[tuple[Any, ...]]) -> None:
    """Keep a query's rows for next time (atomically; never fails the query)."""
    with contextlib.suppress(OSError, TypeError, ValueError):
        directory = _results_dir(key)
        directory.mkdir(parents=True, exist_ok=True)
        _write_json(directory / f"{digest}.json", {"columns": list(columns), "rows": rows})


# -- listing, eviction --------------------------------------------------------------------------
@dataclass
class Entry:
    key: str
    trace: str
    size_bytes: int
    answers: int
    created: float | None
    last_used: float
    trace_exists: bool
    kind: str = "copy"  # "copy": a columnar copy and kept answers; "export": a report's SQLite export


def _files(key: str) -> list[Path]:
    results = _results_dir(key)
    files = [entry_file(key), _info_file(key)]
    if results.is_dir():
        files += list(results.iterdir())
    return [f for f in files if f.is_file()]


def entries() -> list[Entry]:
    directory = cache_dir()
    if not directory.is_dir():
        return []
    keys = {
        p.name.split(".")[0] for p in directory.iterdir() if p.name.endswith((".duckdb", ".results", ".json"))
    }
    out: list[Entry] = []
    for key in sorted(keys):
        data: dict[str, Any] = {}
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(_info_file(key).read_text())
        stats = []
        for f in _files(key):
            with contextlib.suppress(OSError):
                stats.append((f, f.stat()))
        if not stats:
            continue
        trace = str(data.get("trace", "?"))
        out.append(
            Entry(
                key=key,
                trace=trace,
                size_bytes=sum(st.st_size for _, st in stats),
                answers=sum(1 for f, _ in stats if f.parent.name.endswith(".results")),
                created=data.get("created"),
                last_used=max(st.st_mtime for _, st in stats),
                trace_exists=Path(trace).exists(),
            )
        )
    out += _export_entries()
    return sorted(out, key=lambda e: e.last_used, reverse=True)


def _export_entries() -> list[Entry]:
    """The reports' SQLite exports: one folder per key under ``exports/`` (nsysq.export.nsys_rep)."""
    directory = exports_dir()
    if not directory.is_dir():
        return []
    out: list[Entry] = []
    for folder in directory.iterdir():
        if not folder.is_dir() or ".tmp-" in folder.name:
            continue
        data: dict[str, Any] = {}
        with contextlib.suppress(OSError, ValueError):
            data = json.loads((folder / EXPORT_INFO).read_text())
        stats = []
        for f in folder.iterdir():
            with contextlib.suppress(OSError):
                stats.append(f.stat())
        report = str(data.get("report", "?"))
        out.append(
            Entry(
                key=folder.name, trace=report, size_bytes=sum(st.st_size for st in stats), answers=0,
                created=data.get("created"), last_used=folder.stat().st_mtime,
                trace_exists=Path(report).exists(), kind="export",
            )
        )  # fmt: skip
    return out


def evict(limit: int | None = None, keep: str | None = None) -> list[str]:
    """Delete least recently used entries until the cache holds at most ``limit`` bytes."""
    limit = max_bytes() if limit is None else limit
    items = entries()
    total = sum(e.size_bytes for e in items)
    removed: list[str] = []
    for entry in sorted(items, key=lambda e: e.last_used):
        if total <= limit:
            break
        if entry.key == keep:
            continue
        remove(entry.key)
        total -= entry.size_bytes
        removed.append(entry.key)
    return removed


def remove(key: str) -> None:
    shutil.rmtree(exports_dir() / key, ignore_errors=True)
    _unlink(entry_file(key))
    _unlink(_info_file(key))
    shutil.rmtree(_results_dir(key), ignore_errors=True)
    for tmp in cache_dir().glob(f"{key}.duckdb.tmp-*"):
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
        for lock in directory.glob("*.lock"):
            if not build_running(lock.name.split(".")[0]):
                _unlink(lock)
    _clear_exports()
    return len(items), sum(e.size_bytes for e in items)


def _clear_exports() -> None:
    """Temporary folders of exports whose process died, and lock files nobody holds."""
    directory = exports_dir()
    if not directory.is_dir():
        return
    for tmp in directory.glob("*.tmp-*"):
        pid = tmp.name.rsplit("tmp-", 1)[-1].split("-")[0]
        if not (pid.isdigit() and _pid_alive(int(pid))):
            shutil.rmtree(tmp, ignore_errors=True)
    for lock in directory.glob("*.lock"):
        with holding(lock, wait=False) as free:
            if free:
                _unlink(lock)
