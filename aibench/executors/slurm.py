"""Slurm executor: runs each step as an ``srun`` job step on the chosen node(s).

Contract:

* **Inside an allocation** (``SLURM_JOB_ID`` set, e.g. aibench itself runs under
  ``sbatch`` or ``salloc``) steps are ``srun --jobid=<job> --overlap --nodelist=<node>
  -N1 --ntasks-per-node=1 ...`` in that allocation; its nodes are
  ``SLURM_JOB_NODELIST`` expanded with ``scontrol show hostnames`` (python-hostlist when
  scontrol is missing).
* **Outside one** the executor makes its own on first use: ``salloc --no-shell`` over
  every slurm node of the inventory (partition and account from the inventory's
  ``slurm:`` settings; the time limit from them too, else the plan's estimate with a
  margin: :func:`time_limit_min`), runs its steps in it, and ``scancel``\\ s it in
  ``close()``; if aibench dies first, the keeper (:mod:`aibench.executors.lease`)
  cancels it, and every ``srun`` gets SIGTERM (which cancels its step).
  ``allocate=False`` instead lets every ``srun`` allocate for itself.
* Slurm node names are the inventory's node names.
* **Timeouts**: ``srun --time`` (the step's timeout rounded up to minutes, plus one) and
  a local kill of srun after the timeout (SIGTERM, which makes srun cancel the step, then
  SIGKILL after ``kill_grace``).
* The environment of a step is passed in srun's own environment (srun exports it to
  the tasks); the working directory with ``--chdir``. Output is srun's stdout/stderr,
  streamed to the raw log files.
* ``run_on(nodes, ...)`` runs one step over several nodes (``-N``, ``--ntasks-per-node``,
  ``--mpi=pmix`` where a launcher asks) for multi-node tools.
* ``batch_script(...)`` writes an sbatch script that runs ``aibench run`` itself as a
  batch job (every argument quoted).

Tested with Slurm 22.05.8 (Debian 12).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import re
import shlex
import shutil
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from aibench.executors import lease
from aibench.executors.base import Command, NodeUnreachable, ProcResult, ReadyCheck, ServerNotReady
from aibench.executors.local import (
    LocalServer,
    Outputs,
    ended,
    ready_or_stopped,
    result_maker,
    spawn_leased,
    terminate,
)
from aibench.inventory import SlurmSettings, safe_name

if TYPE_CHECKING:
    from aibench.inventory import Inventory, Node

_MPI = re.compile(r"^[a-z0-9_]+$")
_SBATCH_VALUE = re.compile(r"^[A-Za-z0-9_.,:/@%+=\-\[\]]+$")
_GRANTED = re.compile(r"Granted job allocation (\d+)")


def srun_argv(
    nodes: Sequence[str],
    argv: Sequence[str],
    *,
    jobid: str | None = None,
    ntasks_per_node: int = 1,
    mpi: str | None = None,
    timeout: float | None = None,
    cwd: str | None = None,
    settings: SlurmSettings | None = None,
    overlap: bool = True,
) -> tuple[str, ...]:
    """The ``srun`` argv that runs ``argv`` on ``nodes`` (names checked, nothing quoted)."""
    for n in nodes:
        safe_name(n, "node name")
    if not nodes:
        raise ValueError("srun_argv: no nodes")
    if ntasks_per_node < 1:
        raise ValueError("ntasks_per_node must be at least 1")
    s = settings or SlurmSettings()
    out = ["srun", f"--nodelist={','.join(nodes)}", f"--nodes={len(nodes)}"]
    out.append(f"--ntasks-per-node={ntasks_per_node}")
    out.append(f"--ntasks={len(nodes) * ntasks_per_node}")
    if jobid is not None:
        if not jobid.isdigit():
            raise ValueError(f"invalid Slurm job id {jobid!r}")
        out.append(f"--jobid={jobid}")
        if overlap:
            out.append("--overlap")
    else:
        if s.partition:
            out.append(f"--partition={s.partition}")
        if s.account:
            out.append(f"--account={s.account}")
    if mpi is not None:
        if not _MPI.match(mpi):
            raise ValueError(f"invalid --mpi value {mpi!r}")
        out.append(f"--mpi={mpi}")
    if timeout is not None:
        out.append(f"--time={math.ceil(timeout / 60) + 1}")
    if cwd:
        out.append(f"--chdir={cwd}")
    out.append("--kill-on-bad-exit=1")
    out.extend(s.extra_args)
    out.append("--")
    out.extend(argv)
    return tuple(out)


# The margin of an allocation's time limit over the plan's estimate: the estimate is the
# tools' own durations, without start-up, servers, version probes and waits on the
# scheduler, so half as long again and a quarter of an hour more.
TIME_MARGIN = 1.5
TIME_EXTRA_MIN = 15
DEFAULT_TIME_MIN = 60


def time_limit_min(settings: SlurmSettings, planned_seconds: float | None) -> int:
    """The time limit of aibench's own allocation, in minutes: the inventory's
    ``slurm.time_limit_min`` when it sets one, else the plan's estimate with the margin,
    else an hour."""
    if settings.time_limit_min:
        return settings.time_limit_min
    if not planned_seconds:
        return DEFAULT_TIME_MIN
    return math.ceil(planned_seconds * TIME_MARGIN / 60) + TIME_EXTRA_MIN


def expand_nodelist(expr: str, env: Mapping[str, str] | None = None) -> list[str]:
    """Names of a Slurm node list: ``scontrol show hostnames``, else python-hostlist."""
    scontrol = shutil.which("scontrol")
    if scontrol:
        import subprocess

        r = subprocess.run(
            [scontrol, "show", "hostnames", expr],
            capture_output=True,
            text=True,
            env=dict(env) if env is not None else None,
            timeout=30,
            check=False,
        )
        if r.returncode == 0 and r.stdout.strip():
            return r.stdout.split()
    from aibench import hostlist

    return hostlist.expand(expr)


class SlurmExecutor:
    """Runs commands as srun job steps; one executor (one allocation) per run."""

    name = "slurm"

    def __init__(
        self,
        inventory: Inventory | None = None,
        *,
        allocate: bool = True,
        env: Mapping[str, str] | None = None,
        kill_grace: float = 3.0,
        alloc_timeout: float = 120.0,
    ) -> None:
        self.inventory = inventory
        self.allocate = allocate
        self.kill_grace = kill_grace
        self.alloc_timeout = alloc_timeout
        self._env = dict(os.environ if env is None else env)
        self.jobid: str | None = self._env.get("SLURM_JOB_ID") or None
        self._own_job = False
        self._nodes: list[str] | None = None
        self._lock = asyncio.Lock()
        self._alloc_error: str | None = None
        # the plan's estimate of the run (set by the caller before the first step): the
        # time limit of the allocation made here, with a margin (time_limit_min)
        self.planned_seconds: float | None = None

    # ------------------------------------------------------------------ allocation

    @property
    def settings(self) -> SlurmSettings:
        if self.inventory is not None and self.inventory.nodes:
            return self.inventory.nodes[0].slurm
        return SlurmSettings()

    def _slurm_nodes(self) -> list[str]:
        if self.inventory is None:
            return []
        return [n.name for n in self.inventory.nodes if n.executor == "slurm"]

    async def _ensure_allocation(self) -> None:
        """Know the allocation's nodes; make an allocation of our own if needed."""
        if self._nodes is not None or self._alloc_error is not None:
            return
        async with self._lock:
            if self._nodes is not None or self._alloc_error is not None:
                return
            if self.jobid is not None:
                expr = self._env.get("SLURM_JOB_NODELIST") or self._env.get("SLURM_NODELIST", "")
                self._nodes = (
                    await asyncio.to_thread(expand_nodelist, expr, self._env) if expr else []
                )
                return
            if not self.allocate:
                self._nodes = []
                return
            wanted = self._slurm_nodes()
            if not wanted:
                self._nodes = []
                return
            await self._salloc(wanted)

    async def _salloc(self, nodes: list[str]) -> None:
        s = self.settings
        argv = ["salloc", "--no-shell", f"--nodes={len(nodes)}", f"--nodelist={','.join(nodes)}"]
        argv += ["--job-name=aibench", f"--immediate={int(self.alloc_timeout)}"]
        if s.partition:
            argv.append(f"--partition={s.partition}")
        if s.account:
            argv.append(f"--account={s.account}")
        argv.append(f"--time={time_limit_min(s, self.planned_seconds)}")
        try:  # leased: salloc still waiting when aibench goes away withdraws its request
            pipe = asyncio.subprocess.PIPE
            proc = await spawn_leased(argv, pipe, pipe, env=self._env)
        except FileNotFoundError:
            self._alloc_error = "salloc: command not found (is Slurm installed here?)"
            return
        try:
            out, err = await asyncio.wait_for(proc.communicate(), self.alloc_timeout + 10)
        except TimeoutError:
            await terminate(proc, self.kill_grace)
            self._alloc_error = f"salloc: no allocation within {self.alloc_timeout:g} s"
            return
        except asyncio.CancelledError:
            await asyncio.shield(terminate(proc, self.kill_grace))
            raise
        ended(proc)
        text = (out + err).decode(errors="replace")
        m = _GRANTED.search(text)
        if proc.returncode != 0 or not m:
            last = " | ".join(ln.strip() for ln in text.strip().splitlines()[-2:])
            self._alloc_error = f"salloc failed (exit {proc.returncode}): {last}"
            return
        self.jobid = m.group(1)
        self._own_job = True
        self._nodes = nodes
        lease.hold_job(self.jobid)  # cancelled by the keeper if aibench dies first

    async def check(self, node: Node) -> str | None:
        await self._ensure_allocation()
        if self._alloc_error:
            return self._alloc_error
        if self.jobid is not None and self._nodes is not None and node.name not in self._nodes:
            return f"{node.name}: not in Slurm allocation {self.jobid} ({','.join(self._nodes)})"
        if self.jobid is None:
            return await self._sinfo_state(node)
        return None

    async def _sinfo_state(self, node: Node) -> str | None:
        try:
            proc = await asyncio.create_subprocess_exec(
                "sinfo", "-h", "-N", "-n", node.name, "-o", "%T",
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self._env,
            )  # fmt: skip
            out, err = await asyncio.wait_for(proc.communicate(), 30)
        except FileNotFoundError:
            return "sinfo: command not found (is Slurm installed here?)"
        except TimeoutError:
            return "sinfo did not answer within 30 s (is slurmctld up?)"
        states = set(out.decode().split())
        if proc.returncode != 0 or not states:
            return f"{node.name}: not a Slurm node ({err.decode(errors='replace').strip()[:200]})"
        bad = {s for s in states if re.match(r"(down|drain|fail|unknown|maint|future|inval)", s)}
        if bad:
            return f"{node.name}: Slurm node state {','.join(sorted(bad))}"
        return None

    # ------------------------------------------------------------------ steps

    def _argv(
        self, nodes: Sequence[str], cmd: Command, ntasks_per_node: int, mpi: str | None
    ) -> tuple[str, ...]:
        return srun_argv(
            nodes,
            cmd.argv,
            jobid=self.jobid,
            ntasks_per_node=ntasks_per_node,
            mpi=mpi,
            timeout=cmd.timeout,
            cwd=cmd.cwd,
            settings=self.settings,
        )

    def _step_env(self, cmd: Command) -> dict[str, str]:
        env = dict(self._env)
        env.update(cmd.env)
        return env

    async def run(self, node: Node, cmd: Command, stdout: Path, stderr: Path) -> ProcResult:
        return await self.run_on([node.name], cmd, stdout, stderr)

    async def run_on(
        self,
        nodes: Sequence[str],
        cmd: Command,
        stdout: Path,
        stderr: Path,
        *,
        ntasks_per_node: int = 1,
        mpi: str | None = None,
    ) -> ProcResult:
        """One job step over ``nodes`` (one task per node unless asked otherwise)."""
        result = result_maker()
        await self._ensure_allocation()
        if self._alloc_error:
            return result(unreachable=True, reason=self._alloc_error)
        argv = self._argv(nodes, cmd, ntasks_per_node, mpi)
        stdout.parent.mkdir(parents=True, exist_ok=True)
        with stdout.open("wb") as out, stderr.open("wb") as err:
            outputs = Outputs(cmd, out, err)  # through the scrubber when there are secrets
            try:
                proc = await self._spawn(argv, cmd, outputs)
            except FileNotFoundError:
                return result(reason="srun: command not found (is Slurm installed here?)")
            try:
                code = await asyncio.wait_for(proc.wait(), cmd.timeout)
            except TimeoutError:
                await terminate(proc, self.kill_grace)
                return result(
                    timed_out=True,
                    reason=f"timed out after {cmd.timeout:g} s; srun killed (step cancelled)",
                )
            except asyncio.CancelledError:
                await asyncio.shield(terminate(proc, self.kill_grace))
                raise
            else:
                ended(proc)
            finally:
                await asyncio.shield(outputs.finish(self.kill_grace))
        if code != 0:
            why = _srun_problem(stderr)
            if why:
                return result(exit_code=code, unreachable=True, reason=why)
        return result(exit_code=code)

    async def _spawn(
        self, argv: Sequence[str], cmd: Command, outputs: Outputs
    ) -> asyncio.subprocess.Process:
        """srun, leased as a local process is (:func:`spawn_leased`): if aibench goes
        away, srun gets SIGTERM and cancels its step; its output through ``outputs``."""
        stdout, stderr = outputs.stdio()
        proc = await spawn_leased(argv, stdout, stderr, env=self._step_env(cmd))
        outputs.start(proc)
        return proc

    async def start(
        self, node: Node, cmd: Command, stdout: Path, stderr: Path, ready: ReadyCheck
    ) -> LocalServer:
        await self._ensure_allocation()
        if self._alloc_error:
            raise NodeUnreachable(self._alloc_error)
        argv = self._argv([node.name], cmd, 1, None)
        stdout.parent.mkdir(parents=True, exist_ok=True)
        out = stdout.open("wb")
        err = stderr.open("wb")
        outputs = Outputs(cmd, out, err)
        try:
            proc = await self._spawn(argv, cmd, outputs)
        except FileNotFoundError:
            out.close()
            err.close()
            raise ServerNotReady("srun: command not found") from None
        server = LocalServer(proc, [out, err], self.kill_grace, outputs)
        return await ready_or_stopped(server, ready, stdout, node.host)

    async def close(self) -> None:
        if self._own_job and self.jobid is not None:
            jobid, self.jobid, self._own_job = self.jobid, None, False
            with contextlib.suppress(FileNotFoundError):
                proc = await asyncio.create_subprocess_exec(
                    "scancel", jobid,
                    stdout=asyncio.subprocess.DEVNULL,
                    stderr=asyncio.subprocess.DEVNULL,
                    env=self._env,
                )  # fmt: skip
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(proc.wait(), 30)
                if proc.returncode is None:
                    proc.send_signal(signal.SIGKILL)
            lease.release_job(jobid)
        self._nodes = None
        self._alloc_error = None


def _srun_problem(stderr: Path) -> str | None:
    """A one-line reason when srun itself (not the tool) failed to reach the node."""
    try:
        text = stderr.read_text(errors="replace")
    except FileNotFoundError:
        return None
    for pat in (
        r"srun: error: (Unable to allocate resources: .*)",
        r"srun: error: (Unable to create step for job .*)",
        r"srun: error: (.*Invalid node name.*)",
        r"srun: error: (Task launch for .* failed on node .*)",
        r"srun: error: (Nodes? .* (?:are|is) (?:down|not responding).*)",
    ):
        m = re.search(pat, text)
        if m:
            return "srun: " + m.group(1).strip()[:300]
    return None


def batch_script(
    path: Path,
    *,
    suite: str,
    inventory: str,
    extra_args: Sequence[str] = (),
    nodes: int | None = None,
    partition: str | None = None,
    account: str | None = None,
    time_min: int | None = None,
    job_name: str = "aibench",
    output: str | None = None,
    aibench: Sequence[str] = ("aibench",),
) -> Path:
    """Write an sbatch script that runs ``aibench run --suite SUITE --inventory INVENTORY``.

    Every argument of the command is ``shlex.quote``\\ d; ``#SBATCH`` values are checked
    (no spaces or shell characters). The job's steps then run inside the allocation
    (``SLURM_JOB_ID`` is set), one ``srun`` per step.
    """
    directives: list[str] = [f"--job-name={job_name}"]
    if nodes is not None:
        if nodes < 1:
            raise ValueError("nodes must be at least 1")
        directives.append(f"--nodes={nodes}")
    if partition:
        directives.append(f"--partition={partition}")
    if account:
        directives.append(f"--account={account}")
    if time_min is not None:
        directives.append(f"--time={int(time_min)}")
    if output:
        directives.append(f"--output={output}")
    for d in directives:
        value = d.split("=", 1)[1]
        if not _SBATCH_VALUE.match(value):
            raise ValueError(f"invalid sbatch value {value!r} in {d.split('=', 1)[0]}")
    argv = [*aibench, "run", "--suite", suite, "--inventory", inventory, *extra_args]
    lines = ["#!/bin/sh", *(f"#SBATCH {d}" for d in directives)]
    lines += [
        "# written by aibench: runs the suite inside this allocation",
        "exec " + shlex.join(argv),
        "",
    ]
    path.write_text("\n".join(lines))
    path.chmod(0o755)
    return path
