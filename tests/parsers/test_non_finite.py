"""A number too large for a float ("2e09715": inf) in a table is a ParseError naming its
line, never a record that cannot be made (inputs the fuzz test drew)."""

from __future__ import annotations

import pytest

from aibench import parsers
from aibench.errors import ParseError

HCCL = (
    "data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): | check_result:\n"
    "2097152           | 1000.00        | {value}              | success\n"
)
ROCM = (
    "Device: 0,  AMD RYZEN AI MAX+ 395 w/ Radeon 8060S\n"
    "Device: 1,  AMD Radeon Graphics,  GPU-XX,  c3:0.0\n\n"
    "Unidirectional copy peak bandwidth GB/s\n"
    "D/D       0           1           \n"
    "0         N/A         83.715      \n"
    "1         {value}      212.588     \n"
)


@pytest.mark.parametrize(
    ("name", "text", "line"), [("hccl-tests", HCCL, 2), ("rocm-bandwidth-test", ROCM, 7)]
)
def test_a_number_out_of_range_is_a_parse_error(name: str, text: str, line: int) -> None:
    parser = parsers.get(name)
    assert parser.parse(text.format(value="85.476"))  # the same table with a number reads
    for value in ("2e09715", "inf", "nan"):
        with pytest.raises(ParseError) as err:
            parser.parse(text.format(value=value))
        assert err.value.line == line, (value, err.value)
