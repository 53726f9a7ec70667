"""Local executor: runs an argv as a subprocess of this machine.

Each process starts in a new session (its own process group) and is sent SIGTERM by the
kernel when aibench goes away, however it ends (``kill -9`` included: PR_SET_PDEATHSIG);
its whole group (a shell's workers too) is ended then by the keeper
(:mod:`aibench.executors.lease`).
A timeout, an interrupt or a server stop sends SIGTERM to the whole group, waits
``kill_grace`` seconds, then
SIGKILL, so a tool that forks (mpirun, a shell wrapper, fio's job processes) leaves
nothing behind. stdout and stderr are file descriptors of the raw log files, so the
output is on disk as it arrives; when the step has secret values to scrub
(``Command.secrets``), they are pipes instead, each copied into its raw file through the
scrubber as the bytes arrive, so that no secret is on disk even while the step runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import signal
import socket
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

from aibench.executors import lease
from aibench.executors.base import Command, ProcResult, ReadyCheck, Server, ServerNotReady
from aibench.instants import now_text
from aibench.secret import ScrubbingWriter

if TYPE_CHECKING:
    from aibench.inventory import Node

S = TypeVar("S", bound=Server)  # a started server, of whichever executor


@functools.cache
def _prctl() -> Callable[..., int]:
    """libc's prctl, found here in aibench before any fork: found in the child instead
    (a copy of aibench, importing ctypes and loading libc again) it cost ten milliseconds
    of CPU of every process started."""
    import ctypes

    prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    return prctl


def _lease() -> None:
    """In the child before exec: SIGTERM it when aibench exits or is killed (Linux
    PR_SET_PDEATHSIG), so nothing started here outlives aibench; a parent already gone
    ends it at once."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    _prctl()(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(143)


def _kill_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


# The process groups started here whose leader has not been waited for yet: what
# :func:`kill_all` ends when aibench must stop at once (a second signal).
_GROUPS: set[int] = set()


def _held(pid: int) -> None:
    """A process group started here: ended by :func:`kill_all`, and by the keeper
    (:mod:`aibench.executors.lease`) if aibench goes away first."""
    _GROUPS.add(pid)
    lease.hold_group(pid)


def _released(pid: int) -> None:
    """The group's leader was waited for and its group killed: nothing left to end."""
    if pid in _GROUPS:
        _GROUPS.discard(pid)
        lease.release_group(pid)


def kill_all() -> None:
    """SIGKILL every process group started here that may still run (no waiting: for
    aibench's last moment)."""
    for pid in list(_GROUPS):
        _kill_group(pid, signal.SIGKILL)


async def terminate(proc: asyncio.subprocess.Process, grace: float) -> int | None:
    """SIGTERM the process group, then SIGKILL after ``grace`` seconds."""
    if proc.returncode is None:
        _kill_group(proc.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), grace)
        except TimeoutError:
            _kill_group(proc.pid, signal.SIGKILL)
            await proc.wait()
    # Whatever the group leader left behind (children that ignored SIGTERM) goes too.
    _kill_group(proc.pid, signal.SIGKILL)
    _released(proc.pid)
    return proc.returncode


async def spawn_leased(
    argv: Sequence[str],
    out: IO[bytes] | int,
    err: IO[bytes] | int,
    *,
    env: Mapping[str, str],
    cwd: str | None = None,
) -> asyncio.subprocess.Process:
    """Start ``argv`` in a process group of its own that ends with aibench at the latest
    (PR_SET_PDEATHSIG on it, the keeper for its group); :func:`ended` once it is waited
    for."""
    if sys.platform.startswith("linux"):
        _prctl()  # in the parent, once
    lease.start()
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=out,
        stderr=err,
        cwd=cwd,
        env=dict(env),
        start_new_session=True,
        preexec_fn=_lease,
    )
    _held(proc.pid)
    return proc


def ended(proc: asyncio.subprocess.Process) -> None:
    """The leader of a group :func:`spawn_leased` started was waited for: whatever it left
    in its group is killed, and the group is no longer held."""
    _kill_group(proc.pid, signal.SIGKILL)
    _released(proc.pid)


class Outputs:
    """Where a process's stdout and stderr go: the raw files themselves, or, with secret
    values to scrub, pipes copied into them through :class:`ScrubbingWriter` as the bytes
    arrive (:meth:`start`); :meth:`finish` waits for the copies and writes what the
    scrubber held back."""

    def __init__(self, cmd: Command, out: IO[bytes], err: IO[bytes]) -> None:
        self.files = (out, err)
        secrets = cmd.secrets
        self.writers = [secrets.writer(out), secrets.writer(err)] if secrets.values else []
        self.tasks: list[asyncio.Task[None]] = []

    def stdio(self) -> tuple[Any, Any]:
        return (asyncio.subprocess.PIPE,) * 2 if self.writers else self.files

    def start(self, proc: asyncio.subprocess.Process) -> None:
        if self.writers:
            streams = (proc.stdout, proc.stderr)
            self.tasks = [
                asyncio.create_task(_copy(r, w)) for r, w in zip(streams, self.writers, strict=True)
            ]

    async def finish(self, grace: float) -> None:
        """The copies ended (the process group is gone: its pipes are closed; a process
        that escaped the group and keeps them open is given ``grace`` seconds)."""
        if self.tasks:
            _, pending = await asyncio.wait(self.tasks, timeout=grace + 1.0)
            for t in pending:
                t.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)
        for w in self.writers:
            w.finish()


async def _copy(reader: asyncio.StreamReader | None, writer: ScrubbingWriter) -> None:
    if reader is None:
        return
    while chunk := await reader.read(65536):
        writer.write(chunk)


def result_maker() -> Callable[..., ProcResult]:
    """What an executor's ``run`` answers with, made at its start: a maker of the
    ProcResult that carries that start (UTC, to the millisecond) and the time since;
    ``exit_code`` is None (no exit status) unless given."""
    started = now_text("milliseconds")
    t0 = time.monotonic()

    def result(**kw: Any) -> ProcResult:
        kw.setdefault("exit_code", None)
        return ProcResult(started=started, duration_s=time.monotonic() - t0, **kw)

    return result


class LocalServer:
    def __init__(
        self,
        proc: asyncio.subprocess.Process,
        files: list[IO[bytes]],
        grace: float,
        outputs: Outputs | None = None,
    ):
        self._proc = proc
        self._files = files
        self._grace = grace
        self._outputs = outputs

    @property
    def alive(self) -> bool:
        return self._proc.returncode is None

    @property
    def pid(self) -> int:
        return self._proc.pid

    async def stop(self) -> int | None:
        try:
            return await terminate(self._proc, self._grace)
        finally:
            if self._outputs is not None:
                await self._outputs.finish(self._grace)
            for f in self._files:
                f.close()


class LocalExecutor:
    """Runs commands on this machine. ``node`` is accepted for the common interface."""

    name = "local"

    def __init__(self, kill_grace: float = 3.0) -> None:
        self.kill_grace = kill_grace

    async def check(self, node: Node) -> str | None:
        return None

    def _env(self, cmd: Command) -> dict[str, str]:
        env = dict(os.environ)
        env.update(cmd.env)
        return env

    async def _spawn(self, cmd: Command, outputs: Outputs) -> asyncio.subprocess.Process:
        stdout, stderr = outputs.stdio()
        proc = await spawn_leased(cmd.argv, stdout, stderr, env=self._env(cmd), cwd=cmd.cwd)
        outputs.start(proc)
        return proc

    async def run(self, node: Node, cmd: Command, stdout: Path, stderr: Path) -> ProcResult:
        started = now_text("milliseconds")
        t0 = time.monotonic()
        stdout.parent.mkdir(parents=True, exist_ok=True)
        with stdout.open("wb") as out, stderr.open("wb") as err:
            outputs = Outputs(cmd, out, err)
            try:
                proc = await self._spawn(cmd, outputs)
            except (FileNotFoundError, PermissionError) as exc:
                why = "command not found" if isinstance(exc, FileNotFoundError) else None
                return ProcResult(
                    exit_code=None,
                    started=started,
                    duration_s=time.monotonic() - t0,
                    reason=f"{cmd.argv[0]}: {why or 'permission denied'}",
                )
            try:
                return await self._wait(cmd, proc, started, t0)
            finally:
                await asyncio.shield(outputs.finish(self.kill_grace))

    async def _wait(
        self, cmd: Command, proc: asyncio.subprocess.Process, started: str, t0: float
    ) -> ProcResult:
        """Wait for ``proc`` to end within the command's timeout; end its group then."""
        try:
            code = await asyncio.wait_for(proc.wait(), cmd.timeout)
        except TimeoutError:
            await terminate(proc, self.kill_grace)
            return ProcResult(
                exit_code=None,
                started=started,
                duration_s=time.monotonic() - t0,
                timed_out=True,
                reason=f"timed out after {cmd.timeout:g} s; process group killed",
            )
        except asyncio.CancelledError:
            await asyncio.shield(terminate(proc, self.kill_grace))
            raise
        # The leader exited; make sure no child of the group lingers.
        ended(proc)
        return ProcResult(exit_code=code, started=started, duration_s=time.monotonic() - t0)

    async def start(
        self, node: Node, cmd: Command, stdout: Path, stderr: Path, ready: ReadyCheck
    ) -> LocalServer:
        stdout.parent.mkdir(parents=True, exist_ok=True)
        out = stdout.open("wb")
        err = stderr.open("wb")
        outputs = Outputs(cmd, out, err)
        try:
            proc = await self._spawn(cmd, outputs)
        except (FileNotFoundError, PermissionError) as exc:
            out.close()
            err.close()
            raise ServerNotReady(f"{cmd.argv[0]}: {exc.strerror or exc}") from None
        server = LocalServer(proc, [out, err], self.kill_grace, outputs)
        host = node.address if node.address else "127.0.0.1"
        return await ready_or_stopped(server, ready, stdout, host)

    async def close(self) -> None:
        return None


async def ready_or_stopped(server: S, ready: ReadyCheck, output: Path, host: str) -> S:
    """``server`` once :func:`wait_ready` says it is ready; one that is not (or a cancel
    meanwhile) is stopped before the error goes on."""
    try:
        await wait_ready(ready, alive=lambda: server.alive, output=output, host=host)
    except BaseException:
        await server.stop()
        raise
    return server


async def wait_ready(
    ready: ReadyCheck,
    *,
    alive: object,
    output: Path,
    host: str,
) -> None:
    """Poll until the server's output matches ``ready.pattern`` and/or its port accepts."""
    deadline = time.monotonic() + ready.timeout
    pattern = re.compile(ready.pattern) if ready.pattern else None
    is_alive = alive if callable(alive) else (lambda: True)
    while True:
        ok = True
        if pattern is not None:
            try:
                text = output.read_text(errors="replace")
            except FileNotFoundError:
                text = ""
            ok = bool(pattern.search(text))
        if ok and ready.port is not None:
            ok = _port_open(host, ready.port)
        if ok:
            return
        if not is_alive():
            raise ServerNotReady("server exited before it became ready")
        if time.monotonic() > deadline:
            raise ServerNotReady(f"server not ready after {ready.timeout:g} s")
        await asyncio.sleep(0.05)


def _port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False
