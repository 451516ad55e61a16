"""nsysq.base.units: the one set of time/size formatters and unit factors. Exact strings at the edges
(zero, negative, missing, unit and format boundaries), and, over a sweep of magnitudes, that the
text read back is the value to three significant digits (an independent parse, not the formatter)."""

from __future__ import annotations

import math
import re

import pytest

from nsysq.base import units
from nsysq.base.errors import UsageError


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (None, "-"),
        (math.nan, "-"),
        (0, "0 ns"),
        (-0.0, "0 ns"),
        (870, "870 ns"),
        (999, "999 ns"),
        (999.6, "1.00 us"),  # rounds up into the next unit, not "1000 ns"
        (1_000, "1.00 us"),
        (45_200, "45.2 us"),
        (999_999, "1.00 ms"),  # was "1e+03 us"
        (6_170_000, "6.17 ms"),
        (9_996_000, "10 ms"),  # three digits, not "10.00 ms"
        (88_000_000, "88 ms"),
        (999_999_999, "1.00 s"),  # was "1e+03 ms"
        (1_250_000_000, "1.25 s"),
        (1_234_000_000_000, "1,234 s"),
        (-2_500_000, "-2.50 ms"),
        (-870, "-870 ns"),
    ],
)
def test_fmt_time(ns: float | None, text: str) -> None:
    assert units.fmt_time(ns) == text


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (None, "-"),
        (math.nan, "-"),
        (0, "0 B"),
        (512, "512 B"),
        (999, "999 B"),
        (1_000, "1 kB"),
        (8_880_000, "8.88 MB"),
        (81_000_000, "81 MB"),
        (163_000_000, "163 MB"),
        (999_999, "1 MB"),  # was "1e+03 kB"
        (2.5e9, "2.5 GB"),
        (1.5e15, "1,500 TB"),  # was "1.5e+03 TB"
        (-2_000, "-2 kB"),
    ],
)
def test_fmt_bytes(n: float | None, text: str) -> None:
    assert units.fmt_bytes(n) == text


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (None, "ms", "–"),
        (math.nan, "ms", "–"),
        (0, "ms", "0.00 ms"),
        (-0.0, "ms", "0.00 ms"),
        (877.38, "ms", "877 ms"),
        (6.17, "ms", "6.17 ms"),
        (0.85, "us", "0.85 µs"),
        (0.0085, "ms", "0.0085 ms"),
        (0.01, "ns", "0.01 ns"),
        (12.34, "s", "12.3 s"),
        (9.999, "ms", "10.0 ms"),  # was "10.00 ms"
        (99.95, "ms", "100 ms"),  # was "100.0 ms"
        (1_234.4, "ms", "1,234 ms"),
        (-5.5, "s", "-5.50 s"),
    ],
)
def test_fmt_in_unit(value: float | None, unit: str, text: str) -> None:
    assert units.fmt_in_unit(value, unit) == text


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0 B"),
        (812, "812 B"),
        (1_023, "1,023 B"),
        (1_024, "1.0 KB"),
        (2_560, "2.5 KB"),
        (1_048_575, "1.0 MB"),  # was "1,024.0 KB"
        (10 * 1024**3, "10.0 GB"),
        (1_500 * 1024**3, "1,500.0 GB"),  # GB is the largest unit
    ],
)
def test_fmt_file_size(n: int, text: str) -> None:
    assert units.fmt_file_size(n) == text


def test_fmt_ms() -> None:
    assert units.fmt_ms(1_298_338_000) == "1,298.3 ms"
    assert units.fmt_ms(0) == "0.0 ms"
    assert units.fmt_ms(None) == units.fmt_ms(math.nan) == "–"


@pytest.mark.parametrize(
    ("max_ns", "unit"),
    [(0, "ns"), (999, "ns"), (1_000, "us"), (999_999, "us"), (1e6, "ms"), (9.99e9, "ms"), (1e10, "s")],
)
def test_axis_unit(max_ns: float, unit: str) -> None:
    assert units.axis_unit(max_ns) == unit


def test_conversions() -> None:
    assert units.convert(1.5, "ms", "us") == 1_500.0
    assert units.convert(2_000, "ns", "us") == 2.0
    assert units.time_factor("ns", "s") == 1e-9
    assert units.ms_to_ns(100.2) == 100_200_000
    assert units.ms_to_ns(0.0000004) == 0
    assert units.check_unit("ms") == "ms"
    with pytest.raises(UsageError, match="use one of ns, us, ms, s"):
        units.check_unit("min")


def test_is_missing() -> None:
    assert units.is_missing(None) and units.is_missing(math.nan) and units.is_missing(float("nan"))
    assert not any(units.is_missing(v) for v in (0, 0.0, "nan", "", "x", math.inf))


_TIME_SCALE = {"ns": 1, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
_SIZE_SCALE = {"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}
_SCALE = _TIME_SCALE | _SIZE_SCALE


def _read_back(text: str) -> float:
    """The quantity ``text`` says, parsed by hand: '1,234 ms' -> 1.234e9."""
    number, unit = text.rsplit(" ", 1)
    assert re.fullmatch(r"-?[\d,]+(\.\d+)?", number), text  # never an exponent, never 'nan'
    return float(number.replace(",", "")) * _SCALE[unit]


@pytest.mark.parametrize("sign", [1, -1])
def test_three_significant_digits_over_every_magnitude(sign: int) -> None:
    for exponent in range(0, 150):
        value = sign * 10 ** (exponent / 10)  # 1 ... 10^15, ten steps a decade
        for text in (units.fmt_time(value), units.fmt_bytes(value)):
            assert _read_back(text) == pytest.approx(value, rel=5e-3, abs=0.5), text
        for unit in ("ns", "us", "ms", "s"):
            shown = value / _SCALE[unit]
            if abs(shown) < 0.01:
                continue
            read = _read_back(units.fmt_in_unit(shown, unit)) / _SCALE[unit]
            if abs(shown) >= 1:  # three significant digits
                assert read == pytest.approx(shown, rel=5e-3), (shown, unit)
            else:  # two decimals, as "0.85 µs"
                assert abs(read - shown) <= 0.005 + 1e-12, (shown, unit)
