"""``aibench spec list|show|explain``: the built-in spec profiles and what they expect.

* ``list``: the built-in profiles with their descriptions.
* ``show NAME|FILE``: validate a spec and print its checks (a bad file is one ConfigError
  line naming file and key path, exit 2).
* ``explain NAME|FILE``: the expectations derived from the profile's ``hardware:`` block
  (line rate × efficiency, with sources), then each check's bound and source.
"""

from __future__ import annotations

import argparse

from aibench.commands import Command
from aibench.errors import EXIT_OK

EPILOG = """\
examples:
  aibench spec list
  aibench spec show h100-ndr
  aibench spec show ./my-spec.yaml
  aibench spec explain h100-ndr
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    sub.add_parser("list", help="list the built-in spec profiles")
    show = sub.add_parser("show", help="validate a spec and print its checks")
    show.add_argument("spec", metavar="NAME|FILE")
    explain = sub.add_parser("explain", help="print the derivation of a profile's numbers")
    explain.add_argument("spec", metavar="NAME|FILE", nargs="?")
    explain.add_argument(
        "--inventory", metavar="FILE", help="derive from the inventory's node facts instead"
    )


def _check_line(c: object) -> str:
    from aibench.thresholds.engine import _fact_expected, expected_text
    from aibench.thresholds.spec import Check

    assert isinstance(c, Check)
    if c.select is not None:
        what = f"{c.select.tool} {c.select.metric}"
        if c.select.step:
            what += (
                f" [{c.select.step if isinstance(c.select.step, str) else ','.join(c.select.step)}]"
            )
        if c.select.dims:
            what += " " + ",".join(f"{k}={v}" for k, v in c.select.dims.items())
        bound = expected_text(c)
        return f"{c.id}: {what} per {c.scope}, {c.aggregate}: {bound}"
    assert c.fact is not None
    return f"{c.id}: {c.fact.source} {c.fact.name} {_fact_expected(c)}"


def run(args: argparse.Namespace) -> int:
    from aibench.config import builtin_names
    from aibench.thresholds import check_spec_names, load_spec
    from aibench.thresholds.derive import explain

    if args.action == "list":
        for name in builtin_names("profiles"):
            spec = load_spec(name)
            desc = " ".join(spec.description.split())
            print(f"{name:<16} {desc[:100]}")
        return EXIT_OK
    if args.action == "explain" and args.inventory:
        return _explain_inventory(args.inventory)
    if not args.spec:
        from aibench.errors import UserError

        raise UserError("spec explain needs a spec name or file, or --inventory FILE")
    spec = load_spec(args.spec)
    check_spec_names(spec)
    print(f"{spec.name}  ({spec.source}, sha256 {spec.sha256[:12]})")
    if spec.description:
        print(" ".join(spec.description.split()))
    if args.action == "explain":
        print()
        if spec.hardware is None:
            print("no hardware: block, so nothing is derived; the checks' own sources:")
        else:
            print("derived from the hardware:")
            for line in explain(spec.hardware):
                print(f"  {line}")
        print()
        print("checks:")
    for c in spec.checks:
        print(f"  {_check_line(c)}")
        if args.action == "explain" and c.source:
            print(f"      source: {c.source}")
        if c.waiver:
            w = c.waiver
            print(f"      waiver: {w.owner} until {w.expires.isoformat()}: {w.reason}")
    return EXIT_OK


def _explain_inventory(path: str) -> int:
    """The derivation for every distinct node class of an inventory."""
    from pathlib import Path

    from aibench.inventory_file import load_inventory
    from aibench.thresholds.derive import explain, hardware_from_facts

    inventory = load_inventory(Path(path))
    classes: dict[tuple[str, ...], list[str]] = {}
    for node in inventory.nodes:
        lines = tuple(explain(hardware_from_facts(node.facts)))
        classes.setdefault(lines, []).append(node.name)
    for lines, names in classes.items():
        shown = ", ".join(names[:8]) + (f" (+{len(names) - 8} more)" if len(names) > 8 else "")
        print(f"{len(names)} node(s): {shown}")
        for line in lines or ("(no gpus or hcas with rate_gbps in the facts: nothing derived)",):
            print(f"  {line}")
    return EXIT_OK


COMMAND = Command(
    name="spec",
    help="list, show and explain spec profiles (the derivation of their numbers)",
    add_arguments=add_arguments,
    run=run,
    description=__doc__ or "",
    epilog=EPILOG,
    order=45,
)
