"""How the SSH executor treats connections that fail: retries, caps, a per-host breaker.

Contract (every value comes from the inventory's ``limits``, see
:class:`~aibench.inventory_file.LimitsModel`):

* **Retries with backoff and jitter.** A connection attempt that the host refuses or
  drops during the handshake (sshd restarting, sshd's ``MaxStartups`` dropping new
  connections, a reset) is tried again after a random wait between 0 and
  ``min(ssh_backoff_max_s, ssh_backoff_s * 2**k)`` (``tenacity``'s full-jitter
  exponential wait), at most ``ssh_retries`` times, and never later than the node's
  ``connect_timeout`` after the first attempt: a host that is down costs at most its
  connect timeout. A connection attempt that timed out, a host that cannot be routed to,
  a refused host key and refused authentication are not retried.
* **Session opens** refused by the server (``open failed``: sshd's ``MaxSessions``)
  lower the host's cap on sessions open at once to what the server accepted, so later
  steps queue in aibench instead of being refused. A refusal that our own sessions
  explain (one of them runs, or one ended a moment ago and the server has not freed its
  slot yet) waits for one of ours to end and tries again, for up to
  :data:`SESSION_QUEUE_MAX_S`, without spending a retry; any other refusal is retried
  like a connection (without the connect-timeout bound).
* **A cap on handshakes**: at most ``ssh_max_handshakes`` connections are being set up
  (TCP, key exchange, authentication) at once over all hosts; waiting for a slot does
  not count against the connect timeout.
* **A cap on sessions per connection**: at most ``ssh_max_sessions`` commands run at
  once over one host's connection (OpenSSH's default ``MaxSessions`` is 10).
* **A per-host circuit breaker**: a host whose connection failed ``ssh_host_failures``
  times (attempts given up after their retries, connections lost mid-step) is skipped
  for the rest of the run; every later step on it is unreachable at once, with a reason
  that says so and names the last failure. ``0`` turns the breaker off.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import asyncssh
from tenacity import (
    AsyncRetrying,
    retry_if_exception,
    stop_after_attempt,
    stop_before_delay,
    wait_random_exponential,
)
from tenacity.stop import stop_base

if TYPE_CHECKING:
    from aibench.inventory import Limits

T = TypeVar("T")

# A session that ended this recently may still hold its slot at the server (seconds)
SESSION_END_LAG_S = 2.0
# How long a session open waits, refused again and again while our own sessions hold the
# server's slots, before it fails as a refusal (seconds)
SESSION_QUEUE_MAX_S = 120.0

# Why a connection attempt failed that is worth another try: the host answered but
# would not (yet) hold a session. Timeouts and unroutable hosts are not in it.
_TRANSIENT_ERRNOS = {errno.ECONNREFUSED, errno.ECONNRESET, errno.ECONNABORTED, errno.EPIPE}


@dataclass(frozen=True)
class ConnectionPolicy:
    retries: int = 3
    backoff_s: float = 0.25
    backoff_max_s: float = 4.0
    max_handshakes: int = 32
    max_sessions: int = 8
    host_failures: int = 3

    @classmethod
    def from_limits(cls, limits: Limits) -> ConnectionPolicy:
        return cls(
            retries=limits.ssh_retries,
            backoff_s=limits.ssh_backoff_s,
            backoff_max_s=limits.ssh_backoff_max_s,
            max_handshakes=limits.ssh_max_handshakes,
            max_sessions=limits.ssh_max_sessions,
            host_failures=limits.ssh_host_failures,
        )

    async def retry(
        self,
        attempt: Callable[[], Awaitable[T]],
        transient: Callable[[BaseException], bool],
        within: float | None = None,
        on_retry: Callable[[BaseException], None] | None = None,
    ) -> T:
        """``attempt()`` until it succeeds, a non-transient error, ``retries`` more tries,
        or (with ``within``) the next try would start more than ``within`` s after the
        first. The last error is raised as it is."""
        stop: stop_base = stop_after_attempt(self.retries + 1)
        if within is not None:
            stop = stop | stop_before_delay(within)
        retrying = AsyncRetrying(
            stop=stop,
            wait=wait_random_exponential(multiplier=self.backoff_s, max=self.backoff_max_s),
            retry=retry_if_exception(transient),
            reraise=True,
            before_sleep=(
                (lambda state: on_retry(state.outcome.exception()))  # type: ignore[arg-type, union-attr]
                if on_retry is not None
                else None
            ),
        )
        async for try_ in retrying:
            with try_:
                return await attempt()
        raise AssertionError("unreachable: tenacity reraises the last error")  # pragma: no cover


def transient_connect_error(exc: BaseException) -> bool:
    """A refused, reset or dropped connection attempt (sshd busy or restarting)."""
    if isinstance(exc, asyncssh.ConnectionLost):
        return True
    if isinstance(exc, asyncssh.DisconnectError):
        return exc.code in (
            asyncssh.DISC_TOO_MANY_CONNECTIONS,
            asyncssh.DISC_CONNECTION_LOST,
            asyncssh.DISC_SERVICE_NOT_AVAILABLE,
        )
    if isinstance(exc, OSError) and not isinstance(exc, TimeoutError):
        return exc.errno in _TRANSIENT_ERRNOS or isinstance(exc, ConnectionError)
    return False


def session_refused(exc: BaseException) -> bool:
    """The server refused to open one more session on a connection (MaxSessions)."""
    return isinstance(exc, asyncssh.ChannelOpenError)


class SessionGate:
    """At most ``limit`` sessions at once on one connection, lowered when the server
    refuses one: to the other slots taken at that moment (``active - 1``: the sessions the
    server holds, or is about to confirm), but never below the most sessions it has held
    open at once (``peak``: it accepted that many, so a refusal right after a session
    ended, before the server saw it end, does not lower the limit further), nor one."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.active = 0  # slots taken (sessions open or being opened)
        self.open = 0  # sessions the server accepted and that still run
        self.peak = 0
        self.ended_at = -math.inf  # monotonic time the last accepted session ended
        self._cond = asyncio.Condition()

    async def acquire(self) -> None:
        async with self._cond:
            await self._cond.wait_for(lambda: self.active < self.limit)
            self.active += 1

    def opened(self) -> None:
        self.open += 1
        self.peak = max(self.peak, self.open)

    async def release(self, opened: bool = True) -> None:
        async with self._cond:
            self.active -= 1
            if opened:
                self.open -= 1
                self.ended_at = time.monotonic()
            self._cond.notify_all()

    def ours_explain_a_refusal(self) -> bool:
        """A refusal is the server still counting our own sessions: one of them runs, or
        one ended within :data:`SESSION_END_LAG_S` (sshd frees a session's slot only once
        it has seen it close, which a loaded server does late)."""
        return self.open > 0 or time.monotonic() - self.ended_at < SESSION_END_LAG_S

    async def next_end(self, timeout: float) -> None:
        """Until one of our accepted sessions ends or ``timeout`` s pass."""
        before = self.ended_at
        async with self._cond:
            with contextlib.suppress(TimeoutError):
                ended = self._cond.wait_for(lambda: self.ended_at != before)
                await asyncio.wait_for(ended, timeout)

    def refused(self) -> None:
        """The server refused a session while this slot was taken (call before release)."""
        self.limit = max(1, min(self.limit, max(self.peak, self.active - 1)))


class Breaker:
    """Counts a host's connection failures; opens after ``threshold`` (0: never)."""

    def __init__(self, threshold: int) -> None:
        self.threshold = threshold
        self.failures: dict[str, int] = {}
        self.last: dict[str, str] = {}

    def fail(self, host: str, reason: str) -> None:
        self.failures[host] = self.failures.get(host, 0) + 1
        self.last[host] = reason

    def open(self, host: str) -> bool:
        return self.threshold > 0 and self.failures.get(host, 0) >= self.threshold

    def why(self, host: str) -> str:
        n = self.failures.get(host, 0)
        return (
            f"skipped for the rest of the run after {n} connection failure"
            f"{'s' if n != 1 else ''} (last: {self.last.get(host, '?')})"
        )

    def skipped(self) -> dict[str, str]:
        """Every host the breaker skips, with the reason."""
        return {h: self.why(h) for h in self.failures if self.open(h)}
