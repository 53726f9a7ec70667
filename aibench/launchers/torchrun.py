"""PyTorch ``torchrun``: one torchrun per node, joined by a c10d rendezvous on the first host.

One host: ``torchrun --standalone --nnodes 1 --nproc-per-node K PROGRAM...``. Several::

    torchrun --nnodes N --nproc-per-node K --node-rank R --rdzv-backend c10d
             --rdzv-endpoint HOST0:PORT --rdzv-id JOB PROGRAM...

The torchrun of node rank 0 is the launch's ``argv``; the others are in ``others`` with
their host, to be started at the same time. The environment is torchrun's own (it hands
it to the workers). Only the argv is tested (table tests); no runner of this project
uses torchrun yet.
"""

from __future__ import annotations

from typing import ClassVar

from aibench.launchers import Job, Launch


class Torchrun:
    name: ClassVar[str] = "torchrun"

    def per_node(self, job: Job, rank: int) -> tuple[str, ...]:
        k = str(job.ranks_per_node)
        if len(job.hosts) == 1:
            argv = ["torchrun", "--standalone", "--nnodes", "1", "--nproc-per-node", k]
        else:
            argv = ["torchrun", "--nnodes", str(len(job.hosts)), "--nproc-per-node", k]
            argv += ["--node-rank", str(rank), "--rdzv-backend", "c10d"]
            argv += ["--rdzv-endpoint", f"{job.hosts[0].host}:{job.rendezvous_port}"]
            argv += ["--rdzv-id", job.job_id]
        return (*argv, *job.extra_args, *job.program)

    def wrap(self, job: Job) -> Launch:
        others = tuple((h.host, self.per_node(job, i)) for i, h in enumerate(job.hosts) if i)
        return Launch(self.per_node(job, 0), dict(job.env), others)


LAUNCHER = Torchrun()
