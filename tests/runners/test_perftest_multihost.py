"""perftest runner across the test bed's namespace hosts, with a REPLAY for the tool.

This machine has no RDMA device, so ``ib_send_bw`` is tests/programs/perftest_replay.py:
a real TCP server and client on the ports and addresses the runner planned, printing
real captured perftest reports. What is tested for real: the server started first on the
second node of each pair, readiness seen on its "Waiting for client" line (through
``stdbuf -oL``), the client given the server's address, one port per concurrent pair and
rail, every pair of four hosts in three rounds, and the per-rail records.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aibench.model import StepStatus
from tests.aibench_cli import aibench, only_run
from tests.runners.helpers import FIXTURES, PROGRAMS, wrapper
from tests.testbed.bed import TestBed

CLIENT = FIXTURES / "perftest" / "ib_send_bw_client_IB_LID_NDR_report_gbits_single_size.txt"
SERVER = (
    FIXTURES
    / "perftest"
    / "ib_send_bw_server_a_R_rdma_cm_report_gbits_BWpeak_not_measured_warning.txt"
)
HCAS = [{"name": "mlx5_0", "port": 1}, {"name": "mlx5_1", "port": 1}]

pytestmark = pytest.mark.skipif(shutil.which("stdbuf") is None, reason="needs coreutils stdbuf")


SUITE = """\
schema_version: 1
name: perftest-bed
settings: {{base_port: 16600}}
steps:
  - name: ib-send-bw
    tool: perftest
    placement: pairs
    options: {{test: ib_send_bw, size: 65536, iters: 1000, bin_dir: {bin}}}
"""


def test_every_pair_and_rail_of_four_hosts(tmp_path: Path, testbed_hosts: TestBed) -> None:
    """Over ssh (the bed's hosts are reached like real nodes), through the CLI."""
    bin_dir = tmp_path / "bin"
    wrapper(
        bin_dir,
        "ib_send_bw",
        PROGRAMS / "perftest_replay.py",
        "--binary",
        "ib_send_bw",
        "--server-fixture",
        str(SERVER),
        "--client-fixture",
        str(CLIENT),
    )
    inv = testbed_hosts.write_inventory(
        tmp_path / "inventory.yaml", defaults={"executor": "ssh", "hcas": HCAS}
    )
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE.format(bin=bin_dir))
    res = aibench(
        "run", "--suite", str(suite), "--inventory", str(inv),
        "--output-dir", str(tmp_path / "runs"), "--quiet",
        timeout=120,
    )  # fmt: skip
    assert res.returncode in (0, 1), res.stderr
    run_dir, run = only_run(tmp_path / "runs")
    results = run.steps
    # the version was asked of the binary the steps run (bin_dir), over ssh on every host;
    # the replay does not pretend to be a perftest version, so it is recorded as unknown
    for h in testbed_hosts.hosts:
        version = run.environment[h.name]["tools"]["perftest"]
        assert version.startswith(f"unknown ({bin_dir}/ib_send_bw --version: exit code 2"), version
    assert len(results) == 6 * 2  # 6 pairs x 2 rails
    assert all(r.status is StepStatus.OK for r in results), [r.reason for r in results]
    assert sorted({r.round for r in results}) == [0, 1, 2]
    seen = set()
    for r in results:
        server, client = r.processes[0], r.processes[1]
        assert server.role == "server"
        assert server.host == r.nodes[1]
        assert client.host == r.nodes[0]
        port = client.argv[client.argv.index("-p") + 1]
        assert server.argv[server.argv.index("-p") + 1] == port
        assert client.argv[-1] == testbed_hosts.host(r.nodes[1]).address
        (bw,) = [m for m in r.measurements if m.metric == "bw_avg"]
        assert bw.value == 353.53
        assert bw.dims["device"] == bw.dims["server_device"]
        seen.add((r.nodes, bw.dims["device"], r.round, port))
        err = (run_dir / r.stderr_path).read_text()
        assert f"server {bw.dims['device']} at " in err
    assert len(seen) == 12
    # within a round, no two servers on one host share a port
    by_round: dict[int, list[tuple[str, str]]] = {}
    for nodes_, _dev, rnd, port in seen:
        by_round.setdefault(rnd, []).append((nodes_[1], port))
    for taken in by_round.values():
        assert len(taken) == len(set(taken))
