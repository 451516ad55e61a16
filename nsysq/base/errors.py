"""The exceptions nsysq raises. The CLI turns each into one sentence and an exit code."""

from __future__ import annotations


class NsysqError(Exception):
    """Base class: every error nsysq raises on purpose. The message is one sentence naming the fix."""

    exit_code: int = 1


class TraceInputError(NsysqError):
    """The path given is not a readable nsys SQLite export (missing, directory, empty, wrong format)."""

    exit_code = 2


class NsysNotFoundError(TraceInputError):
    """A ``.nsys-rep`` was given and no nsys was found to export it (nsysq.export.nsys_rep)."""


class NsysExportError(TraceInputError):
    """nsys could not export a ``.nsys-rep`` (its last line of stderr says why)."""


class NotNsysExportError(TraceInputError):
    """A valid SQLite file that nsys did not write (no StringIds table)."""


class CorruptTraceError(TraceInputError):
    """A SQLite file that cannot be read: truncated or damaged."""


class DamagedTraceError(CorruptTraceError):
    """A SQLite file whose pages contradict the file format in a table nsysq reads."""

    def __init__(self, path: object, table: str | None, page: int | None, detail: str) -> None:
        where = f" in {table}" if table else ""
        where += f" (page {page})" if page is not None else ""
        super().__init__(
            f"{path} is damaged{where}: {detail}; check it with "
            f"sqlite3 {path} 'PRAGMA integrity_check' and export the trace again."
        )
        self.table = table
        self.page = page
        self.detail = detail


class ExtensionUnavailableError(NsysqError):
    """DuckDB's sqlite extension could not be loaded from the installed package."""

    exit_code = 4


class NoDataError(NsysqError):
    """The trace holds no events of the kind the command needs (for example no CUDA kernels)."""

    exit_code = 5


class UsageError(NsysqError):
    """A bad argument: unknown kernel, bad window, unreadable rules file, bad option value."""

    exit_code = 2


class RulesError(UsageError):
    """A rules file (lineup or danger rules) that cannot be parsed or validated."""


class QueryError(NsysqError):
    """A query failed against the trace; the message names the query and the cause."""

    exit_code = 1


class CacheError(NsysqError):
    """The cache directory cannot be used."""

    exit_code = 1


class WorkerLostError(NsysqError):
    """A worker process of the local fleet engine died twice on the same trace."""

    exit_code = 1
