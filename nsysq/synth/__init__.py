"""Synthetic Nsight Systems SQLite exports with the real per-version DDL.

Public API: :func:`write_trace` / :class:`TraceSpec` (writer), :func:`fixture` /
:data:`FIXTURE_NAMES` (small test fixtures), :func:`example_pair` (the article's BS1/BS16
traces) and :func:`big` (large benchmark exports), :func:`rank_set` (one export per rank of a job).
"""

from nsysq.synth.scenarios import FIXTURE_NAMES, FIXTURE_VERSIONS, big, example_pair, fixture, rank_set
from nsysq.synth.schemas import VERSIONS
from nsysq.synth.writer import TraceSpec, write_trace

__all__ = [
    "FIXTURE_NAMES",
    "FIXTURE_VERSIONS",
    "VERSIONS",
    "TraceSpec",
    "big",
    "example_pair",
    "fixture",
    "rank_set",
    "write_trace",
]
