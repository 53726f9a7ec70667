"""A GlusterFS volume across the test bed's hosts, mounted with the FUSE client on each.

Every host runs its own ``glusterd`` (foreground, ``-N``) in its network namespace and in a
mount namespace of its own where ``/run/gluster`` and ``/var/log/glusterfs`` are bound to
the host's directories (glusterd puts its sockets and logs there whatever its working
directory). The CLI reaches a host's glusterd through its own socket file
(``--glusterd-sock``). Host 1 probes the others, one brick per host makes a distributed
volume ``glvol`` (``force``: bricks on the root file system), and each host mounts it with
the FUSE client at the same path, inside the mount namespace its sshd runs in, so what a
node's ``fio --server`` sees at that path is that host's own client of the volume.

``throttle(host, percent)`` puts one host's FUSE client under a CPU quota (a cgroup v1
``cpu`` group, or the unified hierarchy's ``cpu.max``): that client gets slow, the others
do not. ``down()`` unmounts, stops every gluster process of the hosts by PID and removes
the cgroup; the fixture calls it in a ``finally``. Names start with ``gl``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.testbed import net, sshd
from tests.testbed.bed import TestBed

VOLUME = "glvol"
CGROUP_V1 = Path("/sys/fs/cgroup/cpu/gl-throttle")
CGROUP_V2 = Path("/sys/fs/cgroup/gl-throttle")
_GLUSTER = ("glusterd", "glusterfsd", "glusterfs")
_STARTER = (
    'mount --bind "$1" /run/gluster && mount --bind "$2" /var/log/glusterfs && '
    'exec glusterd -N -f "$3" -p "$4" -l "$5"'
)


def run(*argv: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    if r.returncode != 0:
        raise RuntimeError(
            f"{' '.join(argv)}: exit {r.returncode}: {r.stderr.strip() or r.stdout.strip()}"
        )
    return r


@dataclass
class GlusterVolume:
    bed: TestBed
    root: Path
    mount: Path
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    mounted: list[str] = field(default_factory=list)
    cgroup: Path | None = None

    def host_dir(self, name: str) -> Path:
        return self.root / name

    def sock(self, name: str) -> Path:
        return self.host_dir(name) / "glusterd.socket"

    def cli(self, name: str, *args: str, timeout: float = 60.0) -> str:
        return run("gluster", f"--glusterd-sock={self.sock(name)}", "--mode=script", *args,
                   timeout=timeout).stdout  # fmt: skip

    # ------------------------------------------------------------------ bring-up

    @classmethod
    def up(cls, bed: TestBed, root: Path) -> GlusterVolume:
        vol = cls(bed=bed, root=root, mount=root / "mnt")
        try:
            vol.mount.mkdir(parents=True)
            for d in ("/run/gluster", "/var/log/glusterfs"):
                Path(d).mkdir(parents=True, exist_ok=True)
            for h in bed.hosts:
                vol._start_glusterd(h)
            for h in bed.hosts:
                vol._wait_glusterd(h.name)
            vol._create_volume()
            for h in bed.hosts:
                vol._mount(h)
        except BaseException:
            vol.down()
            raise
        return vol

    def _start_glusterd(self, h: net.Host) -> None:
        d = self.host_dir(h.name)
        wd, rundir, logdir = d / "wd", d / "run", d / "log"
        for p in (wd, rundir, logdir, d / "brick"):
            p.mkdir(parents=True)
        for sub in ("groups", "hooks"):
            src = Path("/var/lib/glusterd") / sub
            if src.exists():
                shutil.copytree(src, wd / sub)
        conf = Path("/etc/glusterfs/glusterd.vol").read_text()
        conf = conf.replace(
            "option working-directory /var/lib/glusterd", f"option working-directory {wd}"
        )
        conf = conf.replace(
            "end-volume", f"    option glusterd-sockfile {self.sock(h.name)}\nend-volume"
        )
        (d / "glusterd.vol").write_text(conf)
        with (d / "glusterd.stderr").open("ab") as err:
            self.procs[h.name] = subprocess.Popen(
                ["nsenter", f"--net={h.netns_path}", "unshare", "--mount", "sh", "-c", _STARTER,
                 "gl-glusterd", str(rundir), str(logdir), str(d / "glusterd.vol"),
                 str(d / "glusterd.pid"), str(logdir / "glusterd.log")],
                stdin=subprocess.DEVNULL, stdout=err, stderr=err,
            )  # fmt: skip

    def _wait_glusterd(self, name: str) -> None:
        deadline = time.monotonic() + 120
        while True:
            proc = self.procs[name]
            if proc.poll() is not None:
                log = (self.host_dir(name) / "glusterd.stderr").read_text(errors="replace")
                raise RuntimeError(f"glusterd on {name} exited {proc.returncode}: {log[-500:]}")
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                self.cli(name, "pool", "list", timeout=40)
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"glusterd on {name} did not answer in 120 s")
            time.sleep(0.3)

    def _create_volume(self) -> None:
        first, *others = self.bed.hosts
        for h in others:
            self.cli(first.name, "peer", "probe", h.address)
        # connected is not yet joined: a volume create refuses a peer that is not "Peer in
        # Cluster" (seen with both cores busy), so wait for that state of every other host
        deadline = time.monotonic() + 90
        while self.cli(first.name, "peer", "status").count("Peer in Cluster") < len(others):
            if time.monotonic() > deadline:
                raise RuntimeError("the gluster peers did not all join the cluster in 90 s")
            time.sleep(0.3)
        bricks = [f"{h.address}:{self.host_dir(h.name) / 'brick'}" for h in self.bed.hosts]
        # a transaction across the four glusterds: on two busy cores it once took over 60 s
        # (the gluster CLI itself waits up to 120 s for glusterd)
        self.cli(first.name, "volume", "create", VOLUME, *bricks, "force", timeout=180)
        self.cli(first.name, "volume", "set", VOLUME, "network.ping-timeout", "5", timeout=180)
        self.cli(first.name, "volume", "start", VOLUME, timeout=180)

    def ns_of(self, name: str) -> str:
        """The PID whose mount namespace is the host's (its sshd)."""
        return str(self.bed.sshd_procs[name].pid)

    def _mount(self, h: net.Host) -> None:
        log = self.host_dir(h.name) / "log" / "client.log"
        run("nsenter", "-t", self.ns_of(h.name), "-m", "-n", "mount", "-t", "glusterfs",
            "-o", f"log-file={log}", f"{h.address}:/{VOLUME}", str(self.mount))  # fmt: skip
        self.mounted.append(h.name)

    # ------------------------------------------------------------------ faults

    def client_pid(self, name: str) -> int:
        """The PID of the host's FUSE client (the ``glusterfs`` process of the mount)."""
        for pid in net.netns_pids(self.bed.host(name)):
            with contextlib.suppress(OSError):
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                if cmd and cmd[0].endswith(b"glusterfs") and str(self.mount).encode() in cmd:
                    return pid
        raise RuntimeError(f"no glusterfs client process on {name}")

    def throttle(self, name: str, percent: int) -> None:
        """Hold the host's FUSE client (all its threads) to ``percent`` of one CPU."""
        pid = self.client_pid(name)
        if CGROUP_V1.parent.is_dir():
            CGROUP_V1.mkdir(exist_ok=True)
            (CGROUP_V1 / "cpu.cfs_period_us").write_text("100000")
            (CGROUP_V1 / "cpu.cfs_quota_us").write_text(str(percent * 1000))
            self.cgroup = CGROUP_V1
        else:  # the unified hierarchy: the cpu controller enabled for the children
            (CGROUP_V2.parent / "cgroup.subtree_control").write_text("+cpu")
            CGROUP_V2.mkdir(exist_ok=True)
            (CGROUP_V2 / "cpu.max").write_text(f"{percent * 1000} 100000")
            self.cgroup = CGROUP_V2
            (CGROUP_V2 / "cgroup.procs").write_text(str(pid))  # all its threads move
            return
        for task in Path(f"/proc/{pid}/task").iterdir():
            (CGROUP_V1 / "tasks").write_text(task.name)

    # ------------------------------------------------------------------ teardown

    def down(self) -> None:
        for name in reversed(self.mounted):
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                run(
                    "nsenter",
                    "-t",
                    self.ns_of(name),
                    "-m",
                    "umount",
                    "-l",
                    str(self.mount),
                    timeout=20,
                )
        self.mounted.clear()
        for h in self.bed.hosts:
            pids = [p for p in net.netns_pids(h) if net.comm(p) in _GLUSTER]
            proc = self.procs.pop(h.name, None)
            net.kill_pids(pids + ([proc.pid] if proc is not None else []), grace=3.0)
            if proc is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=5)
        if self.cgroup is not None:
            _remove_cgroup(self.cgroup)
            self.cgroup = None


def _remove_cgroup(path: Path) -> None:
    parent = path.parent / ("tasks" if path == CGROUP_V1 else "cgroup.procs")
    procs = path / ("tasks" if path == CGROUP_V1 else "cgroup.procs")
    with contextlib.suppress(OSError):
        for task in procs.read_text().split():
            with contextlib.suppress(OSError):
                parent.write_text(task)
    with contextlib.suppress(OSError):
        path.rmdir()


# ---------------------------------------------------------------------- a bed of its own

GL = net.Layout(prefix="gl-h", veth="glv", bridge="glbr0", subnet="10.213.9")
GL_LOCK = Path("/var/tmp/abt-gl.lock")


@contextlib.contextmanager
def gluster_bed(n: int, root: Path) -> Iterator[tuple[TestBed, GlusterVolume]]:
    """``n`` namespace hosts with sshd (``gl-h1`` ..., 10.213.9.0/24, a lock of their own,
    so that they stand beside the other beds) and the volume mounted on each; all of it
    removed on the way out, also when the bring-up fails."""
    fd = os.open(GL_LOCK, os.O_CREAT | os.O_RDWR, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        stale_cleanup()
        hosts = net.create(n, GL)
        bed = TestBed(root=root, hosts=hosts, ssh=sshd.make_files(root / "ssh", hosts), layout=GL)
        try:
            bed.sshd_procs.update(sshd.start_many(hosts, bed.ssh))
            vol = GlusterVolume.up(bed, root / "gl")
            try:
                yield bed, vol
            finally:
                vol.down()
        finally:
            bed.down()
    finally:
        os.close(fd)


def stale_cleanup() -> None:
    """What a killed run left: gluster processes in the ``gl`` namespaces, the cgroup,
    the namespaces and the bridge."""
    for ns in net.existing_netns():
        if ns.startswith(GL.prefix):
            host = net.Host(int(ns.removeprefix(GL.prefix)), GL)
            net.kill_pids([p for p in net.netns_pids(host) if net.comm(p) in (*_GLUSTER, "fio")])
    for cg in (CGROUP_V1, CGROUP_V2):
        if cg.exists():
            _remove_cgroup(cg)
    net.remove_all(GL)
