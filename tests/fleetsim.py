"""A simulated fleet of SSH hosts on the loopback, for benches and tests (TEST DOUBLE).

Each host is a real SSH server (asyncssh) on an address of its own in 127.1.0.0/16
(``127.1.<i // 250>.<i % 250 + 1>``, port 2222; never any other address), all served by
one process, with one host key and one client key. It answers what aibench sends a node
over SSH: the fixed remote wrapper of :mod:`aibench.executors.ssh` is read back (the
working directory, the environment's names, then the argv; the values come on stdin), it
reports a process group id and honours ``kill -TERM -- -PGID`` and the lease (the end of
its stdin ends the process). What runs is simulated:

* ``iperf3 -s -1 -p PORT``: listens (on the simulated host, nothing is bound) and says
  ``Server listening on PORT``, as iperf 3.12 does; it ends when its client has run.
* ``iperf3 -c ADDR -p PORT -t T``: with no server listening there, the real 3.12 capture
  of a refused connection (exit 1); else it takes T seconds and prints the real 3.12
  ``--bidir`` capture (``tests/fixtures/iperf3/v3.12_lo_tcp_bidir.json``; the one-way
  ``v3.12_lo_tcp_P2.json`` without ``--bidir``), every ``bits_per_second`` and ``bytes``
  figure in it scaled down for a pair with the slow host (``slow``) or on the bad link
  (``bad_link``): the numbers of those pairs are made here from the capture, on purpose.
* ``fio ... --rw=RW --runtime=T``: takes T seconds and prints a real fio 3.33 JSON
  capture of ``tests/fixtures/fio`` for that kind of job (:data:`FIO_CAPTURES`).
* ``mkdir -p``: nothing to make on a simulated host (exit 0).
* The preflight's batch driver, the environment facts (``hostname``, ``uname``,
  ``cat``) and ``--version`` probes: the same command run for real once on this machine,
  its output kept and given by every host (the hostname as the host's own name).
* Anything else: ``sh: 1: PROG: not found``, exit 127.

``python -m tests.fleetsim --hosts N --dir D`` writes ``D/inventory.yaml`` (and the keys,
``known_hosts``) and serves until it is stopped; it prints ``ready`` when every host
listens. ``kill -USR1`` writes the most sessions running iperf3 or fio it held at once
since the last time to ``D/sessions``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shlex
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncssh
import yaml

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
PORT = 2222
FIO_CAPTURES = {
    "read": "v3.33_libaio_read_direct1.json",
    "randread": "v3.33_libaio_randread_direct1.json",
    "write": "v3.33_write_fdatasync_json.json",
    "randwrite": "v3.33_write_fdatasync_json.json",  # no random-write capture: a write one
}
SLOW_FACTOR = 0.3  # the slow host's pairs carry 30 % of the capture's figures
BAD_LINK_FACTOR = 0.4


def address(i: int) -> str:
    """The loopback address of host ``i`` (0-based): 127.1.x.y, never anything else."""
    if not 0 <= i < 250 * 250:
        raise ValueError(f"host index {i} out of range")
    return f"127.1.{i // 250}.{i % 250 + 1}"


def host_name(i: int) -> str:
    return f"sim{i + 1:04d}"


def _scaled(data: Any, factor: float) -> Any:
    if isinstance(data, dict):
        return {
            k: (v * factor if k in ("bits_per_second", "bytes") and isinstance(v, int | float)
                else _scaled(v, factor))
            for k, v in data.items()
        }  # fmt: skip
    if isinstance(data, list):
        return [_scaled(v, factor) for v in data]
    return data


def _option(argv: list[str], name: str, default: str = "") -> str:
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return default


class Fleet:
    """The hosts, their shared state (the iperf3 servers listening) and the faults."""

    def __init__(
        self,
        hosts: int,
        root: Path,
        slow: str | None = None,
        bad_link: tuple[str, str] | None = None,
    ) -> None:
        self.names = [host_name(i) for i in range(hosts)]
        self.by_address = {address(i): host_name(i) for i in range(hosts)}
        self.root = root
        self.slow = slow
        self.bad_link = frozenset(bad_link) if bad_link else frozenset()
        self.listening: dict[tuple[str, str], asyncio.Future[None]] = {}
        self.groups: dict[int, asyncio.Task[int]] = {}
        self._next_pgid = 1000
        self._real: dict[tuple[str, ...], asyncio.Future[tuple[int, bytes, bytes]]] = {}
        self._servers: list[Any] = []
        self.sessions = 0  # sessions open now
        self.most_sessions = 0

    # ------------------------------------------------------------------ set-up

    def write_files(self, key: asyncssh.SSHKey, client: asyncssh.SSHKey) -> Path:
        """The client key, known_hosts (every host under its name) and the inventory."""
        self.root.mkdir(parents=True, exist_ok=True)
        ident = self.root / "client_key"
        client.write_private_key(str(ident))
        os.chmod(ident, 0o600)
        pub = key.export_public_key().decode().strip()
        known = self.root / "known_hosts"
        known.write_text(
            "".join(f"[{address(i)}]:{PORT},[{n}]:{PORT} {pub}\n" for i, n in enumerate(self.names))
        )
        inventory = {
            "schema_version": 1,
            "name": f"simulated-{len(self.names)}",
            "defaults": {"executor": "ssh"},
            "ssh": {
                "user": "aibench",
                "port": PORT,
                "identity_file": str(ident),
                "known_hosts": str(known),
                "connect_timeout": 30,
            },
            "nodes": [
                {"name": n, "address": address(i), "labels": {"leaf": f"leaf{i // 64:02d}"}}
                for i, n in enumerate(self.names)
            ],
        }
        path = self.root / "inventory.yaml"
        path.write_text(yaml.safe_dump(inventory, sort_keys=False))
        return path

    async def start(self) -> Path:
        key = asyncssh.generate_private_key("ssh-ed25519")
        client = asyncssh.generate_private_key("ssh-ed25519")
        inventory = self.write_files(key, client)
        authorized = asyncssh.import_authorized_keys(client.export_public_key().decode())
        for i, name in enumerate(self.names):
            self._servers.append(
                await asyncssh.create_server(
                    asyncssh.SSHServer,
                    address(i),
                    PORT,
                    server_host_keys=[key],
                    authorized_client_keys=authorized,
                    process_factory=lambda p, name=name: self.serve(name, p),
                    encoding=None,
                    keepalive_interval=0,
                    backlog=512,
                )
            )
        return inventory

    def note_sessions(self) -> None:
        """Write the most sessions open at once since the last note to ``<root>/sessions``
        (``kill -USR1``), and start counting again."""
        (self.root / "sessions").write_text(f"{self.most_sessions}\n")
        self.most_sessions = self.sessions

    async def stop(self) -> None:
        for s in self._servers:
            s.close()
        for s in self._servers:
            with contextlib.suppress(Exception):
                await s.wait_closed()

    # ------------------------------------------------------------------ sessions

    async def serve(self, host: str, process: Any) -> None:
        try:
            process.exit(await self._session(host, process))
        except (asyncssh.Error, OSError, BrokenPipeError):
            process.close()

    @contextlib.contextmanager
    def _busy(self) -> Iterator[None]:
        """Counts the sessions running a tool (iperf3, fio) at once."""
        self.sessions += 1
        self.most_sessions = max(self.most_sessions, self.sessions)
        try:
            yield
        finally:
            self.sessions -= 1

    async def _session(self, host: str, process: Any) -> int:
        line = process.command or ""
        if line.startswith("kill "):
            return self._kill(line)
        words = shlex.split(line)
        if words[:5] != ["exec", "setsid", "-w", "sh", "-c"] or words[6] != "aibench":
            process.stderr.write(b"sh: 1: not a command of aibench\n")
            return 127
        n = int(words[8])
        argv = words[9 + n + 1 :]  # after the names and "--"
        pgid = self._next_pgid = self._next_pgid + 1
        process.stderr.write(f"AIBENCH-PGID {pgid}\n".encode())
        for _ in range(n):  # the environment's values, one line each
            await process.stdin.readline()
        task = asyncio.ensure_future(self.tool(host, argv, process))
        self.groups[pgid] = task
        lease = asyncio.ensure_future(self._lease(process, task))
        try:
            return await task
        except asyncio.CancelledError:
            return 128 + signal.SIGTERM
        finally:
            lease.cancel()
            self.groups.pop(pgid, None)

    @staticmethod
    async def _lease(process: Any, task: asyncio.Task[int]) -> None:
        """The wrapper's watcher: the end of stdin ends the process group."""
        with contextlib.suppress(asyncssh.Error, OSError):
            while await process.stdin.read(4096):
                pass
        task.cancel()

    def _kill(self, line: str) -> int:
        m = re.match(r"^kill -(TERM|KILL) -- -(\d+)", line)
        task = self.groups.get(int(m.group(2))) if m else None
        if task is None:
            return 1
        task.cancel()
        return 0

    # ------------------------------------------------------------------ tools

    async def tool(self, host: str, argv: list[str], process: Any) -> int:
        out, err = process.stdout, process.stderr
        prog = argv[0] if argv else ""
        if prog == "iperf3" and "-s" in argv:
            with self._busy():
                return await self.iperf3_server(host, argv, out)
        if prog == "iperf3" and "-c" in argv:
            with self._busy():
                return await self.iperf3_client(host, argv, out)
        if prog == "fio" and argv[1:2] != ["--version"]:
            with self._busy():
                return await self.fio(argv, out)
        if prog == "mkdir":
            return 0
        if self._replayed(argv):
            code, stdout, stderr = await self.real(argv)
            out.write(self._as_host(host, argv, stdout))
            err.write(stderr)
            return code
        err.write(f"sh: 1: {prog}: not found\n".encode())
        return 127

    async def iperf3_server(self, host: str, argv: list[str], out: Any) -> int:
        port = _option(argv, "-p", "5201")
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.listening[(host, port)] = done
        bar = "-" * 59
        out.write(f"{bar}\nServer listening on {port} (test #1)\n{bar}\n".encode())
        try:
            await done
        finally:
            self.listening.pop((host, port), None)
        return 0

    async def iperf3_client(self, host: str, argv: list[str], out: Any) -> int:
        target = self.by_address.get(_option(argv, "-c"), "")
        server = self.listening.pop((target, _option(argv, "-p", "5201")), None)
        if server is None:
            out.write((FIXTURES / "iperf3" / "v3.12_lo_refused.json").read_bytes())
            return 1
        try:
            await asyncio.sleep(float(_option(argv, "-t", "10")))
        finally:
            if not server.done():
                server.set_result(None)
        name = "v3.12_lo_tcp_bidir.json" if "--bidir" in argv else "v3.12_lo_tcp_P2.json"
        data = json.loads((FIXTURES / "iperf3" / name).read_text())
        factor = 1.0
        if self.slow in (host, target):
            factor *= SLOW_FACTOR
        if frozenset((host, target)) == self.bad_link:
            factor *= BAD_LINK_FACTOR
        out.write(json.dumps(_scaled(data, factor) if factor != 1.0 else data).encode())
        return 0

    async def fio(self, argv: list[str], out: Any) -> int:
        await asyncio.sleep(float(_option(argv, "--runtime", "5")))
        capture = FIO_CAPTURES.get(_option(argv, "--rw", "read"), FIO_CAPTURES["read"])
        out.write((FIXTURES / "fio" / capture).read_bytes())
        return 0

    @staticmethod
    def _replayed(argv: list[str]) -> bool:
        from aibench.runners.preflight import BATCH_SCRIPT

        if argv[:3] == ["sh", "-c", BATCH_SCRIPT]:
            return True
        if argv and argv[0] in ("hostname", "uname", "cat"):
            return True
        return len(argv) == 2 and argv[1] in ("--version", "-v", "-V", "version")

    async def real(self, argv: list[str]) -> tuple[int, bytes, bytes]:
        """The command run once for real on this machine (the batch's marker set
        aside), its output given to every host that asks."""
        key = tuple([*argv[:4], "MARK", *argv[5:]]) if argv[:2] == ["sh", "-c"] else tuple(argv)
        pending = self._real.get(key)
        if pending is None:
            pending = self._real[key] = asyncio.ensure_future(self._run_here(list(key)))
        code, stdout, stderr = await asyncio.shield(pending)
        if key != tuple(argv):  # the batch: its frames under the host's marker
            stdout = stdout.replace(b"MARK", argv[4].encode())
            stderr = stderr.replace(b"MARK", argv[4].encode())
        return code, stdout, stderr

    @staticmethod
    async def _run_here(argv: list[str]) -> tuple[int, bytes, bytes]:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        stdout, stderr = await proc.communicate()
        return proc.returncode or 0, stdout, stderr

    @staticmethod
    def _as_host(host: str, argv: list[str], stdout: bytes) -> bytes:
        """This machine's output as the host's: its hostname is the host's name."""
        if argv == ["hostname"]:
            return f"{host}\n".encode()
        return re.sub(
            rb"^(/proc/sys/kernel/hostname:).*$", rb"\g<1>" + host.encode(), stdout, flags=re.M
        )


async def _main(args: argparse.Namespace) -> None:
    import resource

    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    a, _, b = args.bad_link.partition(",")
    bad = (a, b) if args.bad_link else None
    fleet = Fleet(args.hosts, Path(args.dir), args.slow or None, bad)
    await fleet.start()
    print("ready", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    loop.add_signal_handler(signal.SIGUSR1, fleet.note_sessions)
    await stop.wait()
    await fleet.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--hosts", type=int, default=1024)
    p.add_argument("--dir", required=True)
    p.add_argument("--slow", default="", help="the slow host's name")
    p.add_argument("--bad-link", default="", help="two host names, a,b")
    asyncio.run(_main(p.parse_args()))


if __name__ == "__main__":
    main()
