"""nccl-tests parser: footer cross-check on every real log, failures, format variants."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import pytest

from aibench.errors import ParseError, ToolFailure
from aibench.model import FrozenDims, Measurement
from aibench.parsers.nccl_tests import PARSER, _strip_prefix
from aibench.parsers.nccl_tests import parse as parse_records

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "nccl-tests"
# RCCL-tests logs are read by the same table reader: their footers are checked here too
RCCL = FIX.parent / "rccl-tests"
REAL_LOGS = sorted(
    p
    for p in (*FIX.glob("*.txt"), *RCCL.glob("*.txt"))
    if not p.name.startswith("constructed_")
    and "failure" not in p.name
    and "rows_cut" not in p.name
    and "cut_by_us" not in p.name
    and "killed" not in p.name
)
SMOKE = FIX / "v2.17.8_2node_2gpu_allreduce_sendrecv_smoke.txt"
K80 = FIX / "pre-v2.13fmt_1node_4gpu_K80_allreduce_error_col_ncclinfo_interleaved.txt"


def parse(text: str) -> list[Measurement]:
    """The measurements of a log (its Notes left out)."""
    return [r for r in parse_records(text) if isinstance(r, Measurement)]


def _read(p: Path) -> str:
    return p.read_text(encoding="utf-8")


def test_real_logs_are_all_covered() -> None:
    assert len(REAL_LOGS) == 12


@pytest.mark.parametrize("path", REAL_LOGS, ids=[p.name for p in REAL_LOGS])
def test_footer_is_the_mean_busbw_of_all_rows_and_both_placements(path: Path) -> None:
    recs = parse(_read(path))
    busbw: dict[object, list[float]] = defaultdict(list)
    placements: dict[object, set[object]] = defaultdict(set)
    for m in recs:
        if m.metric == "busbw":
            busbw[m.dims.get("op")].append(m.value)
            placements[m.dims.get("op")].add(m.dims["placement"])
    avgs = [m for m in recs if m.metric == "avg_busbw"]
    assert avgs
    assert len(avgs) == len(busbw)
    for avg in avgs:
        op = avg.dims.get("op")
        values = busbw[op]
        assert placements[op] == {"out_of_place", "in_place"}
        # printed rows carry 2 decimals: the mean of rounded values is within 0.005
        assert abs(sum(values) / len(values) - avg.value) <= 0.005 + 1e-9, (path.name, op)


def test_footer_mismatch_is_a_parse_error_naming_the_footer_line() -> None:
    lines = _read(SMOKE).splitlines()
    row = next(i for i, line in enumerate(lines) if line.lstrip().startswith("536870912"))
    del lines[row]  # a lost row: the footer no longer matches
    footer = next(i for i, line in enumerate(lines) if "Avg bus bandwidth" in line) + 1
    with pytest.raises(ParseError) as exc:
        parse("\n".join(lines))
    assert exc.value.line == footer
    assert "not the mean busbw" in exc.value.reason


def test_na_is_never_a_zero() -> None:
    recs = parse(_read(FIX / "v2.17.6_2node_2gpu_alltoall_sendrecv_pairwise.txt"))
    wrong = [m for m in recs if m.metric == "wrong"]
    assert wrong
    assert all(m.dims["placement"] == "out_of_place" for m in wrong)
    assert len([m for m in recs if m.metric == "time"]) == 40


def test_ops_come_from_the_collective_starting_lines() -> None:
    recs = parse(_read(FIX / "v2.17.8_1node_8gpu_H100_5collectives.txt"))
    ops = {m.dims["op"] for m in recs}
    assert ops == {"all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv"}
    first = recs[0]
    assert (first.metric, first.unit, first.value) == ("time", "us", 182.87)
    assert dict(first.dims) == {
        "run": 1,  # the log holds five results tables
        "op": "all_reduce",
        "size_bytes": 33554432,
        "count": 4194304,
        "dtype": "double",
        "redop": "sum",
        "root": -1,
        "placement": "out_of_place",
    }


def test_old_logs_without_op_carry_no_op_dim() -> None:
    recs = parse(_read(K80))
    assert all("op" not in m.dims for m in recs)
    assert all("root" not in m.dims for m in recs if m.metric != "avg_busbw")
    assert not [m for m in recs if m.metric == "wrong"]  # float error column: checked only


def test_tag_output_and_srun_label_prefixes_are_stripped() -> None:
    plain = parse(_read(SMOKE))
    tagged = parse(
        _read(FIX / "constructed_tag-output_prefix_v2.17.8_2node_allreduce_sendrecv_smoke.txt")
    )
    labelled = parse("".join("0: " + line + "\n" for line in _read(SMOKE).splitlines()))
    assert tagged == plain == labelled


def test_mpich_prepend_rank_tags_at_line_start_and_inside_rows() -> None:
    # MPICH/Intel MPI -prepend-rank tags each chunk read from the pipe: a row printed in
    # three writes reads "[0]      1048576        262144     float     sum      -1[0]
    # 1626.5    0.64    1.24      0[0]    2302.3    0.46    0.87      0" (NVIDIA/nccl
    # issue #1453). Rebuild the smoke log that way: same records.
    plain = parse(_read(SMOKE))
    out = []
    for line in _read(SMOKE).splitlines():
        tokens = line.split()
        if tokens and tokens[0].isdigit() and len(tokens) == 13:
            key, oop, inp = tokens[:5], tokens[5:9], tokens[9:]
            line = "   ".join(key) + "[0]    " + "    ".join(oop) + "[0]    " + "    ".join(inp)
        out.append("[0] " + line)
    assert parse("\n".join(out)) == plain
    real = (
        "[0]      1048576        262144     float     sum      -1[0]    1626.5    0.64"
        "    1.24      0[0]    2302.3    0.46    0.87      0"
    )
    assert " ".join(_strip_prefix(real).split()) == (
        "1048576 262144 float sum -1 1626.5 0.64 1.24 0 2302.3 0.46 0.87 0"
    )


def test_test_nccl_failure_keeps_the_tool_message() -> None:
    text = _read(FIX / "2025-02_v2.13-2.16fmt_1node_2gpu_RTX5090_allreduce_Test_NCCL_failure.txt")
    with pytest.raises(ToolFailure) as exc:
        parse(text)
    assert exc.value.line == 10
    assert "Test NCCL failure common.cu:392 'unhandled cuda error" in exc.value.reason
    assert exc.value.partial == []


def test_too_few_gpus_is_a_tool_failure() -> None:
    head = _read(SMOKE).split("# Using devices")[0]
    text = head + "Invalid number of GPUs: 2 requested but only 1 were found.\n"
    with pytest.raises(ToolFailure, match="Invalid number of GPUs: 2 requested"):
        parse(text)


def test_wrong_above_zero_is_a_tool_failure_with_what_was_read() -> None:
    with pytest.raises(ToolFailure) as exc:
        parse(_read(FIX / "constructed_wrong_gt0_v2.17.8_2node_allreduce.txt"))
    assert exc.value.line == 14
    assert "#wrong 12" in exc.value.reason
    partial = exc.value.partial
    # every row of the run is kept (the run goes on after a failed check), the failing
    # row's #wrong among them, and the footer
    assert all(isinstance(m, Measurement) for m in partial)
    wrong = [m for m in partial if isinstance(m, Measurement) and m.metric == "wrong" and m.value]
    assert [m.value for m in wrong] == [12.0]
    assert [m for m in partial if isinstance(m, Measurement) and m.metric == "avg_busbw"]


def test_old_error_column_above_tolerance_is_a_tool_failure() -> None:
    text = _read(K80).replace("79379    1.69    2.54  2e-07", "79379    1.69    2.54  4e-04")
    with pytest.raises(ToolFailure) as exc:
        parse(text)
    assert "in_place error 4e-04 above the tolerance 3e-05" in exc.value.reason
    assert len(exc.value.partial) == len(parse(_read(K80)))  # every row and the footer


def test_out_of_bounds_and_min_bw_failed_footers_are_tool_failures() -> None:
    text = _read(SMOKE)
    oob = text.replace("# Out of bounds values : 0 OK", "# Out of bounds values : 2 FAILED", 1)
    with pytest.raises(ToolFailure, match="Out of bounds values : 2 FAILED"):
        parse(oob)
    slow = text.replace(
        "# Avg bus bandwidth    : 43.6076 ", "# Avg bus bandwidth    : 43.6076 FAILED"
    )
    with pytest.raises(ToolFailure) as exc:
        parse(slow)
    assert "43.6076 FAILED" in exc.value.reason
    assert [
        m.value for m in exc.value.partial if isinstance(m, Measurement) and m.metric == "avg_busbw"
    ] == [43.6076, 42.9182]  # both runs of the log are kept, the failing one by its op
    assert exc.value.reason.startswith("all_reduce (table 1): ")


def test_unreadable_cells_are_parse_errors_with_the_line() -> None:
    text = _read(SMOKE)
    bad = text.replace("  1581.10   42.44", "  1581.10   4x.44", 1)
    with pytest.raises(ParseError) as exc:
        parse(bad)
    assert exc.value.line == 13
    assert "'4x.44' is not a number" in exc.value.reason
    short = text.replace("  849.70   39.49   39.49       0", "  849.70   39.49", 1)
    with pytest.raises(ParseError, match="row has 11 fields, the header has 13"):
        parse(short)


def test_no_table_is_a_parse_error_a_cut_table_a_failure_with_its_rows() -> None:
    with pytest.raises(ParseError, match="no nccl-tests results table"):
        parse("mpirun: command not found\n")
    cut = _read(FIX / "constructed_truncated_v2.17.8_1node_8gpu_cut_inside_all_gather_table.txt")
    with pytest.raises(ToolFailure) as exc:
        parse(cut)
    assert exc.value.line == 59
    assert exc.value.reason.startswith("all_gather: the results table was cut after line 59")
    partial = [m for m in exc.value.partial if isinstance(m, Measurement)]
    # the runs read whole before it, and the all_gather rows printed before the cut
    gather = [m for m in partial if m.dims.get("op") == "all_gather"]
    assert sorted({m.dims["size_bytes"] for m in gather}) == [2**i for i in range(25, 30)]
    assert not [m for m in gather if m.metric == "avg_busbw"]
    whole = parse(_read(FIX / "v2.17.8_1node_8gpu_H100_5collectives.txt"))
    assert all(m in whole for m in partial)  # the same figures as in the uncut log


def _printf(fmt: str, *args: object) -> str:
    return fmt % args


def _newest_format_log() -> str:
    """A log in the layout of nccl-tests 2.19 with -T (timestamps) and per-iteration columns.

    Built with the printf formats of writeResultHeader / writeBenchmarkLine* in
    src/util.cu (NVIDIA/nccl-tests 2.19.6); the numbers are those of the smoke log's
    first all_reduce row, per-iteration statistics invented.
    """
    head = "# %10s  %12s  %8s  %6s  %6s" + "  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s" * 2 + " %*s"
    names = ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong")
    names += ("i_min", "i_max", "i_p99", "i_cv%", "time", "algbw", "busbw", "#wrong")
    names += ("i_min", "i_max", "i_p99", "i_cv%")
    header = _printf(head.replace("%*s", "%19s"), *names, "timestamp")
    pre = _printf("%12li  %12li  %8s  %6s  %6s", 33554432, 4194304, "double", "sum", "    -1")
    per_iter = "  %7s  %7s  %7s  %7s"
    oop = _printf("  %7s  %6s  %6s  %6g", "837.47", " 40.07", " 40.07", 0)
    oop += _printf(per_iter, "830.10", "851.22", "851.22", "   0.95")
    ip = _printf("  %7s  %6s  %6s    N/A", "849.70", " 39.49", " 39.49")
    ip += _printf(per_iter, "842.00", "860.31", "860.31", "   0.80")
    row = pre + oop + ip + _printf("%21s", "2026-01-28 01:06:03")
    return "\n".join(
        [
            "# nccl-tests version 2.19.6 nccl-headers=22902 nccl-library=22902",
            "# Collective test starting: all_reduce_perf",
            "# nThread 1 nGpus 1 minBytes 33554432 maxBytes 33554432 step: 2(factor) "
            "warmup iters: 2 iters: 5 agg iters: 1 validation: 1 graph: 0 unalign: 0",
            "# Per-Iteration Report: CUDA event timing; i_* uses max over process rows ",
            "#",
            "# Using devices",
            "#  Rank  0 Group  0 Pid 2201134 on cnode3-002 device  0 [0000:1b:00] "
            "NVIDIA H100 80GB HBM3",
            "#",
            header,
            row,
            "# Out of bounds values : 0 OK",
            "# Avg bus bandwidth    : 39.78 ",
            "#",
            "# Collective test concluded: all_reduce_perf",
            "#",
            "",
        ]
    )


def test_newest_layout_with_timestamp_and_per_iteration_columns() -> None:
    recs = parse(_newest_format_log())
    got = {(m.dims.get("placement"), m.metric): m.value for m in recs}
    assert got == {
        ("out_of_place", "time"): 837.47,
        ("out_of_place", "algbw"): 40.07,
        ("out_of_place", "busbw"): 40.07,
        ("out_of_place", "wrong"): 0.0,
        ("in_place", "time"): 849.70,
        ("in_place", "algbw"): 39.49,
        ("in_place", "busbw"): 39.49,
        (None, "avg_busbw"): 39.78,
    }


def _json(path: Path) -> dict[str, object]:
    doc: dict[str, object] = json.loads(_read(path))
    return doc


JSON_AR = FIX / "constructed_json_v3_2node_all_reduce_from_smoke_log.json"


def test_json_gives_the_same_rows_as_the_text_log() -> None:
    text_recs = [
        m
        for m in parse(_read(SMOKE))
        if m.dims.get("op") == "all_reduce" and m.metric != "avg_busbw"
    ]
    json_recs = [m for m in parse(_read(JSON_AR)) if m.metric != "avg_busbw"]
    # the text log holds two runs: its records carry their table's number (run) as well
    assert {m.dims["run"] for m in text_recs} == {1}
    no_run = [
        replace(m, dims=FrozenDims({k: v for k, v in m.dims.items() if k != "run"}))
        for m in text_recs
    ]
    assert json_recs == no_run


def test_json_nan_is_skipped_and_nwrong_fails() -> None:
    doc = _json(JSON_AR)
    rows = doc["results"]
    assert isinstance(rows, list)
    rows[0]["in_place"]["alg_bw"] = "nan"
    recs = parse(json.dumps(doc))
    assert len([m for m in recs if m.metric == "algbw"]) == 9
    rows[2]["out_of_place"]["nwrong"] = 5.0
    with pytest.raises(ToolFailure, match=r"out_of_place #wrong 5\.0 at size 134217728 B") as exc:
        parse(json.dumps(doc))
    assert "the data check found 5 wrong elements (data corruption" in exc.value.reason
    assert len(exc.value.partial) == len(recs)  # every row (the failing one too), the avg


def test_json_cut_or_inconsistent_is_a_parse_error() -> None:
    text = _read(JSON_AR)
    with pytest.raises(ParseError, match="invalid or truncated JSON"):
        parse(text[: len(text) // 2])
    doc = _json(JSON_AR)
    doc["average_bus_bandwidth"] = {"bandwidth": 44.0, "okay": "unchecked"}
    with pytest.raises(ParseError, match="not the mean busbw"):
        parse(json.dumps(doc))


def test_detect() -> None:
    assert PARSER.name == "nccl-tests"
    assert PARSER.detect is not None
    for p in FIX.iterdir():
        if p.name.endswith(".expected.json") or p.name == "SOURCES.md":
            continue
        assert PARSER.detect(_read(p)), p.name
    perftest = FIX.parent / "perftest" / "ib_write_lat_client_RoCE_rdma_cm_9col.txt"
    assert not PARSER.detect(_read(perftest))


def test_log_with_its_head_cut_is_read_from_the_results_header() -> None:
    # NVIDIA/nccl-tests issue #290: the posted log starts at "# Using devices"
    cut = parse(
        _read(
            FIX / "2025-03_v2.13-2.16fmt_2node_16gpu_H100_srun_label_head_cut_at_Using_devices.txt"
        )
    )
    assert len([m for m in cut if m.metric == "busbw"]) == 22
    assert [m.value for m in cut if m.metric == "avg_busbw"] == [85.5294]
    assert not [m for m in cut if m.metric == "wrong"]  # validation 0: N/A, never 0
    whole = _read(
        FIX / "2025-03_v2.13-2.16fmt_2node_16gpu_H100_srun_label_validation0_wrong_NA.txt"
    )
    head_cut = whole[whole.index(" 0: # Using devices") :]
    assert parse(head_cut) == parse(whole)


def test_real_log_killed_in_its_second_collective_keeps_the_first() -> None:
    # the alltoall run finished; sendrecv was killed right after its table header: a
    # failure at the cut table, with the finished alltoall as what was measured
    with pytest.raises(ToolFailure) as exc:
        parse(_read(FIX / "v2.17.6_2node_2gpu_log_ends_after_table_header_run_killed.txt"))
    assert exc.value.line == 36
    assert exc.value.reason.startswith("sendrecv: the results table was cut after line 36")
    assert "its 0 complete rows are kept" in exc.value.reason
    partial = [m for m in exc.value.partial if isinstance(m, Measurement)]
    assert {m.dims.get("op") for m in partial} == {"alltoall"}
    assert [m.value for m in partial if m.metric == "avg_busbw"] == [13.3923]


# reduce, gather, scatter and hypercube: no real log of them with its footer was found
# (the corpus has none; the public ones found were cut before the footer, as the real
# scatter_perf fixture below). The logs here are CONSTRUCTED, not captured: the head is the
# real 2.17.8 smoke log's all_reduce head (binary name changed), the rows use its real
# times and sizes (double, 2 ranks) with algbw/busbw computed as each collective's
# *GetBw in nccl-tests src/*.cu (commit a0b82b2) defines them, and the row preamble as
# src/util.cu writeBenchmarkLinePreamble prints it ("%6s" of the redop name, which
# hypercube_perf passes empty; root -1 for it); the footer is nccl-tests' mean of the
# unrounded busbw of every row and both placements.
_TIMES = [(837.47, 849.70), (1581.10, 1587.93), (3014.94, 3041.94), (5940.85, 5936.76)]
_RANKS = 2


def _constructed_log(op: str) -> tuple[str, list[float]]:
    head = _read(SMOKE).splitlines(keepends=True)[:11]
    assert head[1] == "# Collective test starting: all_reduce_perf\n"
    head[1] = f"# Collective test starting: {op}_perf\n"
    rows, busbw = [], []
    for i, times in enumerate(_TIMES):
        size = 33554432 << i
        redop, root, count = {
            "reduce": ("sum", 0, size // 8),
            "gather": ("none", 0, size // 8 // _RANKS),
            "scatter": ("none", 0, size // 8 // _RANKS),
            "hypercube": ("", -1, size // 8 // _RANKS),
        }[op]
        cells = []
        for t in times:
            sec = t * 1e-6
            if op == "hypercube":  # count x typesize x (n-1); busbw = algbw
                alg = count * 8 * (_RANKS - 1) / 1e9 / sec
                bus = alg
            elif op == "reduce":  # count x typesize; busbw = algbw
                alg = size / 1e9 / sec
                bus = alg
            else:  # gather, scatter: count x n x typesize; busbw = algbw (n-1)/n
                alg = size / 1e9 / sec
                bus = alg * (_RANKS - 1) / _RANKS
            busbw.append(bus)
            cells.append(f"{t:7.2f}  {alg:6.2f}  {bus:6.2f}  {0:6d}")
        rows.append(f"{size:12d}  {count:12d}  {'double':>8}  {redop:>6}  {root:6d}  ")
        rows[-1] += "  ".join(cells) + "\n"
    foot = [
        "# Out of bounds values : 0 OK\n",
        f"# Avg bus bandwidth    : {sum(busbw) / len(busbw):g} \n",
        "#\n",
        f"# Collective test concluded: {op}_perf\n",
    ]
    return "".join(head + rows + foot), busbw


@pytest.mark.parametrize("op", ["reduce", "gather", "scatter", "hypercube"])
def test_constructed_rooted_collectives_keep_root_redop_and_their_footer(op: str) -> None:
    text, busbw = _constructed_log(op)
    recs = parse(text)
    rows = [m for m in recs if m.metric == "busbw"]
    assert len(rows) == 2 * len(_TIMES)
    assert {m.dims["op"] for m in recs} == {op}
    assert {m.dims["root"] for m in rows} == ({-1} if op == "hypercube" else {0})
    redops = {m.dims.get("redop") for m in rows}
    assert redops == ({None} if op == "hypercube" else {"sum" if op == "reduce" else "none"})
    (avg,) = [m for m in recs if m.metric == "avg_busbw"]
    assert avg.value == pytest.approx(sum(busbw) / len(busbw), abs=5e-4)
    alg = {
        (m.dims["size_bytes"], m.dims["placement"]): m.value for m in recs if m.metric == "algbw"
    }
    factor = (_RANKS - 1) / _RANKS if op in ("gather", "scatter") else 1.0
    for m in rows:
        assert m.value == pytest.approx(
            alg[m.dims["size_bytes"], m.dims["placement"]] * factor, abs=0.01
        )
    # a footer that is not the mean of the rows is caught, naming the footer line
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if "Avg bus bandwidth" in line)
    lines[at] = f"# Avg bus bandwidth    : {sum(busbw) / len(busbw) * 1.01:g} "
    with pytest.raises(ParseError, match="not the mean busbw") as exc:
        parse("\n".join(lines) + "\n")
    assert exc.value.line == at + 1


def test_a_hypercube_row_needs_its_root_after_the_empty_redop() -> None:
    """One field fewer is read as an empty redop only when an integer root follows the
    type: a reduce row that lost its root stays a ParseError."""
    text, _ = _constructed_log("reduce")
    lines = text.splitlines()
    row = next(i for i, line in enumerate(lines) if line.lstrip().startswith("67108864"))
    assert "sum       0  1581.10" in lines[row]
    lines[row] = lines[row].replace("sum       0  1581.10", "sum  1581.10")
    with pytest.raises(ParseError, match="'sum' is not an integer") as exc:
        parse("\n".join(lines) + "\n")
    assert exc.value.line == row + 1


def test_real_scatter_rows_read_with_a_footer_computed_from_them() -> None:
    """The real 16-rank scatter_perf table (its publisher cut the footer: a failure with
    its rows as it is) with a CONSTRUCTED footer appended: the mean of its printed busbw."""
    real = _read(
        FIX / "2023-07_v2.13-2.16fmt_16rank_scatter_perf_srun_label_rows_cut_by_publisher.txt"
    )
    with pytest.raises(ToolFailure, match="cut after line 33") as exc:
        parse(real)
    cut_rows = exc.value.partial
    printed = [
        float(f)
        for line in real.splitlines()
        if not line.startswith("0: #")
        for f in (line.split()[8], line.split()[12])  # after the "0:" label
    ]
    footer = f"0: # Out of bounds values : 0 OK\n0: # Avg bus bandwidth    : {sum(printed) / len(printed):g} \n"
    recs = parse(real + footer)
    assert cut_rows == [m for m in recs if m.metric != "avg_busbw"]  # the same rows, cut or not
    rows = [m for m in recs if m.metric == "busbw"]
    assert len(rows) == len(printed) == 58
    assert {(m.dims["root"], m.dims["redop"]) for m in rows} == {(0, "none")}
    alg = {
        (m.dims["size_bytes"], m.dims["placement"]): m.value for m in recs if m.metric == "algbw"
    }
    big = [m for m in rows if m.dims["size_bytes"] >= 2**20]
    assert big
    for m in big:  # 16 ranks: busbw = algbw x 15/16, to the printed 2 decimals
        assert m.value == pytest.approx(
            alg[m.dims["size_bytes"], m.dims["placement"]] * 15 / 16, abs=0.01
        )


# ---- several runs with a failing one, runs stopped by the launcher, warnings --------------

TWO_RUNS = (
    FIX / "2024-06_v2.13-2.16fmt_2node_2gpu_RTX3090_allreduce_two_runs_first_wrong_OOB_failure.txt"
)


def test_a_failing_run_does_not_hide_the_other_runs_of_the_log() -> None:
    with pytest.raises(ToolFailure) as exc:
        parse(_read(TWO_RUNS))
    partial = [m for m in exc.value.partial if isinstance(m, Measurement)]
    # both tables are read to their footer: 27 rows x 2 placements x 4 metrics each
    for run in (1, 2):
        rows = [
            m
            for m in partial
            if m.dims.get("run") == run and m.metric not in ("avg_busbw", "oob_values")
        ]
        assert len(rows) == 27 * 2 * 4
    # how many values the failed table got wrong, kept as a figure (none for the good one)
    oob = {m.dims["run"]: m.value for m in partial if m.metric == "oob_values"}
    assert oob == {1: 108}
    # each average named by its table: the log does not name the collective
    avg = {m.dims["run"]: m.value for m in partial if m.metric == "avg_busbw"}
    assert avg == {1: 3.02663, 2: 3.96373}
    # the failure is the first table's, in the tool's words
    # first the count of wrong elements (the sum of the printed #wrong of both placements)
    printed = [
        float(f)
        for line in _read(TWO_RUNS).splitlines()[10:37]
        for f in (line.split()[8], line.split()[12])
    ]
    assert len(printed) == 54
    assert exc.value.reason.startswith(
        f"table 1: the data check found {sum(printed):.0f} wrong elements (data corruption"
    )
    assert "in 27 rows; table 1: out_of_place #wrong 4 at size 8 B" in exc.value.reason
    assert "table 1: Out of bounds values : 108 FAILED" in exc.value.reason
    assert "table 2" not in exc.value.reason
    assert exc.value.line == 11


@pytest.mark.parametrize(
    "launcher_line",
    [
        "slurmstepd: error: *** STEP 1234.0 ON node-a CANCELLED AT 2026-01-01T00:00:00 "
        "DUE TO TIME LIMIT ***",
        "mpirun noticed that process rank 1 with PID 0 on node node-b exited on signal 9 (Killed).",
        "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
    ],
)
def test_a_run_stopped_by_its_launcher_is_a_tool_failure(launcher_line: str) -> None:
    text = _read(SMOKE)
    cut = text[: text.index("# Out of bounds values")] + launcher_line + "\n"
    with pytest.raises(ToolFailure) as exc:
        parse(cut)
    assert launcher_line.split(":")[0] in exc.value.reason
    assert "stopped before its end" in exc.value.reason
    assert [m for m in exc.value.partial if isinstance(m, Measurement) and m.metric == "busbw"]


def test_reducing_max_bytes_is_kept_as_a_note() -> None:
    from aibench.model import Note

    recs = parse_records(_read(FIX / "v2.17.8_1node_8gpu_H100_5collectives.txt"))
    notes = [r for r in recs if isinstance(r, Note)]
    assert len(notes) == 5  # one per collective run
    assert notes[0].text == "Reducing maxBytes to 26549638485 due to memory limitation"
    assert notes[0].line == 15


# ---- tables cut short: the complete rows are kept, beside the failure ----------------------

CUT_LOGS = [
    # (fixture, its parser, the line cut short, the rows before it)
    (
        FIX
        / "2024-06_v2.13-2.16fmt_2node_2gpu_RTX3090_allreduce_wrong_cut_by_us_inside_row_32.txt",
        "nccl-tests",
        32,
        range(10, 31),
    ),
    (
        RCCL / "rccl-tests_rocm6.2_1node_8gpu_MI300X_VF_allreduce_cut_by_us_inside_row_39.txt",
        "rccl-tests",
        39,
        range(16, 38),
    ),
]


@pytest.mark.parametrize(
    ("path", "tool", "at", "rows"), CUT_LOGS, ids=[c[0].name for c in CUT_LOGS]
)
def test_a_table_cut_inside_a_row_keeps_every_complete_row_as_printed(
    path: Path, tool: str, at: int, rows: range
) -> None:
    from aibench import parsers

    lines = _read(path).splitlines()
    with pytest.raises(ToolFailure) as exc:
        parsers.parse(tool, _read(path))
    assert exc.value.tool == tool
    assert exc.value.line == at
    assert exc.value.reason.startswith(f"the results table was cut at line {at} (a row cut")
    assert f"its {len(rows)} complete rows are kept" in exc.value.reason
    got = {
        (m.dims["size_bytes"], m.dims["placement"], m.metric): m.value
        for m in exc.value.partial
        if isinstance(m, Measurement)
    }
    want = {}
    for i in rows:  # the printed figures: time algbw busbw #wrong, out-of-place then in-place
        f = lines[i].split()
        for place, first in (("out_of_place", 5), ("in_place", 9)):
            for k, metric in enumerate(("time", "algbw", "busbw", "wrong")):
                want[int(f[0]), place, metric] = float(f[first + k])
    assert got == want
    # the row cut short is not a record, not even its out-of-place half
    assert int(lines[at - 1].split()[0]) not in {size for size, _, _ in got}


def test_a_cut_table_counts_its_wrong_elements_as_data_corruption() -> None:
    path = CUT_LOGS[0][0]
    with pytest.raises(ToolFailure) as exc:
        parse(_read(path))
    printed = [
        float(f)
        for line in _read(path).splitlines()[10:31]
        for f in (line.split()[8], line.split()[12])
    ]
    assert min(printed) == 4  # every row of this log has wrong elements
    assert (
        f"the data check found {sum(printed):.0f} wrong elements (data corruption, #wrong "
        "above 0) in 21 rows" in exc.value.reason
    )
    assert exc.value.reason.count("cut at line 32") == 1


def test_a_narrower_row_inside_a_table_is_read_as_before() -> None:
    # a row narrower than those before it is held back only while nothing follows it: a
    # row or the footer after it makes it an ordinary row, read (or refused) as ever
    text = _read(SMOKE)
    with pytest.raises(ParseError, match="row has 11 fields, the header has 13"):
        parse(text.replace("  849.70   39.49   39.49       0", "  849.70   39.49", 1))
    # 9 fields read as an in-place-only row: the footer's mean then disagrees
    with pytest.raises(ParseError, match="is not the mean busbw"):
        parse(text.replace("  849.70   39.49   39.49       0", "", 1))


def test_a_log_that_ends_after_a_run_started_and_before_its_table_is_a_failure() -> None:
    # the real 5-collective log cut (here, in the test) right after the second run's
    # "# nThread" line: the first run is kept, the run that printed nothing is the failure
    lines = _read(FIX / "v2.17.8_1node_8gpu_H100_5collectives.txt").splitlines()
    second = [i for i, line in enumerate(lines) if line.startswith("# nThread")][1]
    with pytest.raises(ToolFailure) as exc:
        parse("\n".join(lines[: second + 1]) + "\n")
    assert exc.value.line == second + 1
    assert exc.value.reason.startswith(f"the run started at line {second + 1} printed no")
    kept = [m for m in exc.value.partial if isinstance(m, Measurement)]
    assert {m.dims.get("op") for m in kept} == {"all_reduce"}
    assert [m.metric for m in kept][-1] == "avg_busbw"
