"""The multi-host test bed: namespace hosts with sshd, optionally a Slurm cluster on them.

Only one test process builds a given bed on a machine at a time (its names are fixed): the
``up`` of a layout takes an exclusive ``flock`` on that layout's lock file
(:func:`lock_path`) and waits for it (up to ``LOCK_WAIT`` s) while another test process
holds it; the kernel drops the lock of a killed run, so what a killed run left behind is
then removed as stale. Layouts have names and subnets of their own
(:data:`~tests.testbed.net.SMALL`, the 4-host bed, :data:`~tests.testbed.net.BIG`, the
64-host one, :data:`~tests.testbed.net.SERVING` and :data:`~tests.testbed.net.SOAK`, the
serving and the soak tests' 4 hosts), so test processes (pytest-xdist workers) may each
hold one, and one process may hold several. A layout's lock is released when its bed goes
down.

``TestBed.up(n, root, layout)`` removes whatever a killed earlier run left of its layout
(namespaces, veths, bridge; for the 4-host bed also the Slurm daemons by pid file and
/tmp/spmix_*), then builds ``n`` hosts and starts their sshd, all at once. ``down()`` stops
every process by PID, kills whatever still runs in the namespaces and removes namespaces,
veths and bridge. The pytest fixtures in :mod:`tests.testbed.fixtures` call ``down()`` in a
``finally``, so the bed goes away also when a test or the bring-up itself fails.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tests.testbed import net, slurm, sshd
from tests.testbed.net import SMALL, Host, Layout

ROOT = Path(__file__).resolve().parent.parent.parent  # the repository (for python -m tests...)
LOCK_DIR = Path("/var/tmp")
LOCK_WAIT = 900.0
# The beds this process has up, by layout prefix, with their lock's fd: a second ``up`` of
# the same layout would wait on itself.
_held_here: dict[str, int] = {}


def lock_path(layout: Layout) -> Path:
    """The lock file of a layout's bed (``/var/tmp/abt-testbed-abt-h.lock`` ...)."""
    return LOCK_DIR / f"abt-testbed-{layout.prefix}.lock"


def _lock(layout: Layout) -> int:
    if layout.prefix in _held_here:
        raise RuntimeError(
            "a second test bed in one test session: register the fixtures once "
            "(tests/conftest.py pytest_plugins), never import them into another conftest"
        )
    fd = os.open(lock_path(layout), os.O_CREAT | os.O_RDWR, 0o644)
    deadline = time.monotonic() + LOCK_WAIT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                raise RuntimeError(
                    f"the test bed is held by another test run ({lock_path(layout)})"
                ) from None
            time.sleep(0.5)


@dataclass
class TestBed:
    __test__ = False  # not a test class, whatever its name

    root: Path
    hosts: list[Host]
    ssh: sshd.SSHFiles
    sshd_procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    # fault helpers running in a host's namespace (a relay, a silent listener), by host
    fault_procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    slurm: slurm.SlurmCluster | None = None
    lock_fd: int | None = None
    layout: Layout = SMALL

    @classmethod
    def up(cls, n: int, root: Path, layout: Layout = SMALL) -> TestBed:
        fd = _lock(layout)
        _held_here[layout.prefix] = fd
        try:
            cleanup_stale(layout)
            hosts = net.create(n, layout)
            bed = cls(
                root=root,
                hosts=hosts,
                ssh=sshd.make_files(root / "ssh", hosts),
                lock_fd=fd,
                layout=layout,
            )
        except BaseException:
            net.remove_all(layout)
            _release(layout)
            raise
        try:
            bed.sshd_procs.update(sshd.start_many(hosts, bed.ssh))
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
        ssh_pids = [p for p in net.netns_pids(h) if net.comm(p) == "sshd"]
        net.kill_pids(ssh_pids, grace=0.5)
        proc = self.sshd_procs.get(name)
        if proc is not None:
            proc.wait(timeout=5)

    def restart_sshd(self, name: str, **settings: str) -> None:
        """Start the host's sshd again if it is not running; with ``settings`` (sshd
        keywords: ``MaxStartups``, ``MaxSessions``, ``Port``), stop it first and start it
        with them (the bed's defaults for the others)."""
        h = self.host(name)
        proc = self.sshd_procs.get(name)
        running = proc is not None and proc.poll() is None
        if running and not settings:
            return
        sshd.write_config(self.ssh, h, **settings)
        if running:
            self.kill_sshd(name)
        self.sshd_procs[name] = sshd.start(h, self.ssh)

    def _in_netns(self, name: str, *argv: str) -> subprocess.Popen[bytes]:
        h = self.host(name)
        return subprocess.Popen(
            ["nsenter", f"--net={h.netns_path}", *argv],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

    def silence(self, name: str) -> None:
        """Replace the host's sshd by a socket that accepts TCP (the kernel completes the
        handshake for its backlog) and never says a word: no SSH banner, ever."""
        self.kill_sshd(name)
        h = self.host(name)
        code = (
            "import socket, sys, time\n"
            "s = socket.socket()\n"
            "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
            f"s.bind(({h.address!r}, 22))\n"
            "s.listen(512)\n"
            "print('listening', flush=True)\n"
            "time.sleep(1e6)\n"
        )
        self._fault(name, self._in_netns(name, sys.executable, "-c", code))

    def slow_down(self, name: str, delay_ms: float) -> None:
        """Make every SSH exchange with the host ``delay_ms`` slower each way: its sshd moves
        to port 2222 and a delaying relay (:mod:`tests.testbed.delay`) takes port 22."""
        self.restart_sshd(name, Port="2222")
        h = self.host(name)
        relay = self._in_netns(
            name, sys.executable, "-m", "tests.testbed.delay", h.address, "22", "2222",
            str(delay_ms),
        )  # fmt: skip
        self._fault(name, relay)

    def _fault(self, name: str, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if b"listening" not in line:
            net.kill_pids([proc.pid])
            raise RuntimeError(f"fault helper on {name} did not start")
        self.fault_procs[name] = proc

    def heal(self, name: str) -> None:
        """Undo :meth:`silence`, :meth:`slow_down`, :meth:`kill_sshd` and
        :meth:`restart_sshd` settings: the host's own sshd on port 22 with the defaults."""
        proc = self.fault_procs.pop(name, None)
        if proc is not None:
            sshd.stop(proc)
        self.restart_sshd(name, Port="22")

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
        """PIDs in the host's namespace other than its sshd and slurmd daemons. A process that
        ended between the namespace's listing and the read of its name is left out: it is not
        left behind (a connection's short-lived sshd child ends so while the listing runs)."""
        return [
            p for p in net.netns_pids(self.host(name)) if net.comm(p) not in ("", "sshd", "slurmd")
        ]

    def processes(self, name: str) -> dict[int, str]:
        """:meth:`pids` with their command lines (a process that ended meanwhile is left
        out), to name what a test finds left behind."""
        found = {}
        for p in self.pids(name):
            with contextlib.suppress(OSError):
                found[p] = Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        return found

    def commands(self, name: str) -> list[str]:
        """Command names of :meth:`pids` (a process that ended meanwhile is left out)."""
        return [c for c in map(net.comm, self.pids(name)) if c]

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
        try:
            if self.slurm is not None:
                slurm.stop(self.slurm)
                self.slurm = None
        finally:
            for proc in [*self.sshd_procs.values(), *self.fault_procs.values()]:
                sshd.stop(proc)
            self.sshd_procs.clear()
            self.fault_procs.clear()
            try:
                net.remove_all(self.layout)
            finally:
                if self.lock_fd is not None:
                    self.lock_fd = None
                    _release(self.layout)


def _release(layout: Layout) -> None:
    """This layout's bed is gone: release its flock."""
    fd = _held_here.pop(layout.prefix, None)
    if fd is not None:
        os.close(fd)


def cleanup_stale(layout: Layout = SMALL) -> None:
    """Remove what a killed run left of a layout's bed (the Slurm cluster runs on SMALL)."""
    if layout == SMALL:
        slurm.stale_cleanup()
    net.remove_all(layout)
