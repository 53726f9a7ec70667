"""Secrets are scrubbed by value: the value of a variable whose name looks secret, or that
the suite marks secret (``settings.secret_env``), is replaced by ``***`` in the raw output
files, the step's reason and the process records, whatever the tool printed."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import Field

from aibench.config import Strict
from aibench.executors.local import LocalExecutor
from aibench.inventory import Inventory, Node
from aibench.model import Measurement, Note
from aibench.orchestrator import Execution, execute
from aibench.plan import build_plan
from aibench.runners import RUNNERS
from aibench.runners.base import Invocation, Output, ProcessSpec, Slot, label_for
from aibench.suite import Settings, Step, StepModel, Suite

TOKEN, MARKED = "tok-3f9a1c77e2", "hunter2-marked"
PRINTS = (
    "import os, sys; print('token', os.environ['HF_TOKEN']); print('db', os.environ['DB_DSN']);"
    " print('failed with', os.environ['DB_DSN'], file=sys.stderr); sys.exit(3)"
)


class EnvOptions(Strict):
    env: dict[str, str] = Field(default_factory=dict)


class EnvRunner:
    """Test-only runner: a Python process that prints its secret variables."""

    name: ClassVar[str] = "test-env"
    tool: ClassVar[str] = "test-env"
    default_placement: ClassVar[str] = "each"
    Options: ClassVar[type[Strict]] = EnvOptions

    def invocations(self, step: str, o: Any, group: Sequence[Node], slot: Slot) -> list[Invocation]:
        names = tuple(n.name for n in group)
        client = ProcessSpec(group[0].name, (sys.executable, "-c", PRINTS), env=dict(o.env))
        slots = {"repeat": slot.repeat, "round": slot.round}
        label = label_for(names)
        return [Invocation(step, self.tool, names, label, parser="-", client=client, **slots)]

    def version_argv(self) -> tuple[str, ...]:
        return (sys.executable, "--version")

    def parse_version(self, text: str) -> str:
        return text.split()[-1]

    def collect(self, inv: Invocation, out: Output) -> list[Measurement | Note]:
        return []


@pytest.fixture
def env_runner() -> Iterator[None]:
    RUNNERS.load()
    RUNNERS._items["test-env"] = EnvRunner()
    try:
        yield
    finally:
        del RUNNERS._items["test-env"]


def test_secret_values_are_scrubbed_from_raw_outputs(tmp_path: Path, env_runner: None) -> None:
    opts = EnvOptions(env={"HF_TOKEN": TOKEN, "DB_DSN": MARKED})
    step = Step(model=StepModel(name="s", tool="test-env", options=opts.model_dump()), options=opts)
    suite = Suite(
        name="t", description="", source="-", sha256="", spec=None,
        settings=Settings(secret_env=["DB_DSN"]), steps=(step,), raw={},
    )  # fmt: skip
    inv = Inventory(name="t", nodes=(Node(name="n1"),))
    loc = LocalExecutor(kill_grace=0.5)
    ex = Execution(run_dir=tmp_path, plan=build_plan(suite, inv), executor_for=lambda n: loc)
    asyncio.run(execute(ex))
    (res,) = ex.results()
    out = (tmp_path / res.stdout_path).read_text()
    err = (tmp_path / res.stderr_path).read_text()
    assert "token ***" in out
    assert "db ***" in out
    assert "failed with ***" in err
    everything = "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    assert TOKEN not in everything
    assert MARKED not in everything
    assert all(MARKED not in v for p in res.processes for v in p.env.values())


def test_the_plan_shows_marked_secrets_as_stars(env_runner: None) -> None:
    from aibench.plan import plan_lines

    opts = EnvOptions(env={"DB_DSN": MARKED, "PLAIN": "visible"})
    step = Step(model=StepModel(name="s", tool="test-env", options=opts.model_dump()), options=opts)
    suite = Suite(
        name="t", description="", source="-", sha256="", spec=None,
        settings=Settings(secret_env=["DB_DSN"]), steps=(step,), raw={},
    )  # fmt: skip
    text = "\n".join(plan_lines(build_plan(suite, Inventory(name="t", nodes=(Node("n1"),)))))
    assert "DB_DSN=***" in text
    assert "PLAIN=visible" in text
    assert MARKED not in text
