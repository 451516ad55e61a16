"""A ``.nsys-rep`` in: find nsys, export the report once into nsysq's cache folder, reuse it after.

:func:`resolve` is the one way a path becomes an export: a SQLite file is checked
(:func:`nsysq.export.check.check_path`) and returned; a report (``.nsys-rep``, ``.qdrep``, or a
file that starts as one) is exported with nsys, or its earlier export reused.

* **Which nsys.** ``--nsys PATH`` (``nsys=``), else ``NSYSQ_NSYS``, else ``nsys`` on ``PATH``, else
  the newest of the usual install folders (:data:`INSTALL_DIRS`; ``NSYSQ_NSYS_DIRS``, a
  ``os.pathsep``-separated list of glob patterns, replaces them, and an empty value searches none).
* **Key.** sha256 of the report's resolved path, size, mtime_ns, ctime_ns, inode, device, a hash of
  its first MiB, nsys's ``--version`` line and :data:`EXPORT_FORMAT`: a changed or replaced report,
  or another nsys, is exported again; an unchanged one never is.
* **Where.** ``<cache folder>/exports/<key>/<report stem>.sqlite`` with ``export.json`` beside it
  (the cache folder of :func:`nsysq.export.cache.cache_dir`: ``NSYSQ_CACHE_DIR``, ...), never beside
  the report. nsys writes into a temporary folder there, which is renamed into place once complete,
  under a per-key lock (the loser of a race waits, then finds the export); a failed export leaves
  nothing behind. ``nsysq cache list`` lists the exports, ``nsysq cache clear`` removes them.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nsysq.base.errors import NsysExportError, NsysNotFoundError, UsageError
from nsysq.export import cache
from nsysq.export.check import SQLITE_MAGIC, check_path

REPORT_SUFFIXES = (".nsys-rep", ".qdrep")
EXPORT_FORMAT = 1
"""Bump when the export command nsysq runs changes: every report is exported again."""
HEAD_BYTES = 1024**2
DIRS_VARIABLE = "NSYSQ_NSYS_DIRS"
NSYS_VARIABLE = "NSYSQ_NSYS"
INFO_NAME = "export.json"

_PROGRAM_FILES = os.environ.get("ProgramFiles", r"C:\Program Files")  # noqa: SIM112 - Windows' own name
INSTALL_DIRS = (
    "/opt/nvidia/nsight-systems*/target-linux-x64",
    "/opt/nvidia/nsight-systems*/bin",
    "/opt/nvidia/nsight-systems*/*/target-linux-x64",
    "/opt/nvidia/nsight-systems*/*/bin",
    "/usr/local/cuda*/bin",
    "/usr/local/cuda*/nsight-systems*/bin",
    os.path.join(_PROGRAM_FILES, "NVIDIA Corporation", "Nsight Systems*", "target-windows-x64"),
)
"""Where Nsight Systems installs nsys (Linux packages and runfiles, CUDA toolkits, Windows)."""


def is_report(path: Path) -> bool:
    """A report rather than its export: not a SQLite file (whatever its name), and named
    ``.nsys-rep``/``.qdrep`` or starting as a ZIP archive does. An unreadable file is not a report
    (check_path then says why it cannot be read)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(len(SQLITE_MAGIC))
    except OSError:
        return False
    if head.startswith(SQLITE_MAGIC):
        return False
    return path.name.endswith(REPORT_SUFFIXES) or head.startswith(b"PK\x03\x04")


def export_command(report: Path) -> str:
    """The command a user runs by hand: ``nsys export --type sqlite --output X.sqlite X.nsys-rep``."""
    return f"nsys export --type sqlite --output {_stem(report)}.sqlite {report.name}"


def _stem(report: Path) -> str:
    name = report.name
    for suffix in REPORT_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return report.stem


# -- finding nsys -------------------------------------------------------------------------------
def _program() -> str:
    return "nsys.exe" if os.name == "nt" else "nsys"


def install_dirs() -> list[str]:
    """The glob patterns of install folders searched last (``NSYSQ_NSYS_DIRS`` replaces them)."""
    raw = os.environ.get(DIRS_VARIABLE)
    if raw is None:
        return list(INSTALL_DIRS)
    return [p for p in raw.split(os.pathsep) if p.strip()]


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _given(text: str, where: str) -> Path:
    path = Path(text).expanduser()
    if path.is_dir():
        path = path / _program()
    if not _executable(path):
        raise UsageError(f"{where} {text}: no executable nsys there; give the path of the nsys program.")
    return path.resolve()


def _version_order(path: str) -> list[tuple[int, int | str]]:
    """Sort key: the numbers in a path compared as numbers (nsight-systems-2025.6.1 > 2025.10 < ...)."""
    return [(0, int(t)) if t.isdigit() else (1, t) for t in re.findall(r"\d+|\D+", path)]


def find_nsys(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """The nsys to run: ``explicit``, ``NSYSQ_NSYS``, ``nsys`` on PATH, the newest install folder."""
    if explicit is not None:
        return _given(os.fspath(explicit), "--nsys")
    env = os.environ.get(NSYS_VARIABLE, "").strip()
    if env:
        return _given(env, NSYS_VARIABLE)
    found = shutil.which(_program())
    if found:
        return Path(found).resolve()
    candidates = [
        Path(d) / _program() for pattern in install_dirs() for d in glob.glob(pattern) if os.path.isdir(d)
    ]
    usable = sorted((str(c) for c in candidates if _executable(c)), key=_version_order)
    return Path(usable[-1]).resolve() if usable else None


def _no_nsys(report: Path) -> NsysNotFoundError:
    return NsysNotFoundError(
        f"{report} is an Nsight Systems report and no nsys was found to export it; run "
        f"{export_command(report)} and give nsysq the .sqlite, or point nsysq at nsys with --nsys PATH "
        f"or {NSYS_VARIABLE}, or install Nsight Systems (nsys on PATH)."
    )


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1].rstrip(".") if lines else "no message"


@functools.lru_cache(maxsize=16)
def _version_of(exe: str, size: int, mtime_ns: int) -> str:
    try:
        done = subprocess.run(  # noqa: S603 - the nsys the user chose
            [exe, "--version"], capture_output=True, text=True, timeout=120, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NsysExportError(f"{exe} --version could not run ({exc}); check --nsys or NSYSQ_NSYS.") from None
    line = _last_line(done.stdout)
    if done.returncode != 0 or not done.stdout.strip():
        raise NsysExportError(
            f"{exe} --version failed (exit {done.returncode}): {_last_line(done.stderr + done.stdout)}; "
            "check --nsys or NSYSQ_NSYS."
        )
    return line


def nsys_version(exe: Path) -> str:
    """nsys's ``--version`` line (``NVIDIA Nsight Systems version 2025.6.1.190-...``), asked once
    per executable and process."""
    st = exe.stat()
    return _version_of(str(exe), st.st_size, st.st_mtime_ns)


def short_version(line: str) -> str:
    """``2025.6.1.190-...`` from nsys's version line (the line itself when it holds no version)."""
    match = re.search(r"version\s+(\S+)", line)
    return match.group(1) if match else line


# -- the key ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ReportIdentity:
    """What makes a report *this* report: any change gives a different key."""

    path: Path
    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int
    device: int
    head_sha256: str

    def key(self, version: str) -> str:
        parts = (EXPORT_FORMAT, version, self.path, self.size, self.mtime_ns, self.ctime_ns,
                 self.inode, self.device, self.head_sha256)  # fmt: skip
        return hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:32]


def report_identity(path: Path) -> ReportIdentity:
    path = path.resolve()
    with path.open("rb") as fh:
        st = os.fstat(fh.fileno())
        head = hashlib.sha256(fh.read(HEAD_BYTES)).hexdigest()
    return ReportIdentity(path, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev, head)


# -- exporting ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ReportExport:
    """Where an export came from: the report, the nsys that exported it, when and how long."""

    report: Path
    report_size: int
    sqlite: Path
    nsys: str
    nsys_version: str
    created: float
    export_seconds: float
    reused: bool

    def to_dict(self) -> dict[str, Any]:
        """``exported_from`` in ``nsysq info`` (docs/json.md)."""
        return {
            "report": str(self.report),
            "report_size_bytes": self.report_size,
            "nsys": self.nsys,
            "nsys_version": short_version(self.nsys_version),
            "created": self.created,
            "export_seconds": self.export_seconds,
            "reused": self.reused,
        }


def exports_dir() -> Path:
    return cache.exports_dir()


def _stored(folder: Path, reused: bool) -> ReportExport | None:
    try:
        data = json.loads((folder / INFO_NAME).read_text())
        sqlite = folder / data["sqlite"]
        if not sqlite.is_file():
            return None
        return ReportExport(
            report=Path(data["report"]), report_size=int(data["report_size"]), sqlite=sqlite,
            nsys=str(data["nsys"]), nsys_version=str(data["nsys_version"]),
            created=float(data["created"]), export_seconds=float(data["export_seconds"]), reused=reused,
        )  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError):
        return None


def export(report: Path, nsys: str | os.PathLike[str] | None = None) -> ReportExport:
    """The SQLite export of ``report``: the one already made for this report and nsys, or a new one."""
    exe = find_nsys(nsys)
    if exe is None:
        raise _no_nsys(report)
    version = nsys_version(exe)
    ident = report_identity(report)
    key = ident.key(version)
    folder = exports_dir() / key
    found = _stored(folder, reused=True)
    if found is not None:
        cache.touch(folder)
        return found
    folder.parent.mkdir(parents=True, exist_ok=True)
    with cache.holding(folder.parent / f"{key}.lock"):
        found = _stored(folder, reused=True)  # another process exported it while we waited
        if found is None:
            found = _run_export(exe, version, ident, folder)
    cache.evict(keep=key)
    return found


def _run_export(exe: Path, version: str, ident: ReportIdentity, folder: Path) -> ReportExport:
    report = ident.path
    tmp = folder.parent / f"{folder.name}.tmp-{os.getpid()}-{os.urandom(4).hex()}"
    tmp.mkdir()
    out = tmp / f"{_stem(report)}.sqlite"
    command = [str(exe), "export", "--type", "sqlite", "--output", str(out),
               "--force-overwrite", "true", "--lazy", "false", str(report)]  # fmt: skip
    _say(f"exporting {report.name} to SQLite with nsys {short_version(version)} ({exe}) ...")
    started = time.time()
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: S603
        if done.returncode != 0 or not out.is_file():
            raise NsysExportError(
                f"nsys could not export {report} (exit {done.returncode}): "
                f"{_last_line(done.stderr or done.stdout)}; check the report opens in Nsight Systems."
            )
        check_path(out)
        if report_identity(report) != ident:
            raise NsysExportError(f"{report} changed while nsys exported it; run the command again.")
        seconds = time.time() - started
        info = {"report": str(report), "report_size": ident.size, "sqlite": out.name, "nsys": str(exe),
                "nsys_version": version, "created": started, "export_seconds": round(seconds, 3)}  # fmt: skip
        (tmp / INFO_NAME).write_text(json.dumps(info))
        _commit(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _say(f"exported {report.name} in {seconds:.1f} s (into {folder})")
    stored = _stored(folder, reused=False)
    if stored is None:
        raise NsysExportError(f"the export of {report} vanished from {folder}; run the command again.")
    return stored


def _commit(tmp: Path, folder: Path) -> None:
    """Rename the complete export into place; when another process got there first, keep theirs."""
    try:
        os.replace(tmp, folder)
    except OSError:
        if _stored(folder, reused=True) is None:
            raise


def _say(message: str) -> None:
    sys.stderr.write(f"nsysq: {message}\n")
    sys.stderr.flush()


# -- the one opener -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Source:
    """What a path opens: the SQLite export to read, and the report it was exported from, if any."""

    path: Path
    exported: ReportExport | None = None


def resolve(path: str | os.PathLike[str], *, nsys: str | os.PathLike[str] | None = None) -> Source:
    """The export ``path`` names: the SQLite file itself (checked), or a report's export (made with
    nsys the first time, reused after). Raises TraceInputError (exit 2) saying why not."""
    p = Path(path).expanduser()
    if p.is_file() and p.stat().st_size > 0 and is_report(p):
        exported = export(p, nsys)
        return Source(check_path(exported.sqlite), exported)
    return Source(check_path(p))
