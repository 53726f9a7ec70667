"""Tamper-evident hand-over: a sha256 manifest of a run directory, optionally signed.

``manifest.sha256`` is in the format ``sha256sum`` writes and ``sha256sum -c`` reads: one
line per file, ``<64 hex digits><two spaces><relative path>``, sorted by path, covering every
regular file below the run directory except the manifest itself, its signature and the
manifest being written (``.manifest.sha256.partial``, renamed when it is complete). Paths
use ``/`` on every platform.

:func:`verify` recomputes the hashes and names each file that changed, is missing or was
added. Signing uses OpenSSH signatures (``ssh-keygen -Y sign``, OpenSSH 8.1 or later;
tested with OpenSSH 9.2 on Debian 12) in the namespace ``aibench-manifest``, so that any
ed25519/RSA/ECDSA key a vendor already has can sign and a customer can check with an
``allowed_signers`` file. ``ssh-keygen`` is always called with an argv list, never a shell.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from aibench.errors import UserError

MANIFEST = "manifest.sha256"
SIGNATURE = MANIFEST + ".sig"
NAMESPACE = "aibench-manifest"
_PARTIAL = f".{MANIFEST}.partial"  # the manifest being written
_EXCLUDED = frozenset({MANIFEST, SIGNATURE, _PARTIAL})
_CHUNK = 1 << 20


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


def _files(run_dir: Path) -> list[str]:
    """Every regular file below ``run_dir`` but the manifest and its signature, as sorted
    ``/``-separated relative paths (see :func:`_walk`)."""
    return list(_walk(run_dir))


def _walk(run_dir: Path) -> Iterator[str]:
    """:func:`_files` one at a time, in their sorted order, holding one folder's names at a
    time: a large run has a raw log or two per step. A folder's entries are gone over in
    the order of their names with ``/`` after a folder's, which is the order of the whole
    paths. Symbolic links are not listed and linked folders not entered; a folder that
    cannot be read is passed over. One ``scandir`` per folder: a ``stat`` per file was
    most of the time."""
    stack = [iter(_entries("", os.fspath(run_dir)))]
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
        elif entry[1] is None:
            yield entry[0]
        else:
            stack.append(iter(_entries(entry[0], entry[1])))


def _entries(prefix: str, folder: str) -> list[tuple[str, str | None]]:
    """(relative path, the folder's own path or None for a file) of ``folder``'s entries,
    sorted as whole paths sort: a folder's relative path ends in ``/``."""
    out: list[tuple[str, str | None]] = []
    try:
        with os.scandir(folder) as entries:
            for e in entries:
                if e.is_dir(follow_symlinks=False):
                    out.append((f"{prefix}{e.name}/", e.path))
                elif e.is_file(follow_symlinks=False) and prefix + e.name not in _EXCLUDED:
                    out.append((prefix + e.name, None))
    except PermissionError:
        pass
    out.sort()
    return out


def compute(run_dir: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file the manifest covers."""
    root = os.fspath(run_dir)
    return {rel: sha256_file(os.path.join(root, rel)) for rel in _walk(run_dir)}


def lines(run_dir: Path) -> Iterator[str]:
    """The manifest's lines, a file at a time, in the order of their paths."""
    root = os.fspath(run_dir)
    for rel in _walk(run_dir):
        if "\n" in rel or "\\" in rel:
            raise UserError(f"cannot list file name {rel!r} in a manifest (newline or backslash)")
        yield f"{sha256_file(os.path.join(root, rel))}  {rel}\n"


def write(run_dir: Path) -> Path:
    """Write ``manifest.sha256`` (last, after every other file) a line at a time, and drop
    a stale signature."""
    path, tmp = run_dir / MANIFEST, run_dir / _PARTIAL  # the walk passes over the latter
    try:
        with tmp.open("w", encoding="utf-8") as f:
            f.writelines(lines(run_dir))
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    stale = run_dir / SIGNATURE
    if stale.exists():
        stale.unlink()
    return path


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

    @property
    def ok(self) -> bool:
        return not (self.changed or self.missing or self.added)

    def lines(self) -> list[str]:
        out = [f"changed: {p}" for p in self.changed]
        out += [f"missing: {p}" for p in self.missing]
        out += [f"added: {p}" for p in self.added]
        return out


def verify(run_dir: Path) -> Check:
    path = run_dir / MANIFEST
    if not path.is_file():
        raise UserError(f"{path}: no manifest", hint="write one with: aibench report RUN_DIR")
    listed = parse(path.read_text(encoding="utf-8"), str(path))
    present = set(_files(run_dir))
    changed, missing = [], []
    for rel in sorted(listed):
        target = run_dir / rel
        if rel not in present:
            missing.append(rel)
        elif sha256_file(target) != listed[rel]:
            changed.append(rel)
    added = sorted(present - set(listed))
    return Check(changed=changed, missing=missing, added=added, checked=len(listed))


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
