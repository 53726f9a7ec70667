"""The controller's capacity: the default max_parallel is a whole round, up to what the
open-file limit and the memory allow, and the plan says when a round does not fit."""

from __future__ import annotations

import resource
from pathlib import Path

import pytest

from aibench.executors import capacity as cap
from aibench.inventory import Inventory, Limits, Node


@pytest.mark.parametrize(
    ("hosts", "files", "memory", "expected", "bound"),
    [
        (1024, 1 << 20, 64 << 30, 131072, "memory"),
        (1024, 20000, 64 << 30, (20000 - 64 - 1024) // 4, "open files"),
        (1024, 1024, 64 << 30, 1, "open files"),  # the usual soft limit holds no round
        (16, 1 << 20, 1 << 20, 2, "memory"),
    ],
)
def test_capacity_is_the_smaller_of_files_and_memory(
    hosts: int, files: int, memory: int, expected: int, bound: str
) -> None:
    c = cap.capacity(hosts, open_files=files, memory=memory)
    assert (c.invocations, c.bound) == (expected, bound)
    assert bound in c.describe()


def test_raise_open_files_lifts_the_soft_limit_to_the_hard_one() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        if hard != resource.RLIM_INFINITY and hard > 256:
            resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
        before, after = cap.raise_open_files()
        now = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        assert now == hard
        assert after == cap._finite(hard)
        assert before <= after
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _plan(tmp_path: Path, n: int, limits: Limits) -> object:
    from aibench.plan import build_plan
    from aibench.suite import load_suite

    path = tmp_path / "pairs.yaml"
    path.write_text(
        "schema_version: 1\nname: pairs\nsteps:\n"
        "  - {name: net, tool: iperf3, placement: pairs, options: {duration: 5}}\n"
    )
    nodes = tuple(Node(f"n{i:04d}", executor="ssh") for i in range(n))
    return build_plan(load_suite(str(path)), Inventory("scale", nodes, limits=limits))


def test_by_default_a_round_runs_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from aibench.plan import plan_lines

    monkeypatch.setattr(cap, "open_files_limits", lambda: (1024, 1 << 20))
    monkeypatch.setattr(cap, "available_memory", lambda: 16 << 30)
    plan = _plan(tmp_path, 400, Limits())
    text = list(plan_lines(plan))  # type: ignore[arg-type]
    # 200 pairs at once: one wave of 6 s, 399 times
    assert text[0].endswith("79800 runs in 399 rounds, about 40 min"), text[0]
    assert "  each round: 200 run(s) at once" in text
    assert not any(line.startswith("warning:") for line in text)


def test_the_plan_says_when_the_controller_cannot_hold_a_round(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aibench.plan import plan_lines

    monkeypatch.setattr(cap, "open_files_limits", lambda: (1024, 1024))
    monkeypatch.setattr(cap, "available_memory", lambda: 16 << 30)
    plan = _plan(tmp_path, 400, Limits())
    text = list(plan_lines(plan))  # type: ignore[arg-type]
    warning = next(line for line in text if line.startswith("warning:"))
    assert "cannot hold a round of 200 runs" in warning
    assert "140 invocation(s) at once, set by open files (1024 open files" in warning
    assert "  each round: 200 run(s), 140 at once" in text
    # an inventory's own max_parallel is kept, and no capacity is spoken of
    plan = _plan(tmp_path, 400, Limits(max_parallel=8))
    lines = [x for x in plan_lines(plan) if x.startswith("warning:")]  # type: ignore[arg-type]
    assert not [x for x in lines if "controller" in x]
