"""Launchers as tables: the exact argv and environment for a job."""

from __future__ import annotations

import pytest

from aibench.errors import UserError
from aibench.launchers import LAUNCHERS, HostSlots, Job

PROG = ("/opt/nccl-tests/build/all_reduce_perf", "-b", "8", "-e", "1G")
TWO = (HostSlots("10.0.0.1", 8), HostSlots("10.0.0.2", 8))


def test_registry_discovers_the_three_launchers() -> None:
    assert LAUNCHERS.names() == ["mpirun", "srun", "torchrun"]
    with pytest.raises(UserError, match="valid launchers: mpirun, srun, torchrun"):
        LAUNCHERS.get("aprun")


@pytest.mark.parametrize(
    ("job", "argv", "env"),
    [
        (
            Job(PROG, TWO),
            [
                "mpirun",
                "--host",
                "10.0.0.1:8,10.0.0.2:8",
                "-np",
                "16",
                "--map-by",
                "ppr:8:node",
                *PROG,
            ],
            {},
        ),
        (
            Job(
                PROG,
                TWO,
                env={"NCCL_DEBUG": "INFO", "UCX_TLS": "rc"},
                bind_to="none",
                interfaces="10.0.0.0/24",
                btl="self,tcp",
                mca={"pml": "ob1"},
                ssh_config="/etc/aibench/ssh_config",
                as_root=True,
            ),
            [
                "mpirun",
                "--host",
                "10.0.0.1:8,10.0.0.2:8",
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
                "10.0.0.0/24",
                "--mca",
                "btl_tcp_if_include",
                "10.0.0.0/24",
                "--mca",
                "btl",
                "self,tcp",
                "--mca",
                "pml",
                "ob1",
                "-x",
                "NCCL_DEBUG",
                "-x",
                "UCX_TLS",
                *PROG,
            ],
            {
                "NCCL_DEBUG": "INFO",
                "UCX_TLS": "rc",
                "OMPI_ALLOW_RUN_AS_ROOT": "1",
                "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            },
        ),
        (
            Job(PROG, (HostSlots("localhost", 2),), map_by="slot", extra_args=("--oversubscribe",)),
            [
                "mpirun",
                "--host",
                "localhost:2",
                "-np",
                "2",
                "--map-by",
                "slot",
                "--oversubscribe",
                *PROG,
            ],
            {},
        ),
    ],
)
def test_mpirun(job: Job, argv: list[str], env: dict[str, str]) -> None:
    launch = LAUNCHERS.get("mpirun").wrap(job)
    assert list(launch.argv) == argv
    assert dict(launch.env) == env
    assert launch.others == ()


@pytest.mark.parametrize(
    ("job", "argv"),
    [
        (
            Job(PROG, (HostSlots("gpu001", 8), HostSlots("gpu002", 8)), env={"NCCL_DEBUG": "WARN"}),
            [
                "srun",
                "--mpi=pmix",
                "-N",
                "2",
                "--ntasks-per-node",
                "8",
                "--nodelist",
                "gpu001,gpu002",
                *PROG,
            ],
        ),
        (
            Job(
                PROG,
                (HostSlots("n1", 1),),
                gpus_per_task=1,
                gpu_bind="closest",
                cpu_bind="cores",
                partition="gpu",
                account="acc",
            ),
            [
                "srun",
                "--mpi=pmix",
                "-N",
                "1",
                "--ntasks-per-node",
                "1",
                "--nodelist",
                "n1",
                "-p",
                "gpu",
                "-A",
                "acc",
                "--cpu-bind=cores",
                "--gpus-per-task=1",
                "--gpu-bind=closest",
                *PROG,
            ],
        ),
    ],
)
def test_srun(job: Job, argv: list[str]) -> None:
    launch = LAUNCHERS.get("srun").wrap(job)
    assert list(launch.argv) == argv
    assert dict(launch.env) == dict(job.env)


def test_torchrun_one_process_per_node() -> None:
    job = Job(("train.py", "--lr", "0.1"), (HostSlots("h1", 4), HostSlots("h2", 4)), job_id="j7")
    launch = LAUNCHERS.get("torchrun").wrap(job)
    common = [
        "--rdzv-backend",
        "c10d",
        "--rdzv-endpoint",
        "h1:29500",
        "--rdzv-id",
        "j7",
        "train.py",
        "--lr",
        "0.1",
    ]
    assert list(launch.argv) == [
        "torchrun",
        "--nnodes",
        "2",
        "--nproc-per-node",
        "4",
        "--node-rank",
        "0",
        *common,
    ]
    assert [(h, list(a)) for h, a in launch.others] == [
        ("h2", ["torchrun", "--nnodes", "2", "--nproc-per-node", "4", "--node-rank", "1", *common])
    ]
    single = LAUNCHERS.get("torchrun").wrap(Job(("t.py",), (HostSlots("h1", 2),)))
    assert list(single.argv) == [
        "torchrun",
        "--standalone",
        "--nnodes",
        "1",
        "--nproc-per-node",
        "2",
        "t.py",
    ]


def test_a_job_needs_hosts_and_a_program() -> None:
    with pytest.raises(ValueError, match="program"):
        Job((), TWO)
    with pytest.raises(ValueError, match="slot"):
        Job(PROG, (HostSlots("h", 0),))


# What the launchers print for --version, captured on Debian 12 (Open MPI 4.1.4 from
# openmpi-bin, Slurm 22.05.8 from slurm-wlm).
MPIRUN_4_1_4 = "mpirun (Open MPI) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/help/\n"
SRUN_DEBIAN = "slurm-wlm 22.05.8\n"


@pytest.mark.parametrize(
    ("launcher", "text", "version"),
    [
        ("mpirun", MPIRUN_4_1_4, "Open MPI 4.1.4"),
        ("srun", SRUN_DEBIAN, "Slurm 22.05.8"),
        ("srun", "slurm 22.05.8\n", "Slurm 22.05.8"),  # the upstream package name
        ("srun", "srun: fatal: Could not establish a configuration source\n", ""),
    ],
)
def test_launcher_versions(launcher: str, text: str, version: str) -> None:
    got = LAUNCHERS.get(launcher)
    assert got.version_argv() == (launcher, "--version")  # type: ignore[attr-defined]
    assert got.parse_version(text) == version  # type: ignore[attr-defined]
