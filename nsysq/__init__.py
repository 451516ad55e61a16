"""nsysq: make Nsight Systems SQLite exports answer questions.

``nsysq.open(path)`` returns a :class:`~nsysq.trace.Trace` whose ``census()``, ``lineup()``,
``stakeout()`` and ``timeline()`` return pandas DataFrames; ``nsysq.diff(a, b)`` compares two
traces; ``nsysq.fleet(paths)`` answers over many. Heavy modules (duckdb, pandas) load on first
use, so ``import nsysq`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nsysq.base.errors import NsysqError

__version__ = "0.1.0"
__all__ = ["NsysqError", "Scope", "Trace", "__version__", "diff", "fleet", "open"]

if TYPE_CHECKING:
    from nsysq.session.scope import Scope
    from nsysq.trace import Trace


def open(path: Any, **kwargs: Any) -> Trace:  # noqa: A001 - the public name is nsysq.open
    """Open an nsys SQLite export read-only; raises an NsysqError subclass naming the fix."""
    from nsysq.trace import Trace

    return Trace(path, **kwargs)


def diff(a: Any, b: Any, **kwargs: Any) -> Any:
    """Compare two traces (paths or open Traces); see :func:`nsysq.diffing.diff`."""
    from nsysq.diffing import diff as _diff

    return _diff(a, b, **kwargs)


def fleet(paths: Any, **kwargs: Any) -> Any:
    """Answer one question over many traces (paths, globs, directories); see
    :func:`nsysq.fleet_analysis.fleet`. Returns a FleetResult whose ``traces``, ``census``,
    ``lineup`` and ``stragglers`` are DataFrames."""
    from nsysq.fleet_analysis import fleet as _fleet

    return _fleet(paths, **kwargs)


def __getattr__(name: str) -> Any:
    if name == "Trace":
        from nsysq.trace import Trace

        return Trace
    if name == "Scope":  # nsysq.open(path, scope=nsysq.Scope(device=0))
        from nsysq.session.scope import Scope

        return Scope
    raise AttributeError(f"module 'nsysq' has no attribute {name!r}")
