"""iperf3 parser: sums equal iperf3's own end sums, UDP, bidir, errors, text, json-stream."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from aibench.errors import ParseError, ToolFailure
from aibench.parsers import iperf3
from tests.golden import one, pick
from tests.ports import free_port

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "iperf3"
JSON_OK = sorted(
    f
    for f in FIX.glob("*.json")
    if not f.name.endswith(".expected.json")
    and "records" in json.loads(f.with_name(f.stem + ".expected.json").read_text())
)


@pytest.mark.parametrize("path", JSON_OK, ids=[f.name for f in JSON_OK])
def test_parsed_sums_equal_iperf3_end_sums(path: Path) -> None:
    doc = json.loads(path.read_text())
    recs = iperf3.parse(path.read_text())
    end = doc["end"]
    server = "accepted_connection" in doc["start"]
    checked = 0
    for key, side, direction in [
        ("sum_sent", "sender", "forward"),
        ("sum_received", "receiver", "forward"),
        ("sum_sent_bidir_reverse", "sender", "reverse"),
        ("sum_received_bidir_reverse", "receiver", "reverse"),
    ]:
        if key not in end or (server and end[key]["bytes"] == 0):
            continue
        dims: dict[str, object] = {"side": side}
        if "bidir_reverse" in "".join(end):
            dims["direction"] = direction
        (thr,) = pick(recs, "throughput", **dims)
        assert thr.value == end[key]["bits_per_second"]
        assert thr.unit == "bit/s"
        if "retransmits" in end[key] and side == "sender":
            assert pick(recs, "retransmits", **dims)[0].value == end[key]["retransmits"]
        checked += 1
    if not checked:  # UDP before 3.12: one "sum"
        (thr,) = pick(recs, "throughput", side="sender")
        assert thr.value == end["sum"]["bits_per_second"]
    # per-stream rates of each side add up to the sum of that side (TCP)
    if doc["start"]["test_start"]["protocol"] == "TCP" and "sum_sent_bidir_reverse" not in end:
        for side, key in (("sender", "sum_sent"), ("receiver", "sum_received")):
            streams = pick(recs, "stream_throughput", side=side)
            if streams and end[key]["bytes"]:
                total = sum(s.value for s in streams)
                assert total == pytest.approx(end[key]["bits_per_second"], rel=0.02)


def test_udp_receiver_metrics() -> None:
    text = (FIX / "v3.12_udp_1G.json").read_text()
    recv = json.loads(text)["end"]["sum_received"]
    recs = iperf3.parse(text)
    got = {r.metric: r for r in recs if r.dims.get("side") == "receiver" and "stream" not in r.dims}
    assert got["jitter"].value == recv["jitter_ms"]
    assert got["jitter"].unit == "ms"
    assert got["lost_packets"].value == recv["lost_packets"]
    assert got["packets"].value == recv["packets"]
    assert got["lost_percent"].value == recv["lost_percent"]
    assert got["lost_percent"].unit == "%"
    assert {r.dims["protocol"] for r in recs} == {"udp"}


def test_dims_from_test_start() -> None:
    recs = iperf3.parse((FIX / "v3.12_lo_tcp_P2.json").read_text())
    assert {(r.dims["protocol"], r.dims["streams"], r.dims["reverse"]) for r in recs} == {
        ("tcp", 2, False)
    }
    assert {r.dims["stream"] for r in pick(recs, "stream_throughput")} == {5, 7}
    recs = iperf3.parse((FIX / "v3.12_lo_tcp_R.json").read_text())
    assert all(r.dims["reverse"] is True for r in recs)


def test_bidir_has_both_directions() -> None:
    recs = iperf3.parse((FIX / "v3.12_lo_tcp_bidir.json").read_text())
    assert all(r.dims["bidir"] is True for r in recs)
    assert {r.dims["direction"] for r in pick(recs, "throughput")} == {"forward", "reverse"}
    fwd = pick(recs, "stream_throughput", direction="forward")
    assert {r.dims["stream"] for r in fwd} == {5}


def test_server_json_skips_the_half_it_did_not_see() -> None:
    recs = iperf3.parse((FIX / "v3.12_lo_server_tcp.json").read_text())
    rates = [r for r in recs if r.metric != "cpu_utilization"]
    assert {r.dims["side"] for r in rates} == {"receiver"}
    assert all(r.value > 0 for r in rates)
    # the server's CPU is read; its client's (which it writes as 0) is not
    assert [(r.dims["cpu"], round(r.value, 1)) for r in recs if r.metric == "cpu_utilization"] == [
        ("host", 60.2)
    ]


def test_cpu_utilization_of_host_and_remote() -> None:
    recs = iperf3.parse((FIX / "v3.12_tcp1.json").read_text())
    cpu = {r.dims["cpu"]: r.value for r in recs if r.metric == "cpu_utilization"}
    assert set(cpu) == {"host", "remote"}
    assert all(0 < v <= 100 * 64 for v in cpu.values())


@pytest.mark.parametrize("name", ["v3.0.11_error_no_route.json", "v3.12_lo_refused.json"])
def test_error_key_is_tool_failure(name: str) -> None:
    with pytest.raises(ToolFailure, match="unable to connect to server"):
        iperf3.parse((FIX / name).read_text())


def test_truncated_json_is_a_parse_error() -> None:
    text = (FIX / "v3.12_tcp1.json").read_text()
    cut = text[: int(len(text) * 0.7)]
    with pytest.raises(ParseError) as exc:
        iperf3.parse(cut)
    assert exc.value.line == cut.count("\n") + 1


def test_text_client_summary() -> None:
    recs = iperf3.parse((FIX / "v3.12_lo_tcp_P2_text.txt").read_text())
    (snd,) = pick(recs, "throughput", side="sender")
    assert snd.value == 13.2e9
    assert snd.dims["streams"] == 2
    assert pick(recs, "retransmits", side="sender")[0].value == 0
    assert len(pick(recs, "stream_throughput")) == 4


def test_text_udp_and_server() -> None:
    recs = iperf3.parse((FIX / "v3_text_udp_server_P2_multiple_streams.txt").read_text())
    (thr,) = pick(recs, "throughput")
    assert thr.value == 3145e3
    assert thr.dims["side"] == "receiver"
    assert pick(recs, "packets")[0].value == 90
    assert pick(recs, "jitter")[0].value == 0.011


def test_text_bidir_roles() -> None:
    recs = iperf3.parse((FIX / "v3.12_lo_tcp_bidir_text.txt").read_text())
    assert pick(recs, "throughput", direction="forward", side="sender")[0].value == 11.2e9
    assert pick(recs, "throughput", direction="reverse", side="receiver")[0].value == 9.22e9


def test_text_error_line_is_tool_failure() -> None:
    with pytest.raises(ToolFailure) as exc:
        iperf3.parse((FIX / "v3.12_lo_refused_text.txt").read_text())
    assert exc.value.line == 1
    assert "Connection refused" in exc.value.reason


def _as_json_stream(doc: dict[str, object]) -> str:
    """The --json-stream event form of a -J document (iperf3 3.17+ writes these events;
    the iperf3 3.12 of this test machine has no --json-stream, so the real -J capture is
    re-expressed as the documented events: start, one interval each, end)."""
    lines = [json.dumps({"event": "start", "data": doc["start"]})]
    for iv in doc["intervals"]:  # type: ignore[attr-defined]
        lines.append(json.dumps({"event": "interval", "data": iv}))
    lines.append(json.dumps({"event": "end", "data": doc["end"]}))
    return "\n".join(lines) + "\n"


def test_json_stream_gives_the_same_records_as_json() -> None:
    text = (FIX / "v3.12_lo_udp_bidir_P2.json").read_text()
    stream = _as_json_stream(json.loads(text))
    assert iperf3.parse(stream) == iperf3.parse(text)


def test_json_stream_cut_and_error() -> None:
    stream = _as_json_stream(json.loads((FIX / "v3.12_tcp1.json").read_text()))
    lines = stream.splitlines()
    with pytest.raises(ParseError, match="end"):
        iperf3.parse("\n".join(lines[:-1]))
    with pytest.raises(ParseError, match="invalid JSON event") as exc:
        iperf3.parse("\n".join([*lines[:-1], lines[-1][:40]]))
    assert exc.value.line == len(lines)
    err = json.dumps({"event": "error", "data": "error - the server has terminated"})
    with pytest.raises(ToolFailure, match="server has terminated"):
        iperf3.parse("\n".join([*lines[:2], err]))


def test_a_udp_receiver_that_counted_no_datagram_is_never_a_0_percent_loss() -> None:
    """Constructed from real 3.12 outputs, the receiver's counts set to 0: iperf3 itself
    writes ``lost_percent`` 0 (JSON) and ``0/0 (0%)`` (text) when nothing arrived."""
    doc = json.loads((FIX / "v3.12_lo_udp_100M.json").read_text())
    rcv = doc["end"]["sum_received"]
    rcv.update(bytes=0, bits_per_second=0, packets=0, lost_packets=0, lost_percent=0)
    with pytest.raises(ToolFailure, match="counted 0 datagrams") as exc:
        iperf3.parse(json.dumps(doc, indent=1))
    metrics = {(r.metric, r.dims["side"]) for r in exc.value.partial}
    assert ("packets", "receiver") in metrics
    assert ("throughput", "sender") in metrics
    assert not any(m == "lost_percent" for m, _ in metrics)
    text = (FIX / "v3.12_lo_udp_100M_text.txt").read_text()
    real = "11.9 MBytes   100 Mbits/sec  0.007 ms  0/382 (0%)  receiver"
    assert real in text
    zero = text.replace(real, "0.00 Bytes  0.00 bits/sec  0.000 ms  0/0 (0%)  receiver")
    with pytest.raises(ToolFailure, match="counted 0 datagrams") as exc:
        iperf3.parse(zero)
    assert exc.value.line == 8
    assert "lost_percent" not in {r.metric for r in exc.value.partial}


@pytest.mark.parametrize(
    ("first", "second", "line"),
    [
        ("v3.12_lo_tcp_P2_text.txt", "v3.12_lo_udp_100M_text.txt", 24),
        ("v3_text_tcp_server_basic.txt", "v3_text_tcp_server_basic.txt", 41),
    ],
)
def test_two_text_runs_in_one_log_are_a_parse_error(first: str, second: str, line: int) -> None:
    """Two real outputs one after the other (a client log appended to, a server that
    served two tests): not the last run's summary."""
    text = (FIX / first).read_text() + (FIX / second).read_text()
    with pytest.raises(ParseError, match="more than one iperf3 run") as exc:
        iperf3.parse(text)
    assert exc.value.line == line


def test_two_json_documents_in_one_log_are_a_parse_error() -> None:
    text = (FIX / "v3.12_tcp1.json").read_text() + (FIX / "v3.12_udp_1G.json").read_text()
    with pytest.raises(ParseError, match="more than one iperf3 run") as exc:
        iperf3.parse(text)
    assert exc.value.line == (FIX / "v3.12_tcp1.json").read_text().count("\n") + 1
    one = json.loads((FIX / "v3.12_tcp1.json").read_text())
    stream = _as_json_stream(one)
    with pytest.raises(ParseError, match='second "start" event') as exc:
        iperf3.parse(stream + stream)
    assert exc.value.line == len(stream.splitlines()) + 1


def test_get_server_output_reads_the_clients_own_summary() -> None:
    recs = iperf3.parse((FIX / "v3.12_lo_tcp_get_server_output_text.txt").read_text())
    assert {r.dims["side"] for r in pick(recs, "throughput")} == {"sender", "receiver"}
    assert pick(recs, "retransmits")[0].value == 9


@pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 is not installed")
def test_live_loopback_json() -> None:
    port = str(free_port())
    server = subprocess.Popen(
        ["iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", port],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        # A refused connect does not use up the one test of "-s -1" (a probe would).
        for _ in range(50):
            out = subprocess.run(
                ["iperf3", "-c", "127.0.0.1", "-p", port, "-t", "1", "-P", "2", "-J"],
                capture_output=True,
                text=True,
                timeout=30,
            ).stdout
            if "Connection refused" not in out:
                break
            time.sleep(0.1)
        server.wait(timeout=10)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    doc = json.loads(out)
    recs = iperf3.parse(out)
    (thr,) = pick(recs, "throughput", side="receiver")
    assert thr.value == doc["end"]["sum_received"]["bits_per_second"] > 0
    assert len(pick(recs, "stream_throughput", side="sender")) == 2


_XFER = {"Bytes": 1, "KBytes": 2**10, "MBytes": 2**20, "GBytes": 2**30}


@pytest.mark.parametrize(
    "name",
    [
        "v3.12_lo_tcp_bidir_text.txt",
        "v3_k8s_pods_tcp_bidir_text.txt",
        "v3.12_lo_tcp_P2_text.txt",
        "v3_text_tcp_client_P3_SUM.txt",
        "v3_text_udp_server_P2_multiple_streams.txt",
    ],
)
def test_text_transfers_are_read_as_printed(name: str) -> None:
    """Every summary line's Transfer: a stream's (``RX-C`` receiver lines of a bidir test
    too) as ``stream_bytes``, the ``[SUM]`` line's as ``bytes``."""
    text = (FIX / name).read_text()
    summary = text[text.rindex("- - - -") :]
    recs = iperf3.parse(text)
    rows = re.findall(
        r"^\[\s*(\d+|SUM)\](?:\[([A-Z]{2})-[CS]\])?\s+\S+\s+sec\s+(\S+) (\w+).*?(sender|receiver)$",
        summary,
        re.M,
    )
    assert rows
    for sid, role, num, unit, side in rows:
        want = float(num) * _XFER[unit]
        dims: dict[str, object] = {"side": side}
        if role:
            dims["direction"] = "forward" if role == "TX" else "reverse"
        if sid == "SUM":
            assert one(recs, "bytes", **dims).value == pytest.approx(want)
        else:
            got = one(recs, "stream_bytes", stream=int(sid), **dims).value
            assert got == pytest.approx(want)


@pytest.mark.parametrize("f", [f for f in JSON_OK if "mean_rtt" in f.read_text()], ids=str)
def test_json_sum_bytes_and_mean_rtt_are_iperf3s(f: Path) -> None:
    doc = json.loads(f.read_text().split("\n}\n")[0] + "\n}")
    recs = iperf3.parse(f.read_text())
    sums = pick(recs, "bytes", side="sender")
    assert doc["end"]["sum_sent"]["bytes"] in {r.value for r in sums}
    for st in doc["end"]["streams"]:
        snd = st["sender"]
        rtts = pick(recs, "stream_rtt_mean", stream=snd["socket"], side="sender")
        assert snd["mean_rtt"] in {r.value for r in rtts}
        assert all(r.unit == "us" for r in rtts)
