"""What the kubernetes executor learns from the API server without polling it: the state of
a run's Pods (one watch per run) and the server's clock.

:class:`PodWatch` keeps the latest object of every Pod of a run from one ``list`` and then
a ``watch`` (``watch=true`` from the list's ``resourceVersion``, ended by the server after
``timeoutSeconds`` and resumed from the last version seen); a ``410 Gone`` or a dropped
connection lists again. Waiters are woken on each change of their Pod. When the watch
breaks :data:`BREAK_AFTER` times in a row, it says so (``broken``) and the executor reads
each Pod it waits on every :data:`SLOW_POLL_S` seconds instead.

Lease expiry is judged by the API server's clock: each response's ``Date`` header gives the
offset of this machine's clock (:class:`ServerClock`), so a Lease written and checked by
runs on two machines with different clocks expires when the server says so.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any

WATCH_S = 240  # timeoutSeconds of one watch request
BREAK_AFTER = 3  # consecutive failures after which the watch gives up
SLOW_POLL_S = 2.0

# list_fn() -> (pods, resourceVersion); stream_fn(resourceVersion) -> events
ListFn = Callable[[], tuple[Iterable[Any], str]]
StreamFn = Callable[[str], Iterable[Mapping[str, Any]]]


class WatchGone(Exception):
    """The watch's resourceVersion is too old (410): list again."""


class PodWatch:
    """The latest state of a run's Pods, kept by one list-then-watch thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop, list_fn: ListFn, stream_fn: StreamFn):
        self._loop = loop
        self._list = list_fn
        self._stream = stream_fn
        self.pods: dict[str, Any] = {}
        self.broken: str | None = None  # why the watch gave up
        self._waiters: dict[str, asyncio.Event] = {}
        self.stop = threading.Event()
        self.requests = 0  # list and watch requests made (for tests and the record)

    def event(self, name: str) -> asyncio.Event:
        """The event set on each change of Pod ``name`` (clear it before reading)."""
        return self._waiters.setdefault(name, asyncio.Event())

    def forget(self, name: str) -> None:
        self._waiters.pop(name, None)
        self.pods.pop(name, None)

    def run(self) -> None:
        """Thread body: list, watch, resume; until ``stop`` or it breaks for good."""
        version: str | None = None
        failures = 0
        while not self.stop.is_set():
            try:
                if version is None:
                    self.requests += 1
                    pods, version = self._list()
                    for pod in pods:
                        self._seen(pod)
                self.requests += 1
                for ev in self._stream(version):
                    if self.stop.is_set():
                        return
                    version = self._apply(ev) or version
                failures = 0
            except WatchGone:
                version = None
            except Exception as exc:  # a dropped connection, a refused request
                failures += 1
                version = None
                if failures >= BREAK_AFTER:
                    self._give_up(f"{type(exc).__name__}: {exc}")
                    return
                self.stop.wait(min(2.0**failures, 10.0))

    def _apply(self, ev: Mapping[str, Any]) -> str | None:
        kind, obj = ev.get("type"), ev.get("object")
        if kind == "ERROR":
            code = obj.get("code") if isinstance(obj, Mapping) else getattr(obj, "code", None)
            if code == 410:
                raise WatchGone()
            raise RuntimeError(f"watch error: {obj}")
        if obj is None:
            return None
        if kind == "DELETED":  # what is kept is the Pods that exist
            self.pods.pop(obj.metadata.name, None)
            self._loop.call_soon_threadsafe(self._wake, obj.metadata.name)
        else:
            self._seen(obj)
        return str(obj.metadata.resource_version or "") or None

    def _seen(self, pod: Any) -> None:
        name = pod.metadata.name
        self.pods[name] = pod
        self._loop.call_soon_threadsafe(self._wake, name)

    def _wake(self, name: str) -> None:
        ev = self._waiters.get(name)
        if ev is not None:
            ev.set()

    def _give_up(self, why: str) -> None:
        self.broken = why
        self._loop.call_soon_threadsafe(self._wake_all)

    def _wake_all(self) -> None:
        for ev in self._waiters.values():
            ev.set()


def server_date(headers: Mapping[str, str] | None) -> datetime | None:
    """The time of an API response's ``Date`` header (UTC), or None."""
    value = (headers or {}).get("Date") or (headers or {}).get("date")
    if not value:
        return None
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


class ServerClock:
    """The API server's time, from this machine's clock and the last ``Date`` seen."""

    def __init__(self) -> None:
        self.offset = timedelta(0)

    def saw(self, headers: Mapping[str, str] | None, local: datetime | None = None) -> None:
        when = server_date(headers)
        if when is not None:
            self.offset = when - (local or datetime.now(UTC))

    def now(self) -> datetime:
        return datetime.now(UTC) + self.offset


def lease_expired(spec: Any, server_now: datetime, default_s: int) -> bool:
    """True when a Lease's last renewal is older than its duration by the server's clock."""
    renewed = spec.renew_time or spec.acquire_time
    if renewed is None:
        return True
    if renewed.tzinfo is None:
        renewed = renewed.replace(tzinfo=UTC)
    return bool((server_now - renewed).total_seconds() > (spec.lease_duration_seconds or default_s))
