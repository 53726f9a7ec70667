"""The soak as a run like any other, on this machine: judged by the pipeline and recorded
in ``judgements``, re-judged by ``aibench check`` with no options; ``--dry-run`` starts
nothing; options that mean nothing to a soak are refused with one line (exit 2); the
built-in ``soak`` suite is known to ``plan`` and ``submit``; ``--resume`` honours a new
``--duration`` and refuses other settings; gpu-burn is on by default on GPU nodes and a
GPU node soaked without it is MISSING."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.aibench_cli import aibench, only_run

INVENTORY = """\
schema_version: 1
name: one
nodes:
  - name: vm
    executor: local
    gpus: {count: 2, model: H100}
"""
SHORT = ("--chunk", "2", "--interval", "1", "--cpu", "1", "--cpu-load", "10", "--vm", "0")


@pytest.fixture
def inventory(tmp_path: Path) -> Path:
    p = tmp_path / "inv.yaml"
    p.write_text(INVENTORY)
    return p


def test_dry_run_prints_the_plan_and_makes_nothing(tmp_path: Path, inventory: Path) -> None:
    for args in (
        ("soak", "--dry-run", "--inventory", str(inventory)),
        ("run", "--suite", "soak", "--dry-run", "--inventory", str(inventory)),
        ("plan", "--suite", "soak", "--inventory", str(inventory)),
    ):
        r = aibench(*args, "--duration", "90s", "--output-dir", str(tmp_path / "runs"))
        assert r.returncode == 0, r.stderr
        assert "nothing is started" in r.stdout
        assert "stress-ng --cpu 0" in r.stdout
        assert "gpu_burn" in r.stdout  # the node declares GPUs: gpu-burn by default
        assert not (tmp_path / "runs").exists()
    r = aibench("soak", "--dry-run", "--no-gpu-burn", "--inventory", str(inventory))
    assert "soak.gpu_burn will be MISSING" in r.stdout


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (("run", "--suite", "soak", "--steps", "stress"), "--steps"),
        (("run", "fio", "--suite", "soak"), "a tool"),
        (("run", "--suite", "soak", "--history", "h.sqlite"), "--history"),
        (("run", "--suite", "smoke", "--duration", "3s"), "--duration"),
        (("soak", "--spec", "default", "--dry-run"), "no telemetry rows"),
        (("run", "--suite", "soak", "--nodes", "nope", "--dry-run"), "--nodes"),  # honoured
    ],
)
def test_options_a_soak_cannot_use_are_refused(
    tmp_path: Path, args: tuple[str, ...], flag: str
) -> None:
    r = aibench(*args, "--output-dir", str(tmp_path))
    assert r.returncode == 2
    assert flag in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert list(tmp_path.iterdir()) == []


def test_submit_knows_the_soak_suite(tmp_path: Path, inventory: Path) -> None:
    job = tmp_path / "job.sh"
    r = aibench(
        "submit", "--suite", "soak", "--inventory", str(inventory), "--script-only", str(job)
    )
    assert r.returncode == 0, r.stderr
    assert "--suite soak" in job.read_text()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("stress-ng") is None, reason="stress-ng not installed")
def test_a_soak_is_judged_recorded_and_re_judged(tmp_path: Path, inventory: Path) -> None:
    runs = tmp_path / "runs"
    r = aibench(
        "run", "--suite", "soak", "--inventory", str(inventory), "--duration", "4s",
        "--output-dir", str(runs), "--quiet",
    )  # fmt: skip
    assert r.returncode == 1, r.stderr  # no temperature here, no gpu-burn binary
    run_dir, run = only_run(runs)
    assert run.suite == "soak"
    assert run.spec == "soak"
    assert [j["by"] for j in run.judgements] == ["aibench soak"]
    burn = [v for v in run.verdicts if v.check == "soak.gpu_burn"]
    assert [v.outcome.value for v in burn] == ["FAIL"], burn  # asked for, could not run
    check = aibench("check", str(run_dir), "--format", "json")
    assert check.returncode == 1, check.stderr
    again = json.loads(check.stdout)
    assert again["spec"] == "soak"
    assert again["verdicts"] == [v.to_dict() for v in run.verdicts]
    assert "MISSING" not in {v["outcome"] for v in again["verdicts"] if v["origin"] != "telemetry"}


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("stress-ng") is None, reason="stress-ng not installed")
def test_without_gpu_stress_a_gpu_node_is_missing_and_resume_takes_a_duration(
    tmp_path: Path, inventory: Path
) -> None:
    runs = tmp_path / "runs"
    r = aibench(
        "soak", "--inventory", str(inventory), "--duration", "2s", "--no-gpu-burn",
        *SHORT, "--output-dir", str(runs), "--quiet",
    )  # fmt: skip
    assert r.returncode == 1, r.stderr
    run_dir, run = only_run(runs)
    burn = [v for v in run.verdicts if v.check == "soak.gpu_burn"]
    assert [v.outcome.value for v in burn] == ["MISSING"]
    refused = aibench("soak", "--resume", str(run_dir), "--chunk", "1")
    assert refused.returncode == 2
    assert "--chunk cannot change on resume" in refused.stderr
    longer = aibench("soak", "--resume", str(run_dir), "--duration", "4s", "--quiet")
    assert longer.returncode == 1, longer.stderr
    state = json.loads((run_dir / "soak-state.json").read_text())
    assert state["elapsed"] >= 4
    _, resumed = only_run(runs)
    assert [j["by"] for j in resumed.judgements] == ["aibench soak"]
    assert resumed.started == run.started
    assert any("4 of 4 s of stress" in n for n in resumed.notes), resumed.notes
