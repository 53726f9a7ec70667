"""MLPerf Training runner: argv, and real runs of a CPU training loop, checked and scored.

The training program (tests/programs/mlperf_train_logreg.py) logs an open-division
dlrm_dcnv2 run under ruleset 6.0.0 with mlperf_logging.mllog; the real compliance checker
judges each log; the runner scores the runs the MLPerf way.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from aibench import mlperf_rules
from aibench.errors import ConfigError
from aibench.model import Fact, Measurement, StepResult, StepStatus
from aibench.runners.base import Slot
from aibench.runners.mlperf_training import first_complaint
from tests.runners.helpers import TRAIN_LOGREG, node, plan, run, suite_of


def test_the_client_is_the_sequencer_with_the_rules_run_count() -> None:
    o = {
        "benchmark": "llama31_8b",
        "command": ["srun", "-N2", "train.sh", "{log_dir}", "{seed}"],
        "python": "/opt/venv/bin/python",
        "seed": 40,
        "run_timeout": 3600,
    }
    (inv,) = plan("mlperf-training", o, [node("g1"), node("g2")], Slot(workdir="/w"), "llm")
    d = "/w/mlperf-training/llm/g1--g2.r0"
    assert list(inv.client.argv) == [
        "/opt/venv/bin/python",
        "-m",
        "aibench.runners.mlperf_training",
        "--runs",
        "10",
        "--benchmark",
        "llama31_8b",
        "--ruleset",
        "6.0.0",
        "--run-dir",
        d,
        "--seed",
        "40",
        "--run-timeout",
        "3600",
        "--",
        "srun",
        "-N2",
        "train.sh",
        "{log_dir}",
        "{seed}",
    ]
    assert mlperf_rules.min_runs("llama31_8b", "6.0.0") == 10
    assert inv.client.host == "g1"
    assert inv.client.timeout == 10 * 3600 + 60
    assert inv.artifacts == tuple(f"{d}/run_{k}/result.txt" for k in range(10))
    assert [s.argv for s in inv.setup] == [("mkdir", "-p", d), ("rm", "-f", f"{d}/runs.json")]


@pytest.mark.parametrize(
    ("benchmark", "ruleset", "runs"),
    [("llama31_8b", "5.1.0", 10), ("retinanet", "5.1.0", 5), ("qwen35_397b_grpo", "6.1.0", 3)],
)
def test_rulesets_the_installed_checker_has_are_accepted(
    benchmark: str, ruleset: str, runs: int
) -> None:
    o = {"benchmark": benchmark, "ruleset": ruleset, "command": ["t"]}
    (inv,) = plan("mlperf-training", o, [node("g1")], step="t")
    argv = list(inv.client.argv)
    assert argv[argv.index("--runs") + 1] == str(runs)
    assert argv[argv.index("--ruleset") + 1] == ruleset


def test_runs_and_stdout_logs() -> None:
    o = {
        "benchmark": "anything",
        "runs": 3,
        "command": ["t"],
        "log_file": "stdout",
        "shared_dir": "/data/runs/",
    }
    (inv,) = plan("mlperf-training", o, [node("g1")], step="t")
    assert inv.client.argv[inv.client.argv.index("--runs") + 1] == "3"
    d = "/data/runs/mlperf-training/t/g1.r0"
    assert inv.artifacts == tuple(f"{d}/run_{k}/stdout.txt" for k in range(3))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"benchmark": "resnet", "command": ["t"]}, "not in MLPerf Training 6.0; .*or give runs"),
        ({"benchmark": "llama31_8b", "command": ["t", "{logdir}"]}, "unknown placeholder"),
        ({"benchmark": "llama31_8b", "command": ["t"], "log_file": "{x}/r.txt"}, "under"),
        ({"benchmark": "llama31_8b", "command": ["t"], "log_file": "/data/r.txt"}, "under"),
        ({"benchmark": "llama31_8b", "command": ["t"], "log_file": "{log_dir}/{x}"}, "placeholder"),
        ({"benchmark": "llama31_8b", "command": ["t"], "ruleset": "6"}, "ruleset"),
        ({"benchmark": "llama31_8b", "command": ["t"], "repeats": 3}, "unknown key"),
    ],
)
def test_bad_options(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        plan("mlperf-training", options, [node("n")])


def train(tmp_path: Path, *extra: str, runs: int = 3) -> StepResult:
    o = {"benchmark": "dlrm_dcnv2", "runs": runs, "command": [*TRAIN_LOGREG, *extra], "seed": 1}
    (res,) = run(
        tmp_path / "run",
        suite_of("mlperf-training", o, workdir=tmp_path / "w"),
        [node("ws", "127.0.0.1")],
    )
    return res


def test_three_real_runs_are_checked_timed_and_scored(tmp_path: Path) -> None:
    res = train(tmp_path)
    assert res.status is StepStatus.OK, res.reason
    ttt = sorted(
        (m for m in res.measurements if m.metric == "time_to_train"),
        key=lambda m: m.dims["run_index"],
    )
    assert [m.dims["run_index"] for m in ttt] == [0, 1, 2]
    assert all(m.unit == "ms" and m.dims["benchmark"] == "dlrm_dcnv2" for m in ttt)
    # each time is run_stop - run_start of that run's own log, kept in the raw folder
    raw = tmp_path / "run" / "raw" / "s"
    for m in ttt:
        k = m.dims["run_index"]
        events = [
            json.loads(ln.split(":::MLLOG ", 1)[1])
            for ln in (raw / f"ws.r0.result_{k}.txt").read_text().splitlines()
        ]
        at = {e["key"]: e["time_ms"] for e in events}
        assert m.value == at["run_stop"] - at["run_start"]
        assert (raw / f"ws.r0.result_{k}.compliance.log").is_file()
    facts = [f for f in res.facts if isinstance(f, Fact)]
    assert [f.value for f in facts if f.name == "compliance"] == ["passed"] * 3
    assert [f.value for f in facts if f.name == "status"] == ["success"] * 3
    # olympic scoring: drop the fastest and the slowest, the middle one is the score
    (score,) = [m for m in res.measurements if m.metric == "score"]
    assert isinstance(score, Measurement)
    assert score.value == sorted(m.value for m in ttt)[1]
    by = {f.name: f for f in facts}
    assert by["runs_required"].value == 10
    assert by["runs"].value == 3
    assert by["runs_satisfied"].value is False
    assert by["runs_satisfied"].reason == "3 runs, the rules ask for 10"
    assert by["score_valid"].value is False
    assert by["score_valid"].reason == "3 runs, the rules need 10"
    assert (raw / "ws.r0.runs.json").is_file()
    assert by["mlperf_logging_version"].value == version("mlperf-logging")
    # the quality target of the ruleset's closed config, in the unit of the eval values
    target = by["quality_target"]
    assert (target.value, target.unit, target.dims["key"]) == (0.80275, "ratio", "eval_accuracy")
    assert "AUC higher is better; training_6.0.0/closed_dlrm_dcnv2.yaml" in target.reason
    evals = [m for m in res.measurements if m.metric == "eval_accuracy"]
    assert evals
    assert {m.unit for m in evals} == {"ratio"}
    # every process is recorded on the step: the sequencer, each run with its filled-in
    # argv, and each compliance checker run (here, on this machine) with its argv
    roles = [p.role for p in res.processes]
    assert roles == ["setup", "setup", "launcher", "run", "run", "run", *["checker"] * 3]
    runs = json.loads((raw / "ws.r0.runs.json").read_text())["runs"]
    w = tmp_path / "w" / "mlperf-training" / "s" / "ws.r0"
    for k, p in enumerate(r for r in res.processes if r.role == "run"):
        assert p.host == "ws"
        assert list(p.argv) == runs[k]["argv"]
        assert list(p.argv) == [
            *TRAIN_LOGREG[:2],
            "--log-file",
            f"{w}/run_{k}/result.txt",
            "--seed",
            str(1 + k),
        ]
        assert p.exit_code == 0
    checkers = sorted((p for p in res.processes if p.role == "checker"), key=lambda p: p.argv[-1])
    for k, p in enumerate(checkers):
        assert p.host == "_controller"
        assert p.exit_code == 0
        assert list(p.argv) == [
            sys.executable,
            "-m",
            "mlperf_logging.compliance_checker",
            "--usage",
            "training",
            "--ruleset",
            "6.0.0",
            "--log_output",
            str(raw / f"ws.r0.result_{k}.compliance.log"),
            str(raw / f"ws.r0.result_{k}.txt"),
        ]
    # and they are in the journal that run.json is made of
    (line,) = (tmp_path / "run" / "steps.jsonl").read_text().splitlines()
    assert [p["role"] for p in json.loads(line)["processes"]] == roles


def test_a_log_that_fails_compliance_fails_the_step_with_the_checkers_reason(
    tmp_path: Path,
) -> None:
    res = train(tmp_path, "--break", "no_status", runs=1)
    assert res.status is StepStatus.FAILED
    (checker,) = [p for p in res.processes if p.role == "checker"]
    assert checker.exit_code not in (0, None)  # the checker's own verdict, recorded
    assert res.reason.startswith("mlperf-training: run 0: compliance checker: CHECK for 'run_stop'")
    assert "failed test: 'status' in v['metadata']" in res.reason
    (cc,) = [f for f in res.facts if f.name == "compliance"]
    assert cc.value == "failed"
    assert "run_stop" in cc.reason


def test_a_run_without_run_stop_is_named(tmp_path: Path) -> None:
    res = train(tmp_path, "--break", "no_run_stop", runs=1)
    assert res.status is StepStatus.FAILED
    assert "Required EXACTLY_ONE occurrence of 'run_stop' but found 0" in res.reason


def test_first_complaint_reads_the_checkers_own_lines() -> None:
    text = (
        "INFO - Running compliance on file: x\n"
        "WARNING -  CHECK for 'opt_name' failed in line 10:\n"
        ":::MLLOG {...}\n"
        "failed test:  v['value'] == 'adamw' \n"
        "ERROR - FAILED\n"
    )
    assert first_complaint(text) == (
        "CHECK for 'opt_name' failed in line 10: failed test:  v['value'] == 'adamw'"
    )


def test_a_run_that_does_not_converge_counts_as_the_slowest(tmp_path: Path) -> None:
    """--max-epochs 50: the seed-1 run stops short of the target (aborted), 2 and 3 reach it."""
    res = train(tmp_path, "--max-epochs", "50")
    assert res.status is StepStatus.OK, res.reason
    status = {f.dims["run_index"]: f.value for f in res.facts if f.name == "status"}
    assert status == {0: "aborted", 1: "success", 2: "success"}
    ttt = {m.dims["run_index"]: m.value for m in res.measurements if m.metric == "time_to_train"}
    (score,) = [m.value for m in res.measurements if m.metric == "score"]
    # the aborted run is dropped as the slowest whatever its time; the faster success as
    # the fastest; the slower success is the score
    assert score == max(ttt[1], ttt[2])


def test_a_command_that_cannot_start_is_named_for_each_run(tmp_path: Path) -> None:
    o = {"benchmark": "dlrm_dcnv2", "runs": 2, "command": [str(tmp_path / "no-train"), "{seed}"]}
    (res,) = run(
        tmp_path / "run",
        suite_of("mlperf-training", o, workdir=tmp_path / "w"),
        [node("ws", "127.0.0.1")],
    )
    assert res.status is StepStatus.FAILED
    assert "run 0: no MLLOG file" in res.reason
    assert "exit code 127: cannot start" in res.reason
    assert res.reason.endswith("(and 1 more)")


def test_the_checker_judges_a_published_v51_log_under_ruleset_510(tmp_path: Path) -> None:
    """Ruleset 5.1.0, refused before: the installed checker has its rules and passes a
    published 5.1 llama31_8b log (the checker runs for real, here)."""
    import shutil

    from aibench.runners.mlperf_training import compliance

    fixtures = Path(__file__).resolve().parent.parent / "fixtures" / "mlperf-training"
    log = tmp_path / "result_0.txt"
    shutil.copyfile(fixtures / "v5.1_AMD_MI355X_llama31_8b_result_0.txt", log)
    checked = compliance(log, "5.1.0", tmp_path / "result_0.compliance.log")
    assert checked.passed, checked.output
    assert "training_5.1.0/closed_llama31_8b.yaml" in checked.output
