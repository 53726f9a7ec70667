"""How a run is stopped from outside: SIGINT (Ctrl-C) and SIGTERM (what Slurm, Kubernetes,
systemd and a CI system's cancel button send) are handled alike.

The first signal stops the steps: the invocations in flight have their process groups
ended (SIGTERM, then SIGKILL after the executor's grace), what finished stays in the
journal, and the run's record and reports are written as for a run that ended, with the
interruption recorded (when, which signal, what was running). The exit code is 128 + the
signal's number (130 for SIGINT, 143 for SIGTERM). A second signal ends aibench at once:
what is running is killed, the journal keeps what finished, no record is written.

Nothing here knows the pipeline: :class:`Stopper` holds what a signal does (a callback
that cancels the execution, callbacks that kill what runs) and what it saw.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any

from aibench.instants import now_text

SIGNALS = (signal.SIGINT, signal.SIGTERM)


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


@dataclass(frozen=True)
class Interruption:
    """One stop of a run: when (UTC), by which signal, and the invocations (step ids)
    that were running then."""

    at: str
    signal: str
    running: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"at": self.at, "signal": self.signal, "running": list(self.running)}


class Stopper:
    """Installs the handlers of :data:`SIGNALS` while it is entered (in the main thread;
    elsewhere it installs nothing and a signal keeps its default)."""

    def __init__(self) -> None:
        self.signum = 0  # the first signal received, 0 for none
        self.interruption: Interruption | None = None
        # set while the steps run: cancels them; returns the step ids running
        self.cancel: Callable[[], tuple[str, ...]] | None = None
        # called on a second signal, before aibench ends at once (kill what runs)
        self.at_once: list[Callable[[], None]] = []
        self._old: dict[int, Any] = {}

    def __enter__(self) -> Stopper:
        if threading.current_thread() is threading.main_thread():
            for sig in SIGNALS:
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()

    @property
    def stopped(self) -> bool:
        return self.signum != 0

    @property
    def exit_code(self) -> int:
        """128 + the signal's number (the shell's convention): 130 SIGINT, 143 SIGTERM."""
        return 128 + self.signum

    @contextlib.contextmanager
    def cancelling(self, cancel: Callable[[], tuple[str, ...]]) -> Iterator[None]:
        """While the block runs, a first signal calls ``cancel``."""
        self.cancel = cancel
        try:
            yield
        finally:
            self.cancel = None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        name = signal_name(signum)
        if self.signum:
            _say(f"aibench: {name} again: ending now, no record written")
            for kill in self.at_once:
                with contextlib.suppress(Exception):
                    kill()
            os._exit(128 + signum)
        self.signum = signum
        running = self.cancel() if self.cancel is not None else ()
        at = now_text()
        self.interruption = Interruption(at, name, tuple(running))
        _say(
            f"aibench: {name}: stopping the steps and writing the record "
            "(a second signal ends aibench at once)"
        )


def _say(line: str) -> None:
    """A line on stderr written past Python's buffer: the handler may run while the
    progress line is being written, and a buffered write would then be re-entered."""
    with contextlib.suppress(OSError):
        os.write(sys.stderr.fileno(), (line + "\n").encode())
