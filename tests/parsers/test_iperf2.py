"""iperf2 parser: final lines only, SUM, UDP server reports, CSV, enhanced, errors."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from aibench.errors import ParseError, ToolFailure
from aibench.model import Measurement
from aibench.parsers import iperf2
from tests.golden import pick
from tests.ports import free_port

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "iperf2"


def parse(name: str) -> list[Measurement]:
    return iperf2.parse((FIX / name).read_text())


def test_classic_client_reads_the_final_line_not_the_intervals() -> None:
    recs = parse("v2.0_text_tcp_client_i1.txt")
    (thr,) = pick(recs, "throughput")
    assert thr.value == 222e6
    assert thr.unit == "bit/s"
    assert dict(thr.dims) == {"protocol": "tcp", "side": "sender", "streams": 1}


def test_sum_line_and_streams() -> None:
    recs = parse("v2.1.8_lo_client_tcp_P2_i.txt")
    assert pick(recs, "throughput")[0].value == 2.35e9
    streams = {r.dims["stream"]: r.value for r in pick(recs, "stream_throughput")}
    assert streams == {1: 1.03e9, 2: 1.22e9}


def test_udp_server_multi_stream() -> None:
    recs = parse("v2.0_text_udp_server_P3.txt")
    assert pick(recs, "throughput")[0].value == 3596e3
    assert pick(recs, "packets")[0].value == 1532
    assert pick(recs, "jitter")[0].value == 1.556
    assert pick(recs, "jitter")[0].unit == "ms"
    assert pick(recs, "lost_packets")[0].value == 0
    assert all(r.dims["side"] == "receiver" for r in recs)


def test_udp_client_reads_its_server_report() -> None:
    recs = parse("v2.1.8_lo_client_udp.txt")
    assert pick(recs, "packets", side="sender")[0].value == 8921
    assert pick(recs, "lost_packets", side="receiver")[0].value == 882
    assert pick(recs, "lost_percent", side="receiver")[0].value == pytest.approx(100 * 882 / 8920)
    assert not pick(recs, "jitter", side="sender")


def test_enhanced_tcp_retransmits() -> None:
    recs = parse("v2.1.8_lo_client_tcp_e.txt")
    assert pick(recs, "retransmits")[0].value == 24
    # the enhanced UDP client has Write/Err and PPS columns: not retransmits
    assert not pick(parse("v2.1.8_lo_client_udp_e.txt"), "retransmits")


def test_cut_after_an_interval_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="no final") as exc:
        parse("v2.0.9_enhanced_tcp_client_TRUNCATED.txt")
    assert exc.value.line == 15


def test_csv_tcp_and_udp() -> None:
    recs = parse("v2.0_csv_tcp_client_i1.csv")
    assert pick(recs, "throughput")[0].value == 28497120873
    assert "side" not in recs[0].dims
    recs = parse("v2.1.8_lo_client_tcp_P2_yC.csv")
    assert pick(recs, "throughput")[0].value == 914179312 + 782075318
    recs = parse("v2.1.8_lo_server_udp_yC.csv")
    assert pick(recs, "packets", side="receiver")[0].value == 8898
    client = parse("v2.1.8_lo_client_udp_yC.csv")
    assert {r.dims["side"] for r in client} == {"sender"}
    assert not pick(client, "packets")


def test_csv_with_a_missing_field_is_a_parse_error() -> None:
    line = (FIX / "v2.0_csv_tcp_client_i1.csv").read_text().splitlines()[-1]
    with pytest.raises(ParseError, match="fields") as exc:
        iperf2.parse(line.rsplit(",", 1)[0])
    assert exc.value.line == 1


def test_connect_failure_is_tool_failure() -> None:
    with pytest.raises(ToolFailure, match="Connection refused") as exc:
        parse("v2.1.8_lo_client_refused.txt")
    assert exc.value.line == 5


def test_a_receiver_that_counted_no_datagram_is_never_a_0_percent_loss() -> None:
    """Real: iperf 2.1 through a load balancer that delivered nothing prints
    ``0.000 Bytes  -nan bits/sec ... 4294966296/0 (inf%)`` as the Server Report."""
    raw = (FIX / "v2.1_text_udp_client_report_0_datagrams.txt").read_bytes().decode()
    assert "\r\n" in raw  # the capture's CRLF line ends, as `aibench parse` reads them
    for text in (raw, raw.replace("\r\n", "\n")):
        with pytest.raises(ToolFailure, match="counted 0 datagrams") as exc:
            iperf2.parse(text)
        assert exc.value.line == 12
        assert {r.metric for r in exc.value.partial} == {
            "throughput",
            "bytes",
            "packets",
            "stream_throughput",
            "stream_bytes",
        }
        assert all(r.dims["side"] == "sender" for r in exc.value.partial)


def test_a_0_of_0_final_line_is_a_tool_failure_in_text_and_csv() -> None:
    """Constructed from real outputs: their final line's counts set to 0/0."""
    text = (FIX / "v2.0_text_udp_server_i1.txt").read_text()
    final = "[904]   0.0-10.0 sec   11.8 MBytes   9.86 Mbits/sec   2.618 ms   9/ 8409  (0.11%)"
    assert final in text
    zero = "[904]   0.0-10.0 sec   0.00 Bytes   0.00 bits/sec   0.000 ms   0/    0  (0%)"
    with pytest.raises(ToolFailure, match="counted 0 datagrams") as exc:
        iperf2.parse(text.replace(final, zero))
    assert exc.value.line == 18
    partial = {r.metric: r.value for r in exc.value.partial}
    assert partial["packets"] == 0
    assert "lost_percent" not in partial
    csv = (FIX / "v2.1.8_lo_server_udp_yC.csv").read_text()
    fields = csv.splitlines()[0].split(",")
    fields[10:12] = ["0", "0"]
    with pytest.raises(ToolFailure, match="counted 0 datagrams") as exc:
        iperf2.parse(",".join(fields) + "\n")
    assert exc.value.line == 1
    assert "lost_percent" not in {r.metric for r in exc.value.partial}


def test_out_of_order_lines_are_not_report_lines() -> None:
    """``[  3]  0.0-60.0 sec  1 datagrams received out-of-order`` follows the final line."""
    client = parse("v2.0_text_udp_client_out_of_order.txt")
    assert pick(client, "lost_packets", side="receiver")[0].value == 24605
    server = parse("v2.0_text_udp_server_out_of_order.txt")
    assert pick(server, "packets", side="receiver")[0].value == 512674


def test_two_runs_without_their_banners_are_still_told_apart() -> None:
    """Only the report lines of two real runs: stream 3's lines from 0 go back in time."""
    lines = (FIX / "v2.0_text_tcp_client_i1.txt").read_text().splitlines()
    rows = [ln for ln in lines if ln.startswith("[  3]") and " sec " in ln]
    with pytest.raises(ParseError, match="stream 3 starts again") as exc:
        iperf2.parse("\n".join(rows + rows) + "\n")
    assert exc.value.line == len(rows) + 1


@pytest.mark.parametrize(
    ("first", "second", "line"),
    [
        # text runs
        ("v2.1.8_lo_client_tcp.txt", "v2.1.8_lo_client_tcp_e.txt", 9),  # second banner
        ("v2.1.8_lo_server_udp.txt", "v2.1.8_lo_server_udp.txt", 9),
        ("v2.0_text_udp_server_i1.txt", "v2.0_text_udp_server_P3.txt", 20),
        # CSV: the same stream id between other ports (a new connection)
        ("v2.1.8_lo_client_tcp_yC.csv", "v2.1.8_lo_client_tcp_P2_yC.csv", 3),
        # CSV: the same stream id and ports, its lines from 0 going back in time
        ("v2.0_csv_tcp_client_i1.csv", "v2.0_csv_tcp_client_i1.csv", 12),
    ],
)
def test_two_concatenated_runs_text_or_csv_are_a_parse_error(
    first: str, second: str, line: int
) -> None:
    text = (FIX / first).read_text() + (FIX / second).read_text()
    with pytest.raises(ParseError, match="more than one iperf run") as exc:
        iperf2.parse(text)
    assert exc.value.line == line


@pytest.mark.skipif(shutil.which("iperf") is None, reason="iperf (2) is not installed")
def test_live_loopback_csv_and_text(tmp_path: Path) -> None:
    port = str(free_port())
    server = subprocess.Popen(
        ["iperf", "-s", "-B", "127.0.0.1", "-p", port, "-y", "C"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        for _ in range(50):
            client = subprocess.run(
                ["iperf", "-c", "127.0.0.1", "-p", port, "-t", "1", "-e"],
                capture_output=True,
                text=True,
                timeout=30,
            ).stdout
            # a busy machine may leave the client connected to nothing ("local 0.0.0.0
            # port 0 connected with ...") and without a report: try again
            if "connect failed" not in client and " sec " in client:
                break
            time.sleep(0.1)
        time.sleep(0.5)
    finally:
        server.terminate()
        srv_out, _ = server.communicate(timeout=10)
    recs = iperf2.parse(client)
    assert pick(recs, "throughput", side="sender")[0].value > 0
    assert pick(recs, "retransmits")
    srv = iperf2.parse(srv_out)
    assert pick(srv, "throughput")[0].value > 0


# ---- both directions (-d, -r, --full-duplex), odd values, notes ---------------------------


@pytest.mark.parametrize(
    ("name", "sent", "received"),
    [
        ("v2.1.8_lo_client_tcp_dualtest_d.txt", 2.57e9, 1.58e9),
        ("v2.1.8_lo_server_tcp_dualtest_d.txt", 1.53e9, 2.64e9),
        ("v2.1.8_lo_client_tcp_tradeoff_r.txt", 1.74e9, 1.81e9),
        ("v2.1.8_lo_server_tcp_tradeoff_r.txt", 1.80e9, 1.77e9),
        ("v2.1.8_lo_client_tcp_full_duplex.txt", 1.18e9, 1.42e9),
        ("v2.1.8_lo_server_tcp_full_duplex.txt", 1.44e9, 1.19e9),
    ],
)
def test_a_test_both_ways_gives_one_throughput_per_side(
    name: str, sent: float, received: float
) -> None:
    recs = parse(name)
    assert [r.value for r in pick(recs, "throughput", side="sender")] == [sent]
    assert [r.value for r in pick(recs, "throughput", side="receiver")] == [received]
    # the [SUM] of both directions is no one's throughput
    assert all(r.value in (sent, received) for r in pick(recs, "throughput"))


def test_negative_cwnd_still_gives_the_retransmits() -> None:
    recs = iperf2.parse(
        (FIX / "v2.0.x_enhanced_tcp_client_fb_negative_cwnd_mss_unknown.txt").read_text()
    )
    assert [r.value for r in recs if getattr(r, "metric", "") == "retransmits"] == [0.0]


def test_enhanced_columns_that_cannot_be_read_fail_loudly() -> None:
    text = (FIX / "v2.1.8_lo_client_tcp_e.txt").read_text()
    with pytest.raises(ParseError, match="enhanced columns not read"):
        iperf2.parse(text.replace("959K/2770(4745) us", "n/a"))


def test_mss_unknown_is_kept_as_a_note() -> None:
    from aibench.model import Note

    recs = iperf2.parse(
        (FIX / "v2.0.x_enhanced_tcp_client_fb_negative_cwnd_mss_unknown.txt").read_text()
    )
    notes = [r for r in recs if isinstance(r, Note)]
    assert [n.text for n in notes] == ["MSS and MTU size unknown (TCP_MAXSEG not supported by OS?)"]
    assert notes[0].line == 10


@pytest.mark.parametrize(
    ("name", "side", "value"),
    [
        ("v2.1.8_lo_client_tcp_reverse_R.txt", "receiver", 17.7e9),
        ("v2.1.8_lo_server_tcp_reverse_R.txt", "sender", 17.4e9),
        ("v2.1.8_lo_client_tcp_reverse_R_P2.txt", "receiver", 32.1e9),  # the SUM
        ("v2.1.8_lo_server_tcp_reverse_R_P2.txt", "sender", 32.2e9),
    ],
)
def test_a_reversed_test_is_labelled_by_the_side_that_sent(
    name: str, side: str, value: float
) -> None:
    recs = parse(name)
    assert [(r.dims["side"], r.value) for r in pick(recs, "throughput")] == [(side, value)]


# ---- a server that served several clients: each client's report on its own ---------------

SERVERS = {
    # fixture -> {(peer, port of its first connection): the printed total of that client}
    "v2.1.8_lo_server_two_clients.txt": {
        ("127.0.0.1", 41002): "12.0 Gbits/sec",
        ("127.0.0.1", 33126): "9.82 Gbits/sec",
    },
    "v2.1.8_lo_server_tcp_two_clients_P2_then_1_i.txt": {
        ("127.0.0.1", 42806): "13.1 Gbits/sec",  # its [SUM] over two streams
        ("127.0.0.1", 42828): "12.1 Gbits/sec",
    },
    "v2.1.8_lo_server_udp_two_clients.txt": {
        ("127.0.0.1", 50727): "10.5 Mbits/sec",
        ("127.0.0.1", 53769): "21.0 Mbits/sec",
    },
    "v2.1.x_text_tcp_server_three_clients.txt": {
        ("10.67.103.12", 45538): "941 Mbits/sec",
        ("10.67.103.12", 51904): "941 Mbits/sec",
        ("10.67.103.12", 40052): "941 Mbits/sec",
    },
}
_SCALE = {"Gbits/sec": 1e9, "Mbits/sec": 1e6}


@pytest.mark.parametrize("name", sorted(SERVERS))
def test_a_server_that_served_several_clients_gives_each_client_its_records(name: str) -> None:
    text = (FIX / name).read_text()
    recs = parse(name)
    got = {(r.dims["peer"], r.dims["port"]): r.value for r in pick(recs, "throughput")}
    want = {}
    for (peer, port), printed in SERVERS[name].items():
        assert f"connected with {peer} port {port}" in text
        assert f" {printed}" in text
        value, unit = printed.split()
        want[peer, port] = float(value) * _SCALE[unit]
    assert got == pytest.approx(want)
    # every record names its client; each client's streams are its own
    assert all("peer" in r.dims and "port" in r.dims for r in recs)
    streams = {(r.dims["port"], r.dims["stream"]) for r in pick(recs, "stream_throughput")}
    assert len(streams) == len({s for _, s in streams})


def test_udp_clients_of_one_server_keep_their_own_loss_figures() -> None:
    recs = parse("v2.1.8_lo_server_udp_two_clients.txt")
    packets = {r.dims["port"]: r.value for r in pick(recs, "packets")}
    assert packets == {50727: 895, 53769: 1787}  # "0/895 (0%)" and "0/1787 (0%)"


def test_a_bad_line_of_a_later_client_is_named_at_its_line_in_the_whole_output() -> None:
    text = (FIX / "v2.1.x_text_tcp_server_three_clients.txt").read_text()
    bad = text.replace(
        "10.0196 sec 1.10 GBytes 941 Mbits/sec", "10.0196 sec 1.10 GBytes nan Mbits/sec"
    )
    with pytest.raises(ParseError, match="not a number") as exc:
        iperf2.parse(bad)
    assert exc.value.line == 13


def test_a_client_log_of_two_runs_is_still_refused() -> None:
    # only a server's output is split by client: a client (or a dual test's server) that
    # connects again is two runs
    text = (FIX / "v2.1.8_lo_client_two_runs_appended.txt").read_text()
    with pytest.raises(ParseError, match="more than one iperf run"):
        iperf2.parse(text)


# ---- a test both ways whose listener could not bind: the direction that ran is kept --------


@pytest.mark.parametrize(
    ("name", "printed"),
    [
        ("v2.1.8_lo_client_tcp_dualtest_d_listener_bind_failed.txt", "21.8 Gbits/sec"),
        ("v2.0.4_text_tcp_client_tradeoff_r_bind_failed.txt", "63559 Kbits/sec"),
    ],
)
def test_a_listener_that_could_not_bind_keeps_the_stream_that_ran(name: str, printed: str) -> None:
    text = (FIX / name).read_text()
    with pytest.raises(ToolFailure) as exc:
        parse(name)
    assert exc.value.line == 1
    assert exc.value.reason == text.splitlines()[0].strip()
    assert "bind failed: Address already in use" in exc.value.reason
    partial = [r for r in exc.value.partial if isinstance(r, Measurement)]
    (thr,) = pick(partial, "throughput")
    value, unit = printed.split()
    assert thr.value == pytest.approx(float(value) * {**_SCALE, "Kbits/sec": 1e3}[unit])
    assert {r.dims["side"] for r in partial} == {"sender"}  # the other direction never ran


def test_a_2_0_server_that_reuses_its_stream_id_for_the_next_client() -> None:
    """iperf 2.0 numbers a stream by its socket, so a server's next client may get the id of
    the one before. CONSTRUCTED from the real 2.0 UDP server report: its connection and
    lines printed a second time, the second client's source port changed."""
    text = (FIX / "v2.0_text_udp_server_i1.txt").read_text()
    body = "".join(text.splitlines(keepends=True)[5:])
    recs = iperf2.parse(text + body.replace("port 32781", "port 32799"))
    got = {r.dims["port"]: r.value for r in pick(recs, "packets")}
    assert got == {32781: 8409, 32799: 8409}  # "9/ 8409  (0.11%)" for each client
    assert {r.dims["peer"] for r in recs if isinstance(r, Measurement)} == {"10.6.2.5"}


_XFER = {"Bytes": 1, "KBytes": 2**10, "MBytes": 2**20, "GBytes": 2**30}


@pytest.mark.parametrize(
    ("name", "sum_line"),
    [
        ("v2.0_text_udp_server_P3.txt", "[SUM]  0.0- 5.0 sec  2199 KBytes"),
        ("v2.1.8_lo_client_tcp_P2_i.txt", "[SUM] 0.0000-1.0512 sec   294 MBytes"),
        ("v2.1.8_lo_server_tcp_P2_i.txt", "[SUM] 0.0000-1.1153 sec   294 MBytes"),
    ],
)
def test_the_sum_lines_transfer_is_bytes(name: str, sum_line: str) -> None:
    text = (FIX / name).read_text()
    assert sum_line in text
    num, unit = sum_line.split()[-2:]
    recs = iperf2.parse(text)
    (total,) = [r for r in recs if isinstance(r, Measurement) and r.metric == "bytes"]
    assert (total.value, total.unit) == (float(num) * _XFER[unit], "B")


@pytest.mark.parametrize(
    ("name", "row", "want"),
    [
        # iperf 2.1.8: Write/Err Rtry Cwnd/RTT(var) NetPwr
        (
            "v2.1.8_lo_client_tcp_e.txt",
            "[  1] 0.0000-1.0393 sec   241 MBytes  1.95 Gbits/sec  1931/0         24      "
            "959K/2770(4745) us  87921",
            {
                "stream_writes": 1931,
                "stream_write_errors": 0,
                "stream_rtt": 2770,
                "stream_netpwr": 87921,
                "stream_bytes": 241 * 2**20,
                "retransmits": 24,
            },
        ),
        # iperf 2.0.x on FreeBSD: bytes printed whole, a -1K congestion window
        (
            "v2.0.x_enhanced_tcp_client_fb_negative_cwnd_mss_unknown.txt",
            "[  3] 0.00-5.00 sec  15961817088 Bytes  25537890933 bits/sec  121779/0          0"
            "       -1K/98 us  32573840.48",
            {
                "stream_writes": 121779,
                "stream_write_errors": 0,
                "stream_rtt": 98,
                "stream_netpwr": 32573840.48,
                "stream_bytes": 15961817088,
                "bytes": 15961817088,
            },
        ),
    ],
)
def test_enhanced_client_columns_are_read_as_printed(
    name: str, row: str, want: dict[str, float]
) -> None:
    text = (FIX / name).read_text()
    assert row in text
    got = {r.metric: r.value for r in iperf2.parse(text) if isinstance(r, Measurement)}
    assert {k: got[k] for k in want} == pytest.approx(want)
    units = {r.metric: r.unit for r in iperf2.parse(text) if isinstance(r, Measurement)}
    assert units["stream_rtt"] == "us"
