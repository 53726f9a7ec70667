"""The two calls that put telemetry beside any run (``aibench run``'s execution):

    async with telemetry.hook.sampling(run_dir, nodes, executor_for, interval=2.0):
        await execute(ex)
    ...
    run = telemetry.hook.attach(run, run_dir)

``sampling`` starts a :class:`~aibench.telemetry.Sampler` on every node (``interval`` None
or 0: nothing is started) and stops it when the block ends, however it ends; a sampler that
cannot start is recorded in the telemetry's errors, never raised. ``attach`` puts the
compact series of ``run_dir/telemetry`` (this execution's and an interrupted one's before
it, for ``--resume``) into ``Run.telemetry``, with the telemetry rows that judge them.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

from aibench.executors.base import Executor
from aibench.inventory import Node
from aibench.model import Run
from aibench.telemetry.sampler import Sampler
from aibench.telemetry.store import Store, compact

DIRNAME = "telemetry"


@contextlib.asynccontextmanager
async def sampling(
    run_dir: Path,
    nodes: Sequence[Node],
    executor_for: Callable[[Node], Executor],
    *,
    interval: float | None = 2.0,
) -> AsyncIterator[Sampler | None]:
    if not interval:
        yield None
        return
    sampler = Sampler(run_dir / DIRNAME, nodes, executor_for, interval=interval)
    try:
        await sampler.start()
    except Exception as e:  # never fail the run for its telemetry
        sampler.store.error(time.time(), "", "sampler", f"could not start: {e}")
    try:
        yield sampler
    finally:
        with contextlib.suppress(Exception):
            await sampler.stop()


def attach(run: Run, run_dir: Path, profile: Any = None) -> Run:
    """``run`` with the compact series of ``run_dir``, and the telemetry rows of
    ``profile`` (a loaded spec: the built-in ``telemetry`` profile beside a run, the
    soak's spec for a soak) recorded with them (``telemetry["profile"]``: name, sha256,
    rows), so that a re-judge of the run judges the series with the same rows, whatever
    spec judges its steps."""
    d = run_dir / DIRNAME
    if not d.exists():
        return run
    tel = dict(compact(Store(d)))
    if profile is not None:
        tel["profile"] = {
            "name": profile.name,
            "sha256": profile.sha256,
            "rows": [r.model_dump(mode="json") for r in profile.telemetry],
        }
    return run.replace(telemetry=tel)
