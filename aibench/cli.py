"""The ``aibench`` command line.

User errors print one line (``aibench: error: ...``) and exit with their documented code;
``--debug`` shows the traceback instead. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import errno
import gc
import os
import sys
from collections.abc import Sequence

from aibench import __version__
from aibench.commands import startup_over
from aibench.errors import (
    EXIT_BROKEN_PIPE,
    EXIT_CANNOT_RUN,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    UserError,
)

EPILOG = """\
exit codes:
  0  every check PASS, WARN or WAIVED
  1  at least one check FAIL, MISSING or ERROR
  2  usage or configuration error (the message names the file and key)
  3  nothing could run (no reachable node, tool missing everywhere), or the run could
     not go on: its output directory is full (what was measured is kept; free space and
     resume with: aibench run --resume RUN_DIR)
  4  a run directory does not match its manifest or holds a link: nothing is written
     into it (aibench verify RUN_DIR names what differs)
  130 interrupted (SIGINT); what was measured is kept, the record and reports written
      (resume with: aibench run --resume RUN_DIR)
  143 stopped by SIGTERM (a scheduler's cancel); the same as 130

examples:
  aibench run --suite acceptance                      # this machine, default spec
  aibench run --suite acceptance --inventory cluster.yaml --spec h100-ndr
  aibench plan --suite acceptance --inventory cluster.yaml
  aibench parse nccl-tests all_reduce.log --format json
  aibench report runs/20261202-101500-acceptance

Run 'aibench COMMAND --help' for the options of a command.
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of command ``only`` alone where it exists (what
    ``main`` builds for ``aibench NAME ...``: the other commands' modules stay unimported;
    ``aibench --help`` and an unknown name get them all)."""
    from aibench.commands import COMMANDS

    parser = _Parser(
        prog="aibench",
        description=(
            "Benchmarks and acceptance tests for AI compute clusters: drives fio, iperf3/iperf2,"
            " perftest, NCCL-tests and MLPerf across the nodes, judges the numbers against a"
            " written spec and writes a report that a vendor and a customer can sign."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"aibench {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="show tracebacks for errors (for bug reports)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    one = COMMANDS.find(only) if only else None
    for cmd in [one] if one is not None else sorted(COMMANDS, key=lambda c: (c.order, c.name)):
        p = sub.add_parser(
            cmd.name,
            help=cmd.help,
            description=cmd.description or cmd.help,
            epilog=cmd.epilog or None,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        p.add_argument(
            "--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
        )
        cmd.add_arguments(p)
        p.set_defaults(_run=cmd.run, _startup=cmd.startup)
    return parser


def _program_start() -> None:
    """The start of aibench run as a program (not called from Python): no search for
    pydantic plug-ins, no garbage collection until the command has started."""
    # pydantic looks for plug-ins of its own by reading the metadata of every installed
    # distribution when it builds its first validator, a twentieth of a second of every
    # command; aibench has none. A value the user set is kept.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    # the collector stays off while the command starts (see startup_over)
    gc.disable()


def _disk_full(exc: OSError) -> int:
    """A disk that filled up during the command: one line, with how to finish the run."""
    where = f": {exc.filename}" if exc.filename else ""
    print(
        f"aibench: error: {exc.strerror}{where} (hint: what was measured so far is kept "
        "in the run directory's steps.jsonl; free space and finish the run with "
        "aibench run --resume RUN_DIR)",
        file=sys.stderr,
    )
    return EXIT_CANNOT_RUN


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:
        _program_start()
    words = list(sys.argv[1:] if argv is None else argv)
    first = next((w for w in words if not w.startswith("-")), None)
    parser = build_parser(only=first)
    args = parser.parse_args(words)
    if not getattr(args, "command", None):
        parser.print_help()
        return EXIT_USAGE
    debug = bool(getattr(args, "debug", False))
    if not getattr(args, "_startup", False):
        startup_over()
    try:
        code: int = args._run(args)
        if argv is None:
            # the process ends next: its objects need no last collection (a tenth of a
            # second of every run went to the collector at exit)
            gc.freeze()
        return code
    except UserError as exc:
        if debug:
            raise
        print(f"aibench: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("aibench: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader went away (aibench plan | head): end quietly, as a command killed by
        # SIGPIPE does, and keep Python from complaining when it flushes stdout at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except OSError as exc:
        if debug or exc.errno not in _DISK_FULL:
            raise
        return _disk_full(exc)
    finally:
        startup_over()  # a command that ended before its start-up did


_DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
