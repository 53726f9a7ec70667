"""hccl-tests across hosts of the test bed, judged by the ascend-910b profile, reported.

The binary is the REPLAY (tests/programs/hccl_test_replay.py) of the 8-NPU
``all_reduce_test`` run Huawei publishes in its HCCL Test documentation; the launcher is
real: Open MPI's ``mpirun`` started over ssh on a bed host, starting its ranks there and,
for the two-host step, over ssh on the other host. Every rank reports the network
namespace it ran in.
"""

from __future__ import annotations

import re
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from aibench.model import Outcome, StepStatus
from tests.aibench_cli import aibench, only_run
from tests.runners.helpers import FIXTURES, PROGRAMS, is_root, wrapper
from tests.testbed.bed import TestBed
from tests.testbed.net import SUBNET

LOG = FIXTURES / "hccl-tests" / "huawei-doc-all_reduce_test-8npu-8K-64M.txt"
REPLAY = PROGRAMS / "hccl_test_replay.py"

pytestmark = [
    pytest.mark.netns,
    pytest.mark.skipif(shutil.which("mpirun") is None, reason="needs openmpi-bin"),
]

SUITE = """\
schema_version: 1
name: hccl-on-the-bed
steps:
  - name: hccl-all-reduce-node
    tool: hccl-tests
    placement: each
    nodes: [abt-h1, abt-h2]
    options:
      npus_per_node: 2
      launcher_args: [--oversubscribe]
      bin_dir: {bin}
      min_bytes: 8K
      max_bytes: 64M
      allow_run_as_root: {root}
  - name: hccl-all-reduce-pair
    tool: hccl-tests
    placement: all
    nodes: [abt-h1, abt-h2]
    options:
      npus_per_node: 1
      bin_dir: {bin}
      hccl_socket_ifname: eth0
      interfaces: {subnet}.0/24
      btl: self,tcp
      allow_run_as_root: {root}
"""


@pytest.fixture
def bin_dir() -> Iterator[Path]:
    # Not under /tmp: hosts of the bed may have a private /tmp.
    d = Path("/var/tmp") / f"aibench-hccl-tests-{uuid.uuid4().hex[:8]}"
    wrapper(d, "all_reduce_test", REPLAY, "--fixture", str(LOG))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_hccl_test_on_the_bed_judged_by_the_ascend_profile_and_reported(
    tmp_path: Path, testbed_hosts: TestBed, bin_dir: Path
) -> None:
    inv = testbed_hosts.write_inventory(tmp_path / "inventory.yaml", executor="ssh")
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE.format(bin=bin_dir, subnet=SUBNET, root=str(is_root()).lower()))
    res = aibench(
        "run", "--suite", str(suite), "--inventory", str(inv), "--spec", "ascend-910b",
        "--output-dir", str(tmp_path / "runs"), "--quiet", timeout=180,
    )  # fmt: skip
    run_dir, run = only_run(tmp_path / "runs")
    steps = {s.step_id: s for s in run.steps}
    assert sorted(steps) == [
        "hccl-all-reduce-node/abt-h1/r0",
        "hccl-all-reduce-node/abt-h2/r0",
        "hccl-all-reduce-pair/abt-h1--abt-h2/r0",
    ]
    for s in steps.values():
        assert s.status is StepStatus.OK, (s.step_id, s.reason)
        assert s.processes[-1].host == "abt-h1" or s.nodes == ("abt-h2",)
        algbw = {m.dims["size_bytes"]: m.value for m in s.measurements if m.metric == "algbw"}
        assert algbw[67108864] == 23.76245
        assert {m.dims["op"] for m in s.measurements} == {"all_reduce"}
    # the two-host step: mpirun on abt-h1 started one rank in each host's namespace
    pair = steps["hccl-all-reduce-pair/abt-h1--abt-h2/r0"]
    err = (run_dir / pair.stderr_path).read_text()
    ranks = sorted(re.findall(r"replay rank (\d+/\d+) net (\S+) HCCL_SOCKET_IFNAME=eth0", err))
    assert [r for r, _ in ranks] == ["0/2", "1/2"], err
    assert len({ns for _, ns in ranks}) == 2
    # judged by the Ascend profile: per node, at the largest message (64 MiB), >= 20 GB/s
    got = {(v.check, ",".join(v.subject)): v for v in run.verdicts}
    for node in ("abt-h1", "abt-h2"):
        v = got[("hccl-all-reduce-node", node)]
        assert v.outcome is Outcome.PASS, v
        assert v.observed == 23.76245
    # the preflight-only checks have no facts in a run without the preflight: MISSING
    assert got[("npu-count", "abt-h1")].outcome is Outcome.MISSING
    assert res.returncode == 1
    # the report has the tool's own section, in Ascend's terms
    html = (run_dir / "report.html").read_text()
    assert "HCCL tests (Ascend collective bandwidth: HCCS inside a node, RoCE between)" in html
    assert "HCCS (Huawei Cache Coherence System)" in html
    assert "hccl-all-reduce-node" in html
