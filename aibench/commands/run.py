"""``aibench run``: plan, run, judge and report a suite."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aibench.commands import Command
from aibench.errors import EXIT_CANNOT_RUN, EXIT_CHECKS_FAILED, EXIT_INTERRUPTED, EXIT_OK, UserError

DESCRIPTION = """\
Run a suite of benchmarks over the nodes of an inventory, judge the numbers against a
spec, and write a run directory with run.json, raw logs and the reports (report.html,
junit.xml, summary.md, metrics.prom, manifest.sha256).

With no --inventory the cluster is this machine (local executor); with no --spec the
suite's own spec profile (else 'default') is used, and named in the report.
"""

EPILOG = """\
examples:
  aibench run --suite acceptance
  aibench run --suite smoke --output-dir /tmp/runs
  aibench run --suite acceptance --inventory cluster.yaml --spec h100-ndr \\
      --vendor "ACME Systems" --customer "Example Labs"
  aibench run --suite acceptance --dry-run          # print the schedule, touch nothing
  aibench run --resume runs/20261202-101500-acceptance

Built-in suites: acceptance, nightly, smoke (or a path to your own YAML file).
"""


@dataclass(frozen=True)
class Inputs:
    suite: Any
    inventory: Any
    spec: Any


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("tool", nargs="?", help="run only the steps of this tool (e.g. fio)")
    p.add_argument("--suite", default="acceptance", help="built-in suite name or YAML path")
    p.add_argument("--inventory", metavar="FILE", help="inventory YAML (default: this machine)")
    p.add_argument("--spec", metavar="NAME|FILE", help="spec profile or YAML path")
    p.add_argument("--nodes", metavar="HOSTLIST", help="only these nodes, e.g. gpu[01-04]")
    p.add_argument("--steps", metavar="NAME[,NAME]", help="only these suite steps")
    p.add_argument(
        "--output-dir",
        default="runs",
        metavar="DIR",
        help="where run directories go (default: runs)",
    )
    p.add_argument("--resume", metavar="RUN_DIR", help="finish an interrupted run")
    p.add_argument("--dry-run", action="store_true", help="print the plan and stop")
    p.add_argument(
        "--history",
        metavar="DB",
        help="record the run in this history database and judge it against earlier runs "
        "(suites with settings.history, e.g. nightly: OUTPUT_DIR/history.sqlite by default)",
    )
    p.add_argument(
        "--no-history", action="store_true", help="do not record the run, whatever the suite says"
    )
    p.add_argument("--vendor", default="", help="for the sign-off block of the report")
    p.add_argument("--customer", default="", help="for the sign-off block of the report")
    p.add_argument("--cluster", default="", help="cluster name for the report (default: inventory)")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.add_argument("--lang", choices=("en", "zh"), help="report language (default: suite's)")


def load_inputs(args: argparse.Namespace, suite_name: str | None = None) -> Inputs:
    """Load and validate everything before any node is touched."""
    from aibench.inventory import local_inventory
    from aibench.suite import load_suite

    suite = load_suite(suite_name or args.suite)
    suite = _filter_steps(suite, args)
    if args.inventory:
        from aibench.inventory import load_inventory

        inventory = load_inventory(Path(args.inventory))
    else:
        inventory = local_inventory()
    if getattr(args, "nodes", None):
        inventory = _filter_nodes(inventory, args.nodes)
    from aibench.thresholds import load_spec

    spec = load_spec(args.spec or suite.spec or "default")
    return Inputs(suite, inventory, spec)


def _filter_steps(suite: Any, args: argparse.Namespace) -> Any:
    from dataclasses import replace

    steps = list(suite.steps)
    if getattr(args, "tool", None):
        steps = [s for s in steps if s.tool == args.tool]
        if not steps:
            tools = sorted({s.tool for s in suite.steps})
            raise UserError(
                f"suite {suite.name} has no {args.tool} step; its tools: {', '.join(tools)}"
            )
    if getattr(args, "steps", None):
        wanted = [w.strip() for w in args.steps.split(",") if w.strip()]
        names = {s.name for s in suite.steps}
        unknown = [w for w in wanted if w not in names]
        if unknown:
            raise UserError(
                f"suite {suite.name} has no step {', '.join(unknown)}; "
                f"its steps: {', '.join(sorted(names))}"
            )
        steps = [s for s in steps if s.name in wanted]
    return replace(suite, steps=tuple(steps))


def _filter_nodes(inventory: Any, expr: str) -> Any:
    from dataclasses import replace

    from aibench import hostlist

    try:
        wanted = hostlist.expand(expr)
    except ValueError as exc:
        raise UserError(f"--nodes: {exc}") from None
    names = {n.name for n in inventory.nodes}
    unknown = [w for w in wanted if w not in names]
    if unknown:
        raise UserError(f"--nodes: not in the inventory: {', '.join(unknown[:10])}")
    return replace(inventory, nodes=tuple(n for n in inventory.nodes if n.name in set(wanted)))


class Executors:
    """One executor per node, made on first use and reused (SSH connections are pooled)."""

    def __init__(self, inventory: Any) -> None:
        from aibench.executors.local import LocalExecutor

        self.inventory = inventory
        self.local = LocalExecutor()
        self._cache: dict[str, Any] = {}

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
            self._cache[node.name] = for_node(node, self.inventory)
        return self._cache[node.name]

    async def close(self) -> None:
        seen = {id(e): e for e in [self.local, *self._cache.values()]}
        for e in seen.values():
            await e.close()


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


def run(args: argparse.Namespace) -> int:
    import asyncio

    from aibench import envfacts, store
    from aibench.orchestrator import Execution, build_plan, execute

    resume_dir: Path | None = Path(args.resume) if args.resume else None
    if resume_dir is not None:
        cfg = _load_config(resume_dir)
        for key in ("suite", "inventory", "spec", "steps", "tool", "nodes"):
            setattr(args, key, cfg.get(key))
        for key in ("vendor", "customer", "cluster"):
            if not getattr(args, key, ""):
                setattr(args, key, cfg.get(key, ""))
    inputs = load_inputs(args)
    plan = build_plan(inputs.suite, inputs.inventory)
    if not plan.invocations:
        raise UserError(f"suite {inputs.suite.name}: nothing to run on the selected nodes")
    if args.dry_run:
        from aibench.commands.plan import format_plan

        print(format_plan(plan))
        return EXIT_OK

    if resume_dir is not None:
        run_dir = resume_dir
    else:
        run_dir = store.new_run_dir(Path(args.output_dir), inputs.suite.name)
        store.write_json_atomic(run_dir / store.RUN_CONFIG, _config(args, inputs))
    from datetime import UTC, datetime

    started = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    executors = Executors(inputs.inventory)
    reporter = Reporter(len(plan.invocations), quiet=args.quiet)
    ex = Execution(run_dir=run_dir, plan=plan, executor_for=executors, progress=reporter)
    if resume_dir is not None:
        ex.load_journal()
        prev = _previous_run(run_dir)
        started = prev.started if prev else started
    if not args.quiet:
        print(
            f"aibench: {inputs.suite.name}: {len(plan.invocations)} runs on "
            f"{len(inputs.inventory)} node(s), about {_fmt_seconds(plan.estimated_seconds())}; "
            f"results in {run_dir}",
            file=sys.stderr,
        )
    interrupted = False
    environment: dict[str, Any] = {}

    async def main() -> None:
        nonlocal environment
        try:
            await execute(ex)
            environment = await envfacts.collect(ex, run_dir / "raw")
        finally:
            await executors.close()

    with reporter:
        try:
            asyncio.run(main())
        except KeyboardInterrupt:
            interrupted = True

    results = ex.results()
    environment.setdefault("_controller", envfacts.controller_facts())
    for node, versions in ex.tool_versions.items():
        environment.setdefault(node, {}).setdefault("tools", dict(versions))
    for node, reason in ex.unreachable.items():
        environment.setdefault(node, {})["unreachable"] = reason
    facts = [f for r in results for f in r.facts]
    consistency: list[Any] = []
    if facts:
        from aibench.preflight import environment_from_facts, expected
        from aibench.preflight.consistency import check_results

        for node, bom in environment_from_facts(facts).items():
            environment.setdefault(node, {}).update(bom)
        # the fleet against itself (golden config) and against what the inventory declares
        consistency = check_results(results) + expected.check(inputs.inventory, facts)
    from aibench import __version__
    from aibench.model import Run

    notes = []
    if interrupted:
        notes.append(
            "interrupted before the end; resume with: aibench run --resume " + str(run_dir)
        )
    for node, reason in sorted(ex.unreachable.items()):
        notes.append(f"{node} unreachable at the start: {reason}")
    run_obj = Run(
        id=run_dir.name,
        suite=inputs.suite.name,
        suite_sha256=inputs.suite.sha256,
        spec=inputs.spec.name,
        spec_sha256=inputs.spec.sha256,
        started=started,
        finished=datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        aibench_version=__version__,
        inventory=inputs.inventory.to_dict(),
        environment=environment,
        steps=tuple(results),
        notes=tuple(notes),
        signoff={
            k: v
            for k, v in {
                "cluster": args.cluster or inputs.inventory.name,
                "vendor": args.vendor,
                "customer": args.customer,
            }.items()
            if v
        },
    )
    from aibench import reports
    from aibench.thresholds import judge

    spec = inputs.spec
    if getattr(args, "steps", None) or getattr(args, "tool", None):
        spec, skipped = applicable(spec, inputs.suite)
        if skipped:
            notes.append(
                f"{skipped} check(s) of {spec.name} not judged: their steps were not selected"
            )
            run_obj = run_obj.replace(notes=tuple(notes))
    verdicts = [*judge(spec, run_obj), *consistency]
    from aibench.thresholds import not_applicable
    from aibench.thresholds.localize import suspect_records

    notes += [n for n in not_applicable(spec, run_obj) if n not in notes]
    run_obj = run_obj.replace(
        verdicts=tuple(verdicts), suspects=suspect_records(run_obj), notes=tuple(notes)
    )
    earlier: list[Any] = []
    history = history_path(args, inputs.suite, run_dir)
    if history is not None:
        run_obj, earlier = _against_history(run_obj, history)
    store.save_run(run_obj, run_dir)
    lang = getattr(args, "lang", None) or inputs.suite.settings.lang
    reports.write_all(run_obj, run_dir, history=earlier, lang=lang)
    _print_summary(run_obj, run_dir, quiet=args.quiet)
    if interrupted:
        return EXIT_INTERRUPTED
    if _nothing_ran(results):
        print("aibench: error: nothing could be run (see the reasons above)", file=sys.stderr)
        return EXIT_CANNOT_RUN
    return EXIT_CHECKS_FAILED if any(v.outcome.failing for v in run_obj.verdicts) else EXIT_OK


def history_path(args: argparse.Namespace, suite: Any, run_dir: Path) -> Path | None:
    """The history database of this run: --history, else the suite's default, else none.

    A suite with ``settings.history: true`` (the built-in nightly suite) records into
    ``history.sqlite`` beside its run directories, the database ``aibench history`` reads
    by default when the output directory is the default ``runs``.
    """
    if getattr(args, "no_history", False):
        return None
    if args.history:
        return Path(args.history)
    if suite.settings.history:
        return run_dir.parent / "history.sqlite"
    return None


def _against_history(run: Any, db: Path) -> tuple[Any, list[Any]]:
    """Record the run, judge it against its own history, return it and earlier runs.

    A regression (outside the noise band of the last good runs, with the same key
    environment) is a FAIL verdict; one across a changed environment (driver, NCCL,
    kernel, tool versions) is a WARN that says what changed, never a silent comparison.
    """
    from aibench.history import History
    from aibench.model import Outcome, Verdict

    hist = History(db)
    hist.record(run)
    findings, _notes = hist.regressions(run.id)
    extra = []
    notes = list(run.notes)
    for f in findings:
        if not f.regression:
            notes.append(f.text)
            continue
        tool = f.series.split("|", 1)[0]
        extra.append(
            Verdict(
                check=f"regression:{f.series}",
                outcome=Outcome.WARN if f.env_changed else Outcome.FAIL,
                subject=tuple(n for n in f.series.rsplit("|", 1)[-1].split("+") if n),
                description="against the history of earlier good runs",
                expected=f"{f.band[0]:.4g} .. {f.band[1]:.4g} {f.unit}",
                observed=f.value,
                unit=f.unit,
                reference=f.baseline_median,
                aggregate="median",
                reason=f.text,
                benchmark=tool,
            )
        )
    if extra or notes != list(run.notes):
        run = run.replace(verdicts=(*run.verdicts, *extra), notes=tuple(notes))
        hist.record(run)
    earlier = [hist.load_run(r.id) for r in hist.runs() if r.suite == run.suite and r.id != run.id][
        -20:
    ]
    return run, earlier


def applicable(spec: Any, suite: Any) -> tuple[Any, int]:
    """The spec's checks that can apply to the (filtered) suite, and how many were dropped.

    Used only when the user ran part of a suite (``aibench run fio``, ``--steps``): the
    checks of steps that were not selected are not judged, instead of showing as MISSING.
    A full suite run judges every check, so a missing step is MISSING there.
    """
    from dataclasses import replace

    tools = {s.tool for s in suite.steps}
    names = {s.name for s in suite.steps}
    keep = []
    for c in spec.checks:
        if c.select is not None:
            steps = c.select.step
            wanted = [steps] if isinstance(steps, str) else list(steps or [])
            ok = c.select.tool in tools and (not wanted or bool(names & set(wanted)))
        else:
            ok = c.fact is None or c.fact.source == "environment" or "preflight" in tools
        if ok:
            keep.append(c)
    return replace(spec, checks=tuple(keep)), len(spec.checks) - len(keep)


def _nothing_ran(results: list[Any]) -> bool:
    """True when no invocation even started its tool (unreachable, tool missing)."""
    from aibench.model import StepStatus

    def never_started(r: Any) -> bool:
        return r.status is StepStatus.UNREACHABLE or (
            r.status is StepStatus.FAILED and r.exit_code is None and "not found" in r.reason
        )

    return bool(results) and all(never_started(r) for r in results)


def _config(args: argparse.Namespace, inputs: Inputs) -> dict[str, Any]:
    def absolute(p: str | None) -> str | None:
        if p and ("/" in p or p.endswith((".yaml", ".yml"))):
            return str(Path(p).resolve())
        return p

    return {
        "suite": absolute(args.suite),
        "inventory": absolute(args.inventory),
        "spec": absolute(args.spec),
        "steps": args.steps,
        "tool": args.tool,
        "nodes": args.nodes,
        "vendor": args.vendor,
        "customer": args.customer,
        "cluster": args.cluster,
        "suite_sha256": inputs.suite.sha256,
        "spec_sha256": inputs.spec.sha256,
    }


def _load_config(run_dir: Path) -> dict[str, Any]:
    from aibench.store import RUN_CONFIG

    path = run_dir / RUN_CONFIG
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(f"{run_dir}: not a run directory (no {RUN_CONFIG})") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: damaged ({exc.msg})") from None
    return data


def _previous_run(run_dir: Path) -> Any:
    from aibench.store import RUN_JSON, load_run

    if not (run_dir / RUN_JSON).exists():
        return None
    try:
        return load_run(run_dir)
    except UserError:
        return None


def _fmt_seconds(s: float) -> str:
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


def _print_summary(run: Any, run_dir: Path, quiet: bool) -> None:
    from collections import Counter

    counts = Counter(v.outcome.value for v in run.verdicts)
    failing = [v for v in run.verdicts if v.outcome.failing]
    out = sys.stdout
    print(
        f"{run.outcome.value}: {run.suite} against {run.spec} "
        f"({', '.join(f'{n} {k}' for k, n in sorted(counts.items()))})",
        file=out,
    )
    for v in failing[:20]:
        subject = ",".join(v.subject) or "-"
        observed = "" if v.observed is None else f" observed {v.observed:.6g} {v.unit}"
        print(
            f"  {v.outcome.value:<7} {v.check} [{subject}] "
            f"expected {v.expected}{observed} {v.reason}".rstrip(),
            file=out,
        )
    if len(failing) > 20:
        print(f"  ... and {len(failing) - 20} more", file=out)
    print(f"report: {run_dir / 'report.html'}", file=out)


COMMAND = Command(
    name="run",
    help="run a suite (default: acceptance on this machine) and write its report",
    description=DESCRIPTION,
    epilog=EPILOG,
    add_arguments=add_arguments,
    run=run,
    order=10,
)
