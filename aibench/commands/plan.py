"""``aibench plan``: print the schedule of a suite over an inventory, touching no node.

The header names the suite, the inventory, the number of runs and rounds and the
estimated duration; then per step and round how many runs it holds and how many run at
once under the inventory's limits, and per run each process: the node, its role (setup,
server, client or launcher) and its command line with its environment (secret-looking
values shown as ``***``). ``aibench run --dry-run`` prints the same.
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from aibench.commands import Command

EPILOG = """\
examples:
  aibench plan --suite acceptance
  aibench plan --suite acceptance --inventory cluster.yaml --steps iperf3-tcp
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    from aibench.commands.run import add_arguments as run_args

    run_args(p)


def format_plan(plan: Any) -> str:
    from aibench.commands.run import fmt_seconds

    lines = [
        f"suite {plan.suite.name} ({plan.suite.source}) on {len(plan.inventory)} node(s) "
        f"of {plan.inventory.name}: {len(plan.invocations)} runs in {len(plan.rounds)} rounds, "
        f"about {fmt_seconds(plan.estimated_seconds())}"
    ]
    current = None
    for rnd in plan.rounds:
        if rnd.step != current:
            current = rnd.step
            lines.append(f"\nstep {rnd.step} ({rnd.tool})")
        n, at_once = len(rnd.invocations), plan.at_once(rnd)
        concurrency = f"{n} run(s) at once" if at_once >= n else f"{n} run(s), {at_once} at once"
        lines.append(f"  repeat {rnd.repeat + 1} round {rnd.round + 1}: {concurrency}")
        for inv in rnd.invocations:
            for s in inv.setup:
                lines.append(f"    {s.host:<16} setup   {_command(s)}")
            for s in inv.servers:
                lines.append(f"    {s.host:<16} server  {_command(s)}")
            lines.append(f"    {inv.client.host:<16} {inv.client.role:<7} {_command(inv.client)}")
    return "\n".join(lines)


def _command(spec: Any) -> str:
    """``NAME=value ... argv`` as a shell would read it; secret-looking values as ***."""
    from aibench.executors.base import REDACTED, redact_env

    env = " ".join(
        f"{k}={v if v == REDACTED else shlex.quote(v)}"
        for k, v in sorted(redact_env(spec.env).items())
    )
    return f"{env} {shlex.join(spec.argv)}".strip()


def run(args: argparse.Namespace) -> int:
    from aibench.commands.run import load_inputs
    from aibench.plan import build_plan

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
