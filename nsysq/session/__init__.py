"""``Session``: one nsys export opened read-only in DuckDB, with the canonical views in place, read
in one scope. Every analysis receives a Session and asks it for rows: packaged queries
(:meth:`Session.run`, :meth:`Session.run_arrays`), decoded columns, helper tables, answers kept from
an earlier run. It records every statement it runs (``executed``: ``--show-sql`` prints them).

A Session is the engine behind :class:`nsysq.trace.Trace` (the notebook face, opened by
``nsysq.open``): users never build one. Its scope is fixed when it opens; an NVTX selection in the
scope is turned into the launches it keeps then, by the ``resolve`` function its opener passes (the
NVTX attribution is an analysis, above this layer: :func:`nsysq.analyses.nvtx.selection_filter`);
an iteration selection (``--iteration``) the same way, by ``resolve_iterations``
(:func:`nsysq.iterations.scope.iteration_filter`).

DuckDB is imported where it is used, not at module level: opening a session starts decoding its
pages before the 0.07 s of ``import duckdb`` (see Session.__init__).

Modules: ``session`` (:class:`Session`), ``scope`` (what a scope keeps and how queries are
rewritten to it), ``sqlscript`` (the statements run, as a script for the duckdb CLI)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nsysq.session.session import Session

__all__ = ["Session"]


def __getattr__(name: str) -> Any:
    """``Session`` from :mod:`nsysq.session.session`, loaded on first use: importing the light
    modules of the package (``scope``, ``sqlscript``) never loads the engine (``nsysq --help``)."""
    if name == "Session":
        from nsysq.session.session import Session

        return Session
    raise AttributeError(f"module 'nsysq.session' has no attribute {name!r}")
