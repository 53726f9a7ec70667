"""The pipeline of a run, one stage a function: load -> plan -> execute -> assemble ->
judge -> store -> report.

``aibench run`` is a thin command over :func:`run_suite`; a Python user calls the same::

    from aibench import pipeline
    inputs = pipeline.load_inputs("acceptance", inventory="cluster.yaml", spec="h100-ndr")
    result = pipeline.run_suite(inputs, output_dir=Path("runs"))
    print(result.run.outcome, result.exit_code, result.run_dir)

Each stage has one home: planning in :mod:`aibench.plan`, execution in
:mod:`aibench.orchestrator` (with :mod:`aibench.versions` and :mod:`aibench.interpret`),
judging in :mod:`aibench.judge`, storing in :mod:`aibench.store`, the reports in
:mod:`aibench.reports`. This module only passes what one stage made to the next.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from aibench.errors import EXIT_CANNOT_RUN, EXIT_INTERRUPTED, UserError
from aibench.instants import now_text as now_text  # pipeline.now_text stays importable
from aibench.model import Run, StepResult, StepStatus
from aibench.stopping import Stopper


@dataclass(frozen=True)
class Inputs:
    """The three validated input files of a run (and how the suite was narrowed)."""

    suite: Any  # aibench.suite.Suite
    inventory: Any  # aibench.inventory.Inventory
    spec: Any  # aibench.thresholds.Spec
    partial: bool = False  # only some of the suite's steps or tools were selected
    # (name, tool) of every step of the whole suite, before --steps or TOOL narrowed it
    whole_steps: tuple[tuple[str, str], ...] = ()
    # --nodes: the hostlist expression and how many nodes the whole inventory has
    nodes: str = ""
    whole_nodes: int = 0


def load_inputs(
    suite: str,
    *,
    inventory: str | None = None,
    spec: str | None = None,
    nodes: str | None = None,
    steps: str | None = None,
    tool: str | None = None,
) -> Inputs:
    """Load and validate everything before any node is touched (ConfigError/UserError)."""
    from aibench.inventory import local_inventory
    from aibench.suite import load_suite
    from aibench.thresholds import check_spec_names, load_spec

    whole = load_suite(suite)
    the_suite = select_steps(whole, tool=tool, steps=steps)
    if inventory:
        from aibench.inventory_file import load_inventory  # its models: only for a file

        the_inventory = load_inventory(Path(inventory))
    else:
        the_inventory = local_inventory()
    whole_nodes = len(the_inventory.nodes)
    if nodes:
        the_inventory = select_nodes(the_inventory, nodes)
    the_spec = load_spec(spec or the_suite.spec or "default")
    check_spec_names(the_spec, ((s.name, s.tool) for s in whole.steps))
    return Inputs(
        the_suite,
        the_inventory,
        the_spec,
        partial=bool(tool or steps),
        whole_steps=tuple((s.name, s.tool) for s in whole.steps),
        nodes=nodes or "",
        whole_nodes=whole_nodes,
    )


def select_steps(suite: Any, *, tool: str | None = None, steps: str | None = None) -> Any:
    """The suite narrowed to one tool's steps and/or named steps (a UserError names what
    the suite has when a name is not there)."""
    chosen = list(suite.steps)
    if tool:
        chosen = [s for s in chosen if s.tool == tool]
        if not chosen:
            tools = sorted({s.tool for s in suite.steps})
            raise UserError(f"suite {suite.name} has no {tool} step; its tools: {', '.join(tools)}")
    if steps:
        wanted = [w.strip() for w in steps.split(",") if w.strip()]
        names = {s.name for s in suite.steps}
        unknown = [w for w in wanted if w not in names]
        if unknown:
            raise UserError(
                f"suite {suite.name} has no step {', '.join(unknown)}; "
                f"its steps: {', '.join(sorted(names))}"
            )
        chosen = [s for s in chosen if s.name in wanted]
    return replace(suite, steps=tuple(chosen))


def select_nodes(inventory: Any, expr: str) -> Any:
    """The inventory narrowed to a hostlist expression (``gpu[01-04]``)."""
    from aibench import hostlist

    try:
        wanted = hostlist.expand(expr)
    except ValueError as exc:
        raise UserError(f"--nodes: {exc}") from None
    names = {n.name for n in inventory.nodes}
    unknown = [w for w in wanted if w not in names]
    if unknown:
        raise UserError(f"--nodes: not in the inventory: {', '.join(unknown[:10])}")
    keep = set(wanted)
    return replace(inventory, nodes=tuple(n for n in inventory.nodes if n.name in keep))


class Executors:
    """One executor per node, made on first use and reused (SSH connections are pooled)."""

    def __init__(self, inventory: Any) -> None:
        from aibench.executors.local import LocalExecutor

        self.inventory = inventory
        self.local = LocalExecutor()
        self._cache: dict[str, Any] = {}
        # the plan's estimate, for an executor that sizes what it asks for by it (the
        # time limit of a Slurm allocation)
        self.planned_seconds: float | None = None

    def __call__(self, node: Any) -> Any:
        if node.executor == "local":
            return self.local
        if node.name not in self._cache:
            try:
                from aibench.executors.select import for_node
            except ImportError:
                raise UserError(
                    f"node {node.name}: executor {node.executor!r} is not available"
                ) from None
            made: Any = for_node(node, self.inventory)
            if getattr(made, "planned_seconds", 0) is None:
                made.planned_seconds = self.planned_seconds
            self._cache[node.name] = made
        return self._cache[node.name]

    def skipped(self) -> dict[str, str]:
        """Nodes an executor stopped trying for the rest of the run (the SSH breaker),
        with the reason."""
        out: dict[str, str] = {}
        for e in {id(e): e for e in self._cache.values()}.values():
            found = getattr(e, "skipped", None)
            if found is not None:
                out.update(found())
        return out

    async def close(self) -> None:
        seen = {id(e): e for e in [self.local, *self._cache.values()]}
        for e in seen.values():
            await e.close()


Progress = Callable[[str, StepResult | None, int, int], None]


@dataclass
class Executed:
    """What the execute stage left: every planned invocation's result and the facts
    gathered beside them."""

    # in plan order; the journal's (read from it each time they are gone over) in a run
    results: Sequence[StepResult]
    environment: dict[str, Any] = field(default_factory=dict)
    tool_versions: dict[str, dict[str, str]] = field(default_factory=dict)
    unreachable: dict[str, str] = field(default_factory=dict)
    interrupted: bool = False
    skipped: dict[str, str] = field(default_factory=dict)  # given up on mid-run


def execute(
    plan: Any,
    run_dir: Path,
    *,
    progress: Progress | None = None,
    resume: bool = False,
    telemetry: float | None = None,
    environment_facts: bool = True,
    executor_for: Any = None,
    stop: Stopper | None = None,
) -> Executed:
    """Run the plan (only what the journal lacks, with ``resume``); a Ctrl-C keeps what
    finished and marks the result interrupted. With ``telemetry`` (seconds), every node is
    sampled beside the steps (aibench.telemetry); a sampler that fails never fails a step.
    ``environment_facts``: collect the facts recorded with every run after the steps
    (the preflight, whose steps are those facts, does without). ``executor_for``: the
    executors to use (default: one per node, as the inventory says). ``stop``: a signal
    it receives cancels the steps, and the result is interrupted (:mod:`aibench.stopping`)."""
    from aibench import envfacts
    from aibench.orchestrator import Execution

    executors = (
        executor_for if executor_for is not None else planned(Executors(plan.inventory), plan)
    )
    ex = Execution(run_dir=run_dir, plan=plan, executor_for=executors, progress=progress)
    if resume:
        ex.load_journal()
    environment: dict[str, Any] = {}

    async def main() -> None:
        nonlocal environment
        if stop is not None and stop.stopped:  # stopped before the steps began
            return
        try:
            await sampled_rounds(ex, executors, telemetry)
            if environment_facts:
                environment = await envfacts.collect(ex, run_dir / "raw")
        finally:
            close = getattr(executors, "close", None)
            if close is not None:
                await close()

    interrupted = False
    try:
        run_cancellable(main, ex, stop)
    except KeyboardInterrupt:
        interrupted = True
    interrupted = interrupted or (stop is not None and stop.stopped)
    return _executed(ex, executors, environment, interrupted)


async def sampled_rounds(ex: Any, executors: Any, telemetry: float | None) -> None:
    """The plan's rounds, with every node sampled beside them every ``telemetry`` seconds
    when that is given (aibench.telemetry)."""
    from aibench.orchestrator import execute as run_rounds

    if telemetry:
        from aibench.telemetry.hook import sampling

        async with sampling(ex.run_dir, ex.plan.inventory.nodes, executors, interval=telemetry):
            await run_rounds(ex)
    else:
        await run_rounds(ex)


def _executed(ex: Any, executors: Any, environment: dict[str, Any], interrupted: bool) -> Executed:
    return Executed(
        results=ex.results_log(),
        environment=environment,
        tool_versions={k: dict(v) for k, v in ex.tool_versions.items()},
        unreachable=dict(ex.unreachable),
        interrupted=interrupted,
        skipped={
            n: r
            for n, r in getattr(executors, "skipped", dict)().items()
            if n not in ex.unreachable
        },
    )


def planned(executors: Executors, plan: Any) -> Executors:
    executors.planned_seconds = plan.estimated_seconds()
    return executors


def run_cancellable(main: Callable[[], Any], ex: Any, stop: Stopper | None) -> None:
    """``asyncio.run(main())``; with ``stop``, a first signal cancels it (the steps in
    flight, the step ids of ``ex.running``, end as a cancelled task ends: their process
    groups stopped) and it returns as if it had ended."""
    if stop is None:
        asyncio.run(main())
        return

    async def cancellable() -> None:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        assert task is not None

        def cancel() -> tuple[str, ...]:
            loop.call_soon_threadsafe(task.cancel)
            return tuple(sorted(ex.running))

        with stop.cancelling(cancel):
            await main()

    try:
        asyncio.run(cancellable())
    except asyncio.CancelledError:
        if not stop.stopped:
            raise


def assemble(
    inputs: Inputs,
    executed: Executed,
    *,
    run_id: str,
    started: str,
    resume_hint: str = "",
    signoff: Mapping[str, str] | None = None,
) -> Run:
    """The Run record: the results, the environment (each node's facts, tool versions,
    the preflight's bill of materials, unreachable nodes) and the notes. Not judged."""
    from aibench import __version__, envfacts
    from aibench.preflight import environment_from_facts

    environment = dict(executed.environment)
    environment.setdefault("_controller", envfacts.controller_facts())
    for node, versions in executed.tool_versions.items():
        environment.setdefault(node, {}).setdefault("tools", dict(versions))
    for node, reason in executed.unreachable.items():
        environment.setdefault(node, {})["unreachable"] = reason
    facts = [f for r in executed.results for f in r.facts]
    for node, bom in environment_from_facts(facts).items():
        environment.setdefault(node, {}).update(bom)
    notes = []
    if executed.interrupted:
        notes.append(f"interrupted before the end; resume with: {resume_hint}".rstrip(": "))
    for node, reason in sorted(executed.unreachable.items()):
        notes.append(f"{node} unreachable at the start: {reason}")
    for node, reason in sorted(executed.skipped.items()):
        notes.append(f"{node} given up on during the run: {reason}")
    return Run(
        id=run_id,
        suite=inputs.suite.name,
        suite_sha256=inputs.suite.sha256,
        spec=inputs.spec.name,
        spec_sha256=inputs.spec.sha256,
        started=started,
        finished=now_text(),
        aibench_version=__version__,
        inventory=inputs.inventory.to_dict(),
        environment=environment,
        steps=executed.results,
        notes=tuple(notes),
        signoff={k: v for k, v in (signoff or {}).items() if v},
        inputs=recorded_inputs(inputs),
    )


def recorded_inputs(inputs: Inputs) -> dict[str, Any]:
    """What the run's record keeps of its inputs beside the inventory (``Run.inventory``)
    for a later re-judge: the suite's file as read, its steps and the ones selected. The
    spec's text is added by :func:`aibench.judge.record` with each judgement. The text
    has the values of its steps' secret ``env:`` variables replaced (aibench.secret);
    ``sha256`` is that of the file as read, so it still names the suite."""
    from aibench.plan import run_secrets

    suite = inputs.suite
    whole = inputs.whole_steps or tuple((s.name, s.tool) for s in suite.steps)
    secrets = run_secrets(suite, inputs.inventory)
    out: dict[str, Any] = {
        "suite": {
            "name": suite.name,
            "sha256": suite.sha256,
            "text": secrets.redact_suite_text(getattr(suite, "text", "")),
            "steps": [list(x) for x in whole],
            "selected": [s.name for s in suite.steps],
        }
    }
    if inputs.nodes:
        selected = len(inputs.inventory.nodes)
        out["nodes"] = {"expr": inputs.nodes, "selected": selected, "of": inputs.whole_nodes}
    return out


def judge(
    run: Run, inputs: Inputs, *, history: Path | None = None, by: str = "aibench run"
) -> tuple[Run, list[Run]]:
    """The run judged by :func:`aibench.judge.judge_run` (recorded in the history
    database first when there is one, and again with its verdicts) and the earlier runs
    of its suite in that history, for the report's trends."""
    from aibench.judge import judge_run, record

    earlier: list[Run] = []
    if history is None:
        judgement = judge_run(run, inputs.spec, partial=inputs.partial)
        return record(run, judgement, by), earlier
    return judge_with_history(run, inputs, history, by)


def judge_with_history(run: Run, inputs: Inputs, history: Path, by: str) -> tuple[Run, list[Run]]:
    """:func:`judge` with a history database, which never costs the run its record: one
    that cannot be written or read makes the run's history verdict MISSING, with why."""
    import contextlib

    from aibench.history import snapshot
    from aibench.judge import judge_run, record

    cannot = record_in_history(run, history)
    with contextlib.ExitStack() as held:
        if not cannot:
            try:  # one state of the database, whatever other runs record meanwhile
                held.enter_context(snapshot(history))
            except UserError as exc:
                cannot = str(exc)
        if cannot:  # judged without it: its verdict MISSING, with the reason
            run = run.replace(verdicts=(*run.verdicts, history_missing(history, cannot)))
            return record(run, judge_run(run, inputs.spec, partial=inputs.partial), by), []
        judgement = judge_run(run, inputs.spec, partial=inputs.partial, history_db=history)
    run = record(run, judgement, by)
    cannot = record_in_history(run, history)
    if cannot:
        run = run.replace(notes=(*run.notes, f"the judged run is not in the history: {cannot}"))
    return run, trends(run, inputs, history)


def record_in_history(run: Run, history: Path) -> str:
    """Record ``run`` in the history database; "" when done, else why it could not be (a
    database corrupt, locked past its retries, of a newer schema, not writable)."""
    from aibench.history import History

    try:
        History(history).record(run)
    except UserError as exc:
        return str(exc)
    return ""


def history_missing(history: Path, why: str) -> Any:
    """The MISSING verdict of a run that could not be judged against its history."""
    from aibench.model import Outcome, Verdict

    return Verdict(
        check="history",
        outcome=Outcome.MISSING,
        description="regressions against the history of earlier runs",
        reason=f"history database {history} could not be used: {why}",
        benchmark="history",
        origin="history",
    )


def trends(run: Run, inputs: Inputs, history: Path) -> list[Run]:
    """The last 20 earlier runs of the suite in ``history``, each with the steps the
    report's trends read (its sections say which); none when it cannot be read."""
    from aibench.history import History, snapshot
    from aibench.reports.sections import history_step_tools

    hist = History(history)
    keep = history_step_tools({s.tool for s in inputs.suite.steps})
    try:
        with snapshot(history):
            ids = [r.id for r in hist.runs() if r.suite == run.suite and r.id != run.id]
            return [hist.load_run(i, steps_of=keep) for i in ids[-20:]]
    except UserError:
        return []


def store_and_report(
    run: Run, run_dir: Path, *, history: Sequence[Run] = (), lang: str = "en"
) -> None:
    """run.json first (the record), then every report rendered from it (in ``lang``)."""
    from aibench import reports, store

    store.save_run(run, run_dir)
    reports.write_all(run, run_dir, history=history, lang=lang)


def exit_code(run: Run, executed: Executed) -> int:
    """130 interrupted, 3 when nothing could even start, 1 a failing check, else 0."""
    if executed.interrupted:
        return EXIT_INTERRUPTED
    if nothing_ran(executed.results):
        return EXIT_CANNOT_RUN
    from aibench.judge import exit_status

    return exit_status(run.outcome)


def nothing_ran(results: Sequence[StepResult]) -> bool:
    """True when no invocation even started its tool (unreachable, tool missing)."""

    def never_started(r: StepResult) -> bool:
        return r.status is StepStatus.UNREACHABLE or (
            r.status is StepStatus.FAILED and r.exit_code is None and "not found" in r.reason
        )

    return bool(results) and all(never_started(r) for r in results)


@dataclass(frozen=True)
class Result:
    run: Run
    run_dir: Path
    exit_code: int
    executed: Executed


def stoppable(run: Callable[..., Result]) -> Callable[..., Result]:
    """``run`` (:func:`run_suite`) with SIGINT and SIGTERM handled while it runs
    (:mod:`aibench.stopping`), its Stopper given as ``stop``; a second signal kills every
    local process group before aibench ends."""

    @functools.wraps(run)
    def stopped(*args: Any, **kwargs: Any) -> Result:
        with Stopper() as stop:
            stop.at_once.extend(_kill_local_groups())
            return run(*args, stop=stop, **kwargs)

    return stopped


@stoppable
def run_suite(
    inputs: Inputs,
    *,
    output_dir: Path = Path("runs"),
    run_dir: Path | None = None,
    resume: bool = False,
    history: Path | None = None,
    signoff: Mapping[str, str] | None = None,
    progress: Progress | None = None,
    started: str = "",
    plan: Any = None,
    lang: str = "en",
    telemetry: float | None = None,
    interruptions: Sequence[Mapping[str, Any]] = (),
    stop: Stopper | None = None,
) -> Result:
    """Plan, execute, assemble, judge, store and report one run of ``inputs``.

    ``run_dir`` with ``resume``: finish an interrupted run there (what its journal holds
    is not run again); otherwise a new run directory is made under ``output_dir``.
    SIGINT and SIGTERM stop the steps; the record and the reports are still written, with
    the interruption added to ``interruptions`` (the earlier ones of a resumed run), and
    the exit code is 128 + the signal's number (:mod:`aibench.stopping`).
    """
    from aibench import store
    from aibench.plan import build_plan

    if plan is None:
        plan = build_plan(inputs.suite, inputs.inventory)
        refuse_what_the_cluster_lacks(plan)
    if not plan.run_count():
        raise UserError(f"suite {inputs.suite.name}: nothing to run on the selected nodes")
    if run_dir is None:
        run_dir = store.new_run_dir(output_dir, inputs.suite.name)
    executed = execute(
        plan, run_dir, progress=progress, resume=resume, telemetry=telemetry, stop=stop
    )
    run = assemble(
        inputs,
        executed,
        run_id=run_dir.name,
        started=started or now_text(),
        resume_hint=resume_line(run_dir),
        signoff=signoff,
    )
    run = with_interruptions(run, interruptions, stop)
    if telemetry:
        from aibench.telemetry.hook import attach
        from aibench.thresholds import load_spec

        run = attach(run, run_dir, profile=load_spec("telemetry"))
    run, earlier = judge(run, inputs, history=history)
    store_and_report(run, run_dir, history=earlier, lang=lang)
    code = stop.exit_code if stop is not None and stop.stopped else exit_code(run, executed)
    return Result(run=run, run_dir=run_dir, exit_code=code, executed=executed)


def refuse_what_the_cluster_lacks(plan: Any) -> None:
    """Before any step of ``plan`` runs: a step that runs as an MPIJob needs the MPIJob
    resource in its cluster, which one discovery call tells (a UserError of one line
    without it). A run with no such step asks nothing."""
    from aibench.plan import mpijob_launches

    launches = mpijob_launches(plan)
    if launches:
        from aibench.executors.kubernetes_mpijob import refuse_without_mpijob

        refuse_without_mpijob(launches)


def resume_line(run_dir: Path) -> str:
    """The command that finishes the run of ``run_dir``."""
    return f"aibench run --resume {run_dir}"


def with_interruptions(run: Run, earlier: Sequence[Mapping[str, Any]], stop: Stopper | None) -> Run:
    """``run`` with the interruptions of its earlier executions and this one's."""
    found = [dict(x) for x in earlier]
    if stop is not None and stop.interruption is not None:
        found.append(stop.interruption.to_dict())
    if not found:
        return run
    notes = [interruption_note(x) for x in found]
    return run.replace(interruptions=tuple(found), notes=(*run.notes, *notes))


def interruption_note(x: Mapping[str, Any]) -> str:
    """``interrupted by SIGTERM at 2026-12-05T01:00:00Z; running: fio-seq/gpu01/r0``."""
    running = list(x.get("running") or ())
    what = f"; running: {', '.join(running[:5])}" if running else ""
    more = f" and {len(running) - 5} more" if len(running) > 5 else ""
    return f"interrupted by {x.get('signal')} at {x.get('at')}{what}{more}"


def _kill_local_groups() -> list[Callable[[], None]]:
    """What a second signal does before aibench ends: SIGKILL every process group the
    local executor started (their children with them)."""
    from aibench.executors.local import kill_all

    return [kill_all]
