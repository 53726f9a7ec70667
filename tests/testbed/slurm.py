"""munge + slurmctld + one slurmd per namespace host: a real Slurm cluster of the bed.

* munged runs as root with its own key, socket, pid and log files in the bed's state
  directory (``AuthInfo=socket=...`` points Slurm at it), so the system's munge is untouched.
* slurmctld runs in the root namespace; ``SlurmctldHost`` is this machine's short host name
  with the bridge address (Slurm refuses any other name for the controller).
* each slurmd runs as ``nsenter --net=<netns> unshare --uts --mount`` (``ip netns exec``
  remounts /sys and slurmd then fails to find its cgroup mount), with the host's name and
  a private ``/tmp`` (the PMIx plugin makes fixed-name directories there).
* node names are the host names (``abt-h1``...), partition ``debug``; ports 16917/16918.

The state lives under ``STATE_ROOT`` (not under /tmp: the private /tmp bind would hide it
from slurmd). All daemons run in the foreground and are stopped by PID.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from shlex import quote as q

from tests.testbed.net import GATEWAY, Host, kill_pids, sh

STATE_ROOT = Path("/var/tmp/abt-testbed-slurm")
REPO = Path(__file__).resolve().parents[2]
CTL_PORT = 16917
SLURMD_PORT = 16918


@dataclass
class SlurmCluster:
    root: Path
    conf: Path
    hosts: list[Host]
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        """Environment for Slurm client commands (srun, sbatch, sinfo ...)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        env["SLURM_CONF"] = str(self.conf)
        return env

    @property
    def nodes(self) -> list[str]:
        return [h.name for h in self.hosts]


def _conf(root: Path, hosts: list[Host]) -> str:
    lines = [
        "ClusterName=abt",
        f"SlurmctldHost={socket.gethostname().split('.')[0]}({GATEWAY})",
        f"SlurmctldPort={CTL_PORT}",
        f"SlurmdPort={SLURMD_PORT}",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={root / 'munge' / 'munge.socket'}",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"StateSaveLocation={root / 'state'}",
        f"SlurmdSpoolDir={root / 'spool'}/%n",
        f"SlurmctldPidFile={root / 'run' / 'slurmctld.pid'}",
        f"SlurmdPidFile={root / 'run'}/slurmd-%n.pid",
        f"SlurmctldLogFile={root / 'log' / 'slurmctld.log'}",
        f"SlurmdLogFile={root / 'log'}/slurmd-%n.log",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "SchedulerType=sched/backfill",
        "MpiDefault=none",
        "ReturnToService=2",
        "SlurmdTimeout=30",
        "SlurmctldTimeout=30",
        "MessageTimeout=10",
        "InactiveLimit=0",
        "KillWait=2",
        "MinJobAge=300",
    ]
    for h in hosts:
        lines.append(
            f"NodeName={h.name} NodeHostname={h.name} NodeAddr={h.address} "
            "CPUs=2 RealMemory=2000 State=UNKNOWN"
        )
    names = ",".join(h.name for h in hosts)
    lines.append(f"PartitionName=debug Nodes={names} Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


def stale_cleanup() -> None:
    """Stop daemons a killed earlier run left (by their pid files) and drop its state."""
    run = STATE_ROOT / "run"
    pids = []
    if run.is_dir():
        for pf in run.glob("*.pid"):
            try:
                pids.append(int(pf.read_text().split()[0]))
            except (ValueError, IndexError, OSError):
                continue
    kill_pids([p for p in pids if _is_ours(p)])
    shutil.rmtree(STATE_ROOT, ignore_errors=True)
    for p in Path("/tmp").glob("spmix_*"):
        shutil.rmtree(p, ignore_errors=True)


def _is_ours(pid: int) -> bool:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return str(STATE_ROOT).encode() in cmd or b"slurm" in cmd or b"munged" in cmd


def start(hosts: list[Host]) -> SlurmCluster:
    stale_cleanup()
    root = STATE_ROOT
    for d in ("state", "spool", "run", "log", "tmp", "key"):
        (root / d).mkdir(parents=True, exist_ok=True)
    (root / "munge").mkdir(mode=0o755, exist_ok=True)
    root.chmod(0o755)
    (root / "key").chmod(0o700)
    conf = root / "slurm.conf"
    conf.write_text(_conf(root, hosts))
    cluster = SlurmCluster(root=root, conf=conf, hosts=hosts)
    try:
        _start_daemons(cluster)
    except BaseException:
        stop(cluster)
        raise
    return cluster


def _spawn(cluster: SlurmCluster, argv: list[str], log: str, pidfile: str) -> None:
    out = (cluster.root / "log" / log).open("ab")
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=cluster.env)
    out.close()
    (cluster.root / "run" / pidfile).write_text(f"{proc.pid}\n")
    cluster.procs.append(proc)


def _start_daemons(c: SlurmCluster) -> None:
    key = c.root / "key" / "munge.key"
    sh("mungekey", "--create", f"--keyfile={key}")
    sock = c.root / "munge" / "munge.socket"
    _spawn(
        c,
        [
            "munged",
            "-F",
            f"--socket={sock}",
            f"--key-file={key}",
            f"--pid-file={c.root / 'key' / 'munged.pid'}",
            f"--log-file={c.root / 'log' / 'munged.log'}",
            f"--seed-file={c.root / 'key' / 'munged.seed'}",
        ],
        "munged.stdout",
        "munged.bg.pid",
    )
    _wait(lambda: sock.exists(), 5, "munged did not create its socket")
    _spawn(
        c,
        ["slurmctld", "-D", "-i", "-c", "-f", str(c.conf)],
        "slurmctld.stdout",
        "slurmctld.bg.pid",
    )
    for h in c.hosts:
        tmp = c.root / "tmp" / h.name
        tmp.mkdir(parents=True, exist_ok=True)
        tmp.chmod(0o1777)
        (c.root / "spool" / h.name).mkdir(parents=True, exist_ok=True)
        inner = (
            f"{_keep_checkout_visible(c.root / 'realtmp' / h.name)}"
            f"mount --bind {tmp} /tmp && {_rebind_checkout(c.root / 'realtmp' / h.name)}"
            f"hostname {h.name} && exec slurmd -D -N {h.name} -f {c.conf}"
        )
        _spawn(
            c,
            ["nsenter", f"--net={h.netns_path}", "unshare", "--uts", "--mount", "sh", "-c", inner],
            f"slurmd-{h.name}.stdout",
            f"slurmd-{h.name}.bg.pid",
        )

    def idle() -> bool:
        for p in c.procs:
            if p.poll() is not None:
                raise RuntimeError(
                    f"a Slurm daemon exited early: {p.args!r}; logs in {c.root / 'log'}"
                )
        r = subprocess.run(
            ["sinfo", "-h", "-o", "%T"],
            capture_output=True,
            text=True,
            env=c.env,
            timeout=5,
            check=False,
        )
        return r.returncode == 0 and set(r.stdout.split()) == {"idle"}

    _wait(idle, 30, "Slurm nodes not idle within 30 s")


def _checkout_under_tmp() -> Path | None:
    """The checkout's path relative to /tmp when it lies there (a clone in /tmp)."""
    try:
        return REPO.relative_to("/tmp")
    except ValueError:
        return None


def _keep_checkout_visible(stage: Path) -> str:
    """Shell words that keep the real /tmp reachable at ``stage`` before /tmp is replaced.

    Steps run the checkout's own interpreter; a checkout under /tmp would otherwise vanish
    behind the private /tmp of the slurmd."""
    if _checkout_under_tmp() is None:
        return ""
    return f"mkdir -p {q(str(stage))} && mount --bind /tmp {q(str(stage))} && "


def _rebind_checkout(stage: Path) -> str:
    rel = _checkout_under_tmp()
    if rel is None:
        return ""
    repo = q(str(REPO))
    return f"mkdir -p {repo} && mount --bind {q(str(stage / rel))} {repo} && "


def _wait(cond: object, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    assert callable(cond)
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.1)
    raise RuntimeError(what)


def stop(c: SlurmCluster) -> None:
    """Stop slurmds, slurmctld, then munged (by PID), and remove the state."""
    for p in reversed(c.procs):
        if p.poll() is None:
            kill_pids([p.pid], grace=3.0)
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=5)
    c.procs.clear()
    shutil.rmtree(c.root, ignore_errors=True)
    for p in Path("/tmp").glob("spmix_*"):
        shutil.rmtree(p, ignore_errors=True)
