"""perftest parser: units, header facts, peak handling, latency layouts, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from aibench import units
from aibench.errors import ParseError, ToolFailure
from aibench.model import Measurement
from aibench.parsers.perftest import PARSER
from aibench.parsers.perftest import parse as parse_records


def parse(text: str) -> list[Measurement]:
    """The measurements of an output (its Notes left out)."""
    return [r for r in parse_records(text) if isinstance(r, Measurement)]


FIX = Path(__file__).resolve().parent.parent / "fixtures" / "perftest"


def _read(name: str) -> str:
    return (FIX / name).read_text(encoding="utf-8")


def _printf(fmt: str, *args: object) -> str:
    return fmt % args


def _by_metric(recs: list[Measurement]) -> dict[str, Measurement]:
    return {m.metric: m for m in recs}


BW_FILES = sorted(
    p.name
    for p in FIX.glob("ib_*_bw_*.txt")
    if "error" not in p.name and "banner_cut" not in p.name
)


@pytest.mark.parametrize("name", BW_FILES)
def test_bandwidth_unit_matches_the_message_rate(name: str) -> None:
    """bw_avg in its unit, converted to B/s, is MsgRate x size: the unit is right."""
    recs = parse(_read(name))
    rows: dict[object, dict[str, Measurement]] = {}
    for m in recs:
        rows.setdefault(m.dims["size_bytes"], {})[m.metric] = m
    assert rows
    for size, row in rows.items():
        avg, rate = row["bw_avg"], row["msg_rate"]
        assert rate.unit == "Mpps"
        bytes_per_s = units.convert(avg.value, avg.unit, "B/s")
        expected = units.convert(rate.value, "Mpps", "pps") * float(str(size))
        # values are printed with 2 decimals: 0.32 Gbit/s may be 0.316 (ionic 4 B row)
        half_digit = units.convert(0.005, avg.unit, "B/s")
        assert bytes_per_s == pytest.approx(expected, rel=0.01, abs=2e4 + half_digit), (
            name,
            size,
        )


def test_mb_sec_means_mib_and_gb_sec_means_gbit() -> None:
    mb = _by_metric(
        parse(_read("ib_read_bw_client_IB_LID_older_perftest_MBsec_outstand_reads_tabs.txt"))
    )
    assert (mb["bw_avg"].value, mb["bw_avg"].unit) == (11708.31, "MiB/s")
    gb = _by_metric(parse(_read("ib_send_bw_client_IB_LID_NDR_report_gbits_single_size.txt")))
    assert (gb["bw_peak"].value, gb["bw_peak"].unit) == (357.12, "Gbit/s")
    mib = parse(
        _read("ib_send_bw_client_MiBsec_header_newest_perftest_cpu_freq_warning_in_table.txt")
    )
    assert _by_metric(mib)["bw_avg"].unit == "MiB/s"


def test_header_facts_are_dims_of_every_record() -> None:
    recs = parse(_read("ib_write_bw_server_UC_q2_report_gbits_a_RoCE_gid3_spaces_not_tabs.txt"))
    assert [m.metric for m in recs] == ["iterations", "bw_peak", "bw_avg", "msg_rate"]
    for m in recs:
        assert dict(m.dims) == {
            "test": "write",
            "size_bytes": 8388608,
            "side": "server",
            "device": "mlx5_1",
            "link_layer": "Ethernet",
            "transport": "UC",
            "qps": 2,
            "mtu": 4096,
            "gid_index": 3,
            "bidirectional": False,
        }


def test_side_is_told_from_the_banner() -> None:
    client = parse(
        _read("ib_send_lat_client_IB_9col_newest_perftest_cpu_freq_warnings_in_table.txt")
    )
    server = parse(_read("ib_send_lat_server_soft-RoCE_rxe_9col.txt"))
    assert {m.dims["side"] for m in client} == {"client"}
    assert {m.dims["side"] for m in server} == {"server"}
    assert "gid_index" not in client[0].dims  # native IB prints no GID index


def test_peak_not_measured_is_not_emitted() -> None:
    warned = parse(
        _read("ib_send_bw_server_a_R_rdma_cm_report_gbits_BWpeak_not_measured_warning.txt")
    )
    assert not [m for m in warned if m.metric == "bw_peak"]
    assert len([m for m in warned if m.metric == "bw_avg"]) == 23
    duration = parse(_read("ib_write_bw_client_RoCE_rdma_cm_duration_D300_peak0_MBsec.txt"))
    assert [m.metric for m in duration] == ["iterations", "bw_avg", "msg_rate"]
    assert _by_metric(duration)["iterations"].value == 24777100


def test_latency_layouts() -> None:
    nine = _by_metric(parse(_read("ib_write_lat_client_RoCE_rdma_cm_9col.txt")))
    assert {k: (m.value, m.unit) for k, m in nine.items()} == {
        "iterations": (1000, "count"),
        "lat_min": (0.76, "us"),
        "lat_max": (0.95, "us"),
        "lat_typical": (0.78, "us"),
        "lat_avg": (0.78, "us"),
        "lat_stdev": (0.01, "us"),
        "lat_p99": (0.83, "us"),
        "lat_p99_9": (0.95, "us"),
    }
    assert "bidirectional" not in nine["lat_avg"].dims
    dur = parse(_read("ib_read_lat_client_RoCE_duration_D300_tavg_tps.txt"))
    assert [(m.metric, m.value) for m in dur] == [("iterations", 62078352), ("lat_avg", 2.42)]


def test_latency_table_before_2016_has_three_columns() -> None:
    """RESULT_FMT_LAT / REPORT_FMT_LAT of perftest before commit 1ccb3fd (2016).

    Header and row follow those printf formats; banner and numbers from the 9-column
    ib_write_lat fixture.
    """
    text = _read("ib_write_lat_client_RoCE_rdma_cm_9col.txt").splitlines()
    head = next(i for i, line in enumerate(text) if "#bytes" in line)
    old = [
        *text[:head],
        " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]",
        _printf(" %-7d %d          %-7.2f        %-7.2f      %-7.2f", 2, 1000, 0.76, 0.95, 0.78),
        "-" * 87,
    ]
    recs = _by_metric(parse("\n".join(old) + "\n"))
    assert sorted(recs) == ["iterations", "lat_max", "lat_min", "lat_typical"]
    assert recs["lat_typical"].value == 0.78


def test_concatenated_runs_keep_their_own_facts() -> None:
    lat = _read("ib_write_lat_client_RoCE_rdma_cm_9col.txt")
    bw = _read("ib_send_bw_client_IB_LID_NDR_report_gbits_single_size.txt")
    recs = parse(lat + bw)
    assert {(m.dims["test"], m.dims["mtu"]) for m in recs} == {("write", 1024), ("send", 4096)}
    assert [m.metric for m in recs][-4:] == ["iterations", "bw_peak", "bw_avg", "msg_rate"]
    assert "gid_index" not in recs[-1].dims


def test_bidirectional_banner() -> None:
    text = _read("ib_read_bw_client_IB_LID_older_perftest_MBsec_outstand_reads_tabs.txt")
    text = text.replace("RDMA_Read BW Test", "RDMA_Read Bidirectional BW Test")
    recs = parse(text)
    assert all(m.dims["bidirectional"] is True for m in recs)
    assert all("side" not in m.dims for m in recs)  # a duplex client shows no client sign
    waiting = "\n* Waiting for client to connect... *\n" + text.replace("TX depth", "RX depth")
    assert {m.dims["side"] for m in parse(waiting)} == {"server"}


def test_errors_are_tool_failures_with_the_tool_message() -> None:
    with pytest.raises(ToolFailure) as exc:
        parse(_read("ib_write_bw_client_error_couldnt_connect_pre-PR228_joined_lines.txt"))
    assert exc.value.line == 1
    assert exc.value.reason.startswith("Couldn't connect to 192.168.125.211:18515 | Unable to open")
    with pytest.raises(ToolFailure, match="ethernet_read_keys: Couldn't read remote address"):
        parse(_read("ib_write_bw_R_rdma_cm_server_error_read_keys.txt"))


def test_error_after_rows_keeps_them_in_partial() -> None:
    name = "ib_send_bw_server_a_R_rdma_cm_report_gbits_BWpeak_not_measured_warning.txt"
    lines = _read(name).splitlines()
    cut = next(i for i, line in enumerate(lines) if line.startswith(" 4096 "))
    lines = [*lines[:cut], " Completion with error at server", " Failed status 12: wr_id 0"]
    with pytest.raises(ToolFailure) as exc:
        parse("\n".join(lines))
    assert exc.value.line == cut + 1
    assert exc.value.reason == "Completion with error at server | Failed status 12: wr_id 0"
    assert len([r for r in exc.value.partial if isinstance(r, Measurement)]) == 11 * 3


def test_unit_label_that_does_not_fit_is_a_parse_error() -> None:
    name = "ib_write_bw_server_older_perftest_no_PCIe_relax_line_MBsec_duration_mode_peak0"
    with pytest.raises(ParseError) as exc:
        parse(_read(name + "_tabs_banner_cut.txt"))
    assert exc.value.line == 20
    assert "the numbers fit Gbit/s" in exc.value.reason


def test_unreadable_output_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="no perftest result table"):
        parse(" WARNING: BW peak won't be measured in this run.\n")
    text = _read("ib_send_bw_client_IB_LID_NDR_report_gbits_single_size.txt")
    with pytest.raises(ParseError, match=r"'353\.5x' is not a number"):
        parse(text.replace("353.53", "353.5x"))
    with pytest.raises(ParseError, match="row has 4 fields"):
        parse(text.replace("0.674308", ""))


def test_detect() -> None:
    assert PARSER.name == "perftest"
    assert PARSER.detect is not None
    for p in FIX.glob("*.txt"):
        if "error" in p.name:
            continue
        assert PARSER.detect(p.read_text()), p.name
    nccl = FIX.parent / "nccl-tests" / "v2.17.8_2node_2gpu_allreduce_sendrecv_smoke.txt"
    assert not PARSER.detect(nccl.read_text())


def test_real_bidirectional_server_with_connected_and_completed_lines() -> None:
    recs = parse(
        _read(
            "ib_write_bw_server_bidirectional_a_q4_report_gbits_ionic_Connected_Completed_lines.txt"
        )
    )
    assert {m.dims["side"] for m in recs} == {"server"}  # "Waiting for client" banner
    assert {m.dims["bidirectional"] for m in recs} == {True}
    assert {(m.dims["qps"], m.dims["gid_index"], m.dims["device"]) for m in recs} == {
        (4, 1, "ionic_1")
    }
    avg = [m for m in recs if m.metric == "bw_avg"]
    assert len(avg) == 23  # 2 B .. 8 MiB; "Completed: ..." / "Total run time" are not rows
    assert (avg[-1].dims["size_bytes"], avg[-1].value, avg[-1].unit) == (8388608, 777.79, "Gbit/s")


def test_post_list_banner_and_duration_peak() -> None:
    recs = parse(_read("ib_write_bw_Post_List_BW_Test_D60_8B_report_gbits_RoCE_ib0.txt"))
    assert [(m.metric, m.value) for m in recs] == [
        ("iterations", 224958464),
        ("bw_avg", 0.48),
        ("msg_rate", 7.498617),
    ]
    assert recs[0].dims["test"] == "write"
    assert recs[0].dims["gid_index"] == 2


def test_older_gid_index_spelling_is_read() -> None:
    # perftest of 2016 prints "Gid index" (SoftRoCE/rxe-dev issue #47, ibv_read_bw banner)
    text = _read("ib_write_lat_client_RoCE_rdma_cm_9col.txt")
    old = text.replace(" GID index       : 3", " Gid index       : 0")
    assert old != text
    assert {m.dims["gid_index"] for m in parse(old)} == {0}


@pytest.mark.parametrize("bad", ["inf", "nan", "1e999"])
def test_non_finite_cell_is_a_parse_error(bad: str) -> None:
    text = _read("ib_write_lat_client_RoCE_rdma_cm_9col.txt")
    row = next(line for line in text.splitlines() if line.strip().startswith("2 "))
    damaged = text.replace(row, row.replace("0.95", bad, 1))
    with pytest.raises(ParseError, match=r"not a (finite )?number"):
        parse(damaged)


def test_no_rdma_device_names_the_cause() -> None:
    # captured with perftest 4.5+0.17-1 on Debian 12 without any RDMA device
    name = "ib_write_bw_error_no_RDMA_device_Did_not_detect_devices_captured_perftest4.5.txt"
    with pytest.raises(ToolFailure) as exc:
        parse(_read(name))
    assert exc.value.line == 1
    assert exc.value.reason.startswith("Did not detect devices | ")
    assert "Unable to find the Infiniband/RoCE device" in exc.value.reason
    assert exc.value.partial == []
