"""End to end on this machine: the real CLI drives real fio and iperf3.

The numbers in run.json must be the numbers in the tools' own raw JSON beside them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aibench.model import Run
from tests.aibench_cli import aibench, only_run

SUITE = """\
schema_version: 1
name: e2e
description: short end-to-end run
settings: {{workdir: {workdir}, base_port: {port}}}
steps:
  - name: fio-seq-read
    tool: fio
    repeats: 2
    options: {{rw: read, bs: 1M, size: 16M, runtime: 1, iodepth: 4}}
  - name: fio-rand-write
    tool: fio
    options: {{rw: randwrite, bs: 4k, size: 16M, runtime: 1, iodepth: 4}}
  - name: iperf3-tcp
    tool: iperf3
    placement: pairs
    options: {{duration: 1, streams: 2, bidir: true, bandwidth: 200M}}
"""

pytestmark = pytest.mark.skipif(
    not all(Path(p).exists() for p in ("/usr/bin/fio", "/usr/bin/iperf3")),
    reason="needs fio and iperf3 (make system-packages)",
)


def write_suite(tmp_path: Path, port: int, text: str = SUITE) -> Path:
    p = tmp_path / "e2e.yaml"
    p.write_text(text.format(workdir=tmp_path / "scratch", port=port))
    return p


def test_cli_run_numbers_equal_the_tools_own_json(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, 15611)
    res = aibench("run", "--suite", str(suite), "--output-dir", str(tmp_path / "runs"), "--quiet")
    assert res.returncode in (0, 1), res.stderr
    run_dir, run = only_run(tmp_path / "runs")
    for name in ("run.json", "report.html", "junit.xml", "summary.md", "steps.jsonl"):
        assert (run_dir / name).is_file(), name
    assert run.spec == "default"
    assert len(run.steps) == 4
    assert all(s.ok for s in run.steps), [s.reason for s in run.steps]
    assert run.verdicts, "the default spec judged something"
    checked = 0
    for step in run.steps:
        raw = json.loads((run_dir / step.stdout_path).read_text())
        got = {
            (m.metric, m.dims.get("direction"), m.dims.get("side")): m.value
            for m in step.measurements
        }
        if step.tool == "fio":
            job = raw["jobs"][0]
            direction = "read" if step.step == "fio-seq-read" else "write"
            assert got[("bw", direction, None)] == job[direction]["bw"]
            assert got[("iops", direction, None)] == job[direction]["iops"]
            checked += 2
        else:  # --bidir: each direction's sums, the reverse ones under _bidir_reverse
            for direction, suffix in (("forward", ""), ("reverse", "_bidir_reverse")):
                for side, key in (("receiver", "sum_received"), ("sender", "sum_sent")):
                    value = raw["end"][key + suffix]["bits_per_second"]
                    assert got[("throughput", direction, side)] == value
                    checked += 1
        assert step.tool_version, "tool version recorded"
        assert step.processes[-1].argv[0] == step.tool
    assert checked == 10
    env = run.environment[run.steps[0].nodes[0]]
    assert env["kernel"]
    assert env["cpu_model"]
    assert env["memory_gib"] > 0
    assert env["tools"]["fio"].startswith("3.")
    assert "iperf3" in env["tools"]


def test_interrupt_then_resume_keeps_what_was_measured(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, 15631)
    out = tmp_path / "runs"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "aibench",
            "run",
            "--suite",
            str(suite),
            "--output-dir",
            str(out),
            "--quiet",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        journal = None
        while time.monotonic() < deadline:
            found = list(out.glob("*/steps.jsonl")) if out.exists() else []
            if found and len(found[0].read_text().splitlines()) >= 1:
                journal = found[0]
                break
            time.sleep(0.05)
        assert journal is not None, "the run never recorded a step"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    run_dir = journal.parent
    first = Run.from_dict(json.loads((run_dir / "run.json").read_text()))
    done_before = {s.step_id: s.started for s in first.steps if s.status.value != "not_run"}
    assert done_before, "something was measured before the interrupt"
    assert any("interrupted" in n for n in first.notes)
    assert any(s.status.value == "not_run" for s in first.steps)
    # no tool process is left behind
    leftover = subprocess.run(
        ["pgrep", "-f", f"--directory={tmp_path}"], capture_output=True, text=True
    )
    assert leftover.stdout.strip() == ""
    res = aibench("run", "--resume", str(run_dir), "--quiet")
    assert res.returncode in (0, 1), res.stderr
    final = Run.from_dict(json.loads((run_dir / "run.json").read_text()))
    assert all(s.ok for s in final.steps), [s.reason for s in final.steps]
    for s in final.steps:
        if s.step_id in done_before:
            assert s.started == done_before[s.step_id], f"{s.step_id} was run again"


def test_missing_tool_everywhere_is_exit_3(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, 15651, SUITE.split("  - name: fio-rand-write")[0])
    env = dict(os.environ, PATH=str(Path(sys.executable).parent))  # no /usr/bin: no fio
    res = aibench(
        "run", "--suite", str(suite), "--output-dir", str(tmp_path / "runs"), "--quiet", env=env
    )
    assert res.returncode == 3, res.stdout + res.stderr
    assert "nothing could be run" in res.stderr
    _, run = only_run(tmp_path / "runs")
    assert all(s.reason.startswith("setup mkdir") or "not found" in s.reason for s in run.steps)
    assert run.verdicts
    assert all(v.outcome.failing for v in run.verdicts), (
        "a check that was not measured never passes"
    )
