"""The ``--iteration N|A:B`` scope: the GPU work of some iterations, as a set of launches.

When a trace opens with an :class:`~nsysq.session.scope.IterationSelection` in its scope, the
session calls :func:`iteration_filter`: the iterations are found as ``nsysq iters`` finds them by
default (nsysq.iterations.source, in the scope without the selection: device, stream and pid
still apply), those numbered ``first`` to ``last`` are picked, and their launches
(queries/iters/scope_launches.sql, kept as the temp table ``nsysq_iter_scope``) become the
scope's :class:`~nsysq.session.scope.OpFilter`, exactly as an NVTX selection does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsysq.base.errors import UsageError
from nsysq.iterations.source import find_iterations
from nsysq.session.scope import IterationSelection, OpFilter

if TYPE_CHECKING:
    from nsysq.session import Session

SCOPE_TABLE = "nsysq_iter_scope"


def iteration_filter(trace: Session, selection: IterationSelection) -> OpFilter:
    """The launches of the iterations ``selection`` names; UsageError naming how many there are
    when it names one that does not exist."""
    found = find_iterations(trace)
    numbers = found.numbers
    wanted = [i for i, n in enumerate(numbers) if selection.first <= n <= selection.last]
    if not wanted or selection.first not in numbers or selection.last not in numbers:
        span = f"{numbers[0]} to {numbers[-1]}" if numbers else "none"
        asked = selection.label.split(" ", 1)[1]
        raise UsageError(
            f"--iteration {asked} is not in {trace.path.name}: it has {len(numbers)} iterations, "
            f"numbered {span} ({found.why}; nsysq iters lists them)."
        )
    trace.materialize("iters_scope_launches", SCOPE_TABLE, rebuild=True, first=wanted[0], last=wanted[-1])
    return OpFilter(selection.label, f"SELECT globalPid, correlationId FROM {SCOPE_TABLE}")
