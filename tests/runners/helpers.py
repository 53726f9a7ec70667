"""Shared helpers of the runner tests: nodes, one-step suites, running a plan for real."""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aibench.config import validate
from aibench.executors.local import LocalExecutor
from aibench.inventory import Inventory, Node, SlurmSettings, SSHSettings
from aibench.model import StepResult
from aibench.orchestrator import Execution, execute
from aibench.plan import build_plan
from aibench.runners import RUNNERS
from aibench.runners.base import Invocation, Slot
from aibench.suite import Settings, Step, StepModel, Suite

REPO = Path(__file__).resolve().parents[2]
PROGRAMS = REPO / "tests" / "programs"
FIXTURES = REPO / "tests" / "fixtures"
# The MLPerf Training command of the tests: a small real training loop logging MLLOG, with
# the runner's {log_dir} and {seed} placeholders.
TRAIN_LOGREG = [
    sys.executable,
    str(PROGRAMS / "mlperf_train_logreg.py"),
    "--log-file",
    "{log_dir}/result.txt",
    "--seed",
    "{seed}",
]
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def node(
    name: str,
    address: str = "",
    *,
    gpus: int | None = None,
    hcas: list[dict[str, Any]] | None = None,
    executor: str = "local",
    ssh_config: str | None = None,
    partition: str | None = None,
    **facts: Any,
) -> Node:
    f: dict[str, Any] = dict(facts)
    if gpus is not None:
        f["gpus"] = {"model": "H100-SXM5-80GB", "count": gpus}
    if hcas is not None:
        f["hcas"] = hcas
    return Node(
        name=name,
        address=address,
        executor=executor,
        facts=f,
        ssh=SSHSettings(config_file=ssh_config),
        slurm=SlurmSettings(partition=partition),
    )


def plan(
    tool: str,
    options: Mapping[str, Any],
    group: list[Node],
    slot: Slot | None = None,
    step: str = "s",
) -> list[Invocation]:
    runner = RUNNERS.get(tool)
    o = validate(runner.Options, dict(options), "suite.yaml", prefix="steps[0].options")
    return runner.invocations(step, o, group, slot or Slot())


def suite_of(
    tool: str,
    options: Mapping[str, Any],
    *,
    name: str = "s",
    workdir: Path | str = "/tmp/aibench-runner-tests",
    **step: Any,
) -> Suite:
    runner = RUNNERS.get(tool)
    model = StepModel(name=name, tool=tool, options=dict(options), **step)
    o = validate(runner.Options, dict(options), "suite.yaml", prefix="steps[0].options")
    return Suite(
        name="t",
        description="",
        source="(test)",
        sha256="",
        spec=None,
        settings=Settings(workdir=str(workdir), base_port=16400),
        steps=(Step(model=model, options=o),),
        raw={},
    )


def run(tmp_path: Path, suite: Suite, nodes: list[Node]) -> list[StepResult]:
    inv = Inventory(name="t", nodes=tuple(nodes))
    loc = LocalExecutor()
    ex = Execution(run_dir=tmp_path, plan=build_plan(suite, inv), executor_for=lambda n: loc)
    asyncio.run(execute(ex))
    return ex.results()


def wrapper(bin_dir: Path, name: str, target: Path, *args: str) -> Path:
    """An executable ``bin_dir/name`` that execs ``python target args... "$@"``."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    quoted = " ".join(f"'{a}'" for a in (sys.executable, str(target), *args))
    p = bin_dir / name
    p.write_text(f'#!/bin/sh\nexec {quoted} "$@"\n')
    p.chmod(p.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return p


def is_root() -> bool:
    return os.geteuid() == 0
