"""Nothing aibench starts on this machine outlives it: ``kill -9`` of aibench in the middle
of a soak, and the soak's stress-ng and host probe end at once (the kernel's
PR_SET_PDEATHSIG, set by the local executor)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.soak import lease
from tests.testbed import net

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("stress-ng") is None, reason="stress-ng not installed"),
]
AIBENCH = [sys.executable, "-m", "aibench"]


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
        names = {"stress-ng", "sh"}
        assert (
            lease.seconds_until(lambda: {net.comm(c) for c in _children(p.pid)} >= names, 30) >= 0
        )
        started = _children(p.pid)
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait(10)
    gone = lease.seconds_until(lambda: not any(Path(f"/proc/{c}").exists() for c in started), 10)
    assert gone >= 0, [(c, net.comm(c)) for c in started if Path(f"/proc/{c}").exists()]
