"""One OpenSSH server per namespace host, with keys and client files made for the bed.

Each sshd runs as ``nsenter --net=<netns> unshare --uts --mount sh -c '...; exec sshd -D'``:
its own hostname (the UTS namespace) and its own mount namespace, in which a minimal
``~/.bashrc`` (just PATH) is bind-mounted over root's, because root's real one is slow
to source and bash sources it for every command that arrives over ssh. ``exec`` chains
keep the spawned PID the sshd's, so it is stopped by PID.

Made in the bed's directory: a client key, one host key per host, ``authorized_keys``,
``known_hosts`` (every host under its address and its name) and an ``ssh_config`` for
tools that call ``ssh`` themselves.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests.testbed.net import Host, kill_pids, sh

MIN_BASHRC = "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"


@dataclass(frozen=True)
class SSHFiles:
    root: Path
    identity: Path
    known_hosts: Path
    config: Path
    authorized_keys: Path
    bashrc: Path

    def host_dir(self, host: Host) -> Path:
        return self.root / host.name


def keygen(path: Path, comment: str) -> None:
    sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path))


def make_files(root: Path, hosts: list[Host]) -> SSHFiles:
    root.mkdir(parents=True, exist_ok=True)
    files = SSHFiles(
        root=root,
        identity=root / "id_ed25519",
        known_hosts=root / "known_hosts",
        config=root / "ssh_config",
        authorized_keys=root / "authorized_keys",
        bashrc=root / "bashrc.min",
    )
    keygen(files.identity, "aibench-testbed-client")
    files.authorized_keys.write_text(Path(f"{files.identity}.pub").read_text())
    files.bashrc.write_text(MIN_BASHRC)
    known: list[str] = []
    for h in hosts:
        hd = files.host_dir(h)
        hd.mkdir(exist_ok=True)
        keygen(hd / "ssh_host_ed25519_key", h.name)
        pub = " ".join((hd / "ssh_host_ed25519_key.pub").read_text().split()[:2])
        known.append(f"{h.address} {pub}")
        known.append(f"{h.name} {pub}")
        write_config(files, h)
    files.known_hosts.write_text("\n".join(known) + "\n")
    cfg = []
    for h in hosts:
        cfg += [f"Host {h.name}", f"  HostName {h.address}"]
    cfg += [
        f"Host {' '.join(h.name for h in hosts)} {' '.join(h.address for h in hosts)}",
        "  User root",
        f"  IdentityFile {files.identity}",
        "  IdentitiesOnly yes",
        f"  UserKnownHostsFile {files.known_hosts}",
        "  StrictHostKeyChecking yes",
        "  BatchMode yes",
        "  ConnectTimeout 5",
        "",
    ]
    files.config.write_text("\n".join(cfg))
    return files


DEFAULTS = {"Port": "22", "MaxStartups": "100:30:200", "MaxSessions": "100"}


def write_config(files: SSHFiles, h: Host, **settings: str) -> None:
    """The host's ``sshd_config``: the bed's defaults, ``settings`` replacing any of them
    (``Port``, ``MaxStartups``, ``MaxSessions``) or adding sshd keywords."""
    hd = files.host_dir(h)
    values = {**DEFAULTS, **settings}
    lines = [
        f"Port {values.pop('Port')}",
        f"ListenAddress {h.address}",
        f"HostKey {hd / 'ssh_host_ed25519_key'}",
        f"PidFile {hd / 'sshd.pid'}",
        "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        f"AuthorizedKeysFile {files.authorized_keys}",
        "StrictModes no",
        "UseDNS no",
        *(f"{k} {v}" for k, v in values.items()),
        "AcceptEnv LANG LC_* OMPI_* PMIX_*",
        "",
    ]
    (hd / "sshd_config").write_text("\n".join(lines))


def start(host: Host, files: SSHFiles) -> subprocess.Popen[bytes]:
    """Start the host's sshd and wait until it listens on its port."""
    proc = spawn(host, files)
    wait_listening(host, files, proc)
    return proc


def start_many(hosts: list[Host], files: SSHFiles) -> dict[str, subprocess.Popen[bytes]]:
    """Start every host's sshd at once, then wait until each listens on its port."""
    procs = {h.name: spawn(h, files) for h in hosts}
    try:
        for h in hosts:
            wait_listening(h, files, procs[h.name])
    except BaseException:
        for proc in procs.values():
            stop(proc)
        raise
    return procs


def port_of(host: Host, files: SSHFiles) -> int:
    for line in (files.host_dir(host) / "sshd_config").read_text().splitlines():
        if line.startswith("Port "):
            return int(line.split()[1])
    return 22


def spawn(host: Host, files: SSHFiles) -> subprocess.Popen[bytes]:
    """Start the host's sshd (not waiting for it)."""
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege-separation dir
    hd = files.host_dir(host)
    inner = (
        f"mount --bind {files.bashrc} /root/.bashrc && hostname {host.name} && "
        f"exec /usr/sbin/sshd -D -f {hd / 'sshd_config'} -E {hd / 'sshd.log'}"
    )
    with (hd / "sshd.stderr").open("ab") as err:
        return subprocess.Popen(
            ["nsenter", f"--net={host.netns_path}", "unshare", "--uts", "--mount", "sh", "-c",
             inner],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )  # fmt: skip


def listening(pid: int, port: int) -> bool:
    """Whether a TCP socket listens on ``port`` in the network namespace of ``pid`` (its
    /proc/PID/net/tcp). Read, not probed: a test connection would be logged by sshd, a
    moment later, as a stranger closing before the key exchange, into the log that tests
    read to show that nobody came."""
    try:
        table = Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return False
    suffix = f":{port:04X}"
    return any(
        row.split()[3] == "0A" and row.split()[1].endswith(suffix) for row in table if row.strip()
    )


def wait_listening(host: Host, files: SSHFiles, proc: subprocess.Popen[bytes]) -> None:
    hd = files.host_dir(host)
    port = port_of(host, files)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log = (hd / "sshd.log").read_text() if (hd / "sshd.log").exists() else ""
            raise RuntimeError(f"sshd on {host.name} exited {proc.returncode}: {log[-500:]}")
        if listening(proc.pid, port):
            return
        time.sleep(0.02)
    kill_pids([proc.pid])
    raise RuntimeError(f"sshd on {host.name} did not listen within 10 s")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        kill_pids([proc.pid])
        proc.wait(timeout=5)
