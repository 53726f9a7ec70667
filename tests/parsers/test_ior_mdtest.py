"""IOR and mdtest: figures read against the text IOR and mdtest printed."""

from __future__ import annotations

import pytest

from aibench import parsers
from aibench.errors import ParseError, ToolFailure
from aibench.model import Measurement
from tests.golden import FIXTURES, value_of


def test_ior_3_0_max_lines_agree_with_the_summary() -> None:
    text = (FIXTURES / "ior" / "v3.0.1_text_ssf_i2.txt").read_text()
    recs = parsers.parse("ior", text)
    assert "Max Write: 4034.68 MiB/sec" in text
    assert "Max Read:  7902.50 MiB/sec" in text
    assert value_of(recs, "bw", op="write", stat="max") == 4034.68
    assert value_of(recs, "bw", op="read", stat="max") == 7902.50
    assert value_of(recs, "bw", op="write", iteration=1) == 4035.0  # the table's rounded cell
    assert value_of(recs, "time", op="read", stat="mean") == 0.00107


def test_ior_json_summary_mean_is_the_mean_of_its_iterations() -> None:
    recs = parsers.parse("ior", (FIXTURES / "ior" / "v4.1.0dev_json_ssf_i2.json").read_text())
    per_iter = [value_of(recs, "bw", op="write", iteration=i) for i in (0, 1)]
    assert per_iter == [681.7789, 1151.4114]
    assert value_of(recs, "bw", op="write", stat="mean") == pytest.approx(
        sum(per_iter) / 2, abs=1e-3
    )


def test_ior_io500_phase_keeps_its_parameters_as_dims() -> None:
    text = (FIXTURES / "ior" / "v4.1.0dev_io500_ior_easy_write_cyfronet.txt").read_text()
    recs = parsers.parse("ior", text)
    bw = next(r for r in recs if isinstance(r, Measurement) and r.metric == "bw")
    assert bw.value == 361270.0
    assert dict(bw.dims) == {
        "access": "file-per-process",
        "api": "POSIX",
        "tasks": 640,
        "xfer_bytes": 2 * 1024**2,
        "block_bytes": 10158080000 * 1024,  # the block(KiB) cell: "9.46 TiB" is rounded
        "op": "write",
        "iteration": 0,
    }
    notes = [r.text for r in recs if not isinstance(r, Measurement)]
    assert "WARNING: Maybe caused by deadlineForStonewalling" in notes


def test_ior_without_result_rows_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="no result row"):
        parsers.parse("ior", "IOR-4.1.0+dev: MPI Coordinated Test of Parallel I/O\nBegan : x\n")


def test_ior_row_cut_short_names_its_line() -> None:
    text = (FIXTURES / "ior" / "v3.3.0_text_ssf_i3.txt").read_text().splitlines()
    cut = [line for line in text if not line.startswith("read ")]
    cut[34] = cut[34][:30]
    with pytest.raises(ParseError) as exc:
        parsers.parse("ior", "\n".join(cut))
    assert exc.value.line == 35


def test_ior_error_keeps_what_was_read() -> None:
    with pytest.raises(ToolFailure, match="open64"):
        parsers.parse("ior", (FIXTURES / "ior" / "v4.1.0dev_missing_dir.txt").read_text())


def test_mdtest_io500_phase_rate_and_seconds() -> None:
    text = (FIXTURES / "mdtest" / "v4.1.0dev_io500_mdtest_easy_write_cyfronet.txt").read_text()
    recs = parsers.parse("mdtest", text)
    assert value_of(recs, "ops_rate", op="file_create", stat="mean") == 119113.150
    assert value_of(recs, "time", op="file_create", stat="mean") == 372.432
    # the phases this run did not do are printed as zeros and not emitted
    assert not [r for r in recs if r.dims["op"] == "file_stat"]
    assert {r.dims["tasks"] for r in recs} == {640}
    assert {r.dims["nodes"] for r in recs} == {80}


def test_mdtest_1_9_rows_with_colons() -> None:
    recs = parsers.parse(
        "mdtest", (FIXTURES / "mdtest" / "v1.9.3_akrr_single_dir_i10.txt").read_text()
    )
    assert value_of(recs, "ops_rate", op="dir_stat", stat="max") == 21529.737
    assert value_of(recs, "ops_rate", op="tree_remove", stat="stdev") == 107.067


def test_mdtest_stonewall_row_has_only_a_mean() -> None:
    text = (FIXTURES / "mdtest" / "v3.3.0dev_io500_mdtest_easy_write_csiro.txt").read_text()
    recs = parsers.parse("mdtest", text)
    stone = [r for r in recs if r.dims["op"] == "file_create_stonewall"]
    assert {(r.metric, r.dims["stat"], r.value) for r in stone} == {
        ("ops_rate", "mean", 432644.046),
        ("time", "mean", 299.447),
    }


def test_mdtest_two_runs_in_one_log_are_numbered() -> None:
    one = (FIXTURES / "mdtest" / "v3.3.0_n200_i2.txt").read_text()
    recs = parsers.parse("mdtest", one + one)
    assert {r.dims["run"] for r in recs} == {1, 2}


def test_mdtest_without_summary_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="no SUMMARY table"):
        parsers.parse("mdtest", "mdtest-4.1.0+dev was launched with 2 total task(s) on 1 node(s)\n")
