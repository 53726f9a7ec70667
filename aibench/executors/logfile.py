"""A process's output copied into its log files as it comes, by the executors that read it
from a stream (SSH, a Kubernetes attach).

A write that fails (a full disk) must not stop the copying: the remote side would block on
a full pipe. The first error is kept and returned again for every later piece, whose data
is dropped; the executor raises it when the process is done.
"""

from __future__ import annotations

from typing import IO, Any


def write_log(f: IO[bytes] | Any, data: bytes, error: OSError | None) -> OSError | None:
    """Append ``data`` to ``f`` unless an earlier write failed (``error``); the error of
    the log now (the earlier one, this write's, or None), naming the file."""
    if error is not None:
        return error
    try:
        f.write(data)
        f.flush()
    except OSError as exc:
        return OSError(exc.errno, exc.strerror, getattr(f, "name", None))
    return None
