"""SSH executor: runs an argv on a node over SSH (asyncssh), one pooled connection per node.

Contract:

* **Connections** are made on first use, one per node, and reused by every later step
  (``check``, ``run``, ``start``); ``close`` closes them all. A jump host is supported.
  The ssh_config file (the inventory's ``ssh.config_file``, else ``~/.ssh/config``) is
  read (asyncssh): ``HostName``, ``User``, ``Port`` and ``IdentityFile`` apply where the
  inventory does not say otherwise; host keys are looked up under the inventory's name.
* **Host keys are always checked** against the node's ``known_hosts`` (default
  ``~/.ssh/known_hosts``). An unknown host or a changed key is refused with one line
  naming the node; nothing is ever accepted automatically.
* **No shell string is built from inventory values.** The remote command line is a fixed
  wrapper followed by ``shlex.quote`` of every element: the working directory, each
  ``NAME=value`` (names checked) and every argv element, so an argument with spaces,
  quotes, ``$(...)`` or ``;`` arrives verbatim. The node's login shell must be a POSIX
  shell (sh, bash, dash, zsh).
* **Environment values never travel on a command line**: the wrapper gets the names,
  the values come on the session's stdin (:func:`env_input`), so ``ps`` on the node
  shows no secret.
* **Nothing outlives aibench (the lease).** The session's stdin stays open while the step
  runs; a watcher in the wrapper TERMs (then KILLs) the whole remote process group when
  it reaches end of file: aibench exited, was killed (``kill -9``) or lost the connection.
* **Every remote process is its own process group.** The wrapper is
  ``exec setsid -w sh -c '<report $$ on stderr>; read the env values; cd; env -- argv &
  watch stdin; wait; kill the rest of the group'`` (util-linux ``setsid``): the wrapper sh
  leads a new session and process group, whose PGID comes back as the first stderr line
  (not written to the log). When the tool exits, whatever it forked and left running is
  sent TERM (as the local executor does), so a leftover child cannot hold the session
  open. A timeout, a cancellation or a server stop sends ``kill -TERM -- -PGID`` over the same
  connection, then ``kill -KILL`` after ``kill_grace`` seconds. A tool killed by a signal
  reports the shell's status 128+N. If the connection itself is lost, the remote group
  cannot be signalled from here; the lease ends it on the node.
* **Output is streamed**: stdout and stderr are written to the raw log files as the data
  arrives, so an interrupted run keeps what it measured.
* **Unreachable**: a refused, timed-out or rejected connection, or a connection lost
  mid-step, gives ``ProcResult(unreachable=True, reason=...)`` from ``run``,
  ``NodeUnreachable`` from ``start``, and the reason from ``check``. A lost connection is
  dropped from the pool; the next call connects again.
* **Connection policy** (:mod:`aibench.executors.policy`, set by the inventory's
  ``limits``): refused or dropped connection attempts and refused session opens are
  retried with exponential backoff and jitter (a down host costs at most its connect
  timeout); handshakes at once over all hosts and sessions at once per connection are
  capped; a host that failed ``ssh_host_failures`` times is skipped for the rest of the
  run, and its steps say so. Callers waiting for the same host's connection share one
  attempt (and its failure).

Tested with asyncssh 2.24 against OpenSSH 9.2 (Debian 12).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import asyncssh

from aibench.envnames import check_env_names
from aibench.executors.base import (
    Command,
    NodeUnreachable,
    ProcResult,
    ReadyCheck,
)
from aibench.executors.local import ready_or_stopped, result_maker
from aibench.executors.logfile import write_log
from aibench.executors.policy import (
    SESSION_QUEUE_MAX_S,
    Breaker,
    ConnectionPolicy,
    SessionGate,
    session_refused,
    transient_connect_error,
)
from aibench.secret import Secrets

if TYPE_CHECKING:
    from aibench.inventory import Node

PGID_MARK = b"AIBENCH-PGID "
# The fixed part of every remote command. $1 is the working directory ("" for none), $2
# the number of environment variables, then their names, then env's argument list. The
# values come on stdin, one line each (backslash and newline escaped, turned back by
# printf %b), never on a command line, so ``ps`` on the node never shows them. No
# inventory or suite value is ever part of the script. The tool runs as a child of that sh
# (the group leader) with stdin from /dev/null; when it exits, the sh TERMs what is left
# of the group (forked children that kept running), ignoring TERM itself, and exits with
# the tool's status. The lease: a watcher reads the rest of stdin, which aibench keeps
# open for as long as the step runs; end of file (aibench closed the session, exited or
# was killed, the connection dropped) TERMs the whole group, then KILLs it 3 s later.
_INNER = (
    'printf "AIBENCH-PGID %s\\n" "$$" >&2; d=$1; n=$2; shift 2; '
    'while [ "$n" -gt 0 ]; do IFS= read -r v || exit 125; v=$(printf "%b." "$v"); '
    'export "$1=${v%.}"; shift; n=$((n - 1)); done; '
    'if [ -n "$d" ]; then cd -- "$d" || exit 126; fi; '
    "exec 3<&0; "
    'env "$@" </dev/null 3<&- & p=$!; '
    '(while read -r _; do :; done; trap "" TERM; kill -TERM 0; sleep 3; kill -KILL 0) '
    "<&3 >/dev/null 2>&1 & exec 3<&-; "
    'wait "$p"; rc=$?; trap "" TERM; kill -TERM 0 2>/dev/null; exit "$rc"'
)
PGID_WAIT_S = 15.0  # how long a stop waits for the remote group id
_NOT_FOUND = re.compile(rb"env: .*No such file or directory")
_CIPHERS = (
    "aes128-gcm@openssh.com",
    "aes256-gcm@openssh.com",
    "chacha20-poly1305@openssh.com",
    "aes128-ctr",
    "aes256-ctr",
)


def remote_command(cmd: Command) -> str:
    """The command line sent to the node: the fixed wrapper plus every value quoted; the
    environment's names only (their values go on stdin, :func:`env_input`)."""
    check_env_names(cmd.env)
    args = [cmd.cwd or "", str(len(cmd.env)), *cmd.env, "--", *cmd.argv]
    return (
        "exec setsid -w sh -c "
        + shlex.quote(_INNER)
        + " aibench "
        + " ".join(shlex.quote(a) for a in args)
    )


class _HeldByOurs(Exception):
    """The server refused a session while our own sessions explain it (they hold, or have
    just given back, its slots): wait for one of ours to end, not a retry."""


class _Streams:
    """Copies a remote process's stdout and stderr into files as the data arrives,
    through the scrubber of the command's secret values (``Command.secrets``)."""

    def __init__(
        self,
        proc: asyncssh.SSHClientProcess[bytes],
        out: IO[bytes],
        err: IO[bytes],
        secrets: Secrets | None = None,
    ):
        self.proc = proc
        secrets = secrets or Secrets()
        self.out = secrets.writer(out)
        self.err = secrets.writer(err)
        self.pgid: asyncio.Future[int | None] = asyncio.get_running_loop().create_future()
        self.tail = b""  # the last stderr bytes, to explain a failure
        self.write_error: OSError | None = None  # a log file could not be written (disk full)
        self.tasks = [
            asyncio.ensure_future(self._copy_out()),
            asyncio.ensure_future(self._copy_err()),
        ]

    async def _copy_out(self) -> None:
        while True:
            data = await self.proc.stdout.read(65536)
            if not data:
                return
            self.write_error = write_log(self.out, data, self.write_error)

    async def _copy_err(self) -> None:
        head = b""
        try:
            while not self.pgid.done():
                data = await self.proc.stderr.read(65536)
                if not data:
                    break
                head += data
                if b"\n" in head or len(head) > 4096:
                    line, _, rest = head.partition(b"\n")
                    if line.startswith(PGID_MARK):
                        with contextlib.suppress(ValueError):
                            self.pgid.set_result(int(line[len(PGID_MARK) :]))
                        head = rest
                    if not self.pgid.done():
                        self.pgid.set_result(None)
            self._write_err(head)
            while True:
                data = await self.proc.stderr.read(65536)
                if not data:
                    return
                self._write_err(data)
        finally:
            if not self.pgid.done():
                self.pgid.set_result(None)

    def _write_err(self, data: bytes) -> None:
        if data:
            self.write_error = write_log(self.err, data, self.write_error)
            self.tail = (self.tail + data)[-2048:]

    async def drain(self, timeout: float) -> None:
        with contextlib.suppress(TimeoutError, asyncssh.Error, OSError):
            await asyncio.wait_for(asyncio.gather(*self.tasks, return_exceptions=True), timeout)
        for t in self.tasks:
            t.cancel()
        for w in (self.out, self.err):  # what the scrubber held back
            with contextlib.suppress(OSError, ValueError):
                w.finish()


class SSHServer:
    """A background process started over SSH; ``stop`` kills its remote process group."""

    def __init__(
        self,
        ex: SSHExecutor,
        node: Node,
        proc: Any,
        streams: _Streams,
        files: list[IO[bytes]],
        gate: SessionGate,
    ):
        self._gate = gate
        self._ex = ex
        self._node = node
        self._proc = proc
        self._streams = streams
        self._files = files
        self._code: int | None = None
        self._stopped = False
        self._closed = asyncio.ensure_future(proc.wait_closed())

    @property
    def alive(self) -> bool:
        return not self._closed.done() and self._proc.exit_status is None

    async def stop(self) -> int | None:
        if self._stopped:
            return self._code
        self._stopped = True
        try:
            if self.alive:
                await self._ex._kill(self._node, self._proc, self._streams)
            self._code = self._proc.exit_status
            await self._streams.drain(2.0)
        finally:
            self._proc.close()
            self._closed.cancel()
            for f in self._files:
                f.close()
            await self._gate.release()
        return self._code


class SSHExecutor:
    """Runs commands on nodes over SSH; one executor serves every ssh node of a run."""

    name = "ssh"

    def __init__(self, kill_grace: float = 3.0, policy: ConnectionPolicy | None = None) -> None:
        self.kill_grace = kill_grace
        self.policy = policy or ConnectionPolicy()
        self.breaker = Breaker(self.policy.host_failures)
        self._conns: dict[str, asyncssh.SSHClientConnection] = {}
        self._jumps: dict[str, asyncssh.SSHClientConnection] = {}
        self._connecting: dict[str, asyncio.Future[asyncssh.SSHClientConnection]] = {}
        self._gates: dict[str, SessionGate] = {}
        self._handshakes = asyncio.Semaphore(max(1, self.policy.max_handshakes))
        self.retried: dict[str, int] = {}  # host -> connect and session retries made

    # ------------------------------------------------------------------ connections

    def _options(self, node: Node) -> dict[str, Any]:
        s = node.ssh
        known = (
            os.path.expanduser(s.known_hosts)
            if s.known_hosts
            else os.path.expanduser("~/.ssh/known_hosts")
        )
        config = os.path.expanduser(s.config_file or "~/.ssh/config")
        opts: dict[str, Any] = {
            "known_hosts": known,
            "connect_timeout": s.connect_timeout,
            "login_timeout": s.connect_timeout,
            # the ssh_config (ssh.config_file, else ~/.ssh/config) fills in what the
            # inventory leaves out: HostName, User, Port, IdentityFile
            "config": [config] if os.path.isfile(config) else None,
            "keepalive_interval": 15,
            "keepalive_count_max": 3,
            # AES-GCM first: one OpenSSL call per packet (3.8 us for 1 KiB here), where
            # asyncssh's chacha20-poly1305 builds cipher contexts per packet in Python
            # (20 us; a tenth of the client's CPU in a 64-host preflight); the server's
            # other choices stay acceptable.
            "encryption_algs": _CIPHERS,
        }
        if s.port != 22:
            opts["port"] = s.port
        if s.user:
            opts["username"] = s.user
        if s.identity_file:
            opts["client_keys"] = [os.path.expanduser(s.identity_file)]
        return opts

    async def _connect(self, node: Node) -> asyncssh.SSHClientConnection:
        conn = self._conns.get(node.name)
        if conn is not None and not conn.is_closed():
            return conn
        if self.breaker.open(node.name):
            raise NodeUnreachable(f"{node.name}: {self.breaker.why(node.name)}")
        pending = self._connecting.get(node.name)
        if pending is None:
            # one attempt per host at a time; every caller waiting for it shares its outcome
            pending = asyncio.ensure_future(self._open(node))
            self._connecting[node.name] = pending
            pending.add_done_callback(lambda _f: self._connecting.pop(node.name, None))
        return await asyncio.shield(pending)

    def _gate(self, node: Node) -> SessionGate:
        gate = self._gates.get(node.name)
        if gate is None:
            gate = self._gates[node.name] = SessionGate(self.policy.max_sessions)
        return gate

    def _count_retry(self, node: Node) -> None:
        self.retried[node.name] = self.retried.get(node.name, 0) + 1

    async def _open(self, node: Node) -> asyncssh.SSHClientConnection:
        try:
            conn = await self._open_with_retries(node)
        except NodeUnreachable as exc:
            self.breaker.fail(node.name, str(exc).split(": ", 1)[-1])
            raise
        self._conns[node.name] = conn
        return conn

    async def _open_with_retries(self, node: Node) -> asyncssh.SSHClientConnection:
        opts = self._options(node)
        known = opts["known_hosts"]
        where = f"{node.name} ({node.host}:{node.ssh.port})"
        if not Path(known).is_file():
            raise NodeUnreachable(
                f"{where}: known_hosts file {known} not found; host keys are always checked"
            )

        async def attempt() -> asyncssh.SSHClientConnection:
            async with self._handshakes:
                tunnel = await self._jump(node) if node.ssh.jump_host else None
                if tunnel is not None:
                    opts["tunnel"] = tunnel
                return await asyncio.wait_for(
                    asyncssh.connect(node.host, **opts), node.ssh.connect_timeout + 1.0
                )

        try:
            return await self.policy.retry(
                attempt,
                transient_connect_error,
                within=node.ssh.connect_timeout,
                on_retry=lambda _e: self._count_retry(node),
            )
        except asyncssh.HostKeyNotVerifiable:
            raise NodeUnreachable(f"{where}: {self._host_key_problem(node, known)}") from None
        except asyncssh.PermissionDenied:
            raise NodeUnreachable(f"{where}: authentication refused (permission denied)") from None
        except TimeoutError:
            raise NodeUnreachable(
                f"{where}: connection timed out after {node.ssh.connect_timeout:g} s"
            ) from None
        except ConnectionRefusedError:
            raise NodeUnreachable(f"{where}: connection refused") from None
        except OSError as exc:
            raise NodeUnreachable(f"{where}: {exc.strerror or exc}") from None
        except asyncssh.Error as exc:
            raise NodeUnreachable(f"{where}: ssh: {exc.reason}") from None

    @staticmethod
    def _host_key_problem(node: Node, known: str) -> str:
        """Why the host key was refused: no entry for the host, or a different key."""
        listed = False
        # asyncssh matches hashed entries, patterns and [host]:port forms as ssh does
        with contextlib.suppress(OSError, ValueError, asyncssh.Error):
            kh = asyncssh.read_known_hosts(known)
            for host in {node.host, node.name}:
                trusted, cas, revoked = kh.match(host, "", node.ssh.port)[:3]
                if trusted or cas or revoked:
                    listed = True
        if listed:
            return (
                f"host key mismatch: the key offered differs from the one in {known}; "
                "refusing to connect"
            )
        return f"unknown host key: no entry in {known}; refusing to connect (add the key first)"

    async def _jump(self, node: Node) -> asyncssh.SSHClientConnection:
        spec = node.ssh.jump_host or ""
        conn = self._jumps.get(spec)
        if conn is not None and not conn.is_closed():
            return conn
        user, _, hostport = spec.rpartition("@")
        host, _, port = hostport.partition(":")
        opts = self._options(node)
        opts["port"] = int(port) if port else 22
        if user:
            opts["username"] = user
        conn = await asyncio.wait_for(
            asyncssh.connect(host, **opts), node.ssh.connect_timeout + 1.0
        )
        self._jumps[spec] = conn
        return conn

    def _drop(self, node: Node, reason: str = "") -> None:
        """Forget the host's connection; with ``reason``, count it as a failure."""
        conn = self._conns.pop(node.name, None)
        if conn is not None:
            conn.abort()
            if reason:
                self.breaker.fail(node.name, reason)

    def skipped(self) -> dict[str, str]:
        """Hosts skipped for the rest of the run by the breaker, with the reason."""
        return self.breaker.skipped()

    async def check(self, node: Node) -> str | None:
        try:
            await self._connect(node)
        except NodeUnreachable as exc:
            return str(exc)
        return None

    # ------------------------------------------------------------------ processes

    async def _spawn(
        self, node: Node, cmd: Command, out: IO[bytes], err: IO[bytes]
    ) -> tuple[Any, _Streams, SessionGate]:
        """Open a session (queued behind the host's session cap) and start ``cmd``; the
        caller releases the returned gate when the session is over."""
        line = remote_command(cmd)
        gate = self._gate(node)
        proc = await self._open_session(node, gate, line, env_input(cmd.env))
        return proc, _Streams(proc, out, err, cmd.secrets), gate

    async def _open_session(
        self, node: Node, gate: SessionGate, line: str, stdin: bytes = b""
    ) -> Any:
        """A session on the host's connection, with a slot of its gate held; ``stdin`` is
        written to the process and its stdin left open (the node-side lease)."""

        async def attempt() -> Any:
            await gate.acquire()
            try:
                conn = await self._connect(node)
                proc = await conn.create_process(line, encoding=None)
            except asyncssh.ChannelOpenError as exc:
                # the server's MaxSessions: hold later sessions in our queue instead
                gate.refused()
                ours = gate.ours_explain_a_refusal()
                await gate.release(opened=False)
                if ours:
                    raise _HeldByOurs(exc.reason) from None
                raise
            except (asyncssh.Error, OSError) as exc:
                await gate.release(opened=False)
                self._drop(node, f"session open failed: {exc}")
                raise NodeUnreachable(f"{node.name}: cannot start a session: {exc}") from None
            except BaseException:
                await gate.release(opened=False)
                raise
            gate.opened()
            _send_values(proc, stdin)
            return proc

        deadline = asyncio.get_running_loop().time() + SESSION_QUEUE_MAX_S
        while True:
            try:
                return await self.policy.retry(
                    attempt, session_refused, on_retry=lambda _e: self._count_retry(node)
                )
            except asyncssh.ChannelOpenError as exc:
                raise NodeUnreachable(
                    f"{node.name}: the server refused a session after "
                    f"{self.policy.retries} retries: {exc.reason}"
                ) from None
            except _HeldByOurs as exc:
                if asyncio.get_running_loop().time() > deadline:
                    raise NodeUnreachable(
                        f"{node.name}: the server refused a session for "
                        f"{SESSION_QUEUE_MAX_S:.0f} s while ours held its slots: {exc}"
                    ) from None
                await gate.next_end(self.policy.backoff_s)

    async def _kill(self, node: Node, proc: Any, streams: _Streams) -> None:
        """TERM the remote process group, KILL it after the grace period."""
        try:
            # The wrapper's first line; it comes as soon as the remote shell runs, or the
            # future ends with None when the stream ends without it. A slow node (a loaded
            # one, a session just opened) may take seconds: without the group's id the
            # process would only be stopped by the wrapper's watchdog, after we return.
            pgid = await asyncio.wait_for(asyncio.shield(streams.pgid), PGID_WAIT_S)
        except TimeoutError:
            pgid = None
        if pgid is None:
            proc.close()
            return
        conn = self._conns.get(node.name)
        if conn is None or conn.is_closed():
            return

        async def remote(line: str, timeout: float) -> None:
            # not queued behind the session cap (it frees a session); a refusal is retried
            await self.policy.retry(
                lambda: asyncio.wait_for(conn.run(line, check=False), timeout), session_refused
            )

        try:
            await remote(f"kill -TERM -- -{int(pgid)}", 3.0)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait_closed(), self.kill_grace)
            # The leader may be gone while children that ignored TERM live on.
            await remote(f"kill -KILL -- -{int(pgid)} 2>/dev/null", 5.0)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait_closed(), 2.0)
        except (asyncssh.Error, OSError, TimeoutError):
            self._drop(node)

    async def run(self, node: Node, cmd: Command, stdout: Path, stderr: Path) -> ProcResult:
        result = result_maker()
        stdout.parent.mkdir(parents=True, exist_ok=True)
        with stdout.open("wb") as out, stderr.open("wb") as err:
            try:
                proc, streams, gate = await self._spawn(node, cmd, out, err)
            except NodeUnreachable as exc:
                return result(unreachable=True, reason=str(exc))
            try:
                return await self._finish(node, cmd, proc, streams, result)
            finally:
                await gate.release()

    async def _finish(
        self,
        node: Node,
        cmd: Command,
        proc: Any,
        streams: _Streams,
        result: Callable[..., ProcResult],
    ) -> ProcResult:
        try:
            await asyncio.wait_for(proc.wait_closed(), cmd.timeout)
        except TimeoutError:
            await self._kill(node, proc, streams)
            await streams.drain(2.0)
            proc.close()
            return result(
                timed_out=True,
                reason=f"timed out after {cmd.timeout:g} s; remote process group killed",
            )
        except asyncio.CancelledError:
            await asyncio.shield(self._kill(node, proc, streams))
            proc.close()
            raise
        await streams.drain(5.0)
        if streams.write_error is not None:
            # the output is incomplete: never parse it as if it were whole
            raise streams.write_error
        code = proc.exit_status
        signal_name = proc.exit_signal[0] if proc.exit_signal else None
        proc.close()
        if code is None and signal_name is None:
            conn = self._conns.get(node.name)
            if conn is None or conn.is_closed() or self._lost(conn):
                self._drop(node, "connection lost during a step")
                return result(
                    unreachable=True, reason=f"{node.name}: connection lost during the step"
                )
            return result(reason=f"{node.name}: the session ended without an exit status")
        if signal_name is not None:
            return result(reason=f"killed by signal {signal_name}")
        if code == 127 and _NOT_FOUND.search(streams.tail):
            return result(reason=f"{cmd.argv[0]}: command not found on {node.name}")
        if code == 126 and not streams.pgid.done():
            return result(exit_code=code, reason=f"setsid/sh not usable on {node.name}")
        return result(exit_code=code)

    @staticmethod
    def _lost(conn: asyncssh.SSHClientConnection) -> bool:
        transport = getattr(conn, "_transport", None)
        return transport is None or transport.is_closing()

    async def start(
        self, node: Node, cmd: Command, stdout: Path, stderr: Path, ready: ReadyCheck
    ) -> SSHServer:
        stdout.parent.mkdir(parents=True, exist_ok=True)
        out = stdout.open("wb")
        err = stderr.open("wb")
        try:
            proc, streams, gate = await self._spawn(node, cmd, out, err)
        except BaseException:
            out.close()
            err.close()
            raise
        server = SSHServer(self, node, proc, streams, [out, err], gate)
        return await ready_or_stopped(server, ready, stdout, node.host)

    async def close(self) -> None:
        conns = [*self._conns.values(), *self._jumps.values()]
        self._conns.clear()
        self._jumps.clear()
        for c in conns:
            c.close()
        for c in conns:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(c.wait_closed(), 2.0)


def _send_values(proc: Any, data: bytes) -> None:
    """Write the env values to a started process, whose stdin then stays open (the lease).
    With no values nothing is written: a command that needs none may already have ended,
    and its closed channel is no fault of the connection (closing that connection would
    cut every other session opened on it)."""
    if not data:
        return
    with contextlib.suppress(BrokenPipeError):  # the wrapper ended first: its status says why
        proc.stdin.write(data)


def env_input(env: Mapping[str, str]) -> bytes:
    """What the wrapper reads on stdin before it starts the tool: each value of ``env``
    on one line, backslashes and newlines escaped (``printf %b`` turns them back)."""
    lines = [v.replace("\\", "\\\\").replace("\n", "\\n") for v in env.values()]
    return "".join(line + "\n" for line in lines).encode()
