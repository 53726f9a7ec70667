"""elbencho runner: its argv is one elbencho reads (a replay with elbencho's own option
list), each node works in a directory of its own, and collect reads a published output."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from aibench.model import StepStatus
from aibench.runners.base import Slot
from tests.runners.helpers import FIXTURES, PROGRAMS, node, plan, run, suite_of, wrapper

sys.path.insert(0, str(PROGRAMS))

import elbencho_replay

REPLAY = PROGRAMS / "elbencho_replay.py"
KNOWN = elbencho_replay.options(elbencho_replay.OPTIONS.read_text(encoding="utf-8"))
EVERYTHING: dict[str, Any] = {
    "path": "/mnt/pfs/elbencho", "stat": True, "threads": 16, "block": "4k", "size": "16m",
    "dirs": 4, "files": 100, "iodepth": 8, "random": True, "latency": True,
    "extra": ["--cpu"],
}  # fmt: skip


@pytest.mark.parametrize("files", [100, 0])
def test_every_argv_is_one_elbencho_reads(files: int) -> None:
    invs = plan("elbencho", {**EVERYTHING, "files": files}, [node("a"), node("b")], Slot(repeat=2))
    assert [i.nodes for i in invs] == [("a",), ("b",)]
    argv = invs[0].client.argv
    assert elbencho_replay.check(list(argv[1:]), KNOWN) == "", argv
    want = "/mnt/pfs/elbencho/s.a.r2" + ("" if files else ".file")
    assert argv[-1] == want
    assert invs[0].setup[0].argv == ("mkdir", "-p", want if files else "/mnt/pfs/elbencho")
    assert ("-n" in argv) is bool(files)


def test_the_replay_refuses_what_elbencho_lacks() -> None:
    assert "unknown option '--blocksize'" in elbencho_replay.check(
        ["--blocksize", "1m", "/x"], KNOWN
    )
    assert elbencho_replay.check(["-t"], KNOWN) == "option -t needs a value"


def test_a_run_reads_the_replayed_table(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    fixture = FIXTURES / "elbencho" / "v3.x-docs-result-example-write.txt"
    wrapper(bin_dir, "elbencho", REPLAY, "--fixture", str(fixture))
    options = {"path": str(tmp_path / "fs"), "bin_dir": str(bin_dir), "read": False}
    (res,) = run(tmp_path / "run", suite_of("elbencho", options), [node("ws", "127.0.0.1")])
    assert res.status is StepStatus.OK, res.reason
    last = {m.metric: m.value for m in res.measurements if m.dims.get("done") == "last"}
    assert last["throughput"] == 33352
    assert (tmp_path / "fs" / "s.ws.r0").is_dir()  # the setup made the node's directory
