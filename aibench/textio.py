"""Small helpers every stage shares: read a tool's output, quote its last lines, write a
file atomically. One home each, so that a reason reads the same wherever it is made."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TextIO


def read_text(path: Path, limit: int = 50_000_000) -> str:
    """The first ``limit`` bytes of a file as text (bad bytes replaced); "" if absent."""
    try:
        with path.open("rb") as f:
            return f.read(limit).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def tail(text: str, lines: int = 3) -> str:
    """The last ``lines`` non-blank lines of ``text``, stripped, joined by `` | ``."""
    got = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(got[-lines:])


def exit_tail(exit_code: int | None, stdout: str, stderr: str, reason: str = "") -> str:
    """``exit code N: <last lines of stderr, then stdout>`` (``killed`` or the executor's
    reason when there is no exit code): the one-line reason of a failed tool."""
    code = f"exit code {exit_code}" if exit_code is not None else (reason or "killed")
    return f"{code}: {tail(stderr + chr(10) + stdout) or 'no output'}"


def write_atomic(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file in the same folder and a
    rename, so that a reader (or a crash) never sees half a file."""
    return write_atomic_with(path, lambda f: f.write(text))


def write_atomic_with(path: Path, write: Callable[[TextIO], object]) -> Path:
    """:func:`write_atomic` of what ``write`` writes to the (UTF-8 text) file it is given."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path
