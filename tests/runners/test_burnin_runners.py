"""Burn-in runners: stress-ng for real; gpu-burn, nvbandwidth and dcgmproftester by replaying
real captured outputs behind wrapper binaries (no GPU here); the argv each one builds."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aibench.config import ConfigError
from aibench.model import StepStatus
from tests.runners.helpers import FIXTURES, PROGRAMS, node, plan, run, suite_of, wrapper

REPLAY = PROGRAMS / "gpu_tool_replay.py"
STRICT = pytest.mark.skipif(shutil.which("stress-ng") is None, reason="stress-ng not installed")


def test_argv_of_each_runner() -> None:
    n = node("g1")
    [i] = plan("stress-ng", {"duration": 5, "cpu": 2, "vm": 1, "vm_bytes": "64M"}, [n])
    assert i.client.argv == (
        "stress-ng",
        "--cpu",
        "2",
        "--vm",
        "1",
        "--vm-bytes",
        "64M",
        "--timeout",
        "5s",
        "--metrics-brief",
        "--stdout",
    )
    [i] = plan(
        "gpu-burn",
        {
            "duration": 30,
            "doubles": True,
            "tensor_cores": True,
            "memory": "90%",
            "bin_dir": "/opt/gpu-burn",
        },
        [n],
    )
    assert i.client.argv == (
        "/opt/gpu-burn/gpu_burn",
        "-d",
        "-tc",
        "-m",
        "90%",
        "-c",
        "/opt/gpu-burn/compare.ptx",
        "30",
    )
    [i] = plan("nvbandwidth", {"testcases": ["host_to_device_memcpy_ce"]}, [n])
    assert i.client.argv == ("nvbandwidth", "-j", "-t", "host_to_device_memcpy_ce")
    [i] = plan("dcgmproftester", {"field_id": 1004, "duration": 10, "gpus": [0, 1]}, [n])
    assert i.client.argv == (
        "dcgmproftester12",
        "--no-dcgm-validation",
        "-t",
        "1004",
        "-d",
        "10",
        "-i",
        "0,1",
    )


@pytest.mark.parametrize(
    ("tool", "options"),
    [
        ("stress-ng", {"cpu_method": "x; rm -rf /"}),
        ("stress-ng", {"vm_bytes": "lots"}),
        ("gpu-burn", {"bin_dir": "relative/dir"}),
        ("nvbandwidth", {"testcases": ["--help"]}),
        ("dcgmproftester", {"field_id": 7}),
    ],
)
def test_bad_options_are_config_errors(tool: str, options: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        plan(tool, options, [node("g1")])


@STRICT
def test_stress_ng_runs_for_real_on_two_nodes_at_once(tmp_path: Path) -> None:
    suite = suite_of("stress-ng", {"duration": 2, "cpu": 1, "vm": 1, "vm_bytes": "16M"})
    results = run(tmp_path, suite, [node("a"), node("b")])
    assert [r.status for r in results] == [StepStatus.OK, StepStatus.OK], [
        r.reason for r in results
    ]
    for r in results:
        rates = {m.dims["stressor"]: m.value for m in r.measurements if m.metric == "bogo_ops_rate"}
        assert set(rates) == {"cpu", "vm"}
        assert rates["cpu"] > 0
        assert r.tool_version.startswith("0.")


@pytest.mark.parametrize(
    ("tool", "binary", "fixture", "options", "ok", "metric"),
    [
        (
            "gpu-burn",
            "gpu_burn",
            "gpu-burn/a100x8-doubles-tc-ok.log",
            {"duration": 30, "doubles": True, "tensor_cores": True},
            True,
            "gflops",
        ),
        (
            "gpu-burn",
            "gpu_burn",
            "gpu-burn/issue12-16gpu-faulty.txt",
            {"duration": 30},
            False,
            "gflops",
        ),
        ("nvbandwidth", "nvbandwidth", "nvbandwidth/constructed_v0.10-2gpu.json", {}, True, "bw"),
        (
            "dcgmproftester",
            "dcgmproftester12",
            "dcgmproftester/issue239-dcgm4.2.3-t1007.txt",
            {"field_id": 1007, "duration": 10},
            True,
            "activity_mean",
        ),
        (
            "dcgmproftester",
            "dcgmproftester12",
            "dcgmproftester/issue102-not-root.txt",
            {"field_id": 1004, "duration": 10},
            False,
            None,
        ),
    ],
)
def test_replayed_gpu_tools_through_the_orchestrator(
    tmp_path: Path,
    tool: str,
    binary: str,
    fixture: str,
    options: dict[str, object],
    ok: bool,
    metric: str | None,
) -> None:
    bin_dir = tmp_path / "bin"
    wrapper(bin_dir, binary, REPLAY, "--fixture", str(FIXTURES / fixture), "--binary", binary)
    suite = suite_of(tool, {**options, "bin_dir": str(bin_dir)}, workdir=tmp_path / "w")
    [r] = run(tmp_path / "run", suite, [node("g1")])
    assert (r.status is StepStatus.OK) is ok, r.reason
    if metric:
        ms = [m for m in r.measurements if m.metric == metric]
        assert ms, r.reason
        assert all(m.nodes == ("g1",) for m in ms)
    if not ok:
        assert r.reason


def test_the_replay_refuses_an_argv_the_tool_would_refuse(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    wrapper(
        bin_dir,
        "gpu_burn",
        REPLAY,
        "--fixture",
        str(FIXTURES / "gpu-burn/a100x8-doubles-tc-ok.log"),
        "--binary",
        "gpu_burn",
    )
    import subprocess

    p = subprocess.run([str(bin_dir / "gpu_burn"), "-x", "30"], capture_output=True, text=True)
    assert p.returncode == 2
    assert "unknown option" in p.stderr
