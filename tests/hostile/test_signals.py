"""SIGTERM is handled as SIGINT is: the steps stop, the record and the reports are
written with the interruption in them, the exit code is 143, the console says how to
resume; a second signal ends aibench at once. Before: SIGTERM left no run.json and no
report (exit 143 as from SIGKILL)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.hostile.tiny import Bed, aibench, needs_fio, record, statuses


@needs_fio
def test_sigterm_mid_step_writes_the_record_then_resume_finishes_it(tmp_path: Path) -> None:
    bed = Bed(tmp_path)
    err = bed.stop_in_slow(bed.start("--telemetry", "0.5", "--vendor", "ACME"), sampled=True)
    run_dir = bed.run_dir()
    assert f"aibench run --resume {run_dir}" in err, err
    for name in ("run.json", "report.html", "junit.xml", "summary.md", "manifest.sha256"):
        assert (run_dir / name).is_file(), name
    first = record(run_dir)
    assert statuses(first) == {"quick/here/r0": "ok", "slow/here/r0": "not_run"}
    (stop,) = first.interruptions
    assert stop["signal"] == "SIGTERM"
    assert stop["running"] == ["slow/here/r0"]
    assert any("interrupted" in n for n in first.notes)
    quick_started = first.steps[0].started
    samples = _samples(first.telemetry)
    assert samples, "telemetry sampled before the signal"

    res = aibench("run", "--resume", str(run_dir), "--quiet")
    assert res.returncode == 0, res.stdout + res.stderr
    final = record(run_dir)
    assert statuses(final) == {"quick/here/r0": "ok", "slow/here/r0": "ok"}
    assert final.steps[0].started == quick_started, "the finished step ran again"
    assert final.started == first.started, "started is the original start"
    assert final.signoff["vendor"] == "ACME", "the sign-off names of the start are kept"
    assert [x["signal"] for x in final.interruptions] == ["SIGTERM"]
    assert not any("interrupted before the end" in n for n in final.notes)
    assert f"interrupted by SIGTERM at {stop['at']}; running: slow/here/r0" in final.notes
    assert _samples(final.telemetry) > samples, "telemetry resumed with the run"


def _samples(telemetry: Mapping[str, Any]) -> int:
    return sum(len(s["t"]) for s in telemetry.get("series", ()))


@needs_fio
def test_sigint_is_exit_130_with_the_same_record(tmp_path: Path) -> None:
    bed = Bed(tmp_path)
    proc = bed.start()
    bed.stop_in_slow(proc, signal.SIGINT)
    assert proc.returncode == 130
    (stop,) = record(bed.run_dir()).interruptions
    assert stop["signal"] == "SIGINT"


@needs_fio
def test_sigterm_exit_code_is_143(tmp_path: Path) -> None:
    bed = Bed(tmp_path)
    proc = bed.start()
    bed.stop_in_slow(proc)
    assert proc.returncode == 143


def test_a_second_signal_ends_at_once(tmp_path: Path) -> None:
    """The first signal is noted and the record would be written; the second ends the
    process there (128 + its number), after killing what runs."""
    program = textwrap.dedent(
        """
        import os, signal, time
        from aibench.stopping import Stopper
        with Stopper() as stop:
            stop.at_once.append(lambda: print("killed what runs", flush=True))
            os.kill(os.getpid(), signal.SIGTERM)
            assert stop.stopped and stop.interruption.signal == "SIGTERM"
            print("first noted", flush=True)
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
            print("not reached", flush=True)
        """
    )
    res = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=False
    )
    assert res.returncode == 143, res.stderr
    assert res.stdout.splitlines() == ["first noted", "killed what runs"]
    assert "SIGTERM again: ending now" in res.stderr
