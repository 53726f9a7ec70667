"""``aibench parse`` as a person runs it, stdout and stderr on one terminal: every line it
prints (the table, the tool's warning lines, the detected tool, an error) is a whole line,
ended by a newline, in every format."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

FIX = Path(__file__).resolve().parent.parent / "fixtures"
WARNS = FIX / "perftest" / "ib_atomic_bw_client_FETCH_AND_ADD_RoCE_MBsec.txt"  # a warning line
FAILS = FIX / "fio" / "v3.33_json_error22_prefixed.json"  # the tool's error


@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
@pytest.mark.parametrize("path", [WARNS, FAILS], ids=["warning", "failure"])
def test_every_line_ends_with_a_newline(path: Path, fmt: str) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "aibench", "parse", "auto", str(path), "--format", fmt],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # one stream, as on a terminal
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == (0 if path == WARNS else 1), r.stdout
    assert r.stdout.endswith("\n"), repr(r.stdout[-200:])
    for line in r.stdout.splitlines():
        # a line of stderr glued onto the end of an unfinished one
        assert "aibench parse:" not in line[1:], line
    if fmt == "table" and path == WARNS:
        assert r.stdout.splitlines()[-1].startswith("warning (perftest line 21): Conflicting CPU")
