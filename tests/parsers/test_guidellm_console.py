"""GuideLLM 0.4+ console tables: every latency and rate printed is read, row by row."""

from __future__ import annotations

import pytest

from aibench.errors import ParseError
from aibench.parsers import guidellm
from tests.golden import FIXTURES

G = FIXTURES / "guidellm"
ONE = "v0.4+_console_constant_llama-3.1-8b_one-benchmark.txt"
TWO = "v0.4+_console_constant_qwen3-32b_two-benchmarks_indented.txt"
SWEEP = "v0.2.x_console_sweep_granite-8b_latency-ms-holds-seconds.txt"


def _rows(text: str, title: str) -> list[list[float]]:
    """The number cells of each benchmark row of a titled table, read with split alone."""
    block = text.split(title, 1)[1].split("|===", 2)[2]
    out = []
    for line in block.splitlines():
        s = line.strip()
        if s.startswith("|===") or not s:
            break
        if s.startswith("| constant"):
            out.append([float(c) for c in s.strip("|").split("|")[1:]])
    return out


@pytest.mark.parametrize("name", [ONE, TWO])
def test_latency_and_throughput_cells_as_printed(name: str) -> None:
    text = (G / name).read_text()
    recs = guidellm.parse(text)
    got = {(r.metric, r.dims["benchmark"], r.dims.get("stat")): r.value for r in recs}
    lat = _rows(text, "Request Latency Statistics")
    thr = _rows(text, "Server Throughput Statistics")
    assert lat
    assert len(lat) == len(thr)
    for i, cells in enumerate(lat):
        for j, metric in enumerate(("e2e_latency", "ttft", "itl", "tpot")):
            assert got[(metric, i, "p50")] == cells[2 * j]
            assert got[(metric, i, "p95")] == cells[2 * j + 1]
        # Requests Per Sec (Mdn, Mean), Concurrency (Mdn, Mean), Input, Output Tokens ...
        assert got[("request_throughput", i, None)] == thr[i][1]
        assert got[("output_token_throughput", i, None)] == thr[i][7]
    units = {r.metric: r.unit for r in recs}
    assert (units["e2e_latency"], units["ttft"]) == ("s", "ms")


def test_a_titled_table_cut_in_its_header_names_the_form() -> None:
    text = (G / ONE).read_text()
    cut = text[: text.index("| Strategy  | Sec")]
    with pytest.raises(ParseError, match="three header lines"):
        guidellm.parse(cut)


@pytest.mark.parametrize("cell", ["nan", "inf"])
@pytest.mark.parametrize(
    ("name", "row", "printed"),
    [
        (ONE, "| constant  | 0.4     |", "0.4"),  # titled table: request latency, median
        (SWEEP, "constant@0.69|   20:12:23| 20:13:09|         46.5|    30|", "30"),  # requests
    ],
)
def test_a_cell_that_is_not_a_finite_number_is_a_parse_error(
    name: str, row: str, printed: str, cell: str
) -> None:
    text = (G / name).read_text()
    assert row in text
    bad = text.replace(row, row.replace(printed, cell.rjust(len(printed)), 1), 1)
    with pytest.raises(ParseError, match=f"not a finite number: '{cell}'") as err:
        guidellm.parse(bad)
    assert err.value.line == text[: text.index(row)].count("\n") + 1
