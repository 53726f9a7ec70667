"""``aibench verify RUN_DIR``: check a run directory against its manifest (and signature).

Recomputes the sha256 of every file and prints each one that ``changed``, is ``missing``
or was ``added`` since ``manifest.sha256`` was written, and each symbolic link (``link:``;
aibench writes none, and no command follows one, so a link always fails).
``--signers ALLOWED_SIGNERS`` (with ``--identity ID``, or every principal the file
lists) also checks ``manifest.sha256.sig`` with ``ssh-keygen -Y verify -n
aibench-manifest``. ``--sign KEY`` signs the manifest after the files were found intact.

Exit codes: 0 every file matches (and the signature is good), 1 a file differs or the
signature is missing or bad, 2 a bad argument (no such directory, no manifest).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from aibench.commands import Command
from aibench.errors import EXIT_CHECKS_FAILED, EXIT_OK, UserError

EPILOG = """\
examples:
  aibench verify runs/20261202-101500-acceptance
  aibench verify RUN_DIR --sign ~/.ssh/id_ed25519
  aibench verify RUN_DIR --signers allowed_signers --identity vendor@example.com
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory with manifest.sha256")
    p.add_argument("--sign", metavar="KEY", help="sign manifest.sha256 with this OpenSSH key")
    p.add_argument(
        "--signers",
        metavar="ALLOWED_SIGNERS",
        help="check manifest.sha256.sig against this allowed_signers file",
    )
    p.add_argument("--identity", metavar="ID", help="the principal that must have signed")


def run(args: argparse.Namespace) -> int:
    from aibench import manifest

    run_dir = Path(args.run_dir)
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: not a directory", hint="give a run directory")
    if args.identity and not args.signers:
        raise UserError("--identity needs --signers ALLOWED_SIGNERS")
    check = manifest.verify(run_dir)
    for line in check.lines():
        print(line)
    code = EXIT_OK
    if check.ok:
        print(f"OK: {check.checked} files match {run_dir / manifest.MANIFEST}")
    else:
        print(
            f"FAILED: {len(check.changed)} changed, {len(check.missing)} missing, "
            f"{len(check.added)} added (of {check.checked} listed)"
        )
        code = EXIT_CHECKS_FAILED
    if args.signers:
        try:
            who = manifest.verify_signature(run_dir, Path(args.signers), args.identity)
        except manifest.SignatureError as exc:
            print(f"BAD SIGNATURE: {exc}")
            code = EXIT_CHECKS_FAILED
        else:
            print(f"OK: good signature by {who}")
    if args.sign:
        if code != EXIT_OK:
            print("not signing: the run directory does not match its manifest")
            return code
        print(f"wrote {manifest.sign(run_dir, Path(args.sign))}")
    return code


COMMAND = Command(
    name="verify",
    help="check a run directory against its sha256 manifest and signature",
    add_arguments=add_arguments,
    run=run,
    description=__doc__ or "",
    epilog=EPILOG,
    order=45,
)
