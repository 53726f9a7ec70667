"""``aibench accept RUN [RUN ...]``: the acceptance record of the fleet, of its attempts."""

from __future__ import annotations

import argparse
from pathlib import Path

from aibench.commands import Command
from aibench.errors import EXIT_CHECKS_FAILED, EXIT_OK, UserError

DESCRIPTION = """\
Compose the acceptance record of the fleet from its attempts: the first acceptance run,
its re-tests (aibench retest), or a record composed before. For each step and node or
pair the latest attempt decides; the composed fleet is judged as one run (outliers,
consistency and coverage over the composed fleet) with the spec the attempts were judged
with. Every earlier attempt stays visible: each is copied under attempts/, and the
report's repairs section lists what failed, what changed and what passed in the end.

The record is a run directory like any other: run.json, reports, manifest.sha256 (and a
signature with --sign); aibench verify checks it and aibench check judges it again from
its run.json alone. Runs judged with different specs, that ran different suites, or of
different inventories are refused unless --allow-mixed is given; the first page then says so.
"""

EPILOG = """\
examples:
  aibench accept runs/20261203-101500-acceptance runs/20261204-093000-acceptance
  aibench accept runs/A runs/B --waive gpu17="returned to the vendor, RMA 4411"
  aibench accept runs/A runs/B --sign ~/.ssh/id_ed25519 --vendor ACME --customer Example

exit codes: 0 the composed fleet passes, 1 it does not, 2 a bad argument or a refused
composition.
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="+", metavar="RUN", help="run directories or composed records")
    p.add_argument(
        "--output-dir", metavar="DIR", help="where the record goes (default: beside the last RUN)"
    )
    p.add_argument(
        "--waive",
        action="append",
        default=[],
        metavar="NODE=REASON",
        help="take NODE out of the contract, with the reason (repeatable)",
    )
    p.add_argument(
        "--allow-mixed",
        action="store_true",
        help="compose runs judged with "
        "different specs or of different inventories (the first page says so)",
    )
    p.add_argument("--sign", metavar="KEY", help="sign manifest.sha256 with this OpenSSH key")
    p.add_argument("--vendor", default="", help="for the sign-off block of the report")
    p.add_argument("--customer", default="", help="for the sign-off block of the report")
    p.add_argument("--lang", choices=("en", "zh"), default="en", help="report language")


def waivers(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        node, sep, reason = item.partition("=")
        if not sep or not node.strip():
            raise UserError(f"--waive {item!r}: give NODE=REASON")
        out[node.strip()] = reason.strip()
    return out


def run(args: argparse.Namespace) -> int:
    from aibench.repair import accept, repairs

    paths = [Path(r) for r in args.runs]
    for p in paths:
        if not p.is_dir():
            raise UserError(f"{p}: not a directory", hint="give run directories")
    opts = accept.Options(
        waived=waivers(args.waive),
        allow_mixed=args.allow_mixed,
        sign=Path(args.sign) if args.sign else None,
        lang=args.lang,
        signoff={"vendor": args.vendor, "customer": args.customer},
    )
    out = Path(args.output_dir) if args.output_dir else paths[-1].parent
    record, run_dir = accept.compose_record(paths, out, opts)
    print(
        f"{record.outcome.value}: {record.suite} accepted over "
        f"{len(record.inputs['accept']['attempts'])} attempt(s) against {record.spec}"
    )
    for line in repairs.lines(record.inputs["accept"]):
        print(f"  repair: {line}")
    for v in [v for v in record.verdicts if v.outcome.failing][:20]:
        print(
            f"  {v.outcome.value:<7} {v.check} [{','.join(v.subject) or '-'}] {v.reason}".rstrip()
        )
    print(f"record: {run_dir}")
    return EXIT_CHECKS_FAILED if any(v.outcome.failing for v in record.verdicts) else EXIT_OK


COMMAND = Command(
    name="accept",
    help="compose one acceptance record of the fleet from a run and its re-tests",
    description=DESCRIPTION,
    epilog=EPILOG,
    add_arguments=add_arguments,
    run=run,
    order=13,
)
