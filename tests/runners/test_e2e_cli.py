"""End to end through the CLI: nccl-tests (replay under a real mpirun), MLPerf Inference
(a real LoadGen run of a CPU SUT) and MLPerf Training (three real CPU training runs,
each checked by the real compliance checker) -> parse -> judge against a spec -> report.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from aibench.model import Outcome
from tests.aibench_cli import aibench, only_run
from tests.runners.helpers import FIXTURES, PROGRAMS, is_root, wrapper

LOG = FIXTURES / "nccl-tests" / "v2.17.8_2node_2gpu_allreduce_sendrecv_smoke.txt"
PY = sys.executable

SUITE = """\
schema_version: 1
name: runners-e2e
settings: {{workdir: {work}, base_port: 16500}}
steps:
  - name: nccl-all-reduce
    tool: nccl-tests
    options:
      launcher: mpirun
      ranks_per_node: 2
      launcher_args: [--oversubscribe]
      allow_run_as_root: {root}
      bin_dir: {bin}
      nccl_debug: WARN
  - name: inference-offline
    tool: mlperf-inference
    options:
      scenario: Offline
      benchmark: matvec
      command: [{py}, {sut}, --output-dir, "{{output_dir}}", --scenario, "{{scenario}}",
                --min-duration-ms, "500"]
  - name: inference-singlestream
    tool: mlperf-inference
    options:
      scenario: SingleStream
      command: [{py}, {sut}, --output-dir, "{{output_dir}}", --scenario, "{{scenario}}",
                --min-duration-ms, "500"]
  - name: training
    tool: mlperf-training
    options:
      benchmark: dlrm_dcnv2
      runs: 3
      command: [{py}, {train}, --log-file, "{{log_dir}}/result.txt", --seed, "{{seed}}"]
"""

SPEC = """\
schema_version: 1
name: runners-e2e
checks:
  - id: nccl.all_reduce.busbw
    select: {tool: nccl-tests, metric: busbw, dims: {placement: out_of_place},
             largest: size_bytes}
    unit: GB/s
    min: 40
  - id: nccl.all_reduce.busbw.too-high-on-purpose
    select: {tool: nccl-tests, metric: busbw, dims: {placement: out_of_place},
             largest: size_bytes}
    unit: GB/s
    min: 400
  - id: inference.offline.throughput
    select: {tool: mlperf-inference, metric: samples_per_second, dims: {scenario: Offline}}
    unit: samples/s
    min: 100
  - id: inference.singlestream.p90
    select: {tool: mlperf-inference, metric: latency,
             dims: {scenario: SingleStream, percentile: 90.0}}
    unit: ms
    max: 100
  - id: inference.valid
    fact: {source: mlperf-inference, name: result_validity}
    op: eq
    value: VALID
  - id: training.score
    select: {tool: mlperf-training, metric: score}
    unit: s
    max: 600
  - id: training.compliance
    fact: {source: mlperf-training, name: compliance}
    op: eq
    value: passed
"""


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="needs openmpi-bin")
def test_cli_runs_the_four_steps_judges_and_reports(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    wrapper(
        bin_dir,
        "all_reduce_perf",
        PROGRAMS / "nccl_tests_replay.py",
        "--fixture",
        str(LOG),
        "--binary",
        "all_reduce_perf",
    )
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        SUITE.format(
            work=tmp_path / "work",
            root=str(is_root()).lower(),
            bin=bin_dir,
            py=PY,
            sut=PROGRAMS / "loadgen_sut.py",
            train=PROGRAMS / "mlperf_train_logreg.py",
        )
    )
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    res = aibench(
        "run", "--suite", str(suite), "--spec", str(spec),
        "--output-dir", str(tmp_path / "runs"), "--quiet",
        timeout=240,
    )  # fmt: skip
    assert res.returncode == 1, res.stderr  # one check fails on purpose
    run_dir, run = only_run(tmp_path / "runs")
    assert [s.status.value for s in run.steps] == ["ok"] * 4, [s.reason for s in run.steps]
    outcome = {v.check: v.outcome for v in run.verdicts}
    assert outcome == {
        "nccl.all_reduce.busbw": Outcome.PASS,
        "nccl.all_reduce.busbw.too-high-on-purpose": Outcome.FAIL,
        "inference.offline.throughput": Outcome.PASS,
        "inference.singlestream.p90": Outcome.PASS,
        "inference.valid": Outcome.PASS,
        "training.score": Outcome.PASS,
        "training.compliance": Outcome.PASS,
    }
    (busbw,) = [v for v in run.verdicts if v.check == "nccl.all_reduce.busbw"]
    assert busbw.observed == 46.32  # 512 MiB out-of-place row of the captured log
    # argv and env of every process are in run.json
    nccl = run.steps[0]
    assert nccl.processes[-1].argv[:5] == ("mpirun", "--host", "localhost:2", "-np", "2")
    assert nccl.processes[-1].env["NCCL_DEBUG"] == "WARN"
    html = (run_dir / "report.html").read_text()
    for check in outcome:
        assert check in html
    assert "dlrm_dcnv2" in html
