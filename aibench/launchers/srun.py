"""Slurm ``srun``: the ranks are started by slurmd on each node of the allocation.

argv, in this order::

    srun --mpi=pmix -N 2 --ntasks-per-node 2 --nodelist n1,n2 [-p PART] [-A ACCT]
         [--cpu-bind=X] [--gpus-per-task=N] [--gpu-bind=X] [extra args] PROGRAM...

Host names are Slurm node names. srun exports its own environment to the ranks
(``--export=ALL`` is Slurm's default), so the job's environment is set on the srun
process itself and recorded as such. ``--mpi=pmix`` is what Open MPI programs need
(``pmi2`` and ``none`` fail in MPI_Init). Run it outside any job step (a login node, an
``salloc``/``sbatch`` shell): inside a step srun sees only that step's nodes. Tested with
Slurm 22.05.8 and Open MPI 4.1.4.

``srun --version`` prints ``slurm 22.05.8`` (Debian's slurm-wlm: ``slurm-wlm 22.05.8``),
recorded as ``Slurm 22.05.8``; it reads the
Slurm configuration first, so it runs with the launch's environment (``SLURM_CONF``).
"""

from __future__ import annotations

import re
from typing import ClassVar

from aibench.launchers import Job, Launch


class Srun:
    name: ClassVar[str] = "srun"

    def wrap(self, job: Job) -> Launch:
        argv = ["srun", "--mpi=pmix", "-N", str(len(job.hosts))]
        argv += ["--ntasks-per-node", str(job.ranks_per_node)]
        argv += ["--nodelist", ",".join(h.host for h in job.hosts)]
        if job.partition:
            argv += ["-p", job.partition]
        if job.account:
            argv += ["-A", job.account]
        if job.cpu_bind:
            argv.append(f"--cpu-bind={job.cpu_bind}")
        if job.gpus_per_task is not None:
            argv.append(f"--gpus-per-task={job.gpus_per_task}")
        if job.gpu_bind:
            argv.append(f"--gpu-bind={job.gpu_bind}")
        argv += job.extra_args
        argv += job.program
        return Launch(tuple(argv), dict(job.env))

    def version_argv(self) -> tuple[str, ...]:
        return ("srun", "--version")

    def parse_version(self, text: str) -> str:
        m = re.search(r"^slurm(?:-wlm)?\s+(\d\S*)", text, re.M)
        return f"Slurm {m.group(1)}" if m else ""


LAUNCHER = Srun()
