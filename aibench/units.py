"""Units: one closed table, exact conversions, and nothing guessed.

Every Measurement carries a unit from this table. Conversions happen only here, with exact
rational factors (``fractions.Fraction``), so that 1 GB/s is exactly 8 Gbit/s and
1 MiB/s is exactly 1.048576 MB/s. Converting between different dimensions (GB/s to IOPS,
µs to MB) is a :class:`UnitError`, never a silent result.

Why a table and not pint: the vocabulary of cluster benchmarks is small and fixed, the
conversions must be exact (pint works in floats), ambiguous spellings must be refused
rather than interpreted (``MB/sec`` means MiB/s in some tools and MB/s in others, so the
*parser* decides, with the tool's documentation in hand), and the table costs nothing to
import.
"""

from __future__ import annotations

from fractions import Fraction


class UnitError(ValueError):
    """An unknown unit, or a conversion between different dimensions."""


_K, _M, _G, _T = 10**3, 10**6, 10**9, 10**12
_KI, _MI, _GI, _TI = 2**10, 2**20, 2**30, 2**40

# unit -> (dimension, factor to the dimension's base unit)
_TABLE: dict[str, tuple[str, Fraction]] = {
    # data rate; base: bit/s
    "bit/s": ("data_rate", Fraction(1)),
    "kbit/s": ("data_rate", Fraction(_K)),
    "Mbit/s": ("data_rate", Fraction(_M)),
    "Gbit/s": ("data_rate", Fraction(_G)),
    "Tbit/s": ("data_rate", Fraction(_T)),
    "B/s": ("data_rate", Fraction(8)),
    "kB/s": ("data_rate", Fraction(8 * _K)),
    "MB/s": ("data_rate", Fraction(8 * _M)),
    "GB/s": ("data_rate", Fraction(8 * _G)),
    "TB/s": ("data_rate", Fraction(8 * _T)),
    "KiB/s": ("data_rate", Fraction(8 * _KI)),
    "MiB/s": ("data_rate", Fraction(8 * _MI)),
    "GiB/s": ("data_rate", Fraction(8 * _GI)),
    "TiB/s": ("data_rate", Fraction(8 * _TI)),
    # data size; base: byte
    "B": ("data_size", Fraction(1)),
    "kB": ("data_size", Fraction(_K)),
    "MB": ("data_size", Fraction(_M)),
    "GB": ("data_size", Fraction(_G)),
    "TB": ("data_size", Fraction(_T)),
    "KiB": ("data_size", Fraction(_KI)),
    "MiB": ("data_size", Fraction(_MI)),
    "GiB": ("data_size", Fraction(_GI)),
    "TiB": ("data_size", Fraction(_TI)),
    # time; base: second
    "ns": ("time", Fraction(1, 10**9)),
    "us": ("time", Fraction(1, 10**6)),
    "ms": ("time", Fraction(1, 10**3)),
    "s": ("time", Fraction(1)),
    "min": ("time", Fraction(60)),
    "h": ("time", Fraction(3600)),
    # operation and message rates; each its own dimension
    "IOPS": ("io_rate", Fraction(1)),
    "kIOPS": ("io_rate", Fraction(_K)),
    "pps": ("packet_rate", Fraction(1)),
    "Mpps": ("packet_rate", Fraction(_M)),
    "samples/s": ("sample_rate", Fraction(1)),
    "tokens/s": ("token_rate", Fraction(1)),
    "queries/s": ("query_rate", Fraction(1)),
    "iter/s": ("iteration_rate", Fraction(1)),
    "ops/s": ("operation_rate", Fraction(1)),  # stress-ng bogo ops
    "Gflop/s": ("flop_rate", Fraction(_G)),
    "Tflop/s": ("flop_rate", Fraction(_T)),
    # plain numbers
    "%": ("ratio", Fraction(1, 100)),
    "ratio": ("ratio", Fraction(1)),
    "count": ("count", Fraction(1)),
    # a value on its own scale that converts to nothing (a loss, a log perplexity, FID)
    "score": ("score", Fraction(1)),
    # node facts
    "C": ("temperature", Fraction(1)),
    "W": ("power", Fraction(1)),
    "Hz": ("frequency", Fraction(1)),
    "MHz": ("frequency", Fraction(_M)),
    "GHz": ("frequency", Fraction(_G)),
    "RPM": ("rotation_rate", Fraction(1)),  # fan speed from the BMC
    "V": ("voltage", Fraction(1)),
    "mV": ("voltage", Fraction(1, 1000)),
    "A": ("current", Fraction(1)),
}

# Unambiguous alternative spellings. Ambiguous ones (MB/sec, KB/s, Kbits) are not here on
# purpose: the parser that meets them knows what its tool means.
_ALIASES: dict[str, str] = {
    "b/s": "bit/s",
    "bps": "bit/s",
    "Kbit/s": "kbit/s",
    "Kbits/sec": "kbit/s",
    "Mbits/sec": "Mbit/s",
    "Gbits/sec": "Gbit/s",
    "Gb/s": "Gbit/s",
    "Mb/s": "Mbit/s",
    "Gbps": "Gbit/s",
    "Mbps": "Mbit/s",
    "µs": "us",
    "μs": "us",
    "usec": "us",
    "nsec": "ns",
    "msec": "ms",
    "sec": "s",
    "percent": "%",
    "iops": "IOPS",
    "bytes": "B",
    "byte": "B",
}


def canonical(unit: str) -> str:
    """The table's spelling of ``unit``; raises UnitError for an unknown unit."""
    if unit in _TABLE:
        return unit
    if unit in _ALIASES:
        return _ALIASES[unit]
    raise UnitError(f"unknown unit {unit!r}; known units: {', '.join(sorted(_TABLE))}")


def dimension(unit: str) -> str:
    return _TABLE[canonical(unit)][0]


def is_known(unit: str) -> bool:
    return unit in _TABLE or unit in _ALIASES


def factor(src: str, dst: str) -> Fraction:
    """The exact factor f such that ``value_in_dst = value_in_src * f``."""
    s, d = canonical(src), canonical(dst)
    sd, sf = _TABLE[s]
    dd, df = _TABLE[d]
    if sd != dd:
        raise UnitError(f"cannot convert {src} ({sd}) to {dst} ({dd})")
    return sf / df


def convert(value: float, src: str, dst: str) -> float:
    """Convert ``value`` from ``src`` to ``dst`` exactly (one rounding, at the end)."""
    if src == dst:
        return float(value)
    return float(Fraction(value) * factor(src, dst))


def known_units() -> list[str]:
    return sorted(_TABLE)
