"""write_log: the executors' copy of a stream into a log file keeps going past a failed
write (a full disk), keeps the first error, naming the file, and drops later data."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from aibench.executors.logfile import write_log


def test_writes_and_flushes(tmp_path: Path) -> None:
    p = tmp_path / "stdout"
    with p.open("wb") as f:
        assert write_log(f, b"one\n", None) is None
        assert p.read_bytes() == b"one\n"  # flushed as it came


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_is_kept_and_later_data_dropped(tmp_path: Path) -> None:
    with open("/dev/full", "wb", buffering=0) as full:
        error = write_log(full, b"x" * 10, None)
        assert error is not None
        assert error.errno == errno.ENOSPC
        assert error.filename == "/dev/full"
    ok = tmp_path / "ok"
    with ok.open("wb") as f:
        assert write_log(f, b"later", error) is error
    assert ok.read_bytes() == b""
