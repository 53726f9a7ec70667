"""hccl-tests runner: the argv it plans (table tests) and a real mpirun on this machine.

No NPU here, so the binary is a REPLAY (tests/programs/hccl_test_replay.py) of the
8-NPU ``all_reduce_test`` output Huawei publishes in its HCCL Test documentation,
installed as ``all_reduce_test`` in a temporary bin_dir. The runner's argv, a real
``mpirun`` starting the ranks, the orchestrator, the parser and the collect hook are real.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from aibench.config import validate
from aibench.errors import ConfigError, UserError
from aibench.model import StepStatus
from aibench.runners.hccl_tests import DEFAULT_BIN_DIR, HcclTestsOptions
from tests.runners.helpers import FIXTURES, PROGRAMS, is_root, node, plan, run, suite_of, wrapper

LOG = FIXTURES / "hccl-tests" / "huawei-doc-all_reduce_test-8npu-8K-64M.txt"
REPLAY = PROGRAMS / "hccl_test_replay.py"
needs_mpirun = pytest.mark.skipif(shutil.which("mpirun") is None, reason="needs openmpi-bin")


@pytest.mark.parametrize(
    ("options", "nodes", "head", "program"),
    [
        # one node, NPU count from the inventory: -p 8 and 8 local slots, CANN's bin dir
        (
            {},
            [node("npu01", "10.0.0.1", gpus=8)],
            ("mpirun", "--host", "localhost:8", "-np", "8"),
            (f"{DEFAULT_BIN_DIR}/all_reduce_test", "-p", "8", "-b", "8K", "-e", "1G", "-f",
             "2", "-n", "20", "-w", "5", "-c", "1"),
        ),
        # two nodes, 4 NPUs each, fp16 sum, checking off, own bin dir
        (
            {"npus_per_node": 4, "datatype": "fp16", "op": "sum", "check": False,
             "bin_dir": "/opt/hccl_test/bin", "collective": "reduce_scatter"},
            [node("a", "10.0.0.1"), node("b", "10.0.0.2")],
            ("mpirun", "--host", "10.0.0.1:4,10.0.0.2:4", "-np", "8"),
            ("/opt/hccl_test/bin/reduce_scatter_test", "-p", "4", "-b", "8K", "-e", "1G",
             "-f", "2", "-n", "20", "-w", "5", "-c", "0", "-d", "fp16", "-o", "sum"),
        ),
    ],
)  # fmt: skip
def test_argv(
    options: dict[str, object], nodes: list, head: tuple[str, ...], program: tuple[str, ...]
) -> None:
    (inv,) = plan("hccl-tests", options, nodes)
    argv = inv.client.argv
    assert argv[:5] == head
    assert argv[-len(program) :] == program
    assert inv.parser == "hccl-tests"


def test_hccl_environment_is_forwarded_by_name_never_in_argv() -> None:
    opts = {
        "hccl_buffsize": 200,
        "hccl_socket_ifname": "eth0",
        "env": {"ASCEND_GLOBAL_LOG_LEVEL": "3"},
    }
    (inv,) = plan("hccl-tests", opts, [node("a", "10.0.0.1"), node("b", "10.0.0.2")])
    argv = inv.client.argv
    forwarded = [argv[i + 1] for i, a in enumerate(argv) if a == "-x"]
    assert forwarded == ["HCCL_BUFFSIZE", "HCCL_SOCKET_IFNAME", "ASCEND_GLOBAL_LOG_LEVEL"]
    assert inv.client.env["HCCL_BUFFSIZE"] == "200"
    assert "200" not in argv
    assert "eth0" not in argv


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"bin_dir": "relative/bin"}, "absolute path"),
        ({"max_bytes": "1T"}, "not an hccl_test size"),
        ({"extra": ["; rm -rf /"]}, "must look like"),
        ({"env": {"BAD NAME": "x"}}, "invalid environment variable name"),
    ],
)
def test_bad_options_are_refused_at_load(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        validate(HcclTestsOptions, options, "suite.yaml", prefix="steps[0].options")


def test_multinode_from_inside_a_slurm_step_is_refused() -> None:
    with pytest.raises(UserError, match="Slurm job step"):
        plan("hccl-tests", {}, [node("a", executor="slurm"), node("b", executor="slurm")])


def replay_bin(tmp_path: Path, *extra: str) -> Path:
    bin_dir = tmp_path / "bin"
    wrapper(bin_dir, "all_reduce_test", REPLAY, "--fixture", str(LOG), *extra)
    return bin_dir


@needs_mpirun
def test_mpirun_two_local_ranks_replay_the_published_run(tmp_path: Path) -> None:
    options = {
        "npus_per_node": 2,
        "launcher_args": ["--oversubscribe"],
        "allow_run_as_root": is_root(),
        "bin_dir": str(replay_bin(tmp_path)),
        "hccl_connect_timeout": 600,
        "min_bytes": "8K",
        "max_bytes": "64M",
    }
    (res,) = run(tmp_path / "run", suite_of("hccl-tests", options), [node("npu", "127.0.0.1")])
    assert res.status is StepStatus.OK, res.reason
    (proc,) = res.processes
    assert proc.argv[:5] == ("mpirun", "--host", "localhost:2", "-np", "2")
    stderr = (tmp_path / "run" / res.stderr_path).read_text()
    assert sorted(re.findall(r"replay rank (\d+/\d+) ", stderr)) == ["0/2", "1/2"], stderr
    assert stderr.count("HCCL_CONNECT_TIMEOUT=600 args=['-p', '2', '-b', '8K', '-e', '64M'") == 2
    algbw = {m.dims["size_bytes"]: m.value for m in res.measurements if m.metric == "algbw"}
    assert len(algbw) == 14
    assert algbw[67108864] == 23.76245  # the published run's largest message
    assert {m.dims["op"] for m in res.measurements} == {"all_reduce"}
    assert [(f.name, f.value) for f in res.facts if f.source == "hccl-tests"] == [("ranks", 2)]


@needs_mpirun
def test_a_failing_binary_fails_the_step_with_its_rows_kept(tmp_path: Path) -> None:
    options = {
        "npus_per_node": 1,
        "allow_run_as_root": is_root(),
        "bin_dir": str(replay_bin(tmp_path, "--exit-code", "1")),
    }
    (res,) = run(tmp_path / "run", suite_of("hccl-tests", options), [node("npu", "127.0.0.1")])
    assert res.status is StepStatus.FAILED
    assert "exit code" in res.reason
    assert any(m.metric == "algbw" for m in res.measurements)


def test_a_missing_binary_is_named(tmp_path: Path) -> None:
    options = {
        "npus_per_node": 1,
        "bin_dir": str(tmp_path / "nowhere"),
        "allow_run_as_root": is_root(),
    }
    (res,) = run(tmp_path / "run", suite_of("hccl-tests", options), [node("npu", "127.0.0.1")])
    assert res.status is StepStatus.FAILED
    assert "all_reduce_test" in res.reason
    assert res.measurements == ()


def test_the_inventorys_tool_dirs_names_the_binary_directory() -> None:
    n = node("npu01", "10.0.0.1", gpus=8, tool_dirs={"hccl-tests": "/opt/cann/hccl_test/bin"})
    (inv,) = plan("hccl-tests", {}, [n])
    assert "/opt/cann/hccl_test/bin/all_reduce_test" in inv.client.argv
    (inv,) = plan("hccl-tests", {"bin_dir": "/srv/bin"}, [n])  # the step's option wins
    assert "/srv/bin/all_reduce_test" in inv.client.argv
