"""Tamper-evident hand-over: a sha256 manifest of a run directory, optionally signed.

``manifest.sha256`` is in the format ``sha256sum`` writes and ``sha256sum -c`` reads: one
line per file, ``<64 hex digits><two spaces><relative path>``, sorted by path, covering every
regular file below the run directory except the manifest itself, its signature and the
manifest being written (``.manifest.sha256.partial``, renamed when it is complete). Paths
use ``/`` on every platform.

:func:`verify` recomputes the hashes and names each file that changed, is missing or was
added, and each symbolic link (or other entry that is not a regular file or a folder):
aibench writes none, so a link is a change, and no command follows one (a received
``raw/x.out -> ~/.ssh/id_ed25519`` is never read: :func:`open_inside`). A command that
writes into a run directory calls :func:`guard` first and refuses one that fails
verification (:class:`AlteredError`, exit 4); :func:`write` keeps the signature when the
manifest it would write is the one that was signed, byte for byte, and removes it (saying
so through :func:`signature_note`) only when a signed file's bytes changed.

Signing uses OpenSSH signatures (``ssh-keygen -Y sign``, OpenSSH 8.1 or later;
tested with OpenSSH 9.2 on Debian 12) in the namespace ``aibench-manifest``, so that any
ed25519/RSA/ECDSA key a vendor already has can sign and a customer can check with an
``allowed_signers`` file. ``ssh-keygen`` is always called with an argv list, never a shell.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from aibench.errors import EXIT_ALTERED, UserError

MANIFEST = "manifest.sha256"
SIGNATURE = MANIFEST + ".sig"
NAMESPACE = "aibench-manifest"
_PARTIAL = f".{MANIFEST}.partial"  # the manifest being written
_EXCLUDED = frozenset({MANIFEST, SIGNATURE, _PARTIAL})
_CHUNK = 1 << 20


class AlteredError(UserError):
    """A run directory that does not match its manifest, or holds a link: nothing is
    written into it (exit 4)."""

    exit_code = EXIT_ALTERED


class SignatureError(UserError):
    """The signature is missing, does not match the manifest, or its key is not allowed."""

    exit_code = 1


def sha256_file(path: str | os.PathLike[str]) -> str:
    with open(path, "rb") as f:
        chunk = f.read(_CHUNK)  # most raw logs are a few kB: one read, no second one at EOF
        h = hashlib.sha256(chunk)
        while len(chunk) == _CHUNK and (chunk := f.read(_CHUNK)):
            h.update(chunk)
    return h.hexdigest()


def _files(run_dir: Path, odd: list[str] | None = None) -> list[str]:
    """Every regular file below ``run_dir`` but the manifest and its signature, as sorted
    ``/``-separated relative paths (see :func:`_walk`)."""
    return list(_walk(run_dir, odd))


def _walk(run_dir: Path, odd: list[str] | None = None) -> Iterator[str]:
    """:func:`_files` one at a time, in their sorted order, holding one folder's names at a
    time: a large run has a raw log or two per step. A folder's entries are gone over in
    the order of their names with ``/`` after a folder's, which is the order of the whole
    paths. Symbolic links (and fifos, sockets, devices) are not listed, not followed and
    not entered: they are added to ``odd``. A folder that cannot be read is passed over.
    One ``scandir`` per folder: a ``stat`` per file was most of the time."""
    stack = [iter(_entries("", os.fspath(run_dir), odd))]
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
        elif entry[1] is None:
            yield entry[0]
        else:
            stack.append(iter(_entries(entry[0], entry[1], odd)))


def _entries(prefix: str, folder: str, odd: list[str] | None) -> list[tuple[str, str | None]]:
    """(relative path, the folder's own path or None for a file) of ``folder``'s entries,
    sorted as whole paths sort: a folder's relative path ends in ``/``."""
    out: list[tuple[str, str | None]] = []
    try:
        with os.scandir(folder) as entries:
            for e in entries:
                if e.is_dir(follow_symlinks=False):
                    out.append((f"{prefix}{e.name}/", e.path))
                elif e.is_file(follow_symlinks=False):
                    if prefix + e.name not in _EXCLUDED:
                        out.append((prefix + e.name, None))
                elif odd is not None:
                    odd.append(prefix + e.name)
    except PermissionError:
        pass
    out.sort()
    return out


def compute(run_dir: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file the manifest covers."""
    root = os.fspath(run_dir)
    return {rel: sha256_file(os.path.join(root, rel)) for rel in _walk(run_dir)}


def lines(run_dir: Path, odd: list[str] | None = None) -> Iterator[str]:
    """The manifest's lines, a file at a time, in the order of their paths."""
    root = os.fspath(run_dir)
    for rel in _walk(run_dir, odd):
        if "\n" in rel or "\\" in rel:
            raise UserError(f"cannot list file name {rel!r} in a manifest (newline or backslash)")
        yield f"{sha256_file(os.path.join(root, rel))}  {rel}\n"


def write(run_dir: Path) -> Path:
    """Write ``manifest.sha256`` (last, after every other file) a line at a time. When
    its bytes are those of the manifest already there, that one is kept, and so is its
    signature: nothing that was signed changed. Otherwise the signature, which no longer
    matches, is removed (:func:`signature_note` says so). A link in the run directory
    is refused (:class:`AlteredError`): a manifest never covers what a link points at."""
    path, tmp = run_dir / MANIFEST, run_dir / _PARTIAL  # the walk passes over the latter
    odd: list[str] = []
    try:
        with tmp.open("w", encoding="utf-8") as f:
            f.writelines(lines(run_dir, odd))
        if odd:
            raise AlteredError(_odd_message(run_dir, odd))
        if _same_bytes(tmp, path):
            return path
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    stale = run_dir / SIGNATURE
    if stale.exists():
        stale.unlink()
    return path


def _same_bytes(new: Path, old: Path) -> bool:
    try:
        if old.is_symlink() or not old.is_file():
            return False
        return new.stat().st_size == old.stat().st_size and sha256_file(new) == sha256_file(old)
    except OSError:
        return False


def _odd_message(run_dir: Path, odd: list[str]) -> str:
    more = f" and {len(odd) - 1} more" if len(odd) > 1 else ""
    return (
        f"{run_dir}: {odd[0]}{more} is a symbolic link or not a regular file; a run "
        "directory holds only files aibench wrote, and none is followed"
    )


def parse(text: str, source: str = MANIFEST) -> dict[str, str]:
    hashes: dict[str, str] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        digest, sep, rel = line.partition("  ")
        if not sep:  # sha256sum's binary marker form: "<hash> *<path>"
            digest, sep, rel = line.partition(" *")
        digest = digest.strip().lower()
        if not sep or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise UserError(f"{source} line {lineno}: not a sha256sum line: {line[:80]!r}")
        hashes[rel] = digest
    return hashes


@dataclass(frozen=True)
class Check:
    """The result of comparing a run directory with its manifest."""

    changed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    checked: int = 0
    links: list[str] = field(default_factory=list)  # links and other non-regular entries

    @property
    def ok(self) -> bool:
        return not (self.changed or self.missing or self.added or self.links)

    def lines(self) -> list[str]:
        out = [f"link: {p} (not followed)" for p in self.links]
        out += [f"changed: {p}" for p in self.changed]
        out += [f"missing: {p}" for p in self.missing]
        out += [f"added: {p}" for p in self.added]
        return out

    def summary(self) -> str:
        """``2 changed, 1 link (run.json, raw/x.out)``: what differs, in one line."""
        kinds = (
            ("link", self.links), ("changed", self.changed),
            ("missing", self.missing), ("added", self.added),
        )  # fmt: skip
        counts = ", ".join(
            f"{len(v)} {k}{'s' if k == 'link' and len(v) > 1 else ''}" for k, v in kinds if v
        )
        names = [p for _, v in kinds for p in v]
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        return f"{counts} ({shown})"


def verify(run_dir: Path) -> Check:
    path = run_dir / MANIFEST
    odd: list[str] = []
    present = set(_files(run_dir, odd))
    if MANIFEST in odd:
        return Check(links=sorted(odd))
    if not path.is_file():
        raise UserError(f"{path}: no manifest", hint="write one with: aibench report RUN_DIR")
    listed = parse(path.read_text(encoding="utf-8"), str(path))
    changed, missing = [], []
    for rel in sorted(listed):
        target = run_dir / rel
        if rel not in present:
            if rel not in odd:
                missing.append(rel)
        elif sha256_file(target) != listed[rel]:
            changed.append(rel)
    added = sorted(present - set(listed))
    return Check(
        changed=changed, missing=missing, added=added, checked=len(listed), links=sorted(odd)
    )


def problems(run_dir: Path) -> str:
    """ "" when ``run_dir`` matches its manifest (or has none, nor a signature, nor a
    link: a run that ended before its manifest has nothing to launder), else what is
    wrong in one line: ``does not match its manifest: 1 changed (run.json)``."""
    if not os.path.lexists(run_dir / MANIFEST):
        odd: list[str] = []
        for _ in _walk(run_dir, odd):
            pass
        if odd:
            return _odd_message(run_dir, sorted(odd)).removeprefix(f"{run_dir}: ")
        if os.path.lexists(run_dir / SIGNATURE):
            return f"a signature but no {MANIFEST}"
        return ""
    check = verify(run_dir)
    if check.links:
        return _odd_message(run_dir, check.links).removeprefix(f"{run_dir}: ")
    return "" if check.ok else f"does not match its manifest: {check.summary()}"


def guard(run_dir: Path) -> None:
    """Refuse (:class:`AlteredError`, exit 4) to write into a run directory that fails
    verification (:func:`problems`): a file changed, missing or added since its manifest
    was written, or a link anywhere in it. Writing there would hash the altered files
    into a new manifest and launder them."""
    wrong = problems(run_dir)
    if wrong:
        raise AlteredError(
            f"{run_dir}: {wrong}; not writing into it",
            hint=f"aibench verify {run_dir} names every difference",
        )


def is_run_dir(folder: Path) -> bool:
    """A folder holding a manifest, or a run.json beside the journal or configuration
    ``aibench run`` writes first (a lone run.json, such as ``preflight --output`` writes,
    does not make its folder a run directory)."""
    if os.path.lexists(folder / MANIFEST):
        return True
    return os.path.lexists(folder / "run.json") and any(
        os.path.lexists(folder / name) for name in ("steps.jsonl", "run-config.json")
    )


def enclosing_run_dir(path: Path) -> Path | None:
    """The run directory ``path`` (a folder) is, or lies in: the nearest folder up from
    it that :func:`is_run_dir`; None when there is none."""
    here = path.resolve()
    for folder in (here, *here.parents):
        if is_run_dir(folder):
            return folder
    return None


def not_into_run_dir(folder: Path, what: str) -> None:
    """Refuse (a :class:`UserError`) a ``folder`` that is a run directory or lies in one,
    for a command that never writes into one (``export``, ``preflight --output``)."""
    run_dir = enclosing_run_dir(folder)
    if run_dir is not None:
        raise UserError(
            f"{what} {folder}: the run directory {run_dir} or a folder in it; this command "
            "never writes into a run directory (its manifest covers what is there)",
            hint=f"{what} outside it",
        )


def writing_into(folder: Path, what: str) -> Path | None:
    """Before a command writes into ``folder``: None when it is no run directory's; the
    run directory when it is one (checked first: :func:`guard`). A folder inside a run
    directory is refused (a :class:`UserError`): what is written there would be a file
    the run's manifest does not list."""
    run_dir = enclosing_run_dir(folder)
    if run_dir is None:
        return None
    if run_dir != folder.resolve():
        raise UserError(
            f"{what} {folder}: inside the run directory {run_dir}; writing there would "
            "change the run (its manifest)",
            hint="choose a folder outside it",
        )
    guard(run_dir)
    return run_dir


def signature_note(run_dir: Path, had_signature: bool) -> str:
    """The line a command prints after writing into a run directory that was signed:
    the signature kept (nothing signed changed) or removed (which no longer matched)."""
    if not had_signature:
        return ""
    sig = run_dir / SIGNATURE
    if sig.exists():
        return f"kept {sig}: the files it signed are unchanged"
    return (
        f"removed {sig}: the rewritten files differ from the signed ones "
        f"(sign again: aibench verify {run_dir} --sign KEY)"
    )


def open_inside(run_dir: Path, rel: str) -> BinaryIO:
    """Open ``run_dir/rel`` for reading, refusing a symbolic link anywhere below
    ``run_dir`` (an :class:`OSError`): a received run directory's ``raw/x.out`` pointing at
    a private key is never read, nor a linked folder entered. ``run_dir`` itself may be a
    link (``runs/latest``)."""
    here = run_dir
    parts = [p for p in rel.split("/") if p]
    for part in parts[:-1]:
        here = here / part
        if here.is_symlink():
            raise OSError(errno.ELOOP, "a symbolic link in a run directory", str(here))
    fd = os.open(run_dir / rel, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    return os.fdopen(fd, "rb")


def _ssh_keygen() -> str:
    exe = shutil.which("ssh-keygen")
    if exe is None:
        raise UserError("ssh-keygen not found", hint="install OpenSSH 8.1 or later")
    return exe


def sign(run_dir: Path, key: Path) -> Path:
    """Sign ``manifest.sha256`` with an OpenSSH private key -> ``manifest.sha256.sig``."""
    manifest = run_dir / MANIFEST
    if not manifest.is_file():
        raise UserError(f"{manifest}: no manifest to sign")
    if not key.is_file():
        raise UserError(f"{key}: no such key file")
    sig = run_dir / SIGNATURE
    if sig.exists():
        sig.unlink()
    argv = [_ssh_keygen(), "-Y", "sign", "-f", str(key), "-n", NAMESPACE, str(manifest)]
    proc = subprocess.run(
        argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False
    )
    if proc.returncode != 0 or not sig.is_file():
        msg = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise UserError(f"ssh-keygen could not sign {manifest}: {msg}")
    return sig


def principals(signers: Path) -> list[str]:
    """The principals listed in an allowed_signers file (first field of each line)."""
    out = []
    for line in signers.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            out.append(line.split()[0])
    return out


def verify_signature(run_dir: Path, signers: Path, identity: str | None = None) -> str:
    """Check ``manifest.sha256.sig`` against an allowed_signers file.

    Returns the principal that signed; raises :class:`SignatureError` (exit 1) for a
    missing or bad signature, :class:`UserError` (exit 2) for a bad argument.
    """
    manifest = run_dir / MANIFEST
    sig = run_dir / SIGNATURE
    if not sig.is_file():
        raise SignatureError(f"{sig}: no signature")
    if not signers.is_file():
        raise UserError(f"{signers}: no such allowed_signers file")
    candidates = [identity] if identity else principals(signers)
    if not candidates:
        raise UserError(f"{signers}: lists no principals")
    exe = _ssh_keygen()
    last = ""
    for principal in candidates:
        argv = [
            exe,
            "-Y",
            "verify",
            "-f",
            str(signers),
            "-I",
            principal,
            "-n",
            NAMESPACE,
            "-s",
            str(sig),
        ]
        with manifest.open("rb") as data:
            proc = subprocess.run(argv, stdin=data, capture_output=True, text=True, check=False)
        if proc.returncode == 0:
            return principal
        words = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        last = words[-1] if words else ""
    raise SignatureError(f"bad signature on {manifest}: {last or 'refused by ssh-keygen'}")
