"""iperf2 parser: final lines only, SUM, UDP server reports, CSV, enhanced, errors."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from aibench.errors import ParseError, ToolFailure
from aibench.model import Measurement
from aibench.parsers import iperf2

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "iperf2"


def parse(name: str) -> list[Measurement]:
    return iperf2.parse((FIX / name).read_text())


def pick(recs: list[Measurement], metric: str, **dims: object) -> list[Measurement]:
    return [
        r for r in recs if r.metric == metric and all(r.dims.get(k) == v for k, v in dims.items())
    ]


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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.skipif(shutil.which("iperf") is None, reason="iperf (2) is not installed")
def test_live_loopback_csv_and_text(tmp_path: Path) -> None:
    port = str(_free_port())
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
            if "connect failed" not in client:
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
