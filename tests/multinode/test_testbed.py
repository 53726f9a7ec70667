"""The bed itself: each host has its own name and address, and the fault helpers work."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from tests.testbed.bed import TestBed

pytestmark = pytest.mark.netns


def in_ns(
    bed: TestBed, host: str, *argv: str, timeout: float = 20
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ip", "netns", "exec", bed.host(host).netns, *argv],
        capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip


def test_hosts_have_their_own_names_over_ssh(testbed_hosts: TestBed) -> None:
    for h in testbed_hosts.hosts:
        r = subprocess.run(
            ["ssh", "-F", str(testbed_hosts.ssh.config), h.name, "hostname; ip -o -4 addr show eth0"],
            capture_output=True, text=True, timeout=20, check=False,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        name, addr = r.stdout.splitlines()
        assert name == h.name
        assert f"inet {h.address}/24" in addr


def test_shape_limits_both_directions_and_link_down_cuts_the_host(testbed_hosts: TestBed) -> None:
    bed = testbed_hosts
    srv = subprocess.Popen(  # iperf3 server on abt-h4
        ["ip", "netns", "exec", "abt-h4", "iperf3", "-s", "-p", "15388"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    bed.shape("abt-h4", "100mbit")
    try:
        time.sleep(0.3)
        for direction in ("-R", "--forceflush"):  # h4 -> h1, then h1 -> h4
            r = in_ns(
                bed,
                "abt-h1",
                "iperf3",
                "-c",
                "10.213.7.4",
                "-p",
                "15388",
                "-t",
                "1",
                direction,
                "-J",
            )
            assert r.returncode == 0, r.stdout[-500:]
            got = json.loads(r.stdout)["end"]["sum_received"]["bits_per_second"]
            assert 50e6 < got < 110e6, direction  # held to 100 Mbit/s either way
    finally:
        bed.unshape("abt-h4")
        srv.kill()
        srv.wait()
    assert in_ns(bed, "abt-h1", "ping", "-c", "1", "-W", "1", "10.213.7.4").returncode == 0
    bed.link_down("abt-h4")
    try:
        assert in_ns(bed, "abt-h1", "ping", "-c", "1", "-W", "1", "10.213.7.4").returncode != 0
    finally:
        bed.link_up("abt-h4")
    deadline = time.monotonic() + 5
    while in_ns(bed, "abt-h1", "ping", "-c", "1", "-W", "1", "10.213.7.4").returncode != 0:
        assert time.monotonic() < deadline, "link did not come back"
