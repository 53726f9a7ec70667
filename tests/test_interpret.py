"""What the executor saw of a process reaches the step's reason beside what its output
says: a Pod killed for its memory, a worker of a launch gone. The raw output files hold
the tool's own bytes only, so this is the one place the two meet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aibench.executors.base import ProcResult
from aibench.interpret import interpret
from aibench.model import StepStatus
from tests.golden import FIXTURES
from tests.runners.helpers import node, plan

# a whole stress-ng report (real, tests/fixtures/stress-ng/SOURCES.md): it parses
STRESS = (FIXTURES / "stress-ng" / "cpu1-3s-metrics.txt").read_text()


def _result(status: StepStatus, reason: str = "", **_: Any) -> tuple[StepStatus, str]:
    return status, reason


def _interpret(tmp_path: Path, tool: str, options: dict[str, Any], proc: ProcResult,
               stdout: str, stderr: str) -> tuple[StepStatus, str]:  # fmt: skip
    [inv] = plan(tool, options, [node("n1")])
    out, err = tmp_path / "o", tmp_path / "e"
    out.write_text(stdout)
    err.write_text(stderr)
    return interpret(inv, proc, out, err, _result, 1.0)  # type: ignore[arg-type,return-value]


WORKER = "worker pod m-w1 on gpu02: deleted (the Pod is gone)"


OOM = "OOMKilled: the container passed its memory limit (exit 137)"


@pytest.mark.parametrize(
    ("stderr", "reason", "want"),
    [
        ("mpirun: ORTE daemon died\n", WORKER, f"exit code 1: mpirun: ORTE daemon died; {WORKER}"),
        ("boom\n", OOM, f"exit code 1: boom; {OOM}"),
        ("boom\n", "", "exit code 1: boom"),
        ("boom\n", "boom", "exit code 1: boom"),  # said once
    ],
)  # fmt: skip
def test_a_failed_exit_names_the_output_and_what_the_executor_saw(
    tmp_path: Path, stderr: str, reason: str, want: str
) -> None:
    proc = ProcResult(exit_code=1, started="", duration_s=1.0, reason=reason)
    status, why = _interpret(tmp_path, "stress-ng", {"cpu": 1}, proc, STRESS, stderr)
    assert status is StepStatus.FAILED
    assert why == want


def test_output_cut_short_keeps_the_executors_reason(tmp_path: Path) -> None:
    proc = ProcResult(exit_code=1, started="", duration_s=1.0, reason=WORKER)
    status, why = _interpret(tmp_path, "stress-ng", {"cpu": 1}, proc, "", "")
    assert status is StepStatus.FAILED
    assert why == f"stress-ng: no 'run completed' line: stress-ng was killed or cut short; {WORKER}"
