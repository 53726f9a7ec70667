"""nccl-tests runner as tables: options + placement + launcher -> the exact argv and env."""

from __future__ import annotations

from typing import Any

import pytest

from aibench.errors import ConfigError, UserError
from aibench.runners.base import Slot
from tests.runners.helpers import node, plan

DEFAULT_ARGS = ["-b", "8", "-e", "8G", "-f", "2", "-n", "20", "-w", "5", "-c", "1", "-g", "1"]
G1 = node("gpu001", "10.0.1.1", gpus=8, ssh_config="/etc/aibench/ssh_config", partition="gpu")
G2 = node("gpu002", "10.0.1.2", gpus=8, ssh_config="/etc/aibench/ssh_config", partition="gpu")
SOLO = node("ws", "127.0.0.1")


@pytest.mark.parametrize(
    ("options", "group", "argv", "env"),
    [
        # one node, no GPU count known: one process, run directly, from PATH
        ({}, [SOLO], ["all_reduce_perf", *DEFAULT_ARGS], {}),
        # one process driving all 8 GPUs (-g 8), binaries from bin_dir
        (
            {
                "collective": "all_gather",
                "gpus_per_process": 8,
                "bin_dir": "/opt/nt/build/",
                "min_bytes": "1M",
                "max_bytes": "1G",
                "step_factor": 4,
                "iters": 50,
                "warmup_iters": 10,
                "check": 0,
                "datatype": "bfloat16",
                "op": "sum",
                "blocking": False,
                "average": 1,
            },
            [G1],
            [
                "/opt/nt/build/all_gather_perf",
                "-b",
                "1M",
                "-e",
                "1G",
                "-f",
                "4",
                "-n",
                "50",
                "-w",
                "10",
                "-c",
                "0",
                "-g",
                "8",
                "-d",
                "bfloat16",
                "-o",
                "sum",
                "-z",
                "0",
                "-a",
                "1",
            ],
            {},
        ),
        # one node, 8 GPUs, one process per GPU: mpirun on the node itself
        (
            {"nccl_debug": "WARN"},
            [G1],
            [
                "mpirun",
                "--host",
                "localhost:8",
                "-np",
                "8",
                "--map-by",
                "ppr:8:node",
                "-x",
                "NCCL_DEBUG",
                "all_reduce_perf",
                *DEFAULT_ARGS,
            ],
            {"NCCL_DEBUG": "WARN"},
        ),
        # two nodes over mpirun: addresses with slots, ssh config, interfaces, env by name
        (
            {
                "collective": "sendrecv",
                "step_bytes": "1M",
                "step_factor": None,
                "nccl_debug": "INFO",
                "nccl_algo": "Ring",
                "nccl_ib_hca": "=mlx5_0:1,mlx5_1:1",
                "nccl_socket_ifname": "eth0",
                "env": {"UCX_NET_DEVICES": "mlx5_0:1"},
                "bind_to": "none",
                "interfaces": "10.0.1.0/24",
                "btl": "self,tcp",
                "allow_run_as_root": True,
            },
            [G1, G2],
            [
                "mpirun",
                "--host",
                "10.0.1.1:8,10.0.1.2:8",
                "-np",
                "16",
                "--map-by",
                "ppr:8:node",
                "--bind-to",
                "none",
                "--mca",
                "plm_rsh_agent",
                "ssh -F /etc/aibench/ssh_config",
                "--mca",
                "oob_tcp_if_include",
                "10.0.1.0/24",
                "--mca",
                "btl_tcp_if_include",
                "10.0.1.0/24",
                "--mca",
                "btl",
                "self,tcp",
                "-x",
                "NCCL_DEBUG",
                "-x",
                "NCCL_ALGO",
                "-x",
                "NCCL_IB_HCA",
                "-x",
                "NCCL_SOCKET_IFNAME",
                "-x",
                "UCX_NET_DEVICES",
                "sendrecv_perf",
                "-b",
                "8",
                "-e",
                "8G",
                "-i",
                "1M",
                "-n",
                "20",
                "-w",
                "5",
                "-c",
                "1",
                "-g",
                "1",
            ],
            {
                "NCCL_DEBUG": "INFO",
                "NCCL_ALGO": "Ring",
                "NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1",
                "NCCL_SOCKET_IFNAME": "eth0",
                "UCX_NET_DEVICES": "mlx5_0:1",
                "OMPI_ALLOW_RUN_AS_ROOT": "1",
                "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            },
        ),
        # two nodes under Slurm: node names, ranks per node, GPU binding, the partition
        (
            {
                "launcher": "srun",
                "ranks_per_node": 4,
                "gpus_per_task": 2,
                "gpu_bind": "closest",
                "gpus_per_process": 2,
                "nccl_debug": "WARN",
                "bin_dir": "/opt/nt",
            },
            [G1, G2],
            [
                "srun",
                "--mpi=pmix",
                "-N",
                "2",
                "--ntasks-per-node",
                "4",
                "--nodelist",
                "gpu001,gpu002",
                "-p",
                "gpu",
                "--gpus-per-task=2",
                "--gpu-bind=closest",
                "/opt/nt/all_reduce_perf",
                "-b",
                "8",
                "-e",
                "8G",
                "-f",
                "2",
                "-n",
                "20",
                "-w",
                "5",
                "-c",
                "1",
                "-g",
                "2",
            ],
            {"NCCL_DEBUG": "WARN"},
        ),
        # extra nccl-tests and launcher options are appended, in order
        (
            {"launcher": "mpirun", "launcher_args": ["--oversubscribe"], "extra": ["-G", "1"]},
            [SOLO],
            [
                "mpirun",
                "--host",
                "localhost:1",
                "-np",
                "1",
                "--map-by",
                "ppr:1:node",
                "--oversubscribe",
                "all_reduce_perf",
                *DEFAULT_ARGS,
                "-G",
                "1",
            ],
            {},
        ),
    ],
)
def test_argv_and_env(
    options: dict[str, Any], group: list[Any], argv: list[str], env: dict[str, str]
) -> None:
    (inv,) = plan("nccl-tests", options, group)
    assert list(inv.client.argv) == argv
    assert dict(inv.client.env) == env
    assert inv.client.host == group[0].name
    assert inv.nodes == tuple(n.name for n in group)
    assert inv.network is (len(group) > 1)
    assert inv.parser == "nccl-tests"
    assert inv.servers == ()


def test_node_tool_dirs_give_the_binary_directory() -> None:
    n = node("g", gpus=1, tool_dirs={"nccl-tests": "/usr/local/nccl-tests/build"})
    (inv,) = plan("nccl-tests", {}, [n])
    assert inv.client.argv[0] == "/usr/local/nccl-tests/build/all_reduce_perf"


def test_json_output_file_is_per_step_label_and_repeat_with_its_directory_made_first() -> None:
    slot = Slot(repeat=2, workdir="/var/tmp/ab")
    (inv,) = plan("nccl-tests", {"json_output": True}, [SOLO], slot, step="nccl-ar")
    path = "/var/tmp/ab/nccl-tests/nccl-ar.ws.r2.json"
    assert list(inv.client.argv[-2:]) == ["-J", path]
    assert [s.argv for s in inv.setup] == [
        ("mkdir", "-p", "/var/tmp/ab/nccl-tests"),
        ("rm", "-f", path),
    ]
    assert inv.artifacts == (path,)
    assert inv.step_id == "nccl-ar/ws/r2"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"collective": "allreduce"}, "collective"),
        ({"min_bytes": "8 GB"}, "not an nccl-tests size"),
        ({"nccl_debug": "INFO; rm -rf /"}, "may hold"),
        ({"bin_dir": "relative/dir"}, "absolute path"),
        ({"extra": ["-b 8"]}, "must look like"),
        ({"env": {"BAD-NAME": "1"}}, "invalid environment variable name"),
        ({"step_bytes": "1M", "step_factor": 4}, "not both"),
        ({"iterations": 5}, "unknown key"),
    ],
)
def test_bad_options_are_config_errors(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        plan("nccl-tests", options, [SOLO])


def test_several_nodes_without_a_launcher_is_refused() -> None:
    with pytest.raises(UserError, match="needs a launcher"):
        plan("nccl-tests", {"launcher": "none"}, [G1, G2])


@pytest.mark.parametrize(
    ("executor", "expected"),
    [("ssh", "ssh -F .ssh/config"), ("local", "ssh -F {home}/.ssh/config")],
)
def test_a_tilde_in_the_ssh_config_is_resolved_for_mpiruns_ssh(
    executor: str, expected: str
) -> None:
    import os

    a = node("a", "10.0.0.1", executor=executor, ssh_config="~/.ssh/config")
    b = node("b", "10.0.0.2", executor=executor, ssh_config="~/.ssh/config")
    (inv,) = plan("nccl-tests", {}, [a, b])
    argv = list(inv.client.argv)
    rsh = argv[argv.index("plm_rsh_agent") + 1]
    assert rsh == expected.format(home=os.path.expanduser("~"))
