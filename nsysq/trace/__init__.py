"""``Trace``: an nsys export opened for a person at a notebook (``nsysq.open(path)``).

A Trace is the small face of nsysq: the analyses as methods that return pandas DataFrames, ad-hoc
SQL, a summary, and closing. Everything else (running packaged queries in a scope, decoded
columns, helper tables, kept answers) is the engine's: ``trace.session``, the
:class:`nsysq.session.Session` every analysis receives. The analysis methods are built from the
analyses themselves (:class:`Analysis`), so each takes exactly the analysis's parameters, including
``unit``, the time unit of the frame's ``*_ns`` columns.

Opening is one route: :class:`Trace` (whose public name is ``nsysq.open``) checks the path, picks
the reader and opens the session, NVTX selection included in the scope (``nvtx=``: the session
turns it into the launches it keeps as it opens, with :func:`nsysq.analyses.nvtx.selection_filter`).
The CLI, the report, the diff and the fleet workers all open traces through it.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, overload

from nsysq.analyses import census as census_mod
from nsysq.analyses import graphs as graphs_mod
from nsysq.analyses import lineup as lineup_mod
from nsysq.analyses import stakeout as stakeout_mod
from nsysq.analyses import timeline as timeline_mod
from nsysq.analyses.info import info as info_of
from nsysq.base.errors import UsageError
from nsysq.base.table import Table
from nsysq.export.reader import CacheMode
from nsysq.session import Session
from nsysq.session.scope import IterationSelection, NvtxSelection, OpFilter, Scope

if TYPE_CHECKING:
    import os

    import pandas as pd

    from nsysq.analyses import nvtx as nvtx_mod
    from nsysq.iterations import table as iters_mod

P = ParamSpec("P")


class Analysis(Generic[P]):
    """A Trace method made from an analysis ``fn(session, ...) -> Table``: the method takes the
    analysis's own parameters and returns its table as a DataFrame."""

    def __init__(self, fn: Callable[Concatenate[Session, P], Table]) -> None:
        self.fn = fn
        functools.update_wrapper(self, fn)
        params = list(inspect.signature(fn).parameters.values())[1:]
        self.bound_signature = inspect.Signature(params, return_annotation="pd.DataFrame")
        this = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
        self.__signature__ = self.bound_signature.replace(parameters=[this, *params])

    def __call__(self, trace: Trace, /, *args: P.args, **kwargs: P.kwargs) -> pd.DataFrame:
        """Called on the class: ``Trace.census(trace, ...)``."""
        return self.fn(trace.session, *args, **kwargs).to_pandas()

    @overload
    def __get__(self, trace: None, owner: type[Trace]) -> Analysis[P]: ...
    @overload
    def __get__(self, trace: Trace, owner: type[Trace]) -> Callable[P, pd.DataFrame]: ...
    def __get__(self, trace: Trace | None, owner: type[Trace]) -> Analysis[P] | Callable[P, pd.DataFrame]:
        if trace is None:
            return self
        session = trace.session

        @functools.wraps(self.fn)
        def method(*args: P.args, **kwargs: P.kwargs) -> pd.DataFrame:
            return self.fn(session, *args, **kwargs).to_pandas()

        method.__signature__ = self.bound_signature  # type: ignore[attr-defined]
        return method


class DeferredAnalysis(Analysis[P]):
    """An :class:`Analysis` whose function is imported on first use (``nsysq.iterations`` loads
    numpy and the GPU-time package: a trace opened for a census from its cached copy needs
    neither). Everything :class:`Analysis` sets (``fn``, the signatures, the function's name and
    docstring) appears on first access."""

    def __init__(self, module: str, name: str) -> None:  # Analysis.__init__ runs on first use
        self._where = (module, name)

    def __getattr__(self, attr: str) -> Any:
        """Called only for what is not set yet: load the function, then answer."""
        if "_where" not in self.__dict__ or "fn" in self.__dict__:
            raise AttributeError(attr)
        module, name = self.__dict__["_where"]
        Analysis.__init__(self, getattr(importlib.import_module(module), name))
        return getattr(self, attr)

    @property
    def __doc__(self) -> str | None:  # the function's, as functools.update_wrapper sets it
        if "_doc" not in self.__dict__:
            self.__getattr__("_doc")
        doc: str | None = self.__dict__["_doc"]
        return doc

    @__doc__.setter
    def __doc__(self, doc: str | None) -> None:
        self.__dict__["_doc"] = doc


def _nvtx_filter(session: Session, selection: NvtxSelection) -> OpFilter:
    """:func:`nsysq.analyses.nvtx.selection_filter`, imported when a trace is opened with an NVTX
    selection (the NVTX modules are no part of a census)."""
    from nsysq.analyses.nvtx import selection_filter

    return selection_filter(session, selection)


def _iteration_filter(session: Session, selection: IterationSelection) -> OpFilter:
    """:func:`nsysq.iterations.scope.iteration_filter`, imported when a trace is opened with an
    iteration selection."""
    from nsysq.iterations.scope import iteration_filter

    return iteration_filter(session, selection)


class Trace:
    """An nsys SQLite export, opened read-only: ``nsysq.open(path)``; close it (or use ``with``)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        scope: Scope | None = None,
        nvtx: str | NvtxSelection | None = None,
        cache: CacheMode = True,
        prefetch: str | tuple[str, ...] | None = "census",
        nsys: str | os.PathLike[str] | None = None,
        iteration: str | int | IterationSelection | None = None,
    ) -> None:
        """``scope``: the GPU work every analysis reads (:class:`nsysq.Scope`: a device, stream or
        process; default the whole trace); ``nvtx``: only the GPU work of these NVTX ranges (a range
        name, ``name[@domain][/index]``, or an :class:`nsysq.NvtxSelection` for a LIKE pattern or
        another attribution mode), within ``scope``; ``cache``: see :data:`nsysq.export.reader.CacheMode`;
        ``prefetch``: on a direct read, the packaged query (or queries) whose columns start decoding
        from the file's pages at once, while DuckDB loads (None: decode on demand); ``nsys``: the
        nsys that exports a ``.nsys-rep`` ``path`` once into the cache folder (default: NSYSQ_NSYS,
        nsys on PATH, the usual install folders; see docs/nsys-rep.md); ``iteration``: only the GPU
        work of these iterations of the loop (``N``, ``"A:B"`` inclusive, or an
        :class:`nsysq.session.scope.IterationSelection`; numbered as :meth:`iters` numbers them)."""
        scope = with_nvtx(scope, nvtx)
        if iteration is not None:
            chosen = (
                iteration
                if isinstance(iteration, IterationSelection)
                else IterationSelection.parse(iteration)
            )
            scope = dataclasses.replace(scope or Scope(), iterations=chosen)
        self.session: Session = Session(
            path, cache=cache, prefetch=prefetch, scope=scope, resolve=_nvtx_filter,
            resolve_iterations=_iteration_filter, nsys=nsys,
        )  # fmt: skip
        #: The SQLite export read: for a ``.nsys-rep``, its export in the cache folder
        #: (``session.exported`` names the report and the nsys that exported it).
        self.path: Path = self.session.path

    def __enter__(self) -> Trace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"nsysq.Trace({str(self.path)!r})"

    def _repr_html_(self) -> str:
        """Jupyter shows a short summary card (see nsysq.trace.notebook.trace_html)."""
        from nsysq.trace.notebook import trace_html

        return trace_html(self.session)

    def close(self) -> None:
        """Close the trace; after a direct read of a large trace, start building its cached copy."""
        self.session.close()

    def info(self) -> dict[str, Any]:
        """What is in the trace: nsys version, GPUs, time span, row counts, tables, warnings."""
        return info_of(self.session)

    def sql(self, text: str, params: dict[str, Any] | list[Any] | None = None) -> pd.DataFrame:
        """Run one read-only ad-hoc SELECT (or WITH ... SELECT) and return a DataFrame."""
        return self.session.sql_table(text, params).to_pandas()

    census = Analysis(census_mod.census)
    lineup = Analysis(lineup_mod.lineup)
    stakeout = Analysis(stakeout_mod.stakeout)
    graphs = Analysis(graphs_mod.graphs)
    timeline = Analysis(timeline_mod.timeline)
    if TYPE_CHECKING:
        nvtx = Analysis(nvtx_mod.nvtx)
        iters = Analysis(iters_mod.iters)
    else:
        nvtx = DeferredAnalysis("nsysq.analyses.nvtx", "nvtx")
        iters = DeferredAnalysis("nsysq.iterations.table", "iters")


def with_nvtx(scope: Scope | None, nvtx: str | NvtxSelection | None) -> Scope | None:
    """``scope`` with the NVTX selection ``nvtx`` (a range selector, or a selection) in it."""
    if nvtx is None:
        return scope
    selection = NvtxSelection(nvtx) if isinstance(nvtx, str) else nvtx
    if not isinstance(selection, NvtxSelection):
        raise UsageError(f"nvtx= takes a range name or an nsysq.NvtxSelection, not {type(nvtx).__name__}.")
    return dataclasses.replace(scope or Scope(), nvtx=selection)
