"""``aibench metrics RUN_DIR``: a run's Prometheus metrics, to a file, stdout or a Pushgateway.

The metrics are those of ``metrics.prom`` (see :mod:`aibench.reports.prometheus`): run
outcome and timestamps, verdicts per check and outcome, the subjects (nodes, pairs) with
a verdict other than PASS, and the observed value per check and subject. ``--measurements``
adds one series per measurement (high cardinality: for ad hoc use, not for a long-lived
Prometheus). ``-o FILE`` writes atomically (a temporary name in the same directory, then
renamed), as node-exporter's textfile collector needs; ``--pushgateway URL`` replaces the
group ``job=<--job>, suite=<suite>`` on a Pushgateway. With neither, the text goes to
stdout. A FILE in a run directory is written only when the directory matches its manifest
(exit 4 otherwise), and the manifest is written again after it (its signature kept when
nothing signed changed, else removed with a line saying so). Exit code: 0 when delivered;
2 for a bad argument; 3 when the Pushgateway cannot be reached or refuses the push; 4 for
a run directory that does not match its manifest.
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


def _target(path: Path) -> Path | None:
    """The run directory ``-o FILE`` writes into, if any: written into only when it
    matches its manifest (exit 4 otherwise)."""
    from aibench import manifest

    return manifest.writing_into(path.parent, "-o") if path.parent.is_dir() else None


def _write_output(path: Path, run_dir: Path | None, text: str) -> None:
    """``-o FILE``; a FILE in a run directory (its ``metrics.prom``) is followed by its
    manifest, when it has one, written again: the signature stays when the bytes are the
    ones signed, and is removed, with a line saying so, when not."""
    from aibench import manifest

    had_signature = run_dir is not None and (run_dir / manifest.SIGNATURE).exists()
    _write_atomic(path, text)
    print(f"wrote {path}", file=sys.stderr)
    if run_dir is not None and (run_dir / manifest.MANIFEST).is_file():
        print(f"wrote {manifest.write(run_dir)}", file=sys.stderr)
        note = manifest.signature_note(run_dir, had_signature)
        if note:
            print(note, file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from aibench.reports import prometheus
    from aibench.store import load_run

    out = Path(args.output) if args.output else None
    run_dir = _target(out) if out is not None else None  # checked before anything is read
    the_run = load_run(Path(args.run_dir))
    if out is not None:
        _write_output(out, run_dir, prometheus.render(the_run, measurements=args.measurements))
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
