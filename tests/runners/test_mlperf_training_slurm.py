"""MLPerf Training runs launched through ``srun`` on the test bed's Slurm cluster.

Each of the three runs is ``srun -N1 -p debug python mlperf_train_logreg.py ...`` on a
bed node; the runs' directory is on a file system the nodes share (not /tmp: each slurmd
has a private one), the runner's sequencer and collect run here.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from aibench.model import StepStatus
from tests.runners.helpers import TRAIN_LOGREG, node, run, suite_of
from tests.testbed.slurm import SlurmCluster


@pytest.fixture
def run_dir() -> Iterator[Path]:
    d = Path("/var/tmp") / f"aibench-runner-tests-{uuid.uuid4().hex[:8]}"
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_three_runs_through_srun_are_checked_and_scored(
    tmp_path: Path, testbed_slurm: SlurmCluster, run_dir: Path
) -> None:
    command = ["srun", "-N1", "-p", "debug", "--", *TRAIN_LOGREG]
    options = {
        "benchmark": "dlrm_dcnv2",
        "runs": 3,
        "seed": 1,
        "command": command,
        "shared_dir": str(run_dir),
        "env": {"SLURM_CONF": str(testbed_slurm.conf)},
        "run_timeout": 60,
    }
    (res,) = run(tmp_path, suite_of("mlperf-training", options), [node("login", "127.0.0.1")])
    assert res.status is StepStatus.OK, res.reason
    assert [f.value for f in res.facts if f.name == "compliance"] == ["passed"] * 3
    assert len([m for m in res.measurements if m.metric == "time_to_train"]) == 3
    assert [m.metric for m in res.measurements if m.metric == "score"] == ["score"]
    # the runs really went through Slurm: each ran on a bed node (its own host name)
    for k in range(3):
        said = (
            (run_dir / "mlperf-training" / "s" / "login.r0" / f"run_{k}" / "stdout.txt")
            .read_text()
            .splitlines()[-1]
        )
        assert said.startswith("host abt-h"), said
    assert (tmp_path / "raw" / "s" / "login.r0.runs.json").is_file()
    # each run's srun line, filled in, with the environment it was given, is on the step
    runs = [p for p in res.processes if p.role == "run"]
    base = run_dir / "mlperf-training" / "s" / "login.r0"
    assert [p.argv for p in runs] == [
        (*command[:7], "--log-file", f"{base}/run_{k}/result.txt", "--seed", str(1 + k))
        for k in range(3)
    ]
    assert all(p.env == {"SLURM_CONF": str(testbed_slurm.conf)} for p in runs)
    assert [p.exit_code for p in runs] == [0, 0, 0]
    assert len([p for p in res.processes if p.role == "checker"]) == 3
