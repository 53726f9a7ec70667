"""The orchestrator with real processes: faults get a status and a reason, the run goes on."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import sys
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import pytest

from aibench.config import Strict
from aibench.errors import ToolFailure, UserError
from aibench.executors.base import ReadyCheck
from aibench.executors.local import LocalExecutor
from aibench.inventory import Inventory, Node
from aibench.model import Measurement, Note, StepStatus
from aibench.orchestrator import JOURNAL, Execution, execute
from aibench.plan import build_plan
from aibench.runners import RUNNERS
from aibench.runners.base import Invocation, Output, ProcessSpec, Slot, label_for
from aibench.suite import Settings, Step, StepModel, Suite


class ScriptOptions(Strict):
    script: str
    server: str | None = None
    timeout: float = 20.0
    network: bool = False  # counts against max_network_parallel


class ScriptRunner:
    """Test-only runner: runs a Python snippet; prints 'metric value' lines."""

    name: ClassVar[str] = "test-script"
    tool: ClassVar[str] = "test-script"
    default_placement: ClassVar[str] = "each"
    Options: ClassVar[type[Strict]] = ScriptOptions

    def invocations(self, step: str, o: Any, group: Sequence[Node], slot: Slot) -> list[Invocation]:
        servers: tuple[ProcessSpec, ...] = ()
        if o.server:
            servers = (
                ProcessSpec(
                    group[-1].name,
                    (sys.executable, "-c", o.server),
                    role="server",
                    ready=ReadyCheck(pattern="READY", timeout=1.0),
                ),
            )
        names = tuple(n.name for n in group)
        return [
            Invocation(
                step=step,
                tool=self.tool,
                nodes=names,
                label=label_for(names),
                repeat=slot.repeat,
                round=slot.round,
                parser="-",
                network=o.network,
                servers=servers,
                client=ProcessSpec(
                    group[0].name, (sys.executable, "-c", o.script), timeout=o.timeout
                ),
            )
        ]

    def version_argv(self) -> tuple[str, ...]:
        return (sys.executable, "--version")

    def parse_version(self, text: str) -> str:
        return text.split()[-1]

    def collect(self, inv: Invocation, out: Output) -> list[Measurement | Note]:
        recs: list[Measurement | Note] = []
        for n, line in enumerate(out.stdout.splitlines(), 1):
            if line.startswith("FAIL"):
                raise ToolFailure(self.tool, line, line=n, partial=list(recs))
            if line.startswith("WARN"):
                recs.append(Note(self.tool, line, line=n))
                continue
            k, v = line.split()
            recs.append(Measurement(self.tool, k, float(v), "count"))
        return recs


@pytest.fixture
def script_runner() -> Iterator[ScriptRunner]:
    r = ScriptRunner()
    RUNNERS.load()
    RUNNERS._items[r.name] = r
    try:
        yield r
    finally:
        del RUNNERS._items[r.name]


def suite_of(*steps: tuple[str, dict[str, Any]], repeats: int = 1) -> Suite:
    out = []
    for name, opts in steps:
        m = StepModel(name=name, tool="test-script", repeats=repeats, options=opts)
        out.append(Step(model=m, options=ScriptOptions(**opts)))
    return Suite(
        name="t",
        description="",
        source="-",
        sha256="",
        spec=None,
        settings=Settings(),
        steps=tuple(out),
        raw={},
    )


def local_nodes(n: int) -> Inventory:
    return Inventory(
        name="t", nodes=tuple(Node(name=f"n{i}", address="127.0.0.1") for i in range(1, n + 1))
    )


def run_plan(tmp_path: Path, suite: Suite, inv: Inventory) -> Execution:
    loc = LocalExecutor(kill_grace=0.5)
    ex = Execution(run_dir=tmp_path, plan=build_plan(suite, inv), executor_for=lambda n: loc)
    asyncio.run(execute(ex))
    return ex


def test_each_fault_gets_its_status_and_the_run_goes_on(
    tmp_path: Path, script_runner: ScriptRunner
) -> None:
    suite = suite_of(
        ("good", {"script": "print('x 1')"}),
        (
            "hangs",
            {"script": "import time; print('x 2', flush=True); time.sleep(60)", "timeout": 1.0},
        ),
        ("crashes", {"script": "import sys; print('boom', file=sys.stderr); sys.exit(7)"}),
        ("reports-failure", {"script": "print('x 3'); print('FAIL: link down')"}),
        ("no-server", {"script": "print('x 4')", "server": "import time; time.sleep(30)"}),
        ("after", {"script": "print('y 5')"}),
    )
    ex = run_plan(tmp_path, suite, local_nodes(1))
    by_step = {r.step: r for r in ex.results()}
    assert by_step["good"].status is StepStatus.OK
    assert by_step["hangs"].status is StepStatus.TIMEOUT
    assert "timed out after 1 s" in by_step["hangs"].reason
    assert by_step["crashes"].status is StepStatus.FAILED
    assert by_step["reports-failure"].status is StepStatus.FAILED
    assert "FAIL: link down" in by_step["reports-failure"].reason
    assert [m.value for m in by_step["reports-failure"].measurements] == [3.0], "partial kept"
    assert by_step["no-server"].status is StepStatus.FAILED
    assert "not ready" in by_step["no-server"].reason
    assert by_step["after"].status is StepStatus.OK, "the run went on after the faults"
    # every result is in the journal as it finished
    lines = (tmp_path / JOURNAL).read_text().splitlines()
    assert {json.loads(ln)["step"] for ln in lines} == set(by_step)


def test_measurements_get_provenance(tmp_path: Path, script_runner: ScriptRunner) -> None:
    ex = run_plan(tmp_path, suite_of(("s", {"script": "print('x 1')"}), repeats=2), local_nodes(3))
    ms = [m for r in ex.results() for m in r.measurements]
    assert sorted((m.nodes, m.repeat) for m in ms) == sorted(
        ((f"n{i}",), r) for i in (1, 2, 3) for r in (0, 1)
    )
    assert all(m.step == "s" for m in ms)
    assert all(r.tool_version for r in ex.results())


def test_pairs_run_in_rounds_without_sharing_a_node(
    tmp_path: Path, script_runner: ScriptRunner
) -> None:
    suite = suite_of(("p", {"script": "print('x 1')"}))
    step = suite.steps[0]
    from dataclasses import replace

    suite = replace(
        suite, steps=(replace(step, model=step.model.model_copy(update={"placement": "pairs"})),)
    )
    plan = build_plan(suite, local_nodes(4))
    assert len(plan.rounds) == 3
    for rnd in plan.rounds:
        nodes = [n for inv in rnd.invocations for n in inv.nodes]
        assert len(nodes) == len(set(nodes))
    pairs = {frozenset(inv.nodes) for inv in plan.invocations}
    assert len(pairs) == 6


def test_resume_runs_only_what_is_missing(tmp_path: Path, script_runner: ScriptRunner) -> None:
    suite = suite_of(("a", {"script": "print('x 1')"}), ("b", {"script": "print('x 2')"}))
    inv = local_nodes(1)
    first = run_plan(tmp_path, suite, inv)
    journal = (tmp_path / JOURNAL).read_text().splitlines()
    # pretend the run was interrupted after step a, its last line cut in half
    (tmp_path / JOURNAL).write_text(journal[0] + "\n" + journal[1][:20])
    loc = LocalExecutor()
    ex = Execution(run_dir=tmp_path, plan=build_plan(suite, inv), executor_for=lambda n: loc)
    ex.load_journal()
    assert set(ex.done) == {"a/n1/r0"}
    asyncio.run(execute(ex))
    assert [r.status for r in ex.results()] == [StepStatus.OK, StepStatus.OK]
    assert ex.results()[0].started == first.results()[0].started, "step a was not run again"


def test_a_second_resume_after_a_cut_line(tmp_path: Path, script_runner: ScriptRunner) -> None:
    """The line a kill cut is dropped when the journal is read, so the lines the resume
    appends do not glue onto it, and the journal reads again after that resume."""
    suite = suite_of(("a", {"script": "print('x 1')"}), ("b", {"script": "print('x 2')"}))
    inv = local_nodes(1)
    run_plan(tmp_path, suite, inv)
    journal = (tmp_path / JOURNAL).read_text().splitlines()
    (tmp_path / JOURNAL).write_text(journal[0] + "\n" + journal[1][:20])
    loc = LocalExecutor()
    ex = Execution(run_dir=tmp_path, plan=build_plan(suite, inv), executor_for=lambda n: loc)
    ex.load_journal()
    asyncio.run(execute(ex))
    again = Execution(run_dir=tmp_path, plan=build_plan(suite, inv), executor_for=lambda n: loc)
    again.load_journal()
    assert set(again.done) == {"a/n1/r0", "b/n1/r0"}


@pytest.mark.parametrize(
    "bad",
    ['{"step_id": "a/n1/r0", "status": "finished"}', '{"status": "ok"}', "[1, 2]", "{not json"],
)
def test_a_damaged_line_before_the_last_is_an_error_naming_it(
    tmp_path: Path, script_runner: ScriptRunner, bad: str
) -> None:
    """Resume reads only step ids and statuses, and still refuses a journal damaged before
    its last line (an unknown status, no step id, not an object, not JSON)."""
    suite = suite_of(("a", {"script": "print('x 1')"}), ("b", {"script": "print('x 2')"}))
    inv = local_nodes(1)
    run_plan(tmp_path, suite, inv)
    journal = (tmp_path / JOURNAL).read_text().splitlines()
    (tmp_path / JOURNAL).write_text("\n".join([journal[0], bad, journal[1]]) + "\n")
    loc = LocalExecutor()
    ex = Execution(run_dir=tmp_path, plan=build_plan(suite, inv), executor_for=lambda n: loc)
    with pytest.raises(UserError, match=r"steps.jsonl: line 2 is damaged"):
        ex.load_journal()


def test_resume_of_all_pairs_made_round_by_round(
    tmp_path: Path, script_runner: ScriptRunner
) -> None:
    """The rounds of all pairs are made when they run, on resume too: what the journal
    holds is not run again, the rest is, in the same rounds with the same step ids."""
    suite = suite_of(("p", {"script": "print('x 1')"}), repeats=2)
    step = suite.steps[0]
    suite = replace(
        suite, steps=(replace(step, model=step.model.model_copy(update={"placement": "pairs"})),)
    )
    inv = local_nodes(5)  # 10 pairs in 5 rounds, one node sitting out each; 2 repeats
    first = run_plan(tmp_path, suite, inv)
    assert len(first.results()) == 20
    journal = (tmp_path / JOURNAL).read_text().splitlines()
    (tmp_path / JOURNAL).write_text("\n".join(journal[:7]) + "\n")
    kept = {json.loads(line)["step_id"]: json.loads(line)["started"] for line in journal[:7]}
    loc = LocalExecutor()
    ex = Execution(run_dir=tmp_path, plan=build_plan(suite, inv), executor_for=lambda n: loc)
    ex.load_journal()
    asyncio.run(execute(ex))
    results = ex.results()
    assert [r.step_id for r in results] == [r.step_id for r in first.results()]
    assert all(r.status is StepStatus.OK for r in results)
    assert {r.step_id: r.started for r in results if r.step_id in kept} == kept
    assert len((tmp_path / JOURNAL).read_text().splitlines()) == 20  # 7 kept + 13 run


def test_unreachable_node_is_named(tmp_path: Path, script_runner: ScriptRunner) -> None:
    class Picky(LocalExecutor):
        async def check(self, node: Node) -> str | None:
            return "connection refused" if node.name == "n2" else None

    ex = Execution(
        run_dir=tmp_path,
        plan=build_plan(suite_of(("s", {"script": "print('x 1')"})), local_nodes(2)),
        executor_for=lambda n: Picky(),
    )
    asyncio.run(execute(ex))
    st = {r.nodes: r for r in ex.results()}
    assert st[("n1",)].status is StepStatus.OK
    assert st[("n2",)].status is StepStatus.UNREACHABLE
    assert "n2: unreachable: connection refused" in st[("n2",)].reason


def test_secrets_in_env_are_not_recorded(tmp_path: Path, script_runner: ScriptRunner) -> None:
    from aibench.orchestrator import _record_of
    from aibench.secret import Secrets

    env = {"HF_TOKEN": "hunter2", "NCCL_DEBUG": "INFO", "DSN": "pg://u:pw1234@db"}
    rec = _record_of(
        ProcessSpec("n1", ("x", "--dsn=pg://u:pw1234@db"), env=env),
        Secrets({"DSN"}).with_values([env]),
    )
    assert rec.env == {"HF_TOKEN": "***", "NCCL_DEBUG": "INFO", "DSN": "***"}
    assert rec.argv == ("x", "--dsn=***")


# --------------------------------------------------------------------------- versions


def perftest_suite(options: dict[str, Any]) -> Suite:
    runner = RUNNERS.get("perftest")
    m = StepModel(name="rdma", tool="perftest", placement="pairs", options=options)
    return Suite(
        name="t", description="", source="-", sha256="", spec=None, settings=Settings(),
        steps=(Step(model=m, options=runner.Options(**options)),), raw={},
    )  # fmt: skip


def capture(tmp_path: Path, suite: Suite, inv: Inventory) -> Execution:
    from aibench.orchestrator import capture_versions

    loc = LocalExecutor()
    ex = Execution(run_dir=tmp_path, plan=build_plan(suite, inv), executor_for=lambda n: loc)
    asyncio.run(capture_versions(ex, tmp_path / "raw"))
    return ex


def test_perftest_version_comes_from_the_binary_the_step_runs(tmp_path: Path) -> None:
    """bin_dir and the test (ib_read_lat) are asked, not ``ib_write_bw`` on the PATH.

    The stand-in answers ``--version`` as perftest 6.06 does on Debian 12: ``Version: 6.06``
    and exit code 1 (a version read only from exit code 0 was always "unknown")."""
    bin_dir = tmp_path / "perftest-bin"
    bin_dir.mkdir()
    tool = bin_dir / "ib_read_lat"
    tool.write_text(
        '#!/bin/sh\n[ "$1" = --version ] && { echo "Version: 6.06"; exit 1; }\nexit 3\n'
    )
    tool.chmod(0o755)
    suite = perftest_suite({"test": "ib_read_lat", "bin_dir": str(bin_dir)})
    ex = capture(tmp_path, suite, local_nodes(2))
    assert {p.argv for p in ex.versions} == {(str(tool), "--version")}
    assert {p.host for p in ex.versions} == {"n1", "n2"}
    assert ex.tool_versions == {"n1": {"perftest": "6.06"}, "n2": {"perftest": "6.06"}}
    assert (tmp_path / "raw" / "versions" / "n1.perftest.out").read_text() == "Version: 6.06\n"


def test_a_version_command_that_fails_says_why(tmp_path: Path) -> None:
    bin_dir = tmp_path / "perftest-bin"
    suite = perftest_suite({"test": "ib_write_bw", "bin_dir": str(bin_dir)})  # nothing there
    ex = capture(tmp_path, suite, local_nodes(1))
    got = ex.tool_versions["n1"]["perftest"]
    assert got.startswith("absent ("), got
    assert f"{bin_dir}/ib_write_bw" in got, got


@pytest.mark.skipif(shutil.which("ib_write_bw") is None, reason="needs perftest")
def test_perftest_on_the_path_gives_its_version(tmp_path: Path) -> None:
    ex = capture(tmp_path, perftest_suite({"test": "ib_send_bw"}), local_nodes(1))
    (probe,) = ex.versions
    assert probe.argv == ("ib_send_bw", "--version")
    assert re.fullmatch(r"\d+\.\d+(\.\d+)?(-\S+)?", ex.tool_versions["n1"]["perftest"])


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="needs openmpi-bin")
def test_the_launchers_version_is_captured_with_the_steps_path_and_environment(
    tmp_path: Path,
) -> None:
    runner = RUNNERS.get("nccl-tests")
    opts = {"launcher": "mpirun", "ranks_per_node": 2, "env": {"OMPI_MCA_x": "1"}}
    m = StepModel(name="ar", tool="nccl-tests", options=opts)
    suite = Suite(
        name="t", description="", source="-", sha256="", spec=None, settings=Settings(),
        steps=(Step(model=m, options=runner.Options(**opts)),), raw={},
    )  # fmt: skip
    ex = capture(tmp_path, suite, local_nodes(1))
    (probe,) = ex.versions
    assert probe.launcher
    assert probe.argv == ("mpirun", "--version")
    assert dict(probe.env) == {"OMPI_MCA_x": "1"}
    version, why = ex.versions[probe]
    assert version.startswith("Open MPI "), why
    assert ex.tool_versions["n1"] == {"mpirun": version}


# --------------------------------------------------------------------------- concurrency

# Each invocation appends (start, end) of its own lifetime to a file: the intervals lie
# inside the window in which the orchestrator counts the invocation as running.
# 1 s: the six Python processes of a round start up to half a second or more apart on a
# loaded machine (at 0.4 s, only 3 of 6 uncapped ones once overlapped)
SPAN = (
    "import time; t0 = time.time(); time.sleep(1.0); "
    "open({log!r}, 'a').write(f'{{t0}} {{time.time()}}\\n'); print('x 1')"
)


def most_at_once(log: Path) -> int:
    events = []
    for line in log.read_text().splitlines():
        t0, t1 = map(float, line.split())
        events += [(t0, 1), (t1, -1)]
    now = peak = 0
    for _, d in sorted(events, key=lambda e: (e[0], e[1])):  # an end before a start at a tie
        now += d
        peak = max(peak, now)
    return peak


def limited(n: int, max_parallel: int = 64, max_network_parallel: int = 0) -> Inventory:
    from aibench.inventory import Limits

    inv = local_nodes(n)
    return Inventory(
        name=inv.name, nodes=inv.nodes, limits=Limits(max_parallel, max_network_parallel)
    )


@pytest.mark.parametrize(
    ("max_parallel", "max_network_parallel", "network", "expected"),
    [
        (64, 0, False, 6),  # no limit: the whole round at once (the test can tell)
        (2, 0, False, 2),  # max_parallel caps every invocation
        (3, 0, True, 3),
        (64, 2, True, 2),  # the fabric-load cap holds network tests to 2 ...
        (64, 2, False, 6),  # ... and leaves the others alone
        (1, 4, True, 1),  # the smaller of the two caps wins
    ],
)
def test_concurrency_limits_hold(
    tmp_path: Path,
    script_runner: ScriptRunner,
    max_parallel: int,
    max_network_parallel: int,
    network: bool,
    expected: int,
) -> None:
    log = tmp_path / "spans.txt"
    suite = suite_of(("s", {"script": SPAN.format(log=str(log)), "network": network}))
    plan = build_plan(suite, limited(6, max_parallel, max_network_parallel))
    assert [len(r.invocations) for r in plan.rounds] == [6]  # one round of 6 ...
    assert plan.at_once(plan.rounds[0]) == expected  # ... as aibench plan says it runs
    ex = run_plan(tmp_path, suite, limited(6, max_parallel, max_network_parallel))
    assert all(r.ok for r in ex.results()), [r.reason for r in ex.results()]
    assert len(log.read_text().splitlines()) == 6
    peak = most_at_once(log)
    if expected < 6:
        assert peak <= expected  # never more than the cap ...
        assert peak >= min(expected, 2)  # ... and still concurrent where the cap allows
    else:  # without a cap all six overlap (a busy machine may start one late)
        assert peak >= 4


def test_the_tools_warnings_are_notes_on_the_step(
    tmp_path: Path, script_runner: ScriptRunner
) -> None:
    suite = suite_of(
        ("warns", {"script": "print('x 1'); print('WARN: CPU frequency is not max')"}),
        ("warns-then-fails", {"script": "print('WARN: reduced size'); print('FAIL: cut')"}),
    )
    ex = run_plan(tmp_path, suite, local_nodes(1))
    by_step = {r.step: r for r in ex.results()}
    ok = by_step["warns"]
    assert ok.status is StepStatus.OK
    assert [m.value for m in ok.measurements] == [1.0]  # the note is no measurement
    assert [(n.text, n.line) for n in ok.notes] == [("WARN: CPU frequency is not max", 2)]
    failed = by_step["warns-then-fails"]
    assert failed.status is StepStatus.FAILED
    assert [n.text for n in failed.notes] == ["WARN: reduced size"]  # kept with the failure
    # and in the journal, as run.json will hold them
    stored = {
        json.loads(ln)["step"]: json.loads(ln)
        for ln in (tmp_path / JOURNAL).read_text().splitlines()
    }
    assert stored["warns"]["notes"] == [
        {
            "tool": "test-script",
            "text": "WARN: CPU frequency is not max",
            "kind": "warning",
            "line": 2,
        }
    ]


def test_results_are_read_back_from_the_journal_not_held(
    tmp_path: Path, script_runner: ScriptRunner
) -> None:
    """The execution holds no result while it runs (a run of millions keeps its memory
    flat): what it returns is what the journal holds, and a journal already in the folder
    is not this run's unless it resumes it."""
    suite = suite_of(("a", {"script": "print('x 1')"}), ("b", {"script": "print('x 2')"}))
    inv = local_nodes(1)
    (tmp_path / JOURNAL).write_text(
        json.dumps({"step_id": "a/n1/r0", "step": "a", "tool": "script", "status": "failed"}) + "\n"
    )
    ex = run_plan(tmp_path, suite, inv)
    assert (ex.done, ex.recorded, ex.finished) == (set(), 2, 2)
    assert [r.status for r in ex.results()] == [StepStatus.OK, StepStatus.OK]
    lines = (tmp_path / JOURNAL).read_text().splitlines()
    assert len(lines) == 3
    (tmp_path / JOURNAL).write_text("\n".join([lines[0], lines[2], lines[1]]) + "\n")
    # read back in plan order, the last line of a step id winning (a resume's rerun)
    again = Execution(run_dir=tmp_path, plan=ex.plan, executor_for=ex.executor_for)
    again.load_journal()
    assert again.done == {"a/n1/r0", "b/n1/r0"}
    got = again.results()
    assert [r.step_id for r in got] == ["a/n1/r0", "b/n1/r0"]
    assert [r.status for r in got] == [StepStatus.OK, StepStatus.OK]


def test_the_first_error_stops_the_others_and_none_is_left_unretrieved() -> None:
    """A full disk hits every writer: the first error is raised; the step still running
    is cancelled and awaited here, and its own error while it stops (its record hits the
    same full disk) is retrieved. With asyncio.gather that step was cancelled only at
    asyncio.run's shutdown, which printed 'unhandled exception during asyncio.run()
    shutdown' and a traceback under aibench's one-line error."""
    from aibench.orchestrator import together

    handled: list[dict[str, Any]] = []
    stopped: list[str] = []

    async def disk_full(k: int) -> None:
        await asyncio.sleep(0.01 * k)
        raise OSError(28, f"No space left on device ({k})")

    async def long_step() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            stopped.append("long")
            raise OSError(28, "No space left on device (its record)") from None

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _loop, ctx: handled.append(ctx))
        await together([disk_full(1), long_step(), disk_full(1), disk_full(2)])

    with pytest.raises(OSError, match=r"\(1\)"):
        asyncio.run(main())
    assert stopped == ["long"]
    assert handled == []


def test_cancelled_from_outside_every_coroutine_is_stopped() -> None:
    from aibench.orchestrator import together

    stopped: list[int] = []

    async def step(k: int) -> None:
        try:
            await asyncio.sleep(30)
        finally:
            stopped.append(k)

    async def main() -> None:
        task = asyncio.ensure_future(together(step(k) for k in range(3)))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert sorted(stopped) == [0, 1, 2]

    asyncio.run(main())


def test_the_results_log_holds_offsets_and_reads_the_journal_each_pass(
    tmp_path: Path, script_runner: ScriptRunner
) -> None:
    """``results_log`` keeps where each result is in the journal, in plan order: every
    pass reads the records again (equal results, new objects), an invocation the journal
    lacks is not_run, a line of an older journal without its plan index is found by its
    step id, and the last line of a step id wins."""
    from aibench.model import StepSource
    from aibench.orchestrator import PLAN_INDEX

    suite = suite_of(("p", {"script": "print('x 1')"}), repeats=2)
    step = suite.steps[0]
    suite = replace(
        suite, steps=(replace(step, model=step.model.model_copy(update={"placement": "pairs"})),)
    )
    ex = run_plan(tmp_path, suite, local_nodes(4))  # 6 pairs, 2 repeats
    log = ex.results_log()
    assert isinstance(log, StepSource)
    assert len(log) == 12
    ids = [inv.step_id for inv in ex.plan.iter_invocations()]
    first, second = list(log), list(log)
    assert [r.step_id for r in first] == ids
    assert first == second
    assert first[0] is not second[0]
    assert (log[3], log[-1], log[2:4]) == (first[3], first[-1], first[2:4])
    assert ex.results() == first
    assert log.kinds() == {("p", "test-script")}  # noted while the journal was read

    lines = [json.loads(x) for x in (tmp_path / JOURNAL).read_text().splitlines()]
    assert sorted(d[PLAN_INDEX] for d in lines) == list(range(12))
    by_index = {d[PLAN_INDEX]: d for d in lines}
    older = {k: v for k, v in by_index[1].items() if k != PLAN_INDEX}  # an older journal
    rerun = {**by_index[5], "status": "failed", "reason": "rerun"}  # a resume's last word
    kept = [by_index[i] for i in range(12) if i not in (1, 7)]  # 7: never finished
    (tmp_path / JOURNAL).write_text("".join(json.dumps(d) + "\n" for d in [*kept, older, rerun]))
    again = Execution(run_dir=tmp_path, plan=ex.plan, executor_for=ex.executor_for)
    again.load_journal()
    got = list(again.results_log())
    assert [r.step_id for r in got] == ids
    assert got[1] == first[1]
    assert (got[5].status, got[5].reason) == (StepStatus.FAILED, "rerun")
    assert (got[7].status, got[7].reason) == (StepStatus.NOT_RUN, "not run (interrupted)")
    assert again.results_log()[7] == got[7]
    assert again.results_log().kinds() == {("p", "test-script")}
    # some of them (a tool's, for a report section): the journal read once a pass, the
    # plan gone over for the invocations not run
    picked = again.results_log().subset(array("q", [0, 5, 7, 8, 11]))
    assert len(picked) == 5
    assert list(picked) == [got[i] for i in (0, 5, 7, 8, 11)]
    assert (picked[2], picked[-1]) == (got[7], got[11])


def test_a_run_judged_and_stored_from_the_journal_is_the_run_held(
    tmp_path: Path, script_runner: ScriptRunner
) -> None:
    """The Run made from the journal (steps read from disk each pass) gives the same
    run.json bytes and the same verdicts as the same Run with its steps held."""
    from aibench.judge import judge_run
    from aibench.model import Run
    from aibench.store import save_run
    from aibench.thresholds.spec import spec_from_bytes

    script = "import sys; print('x', sys.argv[-1] if len(sys.argv) > 1 else 1)"
    failing = "import sys; sys.exit(3)"
    suite = suite_of(("a", {"script": script}), ("b", {"script": failing}), repeats=2)
    ex = run_plan(tmp_path, suite, local_nodes(2))
    rows = [
        f"  - {{id: {step}-x, select: {{tool: test-script, metric: x, step: {step}}}, "
        "scope: node, unit: count, min: 2, require: every_node}"
        for step in ("a", "b")
    ]
    spec = spec_from_bytes(
        ("schema_version: 1\nname: t\nchecks:\n" + "\n".join(rows) + "\n").encode(), "t"
    )
    texts = []
    for steps in (ex.results_log(), tuple(ex.results())):
        run = Run(id="r", suite="t", spec="default", steps=steps)
        run = run.replace(verdicts=judge_run(run, spec, now=None).verdicts)
        out = tmp_path / f"held-{type(steps).__name__}"
        out.mkdir()
        texts.append((save_run(run, out).read_text(), run.verdicts))
    assert texts[0] == texts[1]
    outcomes = sorted((v.check, v.outcome.value) for v in texts[0][1])
    assert {("a-x", "FAIL"), ("b-x", "ERROR")} <= set(outcomes), outcomes
