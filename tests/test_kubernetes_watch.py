"""The kubernetes executor's watch of a run's Pods and the API server's clock (no cluster:
the list and watch calls are functions handed in)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from aibench.executors.kubernetes_watch import (
    PodWatch,
    ServerClock,
    lease_expired,
    server_date,
)


def _pod(name: str, phase: str, version: str) -> Any:
    meta = SimpleNamespace(name=name, resource_version=version)
    return SimpleNamespace(metadata=meta, status=SimpleNamespace(phase=phase))


class _Api:
    """A list, then watches: a change, the server's timeout, a 410, then broken
    connections."""

    def __init__(self) -> None:
        self.lists = 0
        self.watched: list[str] = []

    def list_fn(self) -> tuple[list[Any], str]:
        self.lists += 1
        if self.lists == 1:
            return [_pod("a", "Pending", "10")], "10"
        return [_pod("a", "Running", "20")], "20"

    def stream_fn(self, version: str) -> Iterator[Mapping[str, Any]]:
        self.watched.append(version)
        n = len(self.watched)
        if n == 1:
            yield {"type": "MODIFIED", "object": _pod("a", "Running", "11")}
            yield {"type": "ADDED", "object": _pod("b", "Pending", "12")}
            yield {"type": "ADDED", "object": _pod("c", "Pending", "13")}
            yield {"type": "DELETED", "object": _pod("c", "Succeeded", "14")}
        elif n == 2:
            yield {"type": "ERROR", "object": {"code": 410, "reason": "Expired"}}
        else:
            raise ConnectionResetError("connection reset by peer")


def test_watch_lists_then_watches_resumes_relists_and_says_when_it_breaks() -> None:
    api = _Api()

    async def main() -> PodWatch:
        w = PodWatch(asyncio.get_running_loop(), api.list_fn, api.stream_fn)
        woken = w.event("b")
        w.stop.wait = lambda _t=None: False  # type: ignore[method-assign,assignment]
        t = threading.Thread(target=w.run)
        t.start()
        await asyncio.wait_for(woken.wait(), 10)
        await asyncio.get_running_loop().run_in_executor(None, t.join, 10)
        await asyncio.sleep(0)
        return w

    w = asyncio.run(main())
    # the first watch from the list's version, the next from the last event's, a 410
    # lists again and watches from the new list's version; three broken watches in a
    # row end it
    assert api.watched == ["10", "14", "20", "20", "20"]
    assert api.lists == 2 + 2  # each broken connection lists again
    assert w.pods["b"].status.phase == "Pending"
    assert "c" not in w.pods  # deleted: not kept
    assert w.broken == "ConnectionResetError: connection reset by peer"
    assert w.requests == len(api.watched) + api.lists


def test_server_clock_and_lease_expiry() -> None:
    assert server_date({"Date": "Sat, 05 Dec 2026 01:40:00 GMT"}) == datetime(
        2026, 12, 5, 1, 40, tzinfo=UTC
    )
    assert server_date({}) is None
    assert server_date({"Date": "yesterday"}) is None
    clock = ServerClock()
    local = datetime(2026, 12, 5, 1, 38, tzinfo=UTC)
    clock.saw({"Date": "Sat, 05 Dec 2026 01:40:00 GMT"}, local=local)
    assert clock.offset == timedelta(minutes=2)  # this machine runs two minutes late
    server_now = datetime(2026, 12, 5, 1, 40, tzinfo=UTC)

    def spec(renewed: datetime | None) -> Any:
        return SimpleNamespace(renew_time=renewed, acquire_time=None, lease_duration_seconds=60)

    # renewed 90 s ago by the server's clock: expired, though only 0 s by this machine's
    assert lease_expired(spec(server_now - timedelta(seconds=90)), server_now, 60)
    assert not lease_expired(spec(server_now - timedelta(seconds=30)), server_now, 60)
    assert lease_expired(spec(None), server_now, 60)


def test_a_lease_that_cannot_be_renewed_stops_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Renewals refused for longer than the Lease lasts (less one period): the run's Pods
    are deleted, and every later step is unreachable with the reason, no Pod made."""
    from aibench.executors import kubernetes as k8s
    from aibench.executors.base import Command
    from aibench.inventory import KubernetesSettings, Node

    monkeypatch.setattr(k8s, "RENEW_S", 0.01)
    monkeypatch.setattr(k8s, "LEASE_S", 0.05)
    deleted: list[str] = []

    class Coord:
        def patch_namespaced_lease_with_http_info(self, *_a: object, **_k: object) -> None:
            raise ConnectionRefusedError("[Errno 111] Connection refused")

    ex = k8s.KubernetesExecutor(KubernetesSettings(image="tools:1"))
    monkeypatch.setattr(ex, "_coord", Coord)

    async def delete(name: str) -> None:
        deleted.append(name)
        ex._pods.discard(name)

    monkeypatch.setattr(ex, "_delete", delete)
    ex._pods.add("aibench-x-0001-fio")

    async def main() -> Any:
        await asyncio.wait_for(ex._renew(), 10)
        node = Node("gpu01", executor="kubernetes")
        return await ex.run(node, Command(("fio",)), tmp_path / "o", tmp_path / "e")

    try:
        res = asyncio.run(main())
    finally:
        ex._pool.shutdown(wait=False)
    assert ex.lease_lost.startswith(f"the run's Lease {ex.run_id} was not renewed for ")
    assert ex.lease_lost.endswith("Kubernetes API unreachable: [Errno 111] Connection refused")
    assert deleted == ["aibench-x-0001-fio"]
    assert res.unreachable
    assert res.reason == ex.lease_lost


def test_a_secret_the_kubelet_is_still_syncing_is_waited_for_not_a_failure() -> None:
    """Under load the kubelet may report CreateContainerConfigError while its Secret cache
    syncs, then start the container; a missing key stays a failure at once."""
    from types import SimpleNamespace

    from aibench.executors.kubernetes import _not_starting

    def pod_waiting(reason: str, message: str) -> tuple[object, object]:
        waiting = SimpleNamespace(reason=reason, message=message)
        state = SimpleNamespace(waiting=waiting, running=None, terminated=None)
        return SimpleNamespace(status=SimpleNamespace(phase="Pending")), state

    syncing = "failed to sync secret cache: timed out waiting for the condition"
    assert _not_starting(*pod_waiting("CreateContainerConfigError", syncing)) is None
    missing = "couldn't find key TOKEN in Secret aibench/run-1"
    why = _not_starting(*pod_waiting("CreateContainerConfigError", missing))
    assert why == f"CreateContainerConfigError: {missing}"
