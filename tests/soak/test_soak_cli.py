"""``aibench soak`` on this machine: stress-ng for real, the sampler beside it, Ctrl-C at
half time, ``--resume`` to the end: one run.json with one continuous series, the report's
soak section, exit codes."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("stress-ng") is None, reason="stress-ng not installed"),
]
AIBENCH = [sys.executable, "-m", "aibench"]


def test_interrupted_soak_resumed_by_the_cli(tmp_path: Path) -> None:
    profile = tmp_path / "profile.yaml"
    profile.write_text(
        "schema_version: 1\nname: soak-short\ntelemetry:\n"
        "  - {id: soak.stress.rate, source: 'guide §3.3', limits: {rate_min_pct: 5, baseline_s: 6}}\n"
    )
    args = [
        "soak",
        "--duration",
        "16s",
        "--chunk",
        "4",
        "--interval",
        "1",
        "--cpu",
        "1",
        "--cpu-load",
        "20",
        "--vm",
        "0",
        "--profile",
        str(profile),
        "--output-dir",
        str(tmp_path),
    ]
    p = subprocess.Popen([*AIBENCH, *args], stderr=subprocess.PIPE, text=True)
    assert p.stderr is not None
    for line in p.stderr:
        if "8/16 s" in line:
            break
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    [run_dir] = [d for d in tmp_path.iterdir() if d.is_dir()]
    first = json.loads((run_dir / "run.json").read_text())
    assert "interrupted" in " ".join(first["notes"])
    r = subprocess.run(
        [*AIBENCH, "soak", "--resume", str(run_dir)], capture_output=True, text=True, timeout=120
    )
    assert r.returncode in (0, 1), r.stderr
    assert "min left" in r.stderr
    run = json.loads((run_dir / "run.json").read_text())
    assert json.loads((run_dir / "soak-state.json").read_text())["elapsed"] >= 16
    rate = next(s for s in run["telemetry"]["series"] if s["metric"] == "bogo_ops_rate")
    assert len(rate["t"]) >= 4
    assert rate["t"] == sorted(rate["t"])
    old = next(s for s in first["telemetry"]["series"] if s["metric"] == "bogo_ops_rate")
    assert rate["t"][: len(old["t"])] == old["t"]
    v = next(v for v in run["verdicts"] if v["check"] == "soak.stress.rate")
    assert v["outcome"] == "PASS"
    assert v["description"] == "guide §3.3"
    html = (run_dir / "report.html").read_text()
    assert "Burn-in soak" in html
    assert "BMC events" in html


def test_a_bad_duration_is_a_usage_error(tmp_path: Path) -> None:
    r = subprocess.run(
        [*AIBENCH, "soak", "--duration", "soon", "--output-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2
    assert "--duration 'soon'" in r.stderr
