"""nvidia-smi dmon: the argv it builds, its bad options, and two nodes end to end through the
orchestrator and a spec, each node's nvidia-smi a replay of a real dmon capture (no GPU
here): one GPU going from idle to 281 W and 57 C, two A100s idling at 32 C at most."""

from __future__ import annotations

from pathlib import Path

import pytest

from aibench.config import ConfigError
from aibench.model import Outcome, Run, StepStatus
from aibench.thresholds import judge, load_spec
from tests.runners.helpers import FIXTURES, PROGRAMS, node, plan, run, suite_of, wrapper

REPLAY = PROGRAMS / "gpu_tool_replay.py"
CAPTURES = {
    "g1": "nvidia-smi-dmon/morpheus-1gpu-idle-to-load.txt",
    "g2": "nvidia-smi-dmon/a100x2-s-pucm-jpg-ofa-fb-bar1.txt",
}


def test_argv() -> None:
    [i] = plan("nvidia-smi-dmon", {}, [node("g1")])
    assert i.client.argv == ("nvidia-smi", "dmon", "-s", "puc", "-d", "1", "-c", "10")
    assert i.client.timeout == 70.0
    dirs = {"nvidia-smi-dmon": "/opt/nv/bin"}
    options = {"count": 300, "delay": 2, "select": "pc", "gpus": [0, 3], "timeout": 900}
    [i] = plan("nvidia-smi-dmon", options, [node("g1", tool_dirs=dirs)])
    assert i.client.argv == (
        "/opt/nv/bin/nvidia-smi",
        *("dmon", "-s", "pc", "-d", "2", "-c", "300", "-i", "0,3"),
    )
    assert i.client.timeout == 900.0


@pytest.mark.parametrize(
    "options",
    [{"select": "pucm; reboot"}, {"count": 0}, {"gpus": [-1]}, {"bin_dir": "rel/bin"}],
)
def test_bad_options_are_config_errors(options: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        plan("nvidia-smi-dmon", options, [node("g1")])


def test_two_nodes_sampled_and_judged(tmp_path: Path) -> None:
    nodes = []
    for name, capture in CAPTURES.items():
        bin_dir = tmp_path / name
        fixture = str(FIXTURES / capture)
        wrapper(bin_dir, "nvidia-smi", REPLAY, "--fixture", fixture, "--binary", "nvidia-smi")
        nodes.append(node(name, tool_dirs={"nvidia-smi-dmon": str(bin_dir)}))
    suite = suite_of("nvidia-smi-dmon", {"count": 5, "delay": 2}, workdir=tmp_path / "w")
    results = run(tmp_path / "run", suite, nodes)
    assert [r.status for r in results] == [StepStatus.OK] * 2, [r.reason for r in results]
    by_node = {r.nodes[0]: r for r in results}
    temps = {
        n: sorted({m.dims["gpu"] for m in r.measurements if m.metric == "temp_gpu"})
        for n, r in by_node.items()
    }
    assert temps == {"g1": [0], "g2": [0, 1]}
    assert all(m.tool == "nvidia-smi-dmon" for r in results for m in r.measurements)
    assert not any(m.metric == "temp_memory" for m in by_node["g1"].measurements)

    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "schema_version: 1\nname: gpu-heat\nchecks:\n"
        "  - id: gpu-temp\n"
        "    select: {tool: nvidia-smi-dmon, metric: temp_gpu}\n"
        "    scope: node\n    aggregate: max\n    unit: C\n    max: 55\n"
    )
    verdicts = judge(load_spec(str(spec)), Run(id="r", suite="t", spec="t", steps=tuple(results)))
    outcome = {v.subject: (v.outcome, v.observed) for v in verdicts if v.check == "gpu-temp"}
    assert outcome == {("g1",): (Outcome.FAIL, 57.0), ("g2",): (Outcome.PASS, 32.0)}
