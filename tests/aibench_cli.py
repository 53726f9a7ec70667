"""The aibench CLI as a child process, as a person runs it, and the run it stored.

(``tests/cli`` holds the CLI's own tests; this module serves tests all over the tree.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aibench.model import Run


def aibench(
    *args: str,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """``python -m aibench ARGS`` with this interpreter; stdout and stderr captured as text.

    The exit code is the caller's to check (no ``check``): tests assert on it.
    """
    argv = [sys.executable, "-m", "aibench", *args]
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd, check=False
    )


def only_run_dir(runs_dir: Path) -> Path:
    """The one run directory that ``aibench run --output-dir RUNS_DIR`` created."""
    dirs = [d for d in runs_dir.iterdir() if d.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def only_run(runs_dir: Path) -> tuple[Path, Run]:
    """The one run directory under ``runs_dir`` and the Run its run.json holds."""
    run_dir = only_run_dir(runs_dir)
    return run_dir, Run.from_dict(json.loads((run_dir / "run.json").read_text()))


def node_values(run: dict[str, Any], metric: str, **dims: Any) -> dict[str, float]:
    """node -> value of the measurements of ``metric`` with ``dims`` in a run.json's steps
    (also those of failed steps)."""
    got = {}
    for s in run["steps"]:
        for m in s["measurements"]:
            if m["metric"] == metric and all(m["dims"].get(k) == v for k, v in dims.items()):
                got[m["nodes"][0]] = m["value"]
    return got
