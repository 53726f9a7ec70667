"""What the lease tests (aibench killed on this machine, on the test bed) wait with."""

from __future__ import annotations

import time
from collections.abc import Callable


def seconds_until(cond: Callable[[], bool], seconds: float) -> float:
    """How long ``cond`` took to hold, polled every 0.2 s; -1.0 when it did not within
    ``seconds``."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        if cond():
            return time.monotonic() - t0
        time.sleep(0.2)
    return -1.0
