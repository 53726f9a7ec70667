"""Network namespaces as test hosts, on a bridge of their own.

Host ``abt-hN`` is the network namespace ``abt-hN`` with an ``eth0`` at ``10.213.7.N/24``;
its peer ``abtvN`` sits in the root namespace on the bridge ``abtbr0``, which carries
``10.213.7.254`` so that the root namespace (ssh client, slurmctld, srun) reaches every
host. Names and subnet are used by nothing else, so a stale bed is recognised by name and
removed before a new one is built.

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

BRIDGE = "abtbr0"
SUBNET = "10.213.7"
PREFIX = "abt-h"
VETH = "abtv"
GATEWAY = f"{SUBNET}.254"


def sh(*argv: str, check: bool = True, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, check=check, capture_output=True, text=True, timeout=timeout)


@dataclass(frozen=True)
class Host:
    """One namespace host."""

    index: int

    @property
    def name(self) -> str:
        return f"{PREFIX}{self.index}"

    @property
    def netns(self) -> str:
        return self.name

    @property
    def address(self) -> str:
        return f"{SUBNET}.{self.index}"

    @property
    def veth(self) -> str:
        """The root-namespace side of the host's link."""
        return f"{VETH}{self.index}"

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


def remove_all() -> None:
    """Remove every namespace, veth and the bridge of this bed (a stale one too)."""
    for ns in existing_netns():
        if ns.startswith(PREFIX):
            kill_pids([int(p) for p in sh("ip", "netns", "pids", ns, check=False).stdout.split()])
    links = sh("ip", "-o", "link", "show", check=False).stdout
    for line in links.splitlines():
        name = line.split(":", 2)[1].strip().split("@")[0]
        if name.startswith(VETH):
            sh("ip", "link", "del", name, check=False)
    for ns in existing_netns():
        if ns.startswith(PREFIX):
            sh("ip", "netns", "del", ns, check=False)
    sh("ip", "link", "del", BRIDGE, check=False)


def create(n: int) -> list[Host]:
    sh("ip", "link", "add", BRIDGE, "type", "bridge")
    sh("ip", "addr", "replace", f"{GATEWAY}/24", "dev", BRIDGE)
    sh("ip", "link", "set", BRIDGE, "up")
    hosts = [Host(i) for i in range(1, n + 1)]
    for h in hosts:
        sh("ip", "netns", "add", h.netns)
        sh("ip", "link", "add", h.veth, "type", "veth", "peer", "name", "eth0", "netns", h.netns)
        sh("ip", "link", "set", h.veth, "master", BRIDGE)
        sh("ip", "link", "set", h.veth, "up")
        sh("ip", "-n", h.netns, "addr", "replace", f"{h.address}/24", "dev", "eth0")
        sh("ip", "-n", h.netns, "link", "set", "eth0", "up")
        sh("ip", "-n", h.netns, "link", "set", "lo", "up")
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
