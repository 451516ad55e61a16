"""nsysq: make Nsight Systems SQLite exports answer questions.

``nsysq.open(path)`` opens a :class:`~nsysq.trace.Trace` whose ``census()``, ``lineup()``,
``stakeout()``, ``timeline()``, ``graphs()`` and ``nvtx()`` return pandas DataFrames (``scope=`` and
``nvtx=`` narrow what every analysis reads); ``nsysq.diff(a, b)`` compares two traces;
``nsysq.fleet(paths)`` answers over many. Each public name is the object itself, loaded on first
use (PEP 562), so ``import nsysq`` stays cheap and every signature is the one of the code behind it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nsysq.base.errors import NsysqError
from nsysq.base.version import __version__

__all__ = [
    "NsysqError",
    "NvtxSelection",
    "Scope",
    "Trace",
    "__version__",
    "diff",
    "fleet",
    "open",
]

if TYPE_CHECKING:
    from nsysq.diffing.compare import diff
    from nsysq.fleet_analysis import fleet
    from nsysq.session.scope import NvtxSelection, Scope
    from nsysq.trace import Trace
    from nsysq.trace import Trace as open  # noqa: A004 - nsysq.open(path) opens a Trace

#: Where each public name lives (imported when first asked for).
_PUBLIC = {
    "open": ("nsysq.trace", "Trace"),
    "Trace": ("nsysq.trace", "Trace"),
    "Scope": ("nsysq.session.scope", "Scope"),
    "NvtxSelection": ("nsysq.session.scope", "NvtxSelection"),
    "diff": ("nsysq.diffing.compare", "diff"),
    "fleet": ("nsysq.fleet_analysis", "fleet"),
}


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'nsysq' has no attribute {name!r}")
    import importlib

    module, attribute = _PUBLIC[name]
    return getattr(importlib.import_module(module), attribute)
