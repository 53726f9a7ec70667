"""``aibench plan``: print the schedule of a suite over an inventory, touching no node.

The header names the suite, the inventory, the number of runs and rounds and the
estimated duration; then per step and round how many runs it holds and how many run at
once under the inventory's limits, and per run each process: the node, its role (setup,
server, client or launcher) and its command line with its environment (secret-looking
values shown as ``***``). ``aibench run --dry-run`` prints the same.
"""

from __future__ import annotations

import argparse

from aibench.commands import Command

EPILOG = """\
examples:
  aibench plan --suite acceptance
  aibench plan --suite acceptance --inventory cluster.yaml --steps iperf3-tcp
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    from aibench.commands.run import add_arguments as run_args

    run_args(p)


def run(args: argparse.Namespace) -> int:
    from aibench.commands.run import load_inputs
    from aibench.plan import build_plan, format_plan

    inputs = load_inputs(args)
    print(format_plan(build_plan(inputs.suite, inputs.inventory)))
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
