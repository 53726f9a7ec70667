"""Network namespaces as test hosts, on a bridge of their own.

Host ``abt-hN`` is the network namespace ``abt-hN`` with an ``eth0`` at ``10.213.7.N/24``;
its peer ``abtvN`` sits in the root namespace on the bridge ``abtbr0``, which carries
``10.213.7.254`` so that the root namespace (ssh client, slurmctld, srun) reaches every
host. Names and subnet are used by nothing else, so a stale bed is recognised by name and
removed before a new one is built.

That is the :data:`SMALL` layout (the 4-host bed). :data:`BIG` is a second one, for the
bed of up to 250 hosts (``abx-hN`` at ``10.213.8.N``, veths ``abxvN``, bridge ``abxbr0``):
its own names and subnet, so it can stand beside the small bed and be cleaned up alone.
:data:`STORE` (``s3-hN`` at ``10.213.30.N``, veths ``s3vN``, bridge ``s3br0``) is the
object-storage and cache bed: S3 and Redis clients and one storage host.
Its hosts are made with one ``ip -batch`` per kind of command (a few seconds for 64
hosts instead of a few hundred ``ip`` processes).

Everything here shells out to ``ip``/``tc`` with argv lists.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Layout:
    """The names and the subnet of one bed."""

    prefix: str  # namespace and host name prefix
    veth: str  # root-namespace veth prefix
    bridge: str
    subnet: str  # the first three octets of a /24

    @property
    def gateway(self) -> str:
        return f"{self.subnet}.254"


SMALL = Layout(prefix="abt-h", veth="abtv", bridge="abtbr0", subnet="10.213.7")
BIG = Layout(prefix="abx-h", veth="abxv", bridge="abxbr0", subnet="10.213.8")
# 4 hosts of their own for the serving test (AIPerf, HAProxy, Nginx), so that its minutes
# of load run beside the tests of the 4-host bed, on another test worker
SERVING = Layout(prefix="abs-h", veth="absv", bridge="absbr0", subnet="10.213.20")
# the object-storage and cache bed: clients and one storage host (tests/testbed/ceph.py)
STORE = Layout(prefix="s3-h", veth="s3v", bridge="s3br0", subnet="10.213.30")
# 4 hosts of their own for the soak tests, whose minutes are mostly the soak's own clock:
# they run beside the 4-host bed's tests instead of after them
SOAK = Layout(prefix="sk-h", veth="skv", bridge="skbr0", subnet="10.213.21")
LAYOUTS = (SMALL, BIG, SERVING, STORE, SOAK)
BRIDGE = SMALL.bridge
SUBNET = SMALL.subnet
PREFIX = SMALL.prefix
VETH = SMALL.veth
GATEWAY = SMALL.gateway


def sh(*argv: str, check: bool = True, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, check=check, capture_output=True, text=True, timeout=timeout)


@dataclass(frozen=True)
class Host:
    """One namespace host."""

    index: int
    layout: Layout = SMALL

    @property
    def name(self) -> str:
        return f"{self.layout.prefix}{self.index}"

    @property
    def netns(self) -> str:
        return self.name

    @property
    def address(self) -> str:
        return f"{self.layout.subnet}.{self.index}"

    @property
    def veth(self) -> str:
        """The root-namespace side of the host's link."""
        return f"{self.layout.veth}{self.index}"

    @property
    def netns_path(self) -> str:
        return f"/run/netns/{self.netns}"


def netns_available() -> str | None:
    """None when namespaces can be made here, else why not."""
    if os.geteuid() != 0:
        return "the multi-host test bed needs root (network namespaces, sshd, slurmd)"
    try:
        r = sh("ip", "netns", "list", check=False)
    except FileNotFoundError:
        return "`ip` (iproute2) is not installed"
    if r.returncode != 0:
        return f"`ip netns` is unavailable: {r.stderr.strip()}"
    return None


def netns_pids(host: Host) -> list[int]:
    r = sh("ip", "netns", "pids", host.netns, check=False)
    return [int(p) for p in r.stdout.split()]


def comm(pid: int) -> str:
    """The command name of process ``pid`` (``/proc/PID/comm``); '' once it is gone."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def kill_pids(pids: list[int], grace: float = 2.0) -> None:
    """SIGTERM, wait up to ``grace`` s, then SIGKILL what is left."""
    for p in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGTERM)
    deadline = time.monotonic() + grace
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if _alive(p)]
        if alive:
            time.sleep(0.05)
    for p in alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); treat it as gone.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def existing_netns() -> list[str]:
    r = sh("ip", "netns", "list", check=False)
    return [line.split()[0] for line in r.stdout.splitlines() if line.strip()]


def remove_all(layout: Layout | None = None) -> None:
    """Remove every namespace, veth and the bridge of a bed (a stale one too); every
    layout's when ``layout`` is None."""
    layouts = LAYOUTS if layout is None else (layout,)
    mine = [ns for ns in existing_netns() if any(ns.startswith(x.prefix) for x in layouts)]
    pids = [
        int(p) for ns in mine for p in sh("ip", "netns", "pids", ns, check=False).stdout.split()
    ]
    kill_pids(pids)
    links = sh("ip", "-o", "link", "show", check=False).stdout
    batch = []
    for line in links.splitlines():
        name = line.split(":", 2)[1].strip().split("@")[0]
        if any(name.startswith(x.veth) for x in layouts):
            batch.append(f"link del {name}")
    batch += [f"netns del {ns}" for ns in mine]
    _batch(batch, check=False)
    for x in layouts:
        sh("ip", "link", "del", x.bridge, check=False)


def _batch(lines: list[str], check: bool = True) -> None:
    """Run ``ip`` commands in one ``ip -batch`` process (names come from the layout only)."""
    if not lines:
        return
    r = subprocess.run(
        ["ip", "-force", "-batch", "-"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if check and r.returncode != 0:
        raise RuntimeError(f"ip -batch failed: {r.stderr.strip()[-500:]}")


def create(n: int, layout: Layout = SMALL) -> list[Host]:
    if not 1 <= n <= 250:
        raise ValueError(f"a bed has 1 to 250 hosts, not {n}")
    sh("ip", "link", "add", layout.bridge, "type", "bridge")
    sh("ip", "addr", "replace", f"{layout.gateway}/24", "dev", layout.bridge)
    sh("ip", "link", "set", layout.bridge, "up")
    hosts = [Host(i, layout) for i in range(1, n + 1)]
    _batch([f"netns add {h.netns}" for h in hosts])
    _batch(
        [f"link add {h.veth} type veth peer name eth0 netns {h.netns}" for h in hosts]
        + [f"link set {h.veth} master {layout.bridge} up" for h in hosts]
    )
    for h in hosts:  # a batch runs in one namespace: one ``ip -n NS -batch`` per host
        lines = [f"addr replace {h.address}/24 dev eth0", "link set eth0 up", "link set lo up"]
        r = subprocess.run(
            ["ip", "-n", h.netns, "-batch", "-"],
            input="\n".join(lines) + "\n",
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if r.returncode != 0:
            raise RuntimeError(f"{h.name}: ip -batch failed: {r.stderr.strip()[-300:]}")
    return hosts


def shape(host: Host, rate: str = "1gbit") -> None:
    """Limit the host's link both ways with tbf (eth0 egress + the bridge-side veth)."""
    tbf = ("root", "tbf", "rate", rate, "burst", "128kb", "latency", "20ms")
    sh("ip", "netns", "exec", host.netns, "tc", "qdisc", "replace", "dev", "eth0", *tbf)
    sh("tc", "qdisc", "replace", "dev", host.veth, *tbf)


def unshape(host: Host) -> None:
    sh("ip", "netns", "exec", host.netns, "tc", "qdisc", "del", "dev", "eth0", "root", check=False)
    sh("tc", "qdisc", "del", "dev", host.veth, "root", check=False)


def link_down(host: Host) -> None:
    sh("ip", "link", "set", host.veth, "down")


def link_up(host: Host) -> None:
    sh("ip", "link", "set", host.veth, "up")


def shape_pair(a: Host, b: Host, rate: str = "1gbit") -> None:
    """Limit only the traffic between ``a`` and ``b`` (both ways), other pairs untouched.

    On each side's eth0: an htb root whose default class is unlimited, one class at
    ``rate``, and a u32 filter sending packets for the other host's address there.
    """
    for src, dst in ((a, b), (b, a)):
        ns = ("ip", "netns", "exec", src.netns)
        sh(
            *ns,
            "tc",
            "qdisc",
            "replace",
            "dev",
            "eth0",
            "root",
            "handle",
            "1:",
            "htb",
            "default",
            "20",
        )
        sh(*ns, "tc", "class", "replace", "dev", "eth0", "parent", "1:", "classid", "1:10",
           "htb", "rate", rate, "ceil", rate, "burst", "128kb")  # fmt: skip
        sh(*ns, "tc", "class", "replace", "dev", "eth0", "parent", "1:", "classid", "1:20",
           "htb", "rate", "100gbit", "burst", "1mb")  # fmt: skip
        sh(*ns, "tc", "filter", "replace", "dev", "eth0", "parent", "1:", "protocol", "ip",
           "prio", "1", "u32", "match", "ip", "dst", f"{dst.address}/32", "flowid", "1:10")  # fmt: skip
