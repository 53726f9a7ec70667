"""The multi-host test bed: namespace hosts with sshd, optionally a Slurm cluster on them.

Only one bed exists on a machine at a time (the names are fixed): ``up`` first takes an
exclusive ``flock`` on ``LOCK`` and waits for it (up to ``LOCK_WAIT`` s) while another test
run holds the bed; the kernel drops the lock of a killed run, so what a killed
run left behind is then removed as stale.

``TestBed.up(n, root)`` removes whatever a killed earlier run left (namespaces, veths,
bridge, daemons by pid file, /tmp/spmix_*), then builds ``n`` hosts and starts their sshd.
``down()`` stops every process by PID, kills whatever still runs in the namespaces and
removes namespaces, veths and bridge. The pytest fixtures in
:mod:`tests.testbed.fixtures` call ``down()`` in a ``finally``, so the bed goes away
also when a test or the bring-up itself fails.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tests.testbed import net, slurm, sshd
from tests.testbed.net import Host

LOCK = Path("/var/tmp/abt-testbed.lock")
LOCK_WAIT = 900.0
_held_here = False  # this process holds the bed: a second ``up`` would wait on itself


def _lock() -> int:
    if _held_here:
        raise RuntimeError(
            "a second test bed in one test session: register the fixtures once "
            "(tests/conftest.py pytest_plugins), never import them into another conftest"
        )
    fd = os.open(LOCK, os.O_CREAT | os.O_RDWR, 0o644)
    deadline = time.monotonic() + LOCK_WAIT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                raise RuntimeError(f"the test bed is held by another test run ({LOCK})") from None
            time.sleep(0.5)


@dataclass
class TestBed:
    __test__ = False  # not a test class, whatever its name

    root: Path
    hosts: list[Host]
    ssh: sshd.SSHFiles
    sshd_procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    slurm: slurm.SlurmCluster | None = None
    lock_fd: int | None = None

    @classmethod
    def up(cls, n: int, root: Path) -> TestBed:
        global _held_here
        fd = _lock()
        _held_here = True
        try:
            cleanup_stale()
            hosts = net.create(n)
            bed = cls(root=root, hosts=hosts, ssh=sshd.make_files(root / "ssh", hosts), lock_fd=fd)
        except BaseException:
            net.remove_all()
            os.close(fd)
            _held_here = False
            raise
        try:
            for h in hosts:
                bed.sshd_procs[h.name] = sshd.start(h, bed.ssh)
        except BaseException:
            bed.down()
            raise
        return bed

    def host(self, name: str) -> Host:
        for h in self.hosts:
            if h.name == name:
                return h
        raise KeyError(name)

    # ------------------------------------------------------------------ faults

    def kill_sshd(self, name: str) -> None:
        """Kill the host's sshd listener and every per-connection sshd (sessions drop)."""
        h = self.host(name)
        ssh_pids = [p for p in net.netns_pids(h) if _comm(p) == "sshd"]
        net.kill_pids(ssh_pids, grace=0.5)
        proc = self.sshd_procs.get(name)
        if proc is not None:
            proc.wait(timeout=5)

    def restart_sshd(self, name: str) -> None:
        h = self.host(name)
        proc = self.sshd_procs.get(name)
        if proc is None or proc.poll() is not None:
            self.sshd_procs[name] = sshd.start(h, self.ssh)

    def shape(self, name: str, rate: str = "1gbit") -> None:
        net.shape(self.host(name), rate)

    def shape_pair(self, a: str, b: str, rate: str = "1gbit") -> None:
        """Shape only the link between hosts ``a`` and ``b``; ``unshape`` both to undo."""
        net.shape_pair(self.host(a), self.host(b), rate)

    def unshape(self, name: str) -> None:
        net.unshape(self.host(name))

    def link_down(self, name: str) -> None:
        net.link_down(self.host(name))

    def link_up(self, name: str) -> None:
        net.link_up(self.host(name))

    def pids(self, name: str) -> list[int]:
        """PIDs in the host's namespace other than its sshd and slurmd daemons."""
        return [p for p in net.netns_pids(self.host(name)) if _comm(p) not in ("sshd", "slurmd")]

    def commands(self, name: str) -> list[str]:
        """Command names of :meth:`pids` (a process that ended meanwhile is left out)."""
        return [c for c in map(_comm, self.pids(name)) if c]

    # ------------------------------------------------------------------ slurm

    def start_slurm(self) -> slurm.SlurmCluster:
        if self.slurm is None:
            self.slurm = slurm.start(self.hosts)
        return self.slurm

    # ------------------------------------------------------------------ inventory

    def inventory_data(self, executor: str = "ssh", **extra: object) -> dict[str, object]:
        """An inventory document for the bed (see aibench.inventory for the schema)."""
        data: dict[str, object] = {
            "name": "testbed",
            "defaults": {"executor": executor},
            "ssh": {
                "user": "root",
                "identity_file": str(self.ssh.identity),
                "known_hosts": str(self.ssh.known_hosts),
                "config_file": str(self.ssh.config),
                "connect_timeout": 3,
            },
            "nodes": [
                {
                    "name": h.name,
                    "address": h.address,
                    "data_dirs": [f"/tmp/aibench-testbed/{h.name}"],
                    "labels": {"rack": "r1" if h.index <= len(self.hosts) // 2 else "r2"},
                }
                for h in self.hosts
            ],
        }
        if self.slurm is not None:
            data["slurm"] = {"partition": "debug"}
        data.update(extra)
        return data

    def write_inventory(self, path: Path, executor: str = "ssh", **extra: object) -> Path:
        path.write_text(yaml.safe_dump(self.inventory_data(executor, **extra), sort_keys=False))
        return path

    # ------------------------------------------------------------------ teardown

    def down(self) -> None:
        global _held_here
        try:
            if self.slurm is not None:
                slurm.stop(self.slurm)
                self.slurm = None
        finally:
            for proc in self.sshd_procs.values():
                sshd.stop(proc)
            self.sshd_procs.clear()
            try:
                net.remove_all()
            finally:
                if self.lock_fd is not None:
                    os.close(self.lock_fd)  # releases the flock
                    self.lock_fd = None
                    _held_here = False


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def cleanup_stale() -> None:
    slurm.stale_cleanup()
    net.remove_all()
