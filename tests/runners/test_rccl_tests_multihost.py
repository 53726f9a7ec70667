"""rccl-tests end to end on the test bed: a real public RCCL-tests output, replayed.

The binary ``all_reduce_perf`` is the replay program (tests/programs/nccl_tests_replay.py)
printing a real RCCL-tests log of ROCm 4.2 on 2 x MI100 (its source is in
tests/fixtures/rccl-tests/SOURCES.md); the launcher is real: ``aibench run`` reaches the
first host over SSH, where Open MPI's ``mpirun`` starts the ranks over ssh on both hosts.
The records are rccl-tests', judged by a spec that selects ``rccl-tests`` and by the
mi300x profile, and reported in a section of their own name.
"""

from __future__ import annotations

import json
import re
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from aibench.model import Run
from tests.aibench_cli import aibench, only_run
from tests.runners.helpers import FIXTURES, PROGRAMS, is_root, wrapper
from tests.testbed.bed import TestBed
from tests.testbed.net import SUBNET

LOG = (
    FIXTURES
    / "rccl-tests"
    / ("rccl-tests_rocm4.2_2node_MI100_allreduce_nThread_colon_error_0e+00.txt")
)
REPLAY = PROGRAMS / "nccl_tests_replay.py"

pytestmark = pytest.mark.skipif(shutil.which("mpirun") is None, reason="needs openmpi-bin")

SUITE = """\
schema_version: 1
name: rccl-over-ssh
steps:
  - name: rccl-all-reduce-pair
    tool: rccl-tests
    placement: all
    nodes: [abt-h1, abt-h2]
    options: &opts
      launcher: mpirun
      ranks_per_node: 1
      max_bytes: 128M
      env: {{HSA_FORCE_FINE_GRAIN_PCIE: "1", RCCL_MSCCL_ENABLE: "0"}}
      nccl_debug: INFO
      interfaces: {subnet}.0/24
      btl: self,tcp
      allow_run_as_root: {root}
  - name: rccl-all-reduce-node
    tool: rccl-tests
    placement: each
    nodes: [abt-h1]
    options:
      <<: *opts
      ranks_per_node: 2
      launcher_args: [--oversubscribe]
"""

SPEC = """\
schema_version: 1
name: rccl-acceptance
checks:
  - id: rccl-all-reduce-busbw
    description: all_reduce busbw across two nodes, largest message
    select:
      tool: rccl-tests
      metric: busbw
      step: rccl-all-reduce-pair
      dims: {op: all_reduce, placement: out_of_place}
      largest: size_bytes
    unit: GB/s
    min: 7
"""


@pytest.fixture
def bin_dir() -> Iterator[Path]:
    d = Path("/var/tmp") / f"aibench-rccl-tests-{uuid.uuid4().hex[:8]}"
    wrapper(d, "all_reduce_perf", REPLAY, "--fixture", str(LOG), "--binary", "all_reduce_perf")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_rccl_tests_over_ssh_and_mpirun_judged_and_reported_under_its_own_name(
    tmp_path: Path, testbed_hosts: TestBed, bin_dir: Path
) -> None:
    # the binary directory is the inventory's tool_dirs entry of rccl-tests
    data = testbed_hosts.inventory_data("ssh")
    data["defaults"] = {"executor": "ssh", "tool_dirs": {"rccl-tests": str(bin_dir)}}
    inv = tmp_path / "inventory.yaml"
    inv.write_text(yaml.safe_dump(data, sort_keys=False))
    suite, spec = tmp_path / "suite.yaml", tmp_path / "spec.yaml"
    suite.write_text(SUITE.format(subnet=SUBNET, root=str(is_root()).lower()))
    spec.write_text(SPEC)
    res = aibench(
        "run", "--suite", str(suite), "--inventory", str(inv), "--spec", str(spec),
        "--output-dir", str(tmp_path / "runs"), "--quiet",
        timeout=180,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    run_dir, run = only_run(tmp_path / "runs")
    pair, solo = run.steps
    for step in (pair, solo):
        assert step.ok, step.reason
        assert step.tool == "rccl-tests"
        assert step.processes[-1].argv[0] == "mpirun"
        assert f"{bin_dir}/all_reduce_perf" in step.processes[-1].argv
        assert {m.tool for m in step.measurements} == {"rccl-tests"}
    err = (run_dir / pair.stderr_path).read_text()
    ranks = sorted(re.findall(r"replay rank (\d+/\d+) net (\S+) ", err))
    assert [r for r, _ in ranks] == ["0/2", "1/2"]
    assert len({ns for _, ns in ranks}) == 2, "one rank on each host"
    # the real log's own numbers: 7.66 GB/s out-of-place at 128 MiB, footer 2.31741
    judged = [v for v in run.verdicts if v.check == "rccl-all-reduce-busbw"]
    assert judged, [v.check for v in run.verdicts]
    for v in judged:
        assert (v.outcome.value, v.origin) == ("PASS", "spec")
        assert v.observed == pytest.approx(7.66)
    assert not [v for v in run.verdicts if v.outcome.failing]
    (avg,) = [m for m in pair.measurements if m.metric == "avg_busbw"]
    assert avg.value == 2.31741
    html = (run_dir / "report.html").read_text()
    assert "RCCL tests (collective bandwidth, ROCm)" in html
    assert "NCCL tests (collective bandwidth)" not in html

    # the mi300x profile selects rccl-tests: its node check judges the one-node step
    check = aibench("check", str(run_dir), "--spec", "mi300x", "--format", "json")
    assert check.returncode == 1, check.stderr
    got = json.loads(check.stdout)
    node = [v for v in got["verdicts"] if v["check"] == "rccl-all-reduce-node"]
    assert [(v["subject"], v["outcome"]) for v in node] == [(["abt-h1"], "FAIL")]
    assert node[0]["observed"] == pytest.approx(7.66)  # judged, not MISSING: below 314
    assert Run.from_dict(json.loads((run_dir / "run.json").read_text())).verdicts == run.verdicts
