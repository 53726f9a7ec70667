"""``aibench plan``: print the schedule of a suite over an inventory, touching no node."""

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
    from aibench.commands.run import _fmt_seconds

    lines = [
        f"suite {plan.suite.name} ({plan.suite.source}) on {len(plan.inventory)} node(s) "
        f"of {plan.inventory.name}: {len(plan.invocations)} runs in {len(plan.rounds)} rounds, "
        f"about {_fmt_seconds(plan.estimated_seconds())}"
    ]
    current = None
    for rnd in plan.rounds:
        if rnd.step != current:
            current = rnd.step
            lines.append(f"\nstep {rnd.step} ({rnd.tool})")
        lines.append(
            f"  repeat {rnd.repeat + 1} round {rnd.round + 1}: "
            f"{len(rnd.invocations)} run(s) at once"
        )
        for inv in rnd.invocations:
            for s in inv.setup:
                lines.append(f"    {s.host:<16} setup   {shlex.join(s.argv)}")
            for s in inv.servers:
                lines.append(f"    {s.host:<16} server  {shlex.join(s.argv)}")
            env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(inv.client.env.items()))
            cmd = f"{env} {shlex.join(inv.client.argv)}".strip()
            lines.append(f"    {inv.client.host:<16} client  {cmd}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from aibench.commands.run import load_inputs
    from aibench.orchestrator import build_plan

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
