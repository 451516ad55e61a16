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
PER_CALL_FLOOR = 0.05
"""Smallest spread of the per-call test (log units, about 5%): when the two traces cover different
amounts of work, a kernel whose time per call is e^(threshold x 0.05) (~1.16x at the default 3)
off the typical per-call change, while the others stay within a few percent, is a finding."""
WORK_CHANGE = 1.05
"""The traces cover different amounts of work when their kernel launch counts differ by this factor."""
IDLE_CHANGE = 1.2
"""GPU idle (or exposed communication) time is out of line with kernel time when its ratio B/A and
the kernel time ratio differ by this factor either way ..."""
IDLE_MIN_SHARE = 0.05
"""... and the difference from what kernel time predicts is at least this share of the larger
side's GPU time (busy + idle, summed over devices) and at least --min-time."""
KERNEL_PASS = ("kernel_groups", "launch_sm_counts")
"""The queries of a diff side's one pass over its kernel rows: their columns decode together."""

OVERALL_TYPICAL = (0.67, 1.5)
"""The board opens with an ``overall`` finding when the typical kernel change lies outside this range
(the trace's change is then the news, not the outliers against it)..."""
OVERALL_SHARE = 0.8
"""... or when one kernel (else one category) holds this share of the kernel-time change..."""
OVERALL_MIN_CHANGE = 0.05
"""... and the kernel time changed by at least this fraction (a 1% change held by one kernel is noise)."""
