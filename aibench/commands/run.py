"""``aibench run``: plan, run, judge and report a suite."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from aibench.commands import Command, startup_over
from aibench.errors import EXIT_CANNOT_RUN, EXIT_OK, UserError

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
  aibench run --suite nightly --telemetry 2         # sample every node beside the steps
  aibench run --suite soak --inventory cluster.yaml --duration 4h

Built-in suites: acceptance, nightly, preflight, smoke, and soak (the burn-in, see
aibench soak --help); or a path to your own YAML file.
"""


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
    p.add_argument(
        "--resume",
        metavar="RUN_DIR",
        help="finish an interrupted run, with the inputs it started with (refused when one "
        "of its files was edited since, or when the run finished)",
    )
    p.add_argument(
        "--restart",
        action="store_true",
        help="with --resume: run the inputs of RUN_DIR as they are now, as a new run beside "
        "it that reuses nothing",
    )
    p.add_argument("--dry-run", action="store_true", help="print the plan and stop")
    p.add_argument(
        "--full",
        action="store_true",
        help="with --dry-run (and aibench plan): list every run of every round, not a "
        "summary per step",
    )
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
    p.add_argument(
        "--telemetry",
        type=float,
        metavar="SECONDS",
        help="sample every node (host, GPU, BMC) at this interval beside the steps "
        "(default: the suite's settings.telemetry; none)",
    )
    p.add_argument(
        "--duration",
        metavar="TIME",
        help="--suite soak: how long to stress every node (90s, 30m, 4h; default 4h)",
    )


def load_inputs(args: argparse.Namespace, suite_name: str | None = None) -> Any:
    """The validated inputs named by the command line (see aibench.pipeline.load_inputs)."""
    from aibench.pipeline import load_inputs as load

    return load(
        suite_name or args.suite,
        inventory=args.inventory,
        spec=args.spec,
        nodes=getattr(args, "nodes", None),
        steps=getattr(args, "steps", None),
        tool=getattr(args, "tool", None),
    )


def run(args: argparse.Namespace) -> int:
    from aibench import pipeline
    from aibench.executors import select
    from aibench.plan import build_plan
    from aibench.progress import Reporter

    resume_dir = _resume_dir(args)
    if args.suite == "soak" or (resume_dir is not None and _is_soak(resume_dir)):
        return soak_suite(args)
    if args.duration:
        raise UserError("--duration applies to --suite soak only")
    inputs, resume_dir = _inputs(args, resume_dir)
    plan = build_plan(inputs.suite, inputs.inventory)
    startup_over()
    select.expect(inputs.inventory, plan.estimated_seconds())
    runs = plan.run_count()
    if not runs:
        raise UserError(f"suite {inputs.suite.name}: nothing to run on the selected nodes")
    if args.dry_run:
        print_plan(plan, full=args.full)
        return EXIT_OK
    pipeline.refuse_what_the_cluster_lacks(plan)  # before the run directory is made
    run_dir, started, interruptions = _run_dir(args, inputs, plan, resume_dir)
    _print_banner(inputs, plan, run_dir, quiet=args.quiet)
    reporter = Reporter(runs, quiet=args.quiet)
    with reporter:
        result = pipeline.run_suite(
            inputs,
            run_dir=run_dir,
            resume=resume_dir is not None,
            history=history_path(args, inputs.suite, run_dir),
            signoff={
                "cluster": args.cluster or inputs.inventory.name,
                "vendor": args.vendor,
                "customer": args.customer,
            },
            progress=reporter,
            started=started,
            plan=plan,
            lang=getattr(args, "lang", None) or inputs.suite.settings.lang,
            telemetry=args.telemetry or inputs.suite.settings.telemetry,
            interruptions=interruptions,
        )
    return _ended(result, inputs, quiet=args.quiet)


def _run_dir(
    args: argparse.Namespace, inputs: Any, plan: Any, resume_dir: Path | None
) -> tuple[Path, str, list[dict[str, Any]]]:
    """The run directory, when the run started and the interruptions it had: those of the
    run resumed, else a new directory with the run's config written in it."""
    from aibench import pipeline, store

    if resume_dir is not None:
        started, interruptions = _resumed_from(resume_dir)
        return resume_dir, started, interruptions
    started = pipeline.now_text()
    run_dir = _new_run_dir(Path(args.output_dir), inputs.suite.name)
    store.write_json_atomic(run_dir / store.RUN_CONFIG, _config(args, inputs, plan, started))
    return run_dir, started, []


def _ended(result: Any, inputs: Any, *, quiet: bool) -> int:
    """What the console says once the run is stored; its exit code."""
    from aibench.pipeline import resume_line

    _print_summary(result.run, result.run_dir, quiet=quiet)
    if result.executed.interrupted:
        print(
            f"aibench: interrupted; what was measured is kept. Resume with: "
            f"{resume_line(result.run_dir)}",
            file=sys.stderr,
        )
    _label_kubernetes_nodes(inputs.inventory, result.run, result.run_dir)
    if result.exit_code == EXIT_CANNOT_RUN:
        print("aibench: error: nothing could be run (see the reasons above)", file=sys.stderr)
    exit_code: int = result.exit_code
    return exit_code


def _print_banner(inputs: Any, plan: Any, run_dir: Path, *, quiet: bool) -> None:
    """What is about to run: a partial run says first that it is not the suite's
    acceptance (even with --quiet); then the runs, nodes, estimate and where."""
    from aibench import pipeline
    from aibench.model import partial_text
    from aibench.plan import fmt_seconds

    partial = partial_text(pipeline.recorded_inputs(inputs))
    if partial:
        suite_name = inputs.suite.name
        print(f"aibench: {partial}: not the acceptance of suite {suite_name}", file=sys.stderr)
    if not quiet:
        print(
            f"aibench: {inputs.suite.name}: {plan.run_count()} runs on "
            f"{len(inputs.inventory)} node(s), about {fmt_seconds(plan.estimated_seconds())}; "
            f"results in {run_dir}",
            file=sys.stderr,
        )
        for line in plan.warnings():
            print(f"aibench: warning: {line}", file=sys.stderr)


def _inputs(args: argparse.Namespace, resume_dir: Path | None) -> tuple[Any, Path | None]:
    """The inputs of the run, and the directory it resumes (None: a new run). A resume
    reads them exactly as the run read them at its start, or is refused
    (:mod:`aibench.resume`); ``--restart`` reads the current files into a new run beside
    it."""
    from aibench import resume
    from aibench.pipeline import load_inputs as load

    if resume_dir is None:
        if args.restart:
            raise UserError("--restart goes with --resume RUN_DIR")
        return load_inputs(args), None
    cfg = _resume_arguments(args, resume_dir)
    if args.restart:
        args.output_dir = str(resume_dir.parent)
        if not args.quiet:
            print(
                f"aibench: a new run of the inputs of {resume_dir}; it reuses nothing of it",
                file=sys.stderr,
            )
        return load_inputs(args), None
    if resume.finished(resume_dir):
        raise UserError(
            f"{resume_dir}: this run finished; there is nothing to resume",
            hint=f"aibench check {resume_dir} judges it again; "
            f"aibench run --resume {resume_dir} --restart runs its inputs anew",
        )
    with resume.sources(resume_dir, cfg) as found:
        inputs = load(
            str(found["suite"]),
            inventory=found["inventory"],
            spec=found["spec"],
            nodes=args.nodes,
            steps=args.steps,
            tool=args.tool,
        )
    return inputs, resume_dir


def _resume_dir(args: argparse.Namespace) -> Path | None:
    """The run directory of ``--resume``, checked first: a resume writes into it, so it
    must match its manifest and hold no link (aibench.manifest.guard, exit 4)."""
    from aibench.manifest import AlteredError, guard

    if not args.resume:
        return None
    run_dir = Path(args.resume)
    if not run_dir.is_dir():
        return run_dir
    try:
        guard(run_dir)
    except AlteredError as exc:
        raise AlteredError(
            exc.message,
            hint=f"aibench verify {run_dir} names every difference; a resume that was killed "
            "leaves steps.jsonl and raw/ newer than the manifest: if nothing else differs, "
            "remove manifest.sha256 and resume again",
        ) from None
    return run_dir


def _resume_arguments(args: argparse.Namespace, resume_dir: Path) -> dict[str, Any]:
    """A resumed run runs what it was started with: the suite, inventory, spec and
    selection of its saved configuration, and its sign-off names where none is given."""
    cfg = _load_config(resume_dir)
    for key in ("suite", "inventory", "spec", "steps", "tool", "nodes"):
        setattr(args, key, cfg.get(key))
    if args.telemetry is None:
        args.telemetry = cfg.get("telemetry")
    for key in ("vendor", "customer", "cluster"):
        if not getattr(args, key, ""):
            setattr(args, key, cfg.get(key, ""))
    return cfg


def _label_kubernetes_nodes(inventory: Any, run: Any, run_dir: Path) -> None:
    """With ``label_results`` in the inventory's kubernetes block: each node's verdict as a
    node label after a full run (aibench/executors/kubernetes_labels.py); a partial run
    says that it labelled nothing."""
    if not any(n.kubernetes is not None and n.kubernetes.label_results for n in inventory):
        return
    from aibench.executors.kubernetes_labels import label_nodes

    for line in label_nodes(inventory, run, run_dir.name):
        print(f"aibench: warning: {line}", file=sys.stderr)


# run's options that mean nothing to a soak: refused with one line (exit 2)
SOAK_REFUSED = {"tool": "a tool", "steps": "--steps", "history": "--history"}


def soak_suite(args: argparse.Namespace) -> int:
    """``aibench run --suite soak``: the soak (aibench soak) with its defaults, stress on
    every node for --duration with the sampler beside; --resume continues one. --dry-run,
    --nodes, --spec, --lang, --telemetry (the sample interval) and the sign-off names are
    honoured; --steps, a tool and --history are refused (a soak has no steps to choose and
    no history verdicts)."""
    from aibench.commands import soak

    startup_over()  # hours of stress: collect garbage from the start
    for key, flag in SOAK_REFUSED.items():
        if getattr(args, key, None):
            raise UserError(f"{flag} does not apply to the soak (aibench soak --help)")
    p = argparse.ArgumentParser()
    soak.add_arguments(p)
    own = p.parse_args([])
    for key in ("inventory", "output_dir", "resume", "quiet", "dry_run", "nodes", "spec", "lang"):
        setattr(own, key, getattr(args, key, None))
    for key in ("vendor", "customer", "cluster"):
        setattr(own, key, getattr(args, key, ""))
    own.output_dir = own.output_dir or "runs"
    own.duration = args.duration
    own.interval = args.telemetry
    return soak.run(own)


def print_plan(plan: Any, full: bool = False) -> None:
    """Print the plan line by line (a full listing of a large plan is never one text)."""
    from aibench.plan import plan_lines

    out = sys.stdout
    for line in plan_lines(plan, full=full):
        out.write(line + "\n")


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


def _config(args: argparse.Namespace, inputs: Any, plan: Any, started: str) -> dict[str, Any]:
    from aibench.config import absolute
    from aibench.resume import COPIES, copies

    spec = absolute(args.spec) or inputs.suite.spec or "default"
    kept = copies(
        inputs, plan, suite=str(absolute(args.suite)), spec=spec, inventory=absolute(args.inventory)
    )
    return {
        COPIES: kept,
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
        "started": started,
        "telemetry": args.telemetry,
    }


def _new_run_dir(output_dir: Path, suite: str) -> Path:
    """A new run directory under ``output_dir``; one line (exit 2) when it cannot be made
    there (a file in the way, no permission, a read-only file system)."""
    from aibench.store import new_run_dir

    if output_dir.exists() and not output_dir.is_dir():
        raise UserError(f"--output-dir {output_dir}: not a directory")
    try:
        return new_run_dir(output_dir, suite)
    except OSError as exc:
        raise UserError(
            f"--output-dir {output_dir}: cannot create a run directory there "
            f"({exc.strerror or exc})"
        ) from None


def _is_soak(run_dir: Path) -> bool:
    from aibench.commands.soak import PARAMS

    return (run_dir / PARAMS).exists()


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


def _resumed_from(run_dir: Path) -> tuple[str, list[dict[str, Any]]]:
    """When the run of ``run_dir`` started, and its interruptions so far: those its last
    record holds, and one of an unknown signal when its last execution left no record
    (killed with SIGKILL, the machine lost) or a journal newer than its record."""
    from aibench.orchestrator import JOURNAL
    from aibench.store import RUN_CONFIG, RUN_JSON

    cfg = _load_config(run_dir)
    prev = _previous_run(run_dir)
    started = cfg.get("started") or (prev.started if prev else "") or _mtime(run_dir / RUN_CONFIG)
    found = [dict(x) for x in prev.interruptions] if prev else []
    journal, record = run_dir / JOURNAL, run_dir / RUN_JSON
    last = journal if journal.exists() else run_dir / RUN_CONFIG
    if not record.exists() or last.stat().st_mtime > record.stat().st_mtime:
        found.append({"at": _mtime(last), "signal": "unknown (no record written)", "running": []})
    return started, found


def _mtime(path: Path) -> str:
    from datetime import UTC, datetime

    from aibench.instants import iso

    return iso(datetime.fromtimestamp(path.stat().st_mtime, UTC))


def _previous_run(run_dir: Path) -> Any:
    from aibench.store import RUN_JSON, load_run

    if not (run_dir / RUN_JSON).exists():
        return None
    try:
        return load_run(run_dir)
    except UserError:
        return None


def _print_summary(run: Any, run_dir: Path, quiet: bool) -> None:
    from collections import Counter

    counts = Counter(v.outcome.value for v in run.verdicts)
    failing = [v for v in run.verdicts if v.outcome.failing]
    out = sys.stdout
    partial = f" ({run.partial}, not the acceptance of the suite)" if run.partial else ""
    print(
        f"{run.outcome.value}{partial}: {run.suite} against {run.spec} "
        f"({', '.join(f'{n} {k}' for k, n in sorted(counts.items())) or 'no verdict'})",
        file=out,
    )
    for note in run.notes:
        if "not judged: their steps were not selected" in note:
            print(f"  note: {note}", file=out)
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
    startup=True,
)
