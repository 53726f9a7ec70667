"""Open MPI ``mpirun``: one launcher process starts every rank (over ssh, or under Slurm).

argv, in this order::

    mpirun --host h1:2,h2:2 -np 4 --map-by ppr:2:node [--bind-to none]
           [--mca plm_rsh_agent "ssh -F FILE"]
           [--mca oob_tcp_if_include IF --mca btl_tcp_if_include IF] [--mca btl self,tcp]
           [--mca NAME VALUE ...] -x NAME ... [extra args] PROGRAM...

Every variable of the job's environment is forwarded by name (``-x NAME``) and set in
the launcher's own environment, so values never sit in argv and secrets stay redacted in
run.json. ``as_root`` sets ``OMPI_ALLOW_RUN_AS_ROOT=1`` and
``OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1`` (Open MPI refuses to run as root otherwise).
Tested with Open MPI 4.1.4 (local ranks and across hosts launched over ssh).

``mpirun --version`` names the MPI: Open MPI prints ``mpirun (Open MPI) 4.1.4``, recorded
as ``Open MPI 4.1.4``; another MPI's first line is kept as it is.
"""

from __future__ import annotations

import re
from typing import ClassVar

from aibench.launchers import Job, Launch

ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


class Mpirun:
    name: ClassVar[str] = "mpirun"

    def wrap(self, job: Job) -> Launch:
        hosts = ",".join(f"{h.host}:{h.slots}" for h in job.hosts)
        argv = ["mpirun", "--host", hosts, "-np", str(job.ranks)]
        argv += ["--map-by", job.map_by or f"ppr:{job.ranks_per_node}:node"]
        if job.bind_to:
            argv += ["--bind-to", job.bind_to]
        if job.ssh_config:
            argv += ["--mca", "plm_rsh_agent", f"ssh -F {job.ssh_config}"]
        if job.interfaces:
            argv += ["--mca", "oob_tcp_if_include", job.interfaces]
            argv += ["--mca", "btl_tcp_if_include", job.interfaces]
        if job.btl:
            argv += ["--mca", "btl", job.btl]
        for key, value in job.mca.items():
            argv += ["--mca", key, value]
        for key in job.env:
            argv += ["-x", key]
        argv += job.extra_args
        argv += job.program
        env = dict(job.env)
        if job.as_root:
            env.update(ROOT_ENV)
        return Launch(tuple(argv), env)

    def version_argv(self) -> tuple[str, ...]:
        return ("mpirun", "--version")

    def parse_version(self, text: str) -> str:
        m = re.search(r"\(Open MPI\)\s+(\S+)", text)
        if m:
            return f"Open MPI {m.group(1)}"
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        return lines[0][:80] if lines else ""


LAUNCHER = Mpirun()
