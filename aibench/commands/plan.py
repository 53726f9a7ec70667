"""``aibench plan``: print the schedule of a suite over an inventory, touching no node.

The header names the suite, the inventory, the number of runs and rounds and the
estimated duration; then per step how long a run is expected to take, its runs, rounds
and estimate, how many run at once under the inventory's limits, and one example run:
each process's node, its role (setup, server, client or launcher) and its command line
with its environment (secret-looking values shown as ``***``). ``--full`` lists every
round and every run instead of the example (all pairs of a thousand nodes are millions
of lines). ``aibench run --dry-run`` prints the same.
"""

from __future__ import annotations

import argparse

from aibench.commands import Command

EPILOG = """\
examples:
  aibench plan --suite acceptance
  aibench plan --suite acceptance --inventory cluster.yaml --steps iperf3-tcp
  aibench plan --suite acceptance --inventory cluster.yaml --full | less
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    from aibench.commands.run import add_arguments as run_args

    run_args(p)


def run(args: argparse.Namespace) -> int:
    from aibench.commands.run import load_inputs, print_plan
    from aibench.plan import build_plan

    if args.suite == "soak":  # the soak's own plan: chunks, stressors and sampler per node
        from aibench.commands.run import soak_suite

        args.dry_run = True
        return soak_suite(args)
    inputs = load_inputs(args)
    print_plan(build_plan(inputs.suite, inputs.inventory), full=args.full)
    return 0


COMMAND = Command(
    name="plan",
    help="print the schedule (rounds, commands per node, duration) without running it",
    description="Print which commands would run where, in which rounds, and how long it takes.",
    epilog=EPILOG,
    add_arguments=add_arguments,
    run=run,
    order=20,
)
