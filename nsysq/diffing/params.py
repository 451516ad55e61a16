"""The tuning constants of the diff: the outlier test's noise floor, cut-off and smallest spread,
and the copy-count change that makes a finding (the method is in ``docs/diff.md``)."""

from __future__ import annotations

DEFAULT_MIN_TIME_MS = 0.5
"""Rows whose larger side is below this (ms) are never outliers and do not set the typical change."""
DEFAULT_THRESHOLD = 3.0
"""A row is an outlier when its robust score reaches this many spreads from the typical change."""
MAD_FLOOR = 0.25
"""Smallest spread (natural-log units): changes within ~1.28x of typical are never outliers."""
COPY_CHANGE = 1.2
"""A memcpy kind / memset whose operation count changes by this factor (either way) is a finding."""
