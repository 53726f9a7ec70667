"""The cyclic garbage collector is off while a command starts and on for its work.

``aibench`` (the process) starts with the collector off: importing and validating make
tens of thousands of objects that live to the end. A run turns it on once its inputs are
loaded and its plan made, before any step runs, and the soak before its hours of stress.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from aibench import pipeline
from aibench.cli import main
from aibench.commands import startup_over

SUITE = """\
schema_version: 1
name: startup
steps:
  - name: read
    tool: fio
    options: {{rw: read, bs: 1M, size: 1M, runtime: null, directory: {work}}}
"""


class Stop(Exception):
    pass


@pytest.fixture
def collector_off() -> Iterator[None]:
    gc.disable()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.enable()


def test_startup_over_turns_the_collector_on_and_sets_start_up_aside(collector_off) -> None:
    startup_over()
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0  # what start-up made is no longer scanned
    frozen = gc.get_freeze_count()
    made_since = [[] for _ in range(1000)]  # what a second freeze would take in
    startup_over()  # again: nothing more to do
    # (a frozen object may be freed meanwhile, so the count may fall; it must not grow)
    assert gc.get_freeze_count() <= frozen, len(made_since)


def test_a_run_collects_garbage_while_its_steps_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, collector_off
) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE.format(work=tmp_path / "work"))
    seen: list[bool] = []

    def run_suite(*args: object, **kwargs: object) -> None:
        seen.append(gc.isenabled())
        raise Stop

    monkeypatch.setattr(pipeline, "run_suite", run_suite)
    with pytest.raises(Stop):
        main(["run", "--suite", str(suite), "--output-dir", str(tmp_path / "runs"), "--quiet"])
    assert seen == [True]


def test_a_command_that_fails_early_leaves_the_collector_on(tmp_path: Path, collector_off) -> None:
    assert main(["run", "--suite", str(tmp_path / "absent.yaml"), "--quiet"]) == 2
    assert gc.isenabled()
