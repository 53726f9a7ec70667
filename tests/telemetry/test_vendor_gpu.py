"""GPU telemetry of AMD and Ascend nodes: the probe loop run for real, the tool a replay of
a real capture (``amd-smi metric --json`` of an RX 6600, ``npu-smi info`` of eight 910B2),
the samples the figures the tool printed."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from aibench.executors.local import LocalExecutor
from aibench.inventory import Node
from aibench.telemetry import Sampler
from aibench.telemetry.vendor_gpu import argv
from tests.golden import FIXTURES
from tests.runners.helpers import PROGRAMS, wrapper

CASES = {
    "amd-smi": FIXTURES / "amd-smi-metric" / "rx6600-list-rocm6.x.json",
    "npu-smi": FIXTURES / "npu-smi-info" / "910b2-23.0.7-eight-npus-idle.txt",
}


@pytest.mark.parametrize("tool", sorted(CASES))
def test_a_node_without_nvidia_smi_is_sampled_with_its_own_gpu_tool(
    tool: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    replay = PROGRAMS / "gpu_tool_replay.py"
    wrapper(bin_dir, tool, replay, "--fixture", str(CASES[tool]), "--binary", tool)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    nodes = [Node(name="n1", facts={"gpus": {"count": 8}})]
    loc = LocalExecutor()
    missing = str(tmp_path / "no-such-nvidia-smi")  # NVIDIA's probe fails: the next is tried
    s = Sampler(tmp_path / "tel", nodes, lambda n: loc, interval=0.5, host_probe=False,
                gpu_binary=missing)  # fmt: skip

    async def sample() -> None:
        await s.start()
        try:
            await asyncio.sleep(3.0)
        finally:
            await s.stop()

    asyncio.run(sample())
    c = s.compact()
    temps = [x for x in c["series"] if x["metric"] == "temp_gpu"]
    assert temps, c
    text = CASES[tool].read_text()
    if tool == "amd-smi":
        assert '"hotspot"' in text
        assert {x["key"] for x in temps} == {"gpu0"}
        assert set(temps[0]["v"]) == {37.0}
        power = [x for x in c["series"] if x["metric"] == "power"]
        assert set(power[0]["v"]) == {6.0}
    else:
        assert len({x["key"] for x in temps}) == 8
        assert "96.5" in text
        power = {x["key"]: x["v"][0] for x in c["series"] if x["metric"] == "power"}
        assert power["gpu0"] == 96.5


def test_the_loop_ends_at_once_where_the_tool_is_missing(tmp_path: Path) -> None:
    import subprocess

    env = {"PATH": f"/usr/bin:/bin:{tmp_path}"}  # no amd-smi there
    r = subprocess.run(argv(0.5, "amd-smi"), capture_output=True, text=True, env=env, timeout=10, check=False)  # fmt: skip
    assert r.returncode == 127
    assert "amd-smi: not found" in r.stderr
