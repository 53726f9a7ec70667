"""Progress of a long run on stderr: a live bar on a terminal, one line per result
otherwise (CI logs), nothing with ``quiet``."""

from __future__ import annotations

import sys
from typing import Any


class Reporter:
    """Progress on stderr: a live bar on a terminal, one line per result otherwise."""

    def __init__(self, total: int, quiet: bool = False) -> None:
        self.total = total
        self.quiet = quiet
        self.live = sys.stderr.isatty() and not quiet
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> Reporter:
        if self.live:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(stderr=True),
            )
            self._progress.start()
            self._task = self._progress.add_task("starting", total=self.total)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def __call__(self, what: str, res: Any, done: int, total: int) -> None:
        if self.quiet:
            return
        if res is None:
            if self._progress is not None:
                self._progress.update(self._task, description=what)
            else:
                print(f"aibench: {what}", file=sys.stderr, flush=True)
            return
        line = _result_line(res, done, total)
        if self._progress is not None:
            self._progress.update(self._task, completed=done)
            if not res.ok:
                self._progress.console.print(line, markup=False, highlight=False)
        else:
            print(line, file=sys.stderr, flush=True)


def _result_line(res: Any, done: int, total: int) -> str:
    width = len(str(total))
    head = f"[{done:>{width}}/{total}] {res.status.value:<11} {res.step_id} {res.duration_s:.1f}s"
    if not res.ok:
        return f"{head}  {res.reason}"
    return head
