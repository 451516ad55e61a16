"""The tuning constants of ``nsysq iters`` (light: the CLI reads them for its defaults)."""

from __future__ import annotations

THRESHOLD = 3.0
"""An iteration is out of line when its robust score reaches this many spreads."""
FLOOR = 0.05
"""Smallest spread (natural-log units, about 5%): steady iterations within ~1.16x of typical
(at the default threshold) are never outliers, however regular the others are."""
