"""Nothing aibench starts on this machine outlives it: ``kill -9`` of aibench in the middle
of a soak, and the soak's stress-ng and host probe end at once (the kernel's
PR_SET_PDEATHSIG, set by the local executor)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("stress-ng") is None, reason="stress-ng not installed"),
]
AIBENCH = [sys.executable, "-m", "aibench"]


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _wait(cond: Callable[[], bool], seconds: float) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        if cond():
            return time.monotonic() - t0
        time.sleep(0.2)
    return -1.0


def _children(pid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == pid:
                out.append(int(d))
    return out


def test_kill_9_mid_soak_on_this_machine_leaves_nothing(tmp_path: Path) -> None:
    p = subprocess.Popen(
        [
            *AIBENCH,
            "soak",
            "--duration",
            "120s",
            "--chunk",
            "60",
            "--interval",
            "1",
            "--cpu",
            "1",
            "--cpu-load",
            "10",
            "--vm",
            "0",
            "--output-dir",
            str(tmp_path),
            "--quiet",
        ],
        stderr=subprocess.DEVNULL,
    )
    try:
        # stress-ng and the probe (beside them, the keeper that ends them if aibench dies)
        assert _wait(lambda: {_comm(c) for c in _children(p.pid)} >= {"stress-ng", "sh"}, 30) >= 0
        started = _children(p.pid)
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait(10)
    gone = _wait(lambda: not any(Path(f"/proc/{c}").exists() for c in started), 10)
    assert gone >= 0, [(c, _comm(c)) for c in started if Path(f"/proc/{c}").exists()]
