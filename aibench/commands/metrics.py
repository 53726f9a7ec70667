"""``aibench metrics RUN_DIR``: a run's Prometheus metrics, to a file, stdout or a Pushgateway.

The metrics are those of ``metrics.prom`` (see :mod:`aibench.reports.prometheus`): run
outcome and timestamps, verdicts per check and outcome, the subjects (nodes, pairs) with
a verdict other than PASS, and the observed value per check and subject. ``--measurements``
adds one series per measurement (high cardinality: for ad hoc use, not for a long-lived
Prometheus). ``-o FILE`` writes atomically (a temporary name in the same directory, then
renamed), as node-exporter's textfile collector needs; ``--pushgateway URL`` replaces the
group ``job=<--job>, suite=<suite>`` on a Pushgateway. With neither, the text goes to
stdout. Exit code: 0 when delivered; 2 for a bad argument; 3 when the Pushgateway
cannot be reached or refuses the push.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from aibench.commands import Command
from aibench.errors import EXIT_OK, UserError

EPILOG = """\
examples:
  aibench metrics runs/20261202-101500-nightly -o /var/lib/node_exporter/textfile/aibench.prom
  aibench metrics runs/20261202-101500-nightly --pushgateway http://127.0.0.1:9091
  aibench metrics RUN_DIR --measurements > all-series.prom
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory written by aibench run")
    p.add_argument(
        "--measurements",
        action="store_true",
        help="also one series per measurement (many series: a 1024-node run has >100,000)",
    )
    p.add_argument("-o", "--output", metavar="FILE", help="write the text format to FILE")
    p.add_argument("--pushgateway", metavar="URL", help="push to this Pushgateway (http[s]://)")
    p.add_argument("--job", default="aibench", help="the Pushgateway job label (aibench)")
    p.add_argument(
        "--timeout", type=float, default=30.0, help="seconds to wait for the Pushgateway (30)"
    )


def _write_atomic(path: Path, text: str) -> None:
    if path.is_dir():
        raise UserError(f"{path}: is a directory", hint="-o takes a file name")
    if not path.parent.is_dir():
        raise UserError(f"{path.parent}: no such directory")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def run(args: argparse.Namespace) -> int:
    from aibench.reports import prometheus
    from aibench.store import load_run

    the_run = load_run(Path(args.run_dir))
    if args.output:
        _write_atomic(Path(args.output), prometheus.render(the_run, measurements=args.measurements))
        print(f"wrote {args.output}", file=sys.stderr)
    if args.pushgateway:
        prometheus.push(
            the_run,
            args.pushgateway,
            job=args.job,
            measurements=args.measurements,
            timeout=args.timeout,
        )
        print(f"pushed {the_run.suite} to {args.pushgateway} (job {args.job})", file=sys.stderr)
    if not args.output and not args.pushgateway:
        sys.stdout.write(prometheus.render(the_run, measurements=args.measurements))
    return EXIT_OK


COMMAND = Command(
    name="metrics",
    help="a run's Prometheus metrics: to a file (textfile collector), stdout or a Pushgateway",
    add_arguments=add_arguments,
    run=run,
    description=__doc__ or "",
    epilog=EPILOG,
    order=58,
)
