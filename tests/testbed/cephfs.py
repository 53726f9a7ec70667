"""A Ceph cluster across the test bed's hosts: RADOS for ``rados bench``, CephFS with an
active and a standby metadata server mounted with ``ceph-fuse`` on every host, and
optionally an S3 gateway.

Debian's Ceph 16 packages (``ceph-mon``, ``ceph-osd``, ``ceph-mds``, ``ceph-fuse``,
``radosgw``; ``ceph-common`` for the CLI): one monitor and one OSD on ``memstore`` (RAM)
in the namespace of one host, one ``ceph-mds`` in the namespace of each MDS host (``a``
on the first, ``b`` on the second: ``a`` is started alone and waited on until it is
``up:active``, so the active MDS is known; ``b`` then joins as ``up:standby``). Every
file (config, keyrings, data, logs, sockets, pid files) is under one directory, which
every namespace host sees.

Failover is tuned as in the recipe that was tried on this kind of machine: ``mds beacon
interval = 1`` and ``mon tick interval = 1`` (the tick must be below the grace, or the
monitor never replaces a dead MDS and the clients block), with ``mds beacon grace = 6``
rather than its 3: the monitor replaces a silent MDS only when another MDS's beacon came
within half the grace, and on a loaded 2-core machine the standby's beacons arrive late
(with 3, the monitor waited 24 to 38 s to replace the killed MDS).

Each host mounts the file system with ``ceph-fuse`` inside the mount namespace its sshd
runs in (``nsenter -t SSHD -m -n``), at the same path, so a command that aibench runs
there over SSH sees that host's own client. Client admin sockets and logs carry ``$pid``
(four ``client.admin`` processes at once). ``stop()`` unmounts and stops every daemon by
its pid file; the bed's teardown kills whatever still runs in its namespaces.

Names: :data:`CF` is a bed layout of its own (``cf-h1`` .. at 10.213.33.N), so it stands
beside the other beds.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.testbed import net
from tests.testbed.bed import TestBed
from tests.testbed.ceph import _alive, _kill, in_netns, start_osd

READY_TIMEOUT = 120.0
CF = net.Layout(prefix="cf-h", veth="cfv", bridge="cfbr0", subnet="10.213.33")
MON_PORT = 13420
RGW_PORT = 17490


@dataclass
class CephCluster:
    root: Path
    mon: net.Host
    mds_hosts: dict[str, net.Host] = field(default_factory=dict)  # MDS name -> its host
    mount: Path | None = None
    pidfiles: dict[str, Path] = field(default_factory=dict)
    mounted: dict[str, int] = field(default_factory=dict)  # host -> pid of its mount ns
    rgw_port: int = 0
    s3_keys: tuple[str, str] | None = field(default=None, repr=False)  # access, secret

    @property
    def conf(self) -> Path:
        return self.root / "ceph.conf"

    @property
    def keyring(self) -> Path:
        return self.root / "keyring"

    @property
    def rgw_url(self) -> str:
        return f"http://{self.mon.address}:{self.rgw_port}"

    def run(self, *argv: str, stdin: str | None = None, timeout: float = 60.0,
            netns: str | None = None) -> str:  # fmt: skip
        """A Ceph command in the monitor's namespace (or ``netns``), with the config."""
        ns = self.mon.netns if netns is None else netns
        r = subprocess.run(
            [*in_netns(ns), *argv], input=stdin, capture_output=True, text=True,
            timeout=timeout, env={**os.environ, "CEPH_CONF": str(self.conf)}, check=False,
        )  # fmt: skip
        if r.returncode != 0:
            raise RuntimeError(f"{argv[0]} failed ({r.returncode}): {r.stderr.strip()[-400:]}")
        return r.stdout

    def mds_states(self) -> dict[str, str]:
        """MDS name -> state (``up:active``, ``up:standby`` ...), from ``ceph fs dump``."""
        dump = json.loads(self.run("ceph", "fs", "dump", "-f", "json", timeout=30))
        states = {s["name"]: s["state"] for s in dump.get("standbys", [])}
        for fs in dump.get("filesystems", []):
            for info in fs["mdsmap"]["info"].values():
                states[info["name"]] = info["state"]
        return states

    def active_mds(self) -> str | None:
        return next((n for n, s in self.mds_states().items() if s == "up:active"), None)

    def mds_pidfile(self, name: str) -> Path:
        return self.root / "run" / f"mds.{name}.pid"

    def mds_alive(self, name: str) -> bool:
        return _alive(self.mds_pidfile(name))


def _conf(c: CephCluster, fsid: str) -> str:
    r, addr = str(c.root), c.mon.address
    mds = "".join(f"[mds.{name}]\npublic addr = {h.address}\n\n" for name, h in c.mds_hosts.items())
    return f"""[global]
fsid = {fsid}
mon host = v2:{addr}:{MON_PORT}
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
auth allow insecure global id reclaim = false
run dir = {r}/run
admin socket = {r}/run/$cluster-$name.asok
log file = {r}/log/$name.log
pid file = {r}/run/$name.pid
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon max pg per osd = 1000
mon warn on pool no redundancy = false
mon data avail warn = 5
mds beacon interval = 1
mds beacon grace = 6
mon tick interval = 1

[client]
admin socket = {r}/run/$cluster-$name.$pid.asok
log file = {r}/log/$name.$pid.log
pid file = {r}/run/$name.$pid.pid

[client.admin]
keyring = {r}/keyring

[mon]
mon data = {r}/mon/$id
public addr = {addr}

[osd]
osd data = {r}/osd/$id
keyring = {r}/osd/$id/keyring
osd objectstore = memstore
memstore device bytes = 3221225472
public addr = {addr}

[mds]
mds data = {r}/mds/$id
keyring = {r}/mds/$id/keyring

{mds}[client.rgw.a]
rgw frontends = beast endpoint={addr}:{RGW_PORT}
keyring = {r}/rgw.keyring
rgw data = {r}/rgw
log file = {r}/log/rgw.log
pid file = {r}/run/rgw.pid
admin socket = {r}/run/rgw.asok
"""


def start(root: Path, mon: net.Host, mds_hosts: dict[str, net.Host] | None = None) -> CephCluster:
    """A monitor and an OSD in ``mon``'s namespace (and the MDS daemons, not yet started,
    on ``mds_hosts``); the caller stops it with :func:`stop`, also when this fails."""
    c = CephCluster(root=root, mon=mon, mds_hosts=dict(mds_hosts or {}))
    for d in ("run", "log", "mon", "osd", "rgw", *(f"mds/{n}" for n in c.mds_hosts)):
        (root / d).mkdir(parents=True, exist_ok=True)
    fsid = str(uuid.uuid4())
    c.conf.write_text(_conf(c, fsid))
    kr = str(c.keyring)
    c.run("ceph-authtool", "--create-keyring", kr, "--gen-key", "-n", "mon.",
          "--cap", "mon", "allow *")  # fmt: skip
    c.run("ceph-authtool", kr, "--gen-key", "-n", "client.admin", "--cap", "mon", "allow *",
          "--cap", "osd", "allow *", "--cap", "mds", "allow *", "--cap", "mgr", "allow *")  # fmt: skip
    monmap = str(root / "monmap")
    c.run("monmaptool", "--create", "--fsid", fsid, "--addv", "a",
          f"[v2:{mon.address}:{MON_PORT}]", monmap)  # fmt: skip
    c.run("ceph-mon", "--mkfs", "-i", "a", "--monmap", monmap, "--keyring", kr)
    c.pidfiles["mon"] = root / "run" / "mon.a.pid"
    c.run("ceph-mon", "-i", "a")
    start_osd(c)
    return c


def _wait(ok: object, why: str, timeout: float = READY_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not ok():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise RuntimeError(why)
        time.sleep(0.3)


def create_pool(c: CephCluster, pool: str) -> None:
    c.run("ceph", "osd", "pool", "create", pool, "8", "8")


def start_fs(c: CephCluster) -> None:
    """The file system, its first MDS until ``up:active``, then the others as standbys."""
    create_pool(c, "cephfs_metadata")
    create_pool(c, "cephfs_data")
    c.run("ceph", "fs", "new", "cephfs", "cephfs_metadata", "cephfs_data")
    for i, name in enumerate(c.mds_hosts):
        start_mds(c, name)
        want = "up:active" if i == 0 else "up:standby"
        _wait(lambda n=name, w=want: c.mds_states().get(n) == w,  # type: ignore[misc]
              f"mds.{name} did not become {want}")  # fmt: skip


def start_mds(c: CephCluster, name: str) -> None:
    keyring = c.root / "mds" / name / "keyring"
    if not keyring.exists():
        c.run("ceph", "auth", "get-or-create", f"mds.{name}", "mon", "allow profile mds",
              "osd", "allow rwx", "mds", "allow", "mgr", "allow profile mds",
              "-o", str(keyring))  # fmt: skip
    c.pidfiles[f"mds.{name}"] = c.mds_pidfile(name)
    c.run("ceph-mds", "-i", name, netns=c.mds_hosts[name].netns)


def mount_all(c: CephCluster, bed: TestBed, mount: Path) -> None:
    """``ceph-fuse`` on every host of the bed, at ``mount``, in its sshd's mount namespace."""
    c.mount = mount
    mount.mkdir(parents=True, exist_ok=True)
    for h in bed.hosts:
        ns = bed.sshd_procs[h.name].pid
        subprocess.run(
            ["nsenter", "-t", str(ns), "-m", "-n", "ceph-fuse", "-c", str(c.conf),
             "-n", "client.admin", str(mount)],
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip
        c.mounted[h.name] = ns


def start_rgw(c: CephCluster) -> tuple[str, str]:
    """The S3 gateway on the monitor's host and one user; its (access key, secret key)."""
    import secrets

    from tests.testbed.ceph import CephS3, _answers

    c.rgw_port = RGW_PORT
    c.run("ceph", "auth", "get-or-create", "client.rgw.a", "mon", "allow rw", "osd", "allow rwx",
          "mgr", "allow rw", "-o", str(c.root / "rgw.keyring"))  # fmt: skip
    c.pidfiles["rgw"] = c.root / "run" / "rgw.pid"
    c.run("radosgw", "-n", "client.rgw.a")
    probe = CephS3(c.root, c.mon.netns, c.mon.address, RGW_PORT, "", "")
    _wait(lambda: _answers(probe), f"the RADOS gateway does not answer on {c.rgw_url}")
    access, secret = "AIBENCH" + secrets.token_hex(6).upper(), secrets.token_urlsafe(30)
    c.run("radosgw-admin", "user", "create", "--uid=aibench", "--display-name=aibench",
          f"--access-key={access}", f"--secret-key={secret}", timeout=120)  # fmt: skip
    return access, secret


def stop(c: CephCluster) -> None:
    """Unmount every client, then stop every daemon by its pid file."""
    for host, ns in list(c.mounted.items()):
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            subprocess.run(["nsenter", "-t", str(ns), "-m", "umount", "-l", str(c.mount)],
                           capture_output=True, timeout=30, check=False)  # fmt: skip
        c.mounted.pop(host)
    for pidfile in (c.root / "run").glob("client.admin.*.pid"):
        _kill(pidfile, grace=5.0)
    for name in [k for k in c.pidfiles if k not in ("osd", "mon")] + ["osd", "mon"]:
        if name in c.pidfiles:
            _kill(c.pidfiles[name], grace=8.0)


@contextlib.contextmanager
def cephfs_bed(n: int, root: Path, rgw: bool = False) -> Iterator[tuple[TestBed, CephCluster]]:
    """``n`` namespace hosts with sshd (``cf-h1`` ...), the monitor, the OSD and mds.a on
    the third (the first when fewer), mds.b on the fourth (the last), CephFS mounted on
    every host at ``root/mnt``; with ``rgw``, the S3 gateway too. All of it removed on
    the way out, also when the bring-up fails."""
    bed = TestBed.up(n, root, CF)
    cluster: CephCluster | None = None
    try:
        mon = bed.hosts[2] if n >= 3 else bed.hosts[0]
        cluster = start(root / "ceph", mon, {"a": mon, "b": bed.hosts[-1]})
        start_fs(cluster)
        mount_all(cluster, bed, root / "mnt")
        if rgw:
            cluster.s3_keys = start_rgw(cluster)
        yield bed, cluster
    finally:
        try:
            if cluster is not None:
                stop(cluster)
        finally:
            bed.down()
