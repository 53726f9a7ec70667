"""A tiny local suite run by the real ``aibench`` CLI, and what an operator does to it.

Two fio steps on this machine (a quick one, then one that runs a few seconds so that a
signal lands inside it), a spec that judges the quick one, an inventory file of this
machine. Each test writes its own copies under its tmp_path and edits them as an
operator would.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from aibench.model import Run

FIO = Path("/usr/bin/fio")
needs_fio = pytest.mark.skipif(not FIO.exists(), reason="needs fio (make system-packages)")

SUITE = """\
schema_version: 1
name: tiny
settings: {{workdir: {workdir}}}
steps:
  - name: quick
    tool: fio
    options: {{rw: read, bs: 1M, size: 4M, runtime: 0.3, iodepth: 1}}
  - name: slow
    tool: fio
    options: {{rw: read, bs: 1M, size: 4M, runtime: {slow}, iodepth: 1}}
"""

SPEC = """\
schema_version: 1
name: tiny-spec
description: the quick step reads at all
checks:
  - id: quick-read
    select: {{tool: fio, metric: bw, step: quick, dims: {{direction: read}}}}
    scope: node
    unit: MB/s
    min: {floor}
"""

INVENTORY = """\
schema_version: 1
name: {name}
nodes:
  - name: here
    address: 127.0.0.1
    executor: local
"""


class Bed:
    """The input files of one test and the CLI over them."""

    def __init__(self, root: Path, slow: float = 3.0) -> None:
        self.root = root
        self.suite = root / "tiny.yaml"
        self.spec = root / "tiny-spec.yaml"
        self.inventory = root / "here.yaml"
        self.runs = root / "runs"
        self.suite.write_text(SUITE.format(workdir=root / "scratch", slow=slow))
        self.spec.write_text(SPEC.format(floor=1))
        self.inventory.write_text(INVENTORY.format(name="here"))

    def argv(self, *extra: str) -> list[str]:
        return [
            sys.executable, "-m", "aibench", "run", "--suite", str(self.suite),
            "--spec", str(self.spec), "--inventory", str(self.inventory),
            "--output-dir", str(self.runs), "--quiet", *extra,
        ]  # fmt: skip

    def start(self, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.argv(*extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )

    def run_dir(self) -> Path:
        dirs = [d for d in self.runs.iterdir() if d.is_dir()]
        assert len(dirs) == 1, dirs
        return dirs[0]

    def stop_in_slow(
        self, proc: subprocess.Popen[str], sig: int = signal.SIGTERM, *, sampled: bool = False
    ) -> str:
        """Wait until the slow step's fio has started (and, ``sampled``, the telemetry
        holds a sample), send ``sig``; aibench's stderr."""
        try:
            wait_for(lambda: any(self.runs.glob("*/raw/slow/*.stdout")), proc)
            if sampled:
                wait_for(lambda: any(_size(p) for p in self.runs.glob("*/telemetry/*.jsonl")), proc)
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        return err


def wait_for(ready: Any, proc: subprocess.Popen[str] | None = None, limit: float = 120) -> None:
    deadline = time.monotonic() + limit
    while not ready():
        if proc is not None and proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"aibench ended first ({proc.returncode}): {out}{err}")
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


def aibench(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aibench", *args],
        capture_output=True, text=True, timeout=300, env=env, check=False,
    )  # fmt: skip


def record(run_dir: Path) -> Run:
    return Run.from_dict(json.loads((run_dir / "run.json").read_text()))


def statuses(run: Run) -> dict[str, str]:
    return {s.step_id: s.status.value for s in run.steps}


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "Z" not in _state(pid)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"
