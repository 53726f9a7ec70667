"""aibench.units is exact: the conversions the specs rely on, checked as fractions."""

from __future__ import annotations

from fractions import Fraction

import pytest

from aibench import units


def test_gb_per_s_is_exactly_eight_gbit() -> None:
    assert units.factor("GB/s", "Gbit/s") == 8
    assert units.convert(1.0, "GB/s", "Gbit/s") == 8.0
    assert units.convert(400.0, "Gbit/s", "GB/s") == 50.0


def test_mib_per_s_is_exactly_1_048576_mb() -> None:
    assert units.factor("MiB/s", "MB/s") == Fraction(1048576, 1000000)
    assert units.convert(1.0, "MiB/s", "MB/s") == 1.048576


def test_gib_and_kib() -> None:
    assert units.factor("GiB/s", "GB/s") == Fraction(2**30, 10**9)
    assert units.convert(1024.0, "KiB/s", "MiB/s") == 1.0
    assert units.convert(5_000_000.0, "KiB/s", "MB/s") == 5120.0


def test_time_and_rates() -> None:
    assert units.convert(1.0, "us", "ns") == 1000.0
    assert units.convert(2500.0, "ns", "µs") == 2.5
    assert units.convert(3.0, "kIOPS", "iops") == 3000.0


@pytest.mark.parametrize(
    ("a", "b"), [("GB/s", "IOPS"), ("us", "MB"), ("Gbit/s", "s"), ("IOPS", "pps")]
)
def test_cross_dimension_raises(a: str, b: str) -> None:
    with pytest.raises(units.UnitError, match="cannot convert"):
        units.convert(1.0, a, b)


@pytest.mark.parametrize("ambiguous", ["MB/sec", "KB/s", "Kbits"])
def test_ambiguous_spellings_are_refused(ambiguous: str) -> None:
    with pytest.raises(units.UnitError, match="unknown unit"):
        units.canonical(ambiguous)
