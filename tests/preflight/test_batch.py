"""A node's fact commands in one process (``batch: true``): the same facts as one process
per command, each command recorded with its own argv, exit code, stdout and stderr.

On this machine for real, and with the test doubles of ``fakebin/`` (real nvidia-smi,
ibstat and dcgmi captures) for the GPU and HCA facts, through the orchestrator and the
local executor.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from aibench.executors.local import LocalExecutor
from aibench.inventory import local_inventory
from aibench.model import StepResult, StepStatus
from aibench.preflight_run import collect
from aibench.runners import RUNNERS
from aibench.runners.base import Slot
from aibench.runners.preflight import batch_argv, framed, unframe
from aibench.suite import load_suite

HERE = Path(__file__).resolve().parent


def _run(tmp_path: Path, batch: bool) -> list[StepResult]:
    suite = load_suite("preflight")
    step = suite.steps[0]
    opts = step.options.model_copy(update={"batch": batch})
    suite = type(suite)(**{**suite.__dict__, "steps": (type(step)(step.model, opts),)})
    ex = LocalExecutor()
    results, unreachable = collect(suite, local_inventory(), tmp_path, lambda n: ex)
    assert not unreachable
    return results


def _facts(results: list[StepResult]) -> set[tuple[str, str, str, str]]:
    # values that change between two runs a second apart are left out
    moving = {"uptime_s", "xid_count", "mem_available", "memory_available_gib"}
    return {
        (
            f.source,
            f.name,
            str(sorted(f.dims.items())),
            str(f.value if f.name not in moving else ""),
        )
        for r in results
        for f in r.facts
        if f.name not in moving and f.source not in ("meminfo", "proc")
    }


@pytest.mark.parametrize("fake", [False, True])
def test_a_batch_gives_the_facts_of_one_process_per_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake: bool
) -> None:
    if fake:
        monkeypatch.setenv("PATH", f"{HERE / 'fakebin'}{os.pathsep}{os.environ['PATH']}")
    alone = _run(tmp_path / "alone", batch=False)
    (batch,) = _run(tmp_path / "batch", batch=True)
    assert len(alone) > 10
    assert _facts([batch]) == _facts(alone)
    # each command: its argv and exit code among the step's processes, its output beside
    by_argv = {p.argv: p.exit_code for p in batch.processes}
    for r in alone:
        (proc,) = r.processes
        # a command not on the node: the local executor has no exit code, sh says 127
        want = 127 if proc.exit_code is None else proc.exit_code
        assert by_argv[proc.argv] == want, proc.argv
        kind = r.step_id.split("/")[1].rsplit(".", 1)[1]
        raw = tmp_path / "batch" / "raw" / "preflight"
        assert (raw / f"{r.nodes[0]}.{kind}.r0.stdout").is_file()
    if not fake:
        assert batch.status is StepStatus.OK, batch.reason


def test_a_failed_command_fails_the_batch_naming_it_and_keeps_every_fact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"{HERE / 'fakebin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_IBSTAT", "failed")
    (batch,) = _run(tmp_path, batch=True)
    assert batch.status is StepStatus.FAILED
    assert "hca: exit code 255" in batch.reason
    assert [f.value for f in batch.facts if f.name == "hca_count" and f.source == "ibstat"] == [8]
    assert any(f.source == "nvidia-smi" and f.name == "driver_version" for f in batch.facts)


def test_the_driver_passes_every_argument_verbatim_and_frames_each_command() -> None:
    cmds = [
        ("a", ("printf", "%s|%s", "x y; $(id) `id` 'q'", "no newline"), "p", 5.0),
        ("b", ("sh", "-c", "echo out; echo err >&2; exit 3"), "p", 5.0),
        ("c", ("no-such-command-here",), "p", 5.0),
        ("d", ("sleep", "5"), "p", 0.2),
    ]
    argv = batch_argv(cmds, "@@aibench-batch-test")
    assert [(c.kind, c.argv, c.timeout) for c in framed(argv)] == [
        (k, a, t) for k, a, _p, t in cmds
    ]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    got = unframe(p.stdout, p.stderr, "@@aibench-batch-test")
    assert got["a"] == ("x y; $(id) `id` 'q'|no newline", "", 0)
    assert got["b"] == ("out\n", "err\n", 3)
    assert got["c"][2] == 127
    assert got["d"][2] == 124  # coreutils timeout: did not finish


def test_one_batch_invocation_per_node() -> None:
    opts = load_suite("preflight").steps[0].options.model_copy(update={"batch": True})
    node = local_inventory().nodes[0]
    (inv,) = RUNNERS.get("preflight").invocations("preflight", opts, [node], Slot())
    assert inv.label == f"{node.name}.facts"
    assert inv.client.argv[:2] == ("sh", "-c")
    assert len(framed(inv.client.argv)) > 10
