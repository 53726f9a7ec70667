"""``aibench preflight``: the node checklist on every node, side by side."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

from aibench.commands import Command
from aibench.errors import EXIT_CANNOT_RUN, EXIT_CHECKS_FAILED, EXIT_OK, UserError
from aibench.instants import now_text

DESCRIPTION = """\
Collect the preflight facts (CPU, memory, NUMA, kernel, sysctl, governor, THP, limits,
disks and data-directory mounts, GPUs, DCGM, HCAs, Xid events, container runtimes, tool
versions) on every node of the inventory, print them side by side with the values that
differ from the other nodes marked, compare the golden configuration (driver,
firmware, kernel, NCCL, BIOS, GPU count) across the fleet, check what the inventory
declares (gpus.count, hcas with their rate, data_dirs) against what was found, and judge
the facts with the fact checks of a spec: --spec, else the suite's own spec (the
built-in preflight suite's is 'preflight': the benchmark tools are installed, memory and
CPU visible, no Xid errors). A spec's checks of nodes with a role nobody has (no node
labelled role=inference) are listed as not applicable.

Exit status: 0 when every check passes (or warns), 1 when a consistency, inventory or
spec check fails (or could not be verified), 3 when no node could be inspected at all.
"""

EPILOG = """\
examples:
  aibench preflight
  aibench preflight --inventory cluster.yaml --spec seed-reference --output preflight.json
  aibench preflight --inventory cluster.yaml --nodes gpu[01-04] --keep-raw /tmp/preflight
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--inventory", metavar="FILE", help="inventory YAML (default: this machine)")
    p.add_argument(
        "--spec",
        metavar="NAME|FILE",
        help="judge the facts against this spec (default: the suite's spec)",
    )
    p.add_argument("--nodes", metavar="HOSTLIST", help="only these nodes, e.g. gpu[01-04]")
    p.add_argument("--suite", default="preflight", help="suite with the preflight step(s)")
    p.add_argument("--output", metavar="FILE", help="write the results (run.json format) here")
    p.add_argument("--keep-raw", metavar="DIR", help="keep the raw command outputs in DIR")
    p.add_argument("--quiet", action="store_true", help="no progress output")


def run(args: argparse.Namespace) -> int:
    from aibench import store
    from aibench.inventory import local_inventory
    from aibench.inventory_file import load_inventory
    from aibench.manifest import not_into_run_dir
    from aibench.model import StepStatus
    from aibench.pipeline import Executed, Executors, Inputs, select_nodes
    from aibench.plan import build_plan
    from aibench.preflight_run import collect, facts_of, table
    from aibench.progress import Reporter
    from aibench.suite import load_suite
    from aibench.thresholds import load_spec

    if args.output:
        not_into_run_dir(Path(args.output).parent, "--output")
    if args.keep_raw:
        not_into_run_dir(Path(args.keep_raw), "--keep-raw")
    suite = load_suite(args.suite)
    if not any(s.tool == "preflight" for s in suite.steps):
        raise UserError(f"suite {suite.name} has no preflight step")
    inventory = load_inventory(Path(args.inventory)) if args.inventory else local_inventory()
    if args.nodes:
        inventory = select_nodes(inventory, args.nodes)
    spec = load_spec(args.spec or suite.spec or "preflight")
    started = now_text()
    with tempfile.TemporaryDirectory(prefix="aibench-preflight-") as tmp:
        run_dir = Path(args.keep_raw) if args.keep_raw else Path(tmp)
        run_dir.mkdir(parents=True, exist_ok=True)
        total = len(build_plan(suite, inventory).invocations)
        reporter = Reporter(total, quiet=args.quiet)
        with reporter:
            results, unreachable = collect(
                suite, inventory, run_dir, Executors(inventory), reporter
            )
    facts = facts_of(results)
    nodes = [n.name for n in inventory.nodes]
    run_obj, judgement = _judged(
        Inputs(suite, inventory, spec), Executed(results=results, unreachable=unreachable), started
    )
    out = sys.stdout
    print(table(facts, nodes), file=out)
    _print_findings(results, run_obj.verdicts, out)
    for line in judgement.notes:
        print(f"note: {line}", file=out)
    why = "--spec" if args.spec else f"the spec of suite {suite.name}"
    print(f"judged against {spec.name} ({why}); benchmark checks: use aibench run", file=out)
    if args.output:
        store.write_json_atomic(Path(args.output), run_obj.to_dict())
        print(f"results: {args.output}", file=out)
    if results and all(r.status is StepStatus.UNREACHABLE for r in results):
        print("aibench: error: no node could be reached", file=sys.stderr)
        return EXIT_CANNOT_RUN
    return EXIT_CHECKS_FAILED if any(v.outcome.failing for v in run_obj.verdicts) else EXIT_OK


def _print_findings(results: list[Any], verdicts: list[Any], out: TextIO) -> None:
    """The steps that did not finish cleanly, then every check that did not pass."""
    from aibench.model import StepStatus

    problems = [r for r in results if r.status is not StepStatus.OK]
    if problems:
        print("\nsteps that did not finish cleanly:", file=out)
        for r in problems:
            print(f"  {r.status.value:<11} {r.step_id}: {r.reason}", file=out)
    shown = [v for v in verdicts if v.outcome.value != "PASS"]
    if shown:
        print("\nchecks:", file=out)
        for v in shown:
            subject = ",".join(v.subject) or "-"
            observed = v.observed_text or ("" if v.observed is None else f"{v.observed:g} {v.unit}")
            print(
                f"  {v.outcome.value:<7} {v.check} [{subject}] {observed} expected {v.expected}",
                file=out,
            )


def _judged(inputs: Any, executed: Any, started: str) -> tuple[Any, Any]:
    """The preflight's Run, assembled by the pipeline like any run, and its judgement:
    the spec's fact checks (the benchmark checks belong to aibench run; a note says how
    many were left out), recorded in the run's judgements."""
    from aibench.judge import judge_run, record
    from aibench.pipeline import assemble

    run_id = f"preflight-{started.replace(':', '').replace('-', '')}"
    run_obj = assemble(inputs, executed, run_id=run_id, started=started)
    judgement = judge_run(run_obj, inputs.spec, facts_only=True)
    return record(run_obj, judgement, "aibench preflight"), judgement


COMMAND = Command(
    name="preflight",
    help="check every node's hardware and software against the fleet (and a spec)",
    description=DESCRIPTION,
    epilog=EPILOG,
    add_arguments=add_arguments,
    run=run,
    order=15,
)
