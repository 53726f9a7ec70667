"""``aibench retest RUN``: run again only what a run did not pass."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

from aibench.commands import Command, startup_over
from aibench.errors import EXIT_CHECKS_FAILED, EXIT_INTERRUPTED, EXIT_OK, UserError

DESCRIPTION = """\
Plan and run only what RUN did not pass: for each FAIL, MISSING or ERROR verdict, the
steps and nodes it rests on. A node's per-node steps run on that node; a failed pair runs
again, and each of its ends against a known-good control partner in the same role, so
that the new figures say which end is at fault; a step over the whole fleet (an all-node
collective) runs whole. Before planning, every node's preflight facts are read again: a
node whose serials, firmware, BIOS or driver changed since RUN runs every per-node step
again, and the plan names the change.

RUN is a run directory or a record composed by aibench accept. The new run records its
parent (run id and the sha256 of its run.json); the outcome printed last is the fleet's,
RUN's attempts and this one composed (what aibench accept RUN NEW will sign).
"""

EPILOG = """\
examples:
  aibench retest runs/20261203-101500-acceptance --dry-run     # the plan, with reasons
  aibench retest runs/20261203-101500-acceptance --inventory cluster.yaml
  aibench accept runs/20261203-101500-acceptance runs/20261204-093000-acceptance

exit codes: 0 the composed fleet passes, 1 it does not, 2 a bad argument.
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN", help="the run (or composed record) to repair")
    p.add_argument(
        "--inventory",
        metavar="FILE",
        help="inventory to reach the nodes (default: the one RUN was run with)",
    )
    p.add_argument(
        "--output-dir", metavar="DIR", help="where the new run goes (default: beside RUN)"
    )
    p.add_argument("--dry-run", action="store_true", help="print the plan and stop")
    p.add_argument(
        "--no-identity",
        action="store_true",
        help="do not read the nodes' "
        "preflight facts to find changed hardware (the plan rests on verdicts only)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress output")


def run(args: argparse.Namespace) -> int:
    from aibench import store
    from aibench.repair import planning
    from aibench.repair import retest as rt

    parent_dir = Path(args.run_dir)
    if not parent_dir.is_dir():
        raise UserError(f"{parent_dir}: not a directory", hint="give a run directory")
    parent = rt.load_parent(parent_dir, args.inventory)
    startup_over()
    run_dir = None
    found = rt.Identity({}, ("identity not read (--no-identity)",))
    if args.dry_run:
        with tempfile.TemporaryDirectory() as tmp:
            found = found if args.no_identity else rt.probe_identity(parent, Path(tmp))
    else:
        out = Path(args.output_dir) if args.output_dir else parent_dir.parent
        run_dir = store.new_run_dir(out, parent.suite.name)
        found = found if args.no_identity else rt.probe_identity(parent, run_dir / "identity")
    rplan = rt.make_plan(parent, found)
    for line in planning.plan_lines(rplan, parent.run.id, parent.sha256):
        print(line)
    if run_dir is None:
        return EXIT_OK
    return _run(args, parent, rplan, run_dir)


def _run(args: argparse.Namespace, parent: Any, rplan: Any, run_dir: Path) -> int:
    from aibench import pipeline
    from aibench.progress import Reporter
    from aibench.repair import retest as rt

    inputs, plan = rt.build(parent, rplan)
    started = pipeline.now_text()
    if not args.quiet:
        print(f"aibench: retest: {plan.run_count()} runs; results in {run_dir}", file=sys.stderr)
    with Reporter(plan.run_count(), quiet=args.quiet) as reporter:
        executed = pipeline.execute(plan, run_dir, progress=reporter)
    the_run = pipeline.assemble(
        inputs, executed, run_id=run_dir.name, started=started, signoff=parent.run.signoff
    )
    the_run = rt.record_inputs(the_run, parent, rplan)
    the_run, _ = pipeline.judge(the_run, inputs, by="aibench retest")
    pipeline.store_and_report(the_run, run_dir)
    alone = the_run.outcome.value
    fleet = rt.composed_outcome(parent, the_run, run_dir)
    print(f"retest {run_dir.name}: {alone} judged alone (of what it ran)")
    print(
        f"{fleet.outcome.value}: the fleet, {parent.run.id}'s attempts and this re-test "
        f"composed ({', '.join(f'{n} {k}' for k, n in fleet.counts().items())})"
    )
    for v in [v for v in fleet.verdicts if v.outcome.failing][:20]:
        print(
            f"  {v.outcome.value:<7} {v.check} [{','.join(v.subject) or '-'}] {v.reason}".rstrip()
        )
    print(f"run: {run_dir}")
    if executed.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_CHECKS_FAILED if fleet.failing else EXIT_OK


COMMAND = Command(
    name="retest",
    help="run again only what a run did not pass (and what changed hardware needs)",
    description=DESCRIPTION,
    epilog=EPILOG,
    add_arguments=add_arguments,
    run=run,
    order=12,
    startup=True,
)
