"""rocm-bandwidth-test runner on this machine, judged by the mi300x profile.

No AMD GPU here: the binary is a REPLAY that prints a real captured rocm-bandwidth-test
2.3.11 output (tests/fixtures/rocm-bandwidth-test, four GPUs on x4/x8 links), installed
as ``rocm-bandwidth-test`` in a temporary bin_dir. The runner's argv, the orchestrator,
the parser and the judgement are real.
"""

from __future__ import annotations

from pathlib import Path

from aibench.model import Outcome
from tests.aibench_cli import aibench, only_run

LOG = Path(__file__).resolve().parents[1] / "fixtures" / "rocm-bandwidth-test"
LOG = LOG / "v2.3.11_ryzen_2x_rx580_2x_radeon_vii_x4_links.txt"


def test_copy_bandwidth_of_x4_links_fails_the_mi300x_floors(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "rocm-bandwidth-test"
    tool.write_text(f'#!/bin/sh\n[ $# -eq 0 ] || exit 2\nexec cat "{LOG}"\n')
    tool.chmod(0o755)
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "schema_version: 1\nname: copy\nsteps:\n"
        f"  - {{name: copy, tool: rocm-bandwidth-test, options: {{bin_dir: {bin_dir}}}}}\n"
    )
    p = aibench(
        "run", "--suite", str(suite), "--spec", "mi300x", "--output-dir", str(tmp_path / "runs"),
        "--quiet", timeout=120,
    )  # fmt: skip
    assert p.returncode == 1, p.stdout + p.stderr
    _, run = only_run(tmp_path / "runs")
    (step,) = run.steps
    assert step.tool_version == "2.3.11"
    h2d = sorted(
        m.value
        for m in step.measurements
        if m.dims["link"] == "h2d" and m.dims["direction"] == "unidirectional"
    )
    assert h2d == [2.770479, 2.771179, 3.578846, 7.157202]
    got = {v.check: v for v in run.verdicts}
    assert got["copy-host-device"].outcome is Outcome.FAIL
    assert got["copy-host-device"].observed == 2.770479  # the worst host-to-GPU copy
    assert got["copy-peer"].observed == 2.628035
