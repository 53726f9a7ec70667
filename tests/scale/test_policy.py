"""The SSH connection policy without the bed: retries, the session gate, the breaker, and
the inventory keys that set them. The executor tests connect to a closed loopback port
(refused at once) and to a loopback socket that never speaks (a timeout)."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import asyncssh
import pytest
import yaml

from aibench.errors import ConfigError
from aibench.executors.policy import (
    SESSION_END_LAG_S,
    Breaker,
    ConnectionPolicy,
    SessionGate,
    session_refused,
    transient_connect_error,
)
from aibench.executors.select import for_node
from aibench.executors.ssh import SSHExecutor
from aibench.inventory import Node, SSHSettings
from aibench.inventory_file import load_inventory
from tests.ports import free_port

FAST = ConnectionPolicy(retries=3, backoff_s=0.01, backoff_max_s=0.05)


def test_transient_errors_are_retried_then_raised() -> None:
    calls = []

    async def refused() -> None:
        calls.append(time.monotonic())
        raise ConnectionRefusedError(111, "Connection refused")

    with pytest.raises(ConnectionRefusedError):
        asyncio.run(FAST.retry(refused, transient_connect_error))
    assert len(calls) == 4  # the first try and three retries


def test_permanent_errors_and_timeouts_are_not_retried() -> None:
    for exc in (
        TimeoutError(),
        asyncssh.PermissionDenied("no"),
        OSError(113, "No route to host"),
    ):
        calls: list[int] = []

        async def fail(exc: BaseException = exc, calls: list[int] = calls) -> None:
            calls.append(1)
            raise exc

        with pytest.raises(type(exc)):
            asyncio.run(FAST.retry(fail, transient_connect_error))
        assert calls == [1], exc


def test_retries_stop_before_the_time_bound() -> None:
    slow = ConnectionPolicy(retries=50, backoff_s=0.2, backoff_max_s=0.2)
    calls = []

    async def refused() -> None:
        calls.append(1)
        raise ConnectionResetError(104, "reset")

    t0 = time.monotonic()
    with pytest.raises(ConnectionResetError):
        asyncio.run(slow.retry(refused, transient_connect_error, within=0.5))
    assert time.monotonic() - t0 < 0.6
    assert 1 < len(calls) < 50


def test_a_success_after_refusals_is_returned() -> None:
    calls = []

    async def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise asyncssh.ConnectionLost("dropped")
        return "in"

    assert asyncio.run(FAST.retry(flaky, transient_connect_error)) == "in"
    assert session_refused(asyncssh.ChannelOpenError(1, "open failed"))


def test_session_gate_queues_and_learns_the_servers_limit() -> None:
    async def go() -> tuple[int, int]:
        gate = SessionGate(8)
        seen: list[int] = []

        async def one() -> None:
            await gate.acquire()
            gate.opened()
            seen.append(gate.active)
            await asyncio.sleep(0.01)
            await gate.release()

        for _ in range(3):  # three sessions open, the fourth refused
            await gate.acquire()
            gate.opened()
        await gate.acquire()
        gate.refused()
        await gate.release(opened=False)
        assert gate.limit == 3
        for _ in range(3):
            await gate.release()
        await asyncio.gather(*(one() for _ in range(8)))
        return max(seen), gate.open

    assert asyncio.run(go()) == (3, 0)
    burst = SessionGate(8)
    asyncio.run(burst.acquire())
    burst.refused()  # refused with nothing else open: one at a time
    assert burst.limit == 1


def test_a_refusal_our_own_sessions_explain_waits_for_one_of_ours_to_end() -> None:
    """sshd frees a session's slot only once it has seen the session close: a refusal
    while one of ours runs, or just after one ended, is ours; on a fresh gate it is not."""

    async def go() -> tuple[bool, bool, bool, float]:
        gate = SessionGate(2)
        fresh = gate.ours_explain_a_refusal()
        await gate.acquire()
        gate.opened()
        running = gate.ours_explain_a_refusal()
        waiter = asyncio.ensure_future(gate.next_end(5.0))
        await asyncio.sleep(0.05)
        assert not waiter.done()  # a refused open releasing its slot is not an end
        await gate.acquire()
        await gate.release(opened=False)
        await asyncio.sleep(0.05)
        assert not waiter.done()
        t0 = time.monotonic()
        await gate.release()  # ours ends: the waiter goes at once
        await waiter
        just_ended = gate.ours_explain_a_refusal()
        return fresh, running, just_ended, time.monotonic() - t0

    fresh, running, just_ended, waited = asyncio.run(go())
    assert (fresh, running, just_ended) == (False, True, True)
    assert waited < 1.0
    gate = SessionGate(2)
    gate.ended_at = time.monotonic() - SESSION_END_LAG_S - 0.1
    assert not gate.ours_explain_a_refusal()


def test_breaker_opens_after_the_threshold_and_says_why() -> None:
    b = Breaker(3)
    for _ in range(2):
        b.fail("n1", "connection refused")
    assert not b.open("n1")
    b.fail("n1", "connection refused")
    assert b.open("n1")
    assert b.why("n1") == (
        "skipped for the rest of the run after 3 connection failures (last: connection refused)"
    )
    assert b.skipped() == {"n1": b.why("n1")}
    off = Breaker(0)
    for _ in range(10):
        off.fail("n1", "x")
    assert not off.open("n1")


@pytest.fixture
def known_hosts(tmp_path: Path) -> Path:
    p = tmp_path / "known_hosts"
    p.write_text("")
    return p


@pytest.fixture
def silent_port() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)  # the kernel completes TCP handshakes; nobody ever answers
        yield int(s.getsockname()[1])


def node_at(port: int, known: Path, timeout: float = 2.0) -> Node:
    return Node(
        name="n1",
        address="127.0.0.1",
        executor="ssh",
        ssh=SSHSettings(port=port, known_hosts=str(known), connect_timeout=timeout),
    )


def test_a_refused_host_is_retried_then_skipped_for_the_rest_of_the_run(
    known_hosts: Path,
) -> None:
    ex = SSHExecutor(policy=FAST)
    node = node_at(free_port(), known_hosts)

    async def go() -> list[str | None]:
        return [await ex.check(node) for _ in range(4)]

    reasons = asyncio.run(go())
    assert ex.retried["n1"] == 3 * 3  # three checks, each with three retries
    assert reasons[0] == f"n1 (127.0.0.1:{node.ssh.port}): connection refused"
    assert reasons[3] == (
        "n1: skipped for the rest of the run after 3 connection failures (last: connection refused)"
    )


def test_a_silent_host_costs_one_connect_timeout(known_hosts: Path, silent_port: int) -> None:
    ex = SSHExecutor(policy=ConnectionPolicy(retries=5))
    node = node_at(silent_port, known_hosts, timeout=1.0)

    async def go() -> list[str | None]:
        # five steps wait for the same host at once: they share one attempt
        return await asyncio.gather(*(ex.check(node) for _ in range(5)))

    t0 = time.monotonic()
    reasons = asyncio.run(go())
    assert time.monotonic() - t0 < 2.5
    assert set(reasons) == {f"n1 (127.0.0.1:{silent_port}): connection timed out after 1 s"}
    assert ex.breaker.failures["n1"] == 1
    assert "n1" not in ex.retried


def test_inventory_limits_set_the_policy(tmp_path: Path) -> None:
    doc = {
        "nodes": [{"name": "n1", "executor": "ssh"}],
        "limits": {
            "ssh_retries": 5,
            "ssh_backoff_s": 0.5,
            "ssh_backoff_max_s": 8,
            "ssh_max_handshakes": 4,
            "ssh_max_sessions": 2,
            "ssh_host_failures": 0,
        },
    }
    path = tmp_path / "inv.yaml"
    path.write_text(yaml.safe_dump(doc))
    inv = load_inventory(path)
    ex = for_node(inv.nodes[0], inv)
    assert isinstance(ex, SSHExecutor)
    assert ex.policy == ConnectionPolicy(5, 0.5, 8.0, 4, 2, 0)
    doc["limits"] = {"ssh_max_sessions": 0}
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match=r"inv.yaml: limits.ssh_max_sessions"):
        load_inventory(path)
