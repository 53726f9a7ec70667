"""Report sections of a run whose steps stay on disk (a run of millions of invocations,
reported at its end from the journal, or a run.json over ``store.LAZY_BYTES``): each
section goes over its tool's steps again for each thing it draws and keeps what it shows,
not the measurements; the report is the report of the run held."""

from __future__ import annotations

import gc
import multiprocessing
import re
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from aibench.model import Lazy, Measurement, StepResult, StepSource
from aibench.reports import html, plots
from tests.reports.gen import make_run

PLOT_IDS = re.compile(r"(?<=[\"#])p\d+-")  # each plot's ids: a counter of the process


class Dicts(StepSource):
    """Steps kept as their dicts: each pass makes new StepResults, as a source on disk
    does."""

    def __init__(self, steps: Sequence[StepResult]) -> None:
        self.dicts = [s.to_dict() for s in steps]

    def __len__(self) -> int:
        return len(self.dicts)

    def _pick(self, indices: Iterable[int]) -> Iterator[StepResult]:
        return (StepResult.from_dict(self.dicts[i]) for i in indices)


def _live_measurements() -> int:
    gc.collect()  # what is alive, not garbage a collection has not reached yet
    return sum(1 for o in gc.get_objects() if isinstance(o, Measurement))


def test_a_lazy_sequence_is_made_again_on_each_pass() -> None:
    made: list[int] = []

    def make() -> Iterator[int]:
        made.append(1)
        return iter(range(10, 15))

    seq = Lazy(make)
    assert [x for x in seq] == [10, 11, 12, 13, 14]  # a pass that asks no length
    assert (len(seq), len(seq)) == (5, 5)
    assert len(made) == 1  # counted by the pass that went to the end
    assert list(Lazy(make)) == [10, 11, 12, 13, 14]
    assert len(made) == 3  # list() asks the length first: a pass to count it
    assert (seq[0], seq[3], seq[-1], seq[1:3], seq[-2:]) == (10, 13, 14, [11, 12], [13, 14])
    with pytest.raises(IndexError):
        seq[5]
    with pytest.raises(IndexError):
        seq[-6]
    assert len(Lazy(make, 99)) == 99  # a length given is not counted
    assert not Lazy(lambda: iter(()))


def _draw_held_and_on_disk(tmp: Path) -> tuple[dict[str, list[int]], int, str, str]:
    """Render a run held and the same run read from disk, counting the measurements alive
    each time a pairwise matrix is drawn: the counts over those alive before, the pairwise
    measurements of the run, and the two pages. Run in a process of its own (below), it
    counts only its own objects, and ``gc.get_objects()`` walks a small heap."""
    seen: dict[str, list[int]] = {"held": [], "on disk": []}
    kind = "held"
    real = plots.heatmap

    def probe(labels: Sequence[str], matrix: Any, **kw: Any) -> str:
        seen[kind].append(_live_measurements() - before)
        return real(labels, matrix, **kw)

    plots.heatmap = probe  # this process ends with the call
    before = _live_measurements()  # those alive before the run is made
    run = make_run(48, dense=True).run
    pairwise = sum(len(s.measurements) for s in run.steps if s.tool in ("iperf3", "perftest"))
    on_disk = run.replace(steps=Dicts(run.steps))
    held_page = PLOT_IDS.sub("p-", html.render(run, tmp))
    del run  # the measurements left are those each pass makes
    kind = "on disk"
    before = _live_measurements()
    disk_page = PLOT_IDS.sub("p-", html.render(on_disk, tmp))
    return seen, pairwise, held_page, disk_page


def test_sections_of_steps_on_disk_keep_no_measurements(tmp_path: Path) -> None:
    """While a pairwise matrix is drawn, the measurements alive are those of the run held
    (thousands), and of the run read from disk a handful: the sections went over the
    steps and kept per node, per cell and the slowest links, not each pair."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        seen, pairwise, held_page, disk_page = pool.submit(
            _draw_held_and_on_disk, tmp_path
        ).result()
    assert disk_page == held_page
    assert len(seen["held"]) == len(seen["on disk"]) >= 3  # iperf3, perftest, NCCL
    assert min(seen["held"]) > pairwise > 500
    assert max(seen["on disk"]) < 100, seen
