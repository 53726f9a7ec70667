"""The local executor, for real: process groups, timeouts, streaming, servers."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest

from aibench.executors.base import Command, ReadyCheck, ServerNotReady
from aibench.executors.local import LocalExecutor
from aibench.inventory import local_inventory

NODE = local_inventory().nodes[0]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purpose
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_runs_argv_and_captures_both_streams(tmp_path: Path) -> None:
    ex = LocalExecutor()
    cmd = Command(
        (
            sys.executable,
            "-c",
            "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)",
        )
    )
    res = asyncio.run(ex.run(NODE, cmd, tmp_path / "o", tmp_path / "e"))
    assert res.exit_code == 3
    assert not res.timed_out
    assert (tmp_path / "o").read_text() == "out\n"
    assert (tmp_path / "e").read_text() == "err\n"
    assert res.started.endswith("Z")


def test_argv_is_not_a_shell_string(tmp_path: Path) -> None:
    hostile = "a b; echo pwned $(id) `id` 'q'"
    res = asyncio.run(
        LocalExecutor().run(
            NODE, Command(("printf", "%s", hostile)), tmp_path / "o", tmp_path / "e"
        )
    )
    assert res.exit_code == 0
    assert (tmp_path / "o").read_text() == hostile


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    """A hung tool that forked a child: both die, the result says timeout."""
    pidfile = tmp_path / "child.pid"
    script = (
        "import os, subprocess, sys, time\n"
        "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(c.pid))\n"
        "print('started', flush=True)\n"
        "time.sleep(600)\n"
    )
    ex = LocalExecutor(kill_grace=1.0)
    t0 = time.monotonic()
    res = asyncio.run(
        ex.run(
            NODE,
            Command((sys.executable, "-c", script), timeout=1.5),
            tmp_path / "o",
            tmp_path / "e",
        )
    )
    assert res.timed_out
    assert res.exit_code is None
    assert "timed out after 1.5 s" in res.reason
    assert time.monotonic() - t0 < 30
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "the forked child survived the timeout"
    assert (tmp_path / "o").read_text() == "started\n", "output written before the kill is kept"


def test_sigterm_ignoring_tool_is_killed(tmp_path: Path) -> None:
    script = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('x', flush=True); time.sleep(600)"
    )
    ex = LocalExecutor(kill_grace=0.5)
    res = asyncio.run(
        ex.run(
            NODE,
            Command((sys.executable, "-c", script), timeout=1.0),
            tmp_path / "o",
            tmp_path / "e",
        )
    )
    assert res.timed_out


def test_missing_command_is_a_reason_not_a_crash(tmp_path: Path) -> None:
    res = asyncio.run(
        LocalExecutor().run(NODE, Command(("no-such-tool-xyz",)), tmp_path / "o", tmp_path / "e")
    )
    assert res.exit_code is None
    assert res.reason == "no-such-tool-xyz: command not found"


def test_output_is_on_disk_while_the_process_runs(tmp_path: Path) -> None:
    script = "import time\nprint('first', flush=True)\ntime.sleep(5)\n"

    async def scenario() -> str:
        ex = LocalExecutor()
        task = asyncio.create_task(
            ex.run(
                NODE,
                Command((sys.executable, "-c", script), timeout=1.0),
                tmp_path / "o",
                tmp_path / "e",
            )
        )
        for _ in range(100):
            await asyncio.sleep(0.05)
            if (tmp_path / "o").exists() and (tmp_path / "o").read_text():
                break
        seen = (tmp_path / "o").read_text()
        await task
        return seen

    assert asyncio.run(scenario()) == "first\n"


def test_cancel_kills_the_process(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    script = (
        f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(600)"
    )

    async def scenario() -> None:
        ex = LocalExecutor(kill_grace=0.5)
        task = asyncio.create_task(
            ex.run(
                NODE,
                Command((sys.executable, "-c", script), timeout=60),
                tmp_path / "o",
                tmp_path / "e",
            )
        )
        for _ in range(200):
            await asyncio.sleep(0.05)
            if pidfile.exists() and pidfile.read_text():
                break
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    pid = int(pidfile.read_text())
    assert not _alive(pid)


def test_server_started_when_ready_and_always_stopped(tmp_path: Path) -> None:
    script = "import time\nprint('listening on 5000', flush=True)\ntime.sleep(600)\n"

    async def scenario() -> tuple[bool, bool]:
        ex = LocalExecutor(kill_grace=0.5)
        srv = await ex.start(
            NODE,
            Command((sys.executable, "-c", script)),
            tmp_path / "so",
            tmp_path / "se",
            ReadyCheck(pattern=r"listening on \d+", timeout=10),
        )
        was_alive = srv.alive
        await srv.stop()
        return was_alive, srv.alive

    was, now = asyncio.run(scenario())
    assert was
    assert not now


def test_server_that_never_gets_ready_is_stopped(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    script = (
        f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(600)"
    )

    async def scenario() -> None:
        ex = LocalExecutor(kill_grace=0.5)
        await ex.start(
            NODE,
            Command((sys.executable, "-c", script)),
            tmp_path / "so",
            tmp_path / "se",
            ReadyCheck(pattern="never", timeout=0.8),
        )

    with pytest.raises(ServerNotReady, match=r"not ready after 0\.8 s"):
        asyncio.run(scenario())
    assert not _alive(int(pidfile.read_text()))


def test_server_that_exits_is_reported(tmp_path: Path) -> None:
    async def scenario() -> None:
        ex = LocalExecutor()
        await ex.start(
            NODE,
            Command(("false",)),
            tmp_path / "so",
            tmp_path / "se",
            ReadyCheck(pattern="x", timeout=5),
        )

    with pytest.raises(ServerNotReady, match="exited before it became ready"):
        asyncio.run(scenario())


def test_iperf3_server_ready_pattern_is_real(tmp_path: Path) -> None:
    """The pattern the iperf3 runner waits for is what iperf3 really prints."""
    from aibench.runners.base import Slot
    from aibench.runners.iperf3 import RUNNER, Iperf3Options

    inv = RUNNER.invocations("t", Iperf3Options(duration=1), [NODE, NODE], Slot(base_port=15391))[0]
    server = inv.servers[0]

    async def scenario() -> int | None:
        ex = LocalExecutor()
        srv = await ex.start(
            NODE, Command(server.argv), tmp_path / "so", tmp_path / "se", server.ready
        )
        return await srv.stop()

    asyncio.run(scenario())
    assert "Server listening on 15391" in (tmp_path / "so").read_text()
