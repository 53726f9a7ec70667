"""warp runner: its argv is one warp reads (a replay with warp's own flags per benchmark),
its keys reach warp's environment and nothing else, and collect reads a published output."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from aibench.model import StepStatus
from aibench.runners.base import Slot
from aibench.runners.warp import host_and_tls
from tests.runners.helpers import FIXTURES, PROGRAMS, node, plan, run, suite_of, wrapper

sys.path.insert(0, str(PROGRAMS))

import warp_replay

REPLAY = PROGRAMS / "warp_replay.py"
OUTPUT = FIXTURES / "warp" / "v1.x-readme-append.txt"
KNOWN = warp_replay.flags(warp_replay.FLAGS.read_text(encoding="utf-8"))


def nodes(**ep: str) -> list[Any]:
    endpoint = {"name": "rgw", "url": "http://10.0.0.9:7480", **ep}
    return [
        node("n1", "10.0.0.1", s3_endpoints=[endpoint]),
        node("n2", "10.0.0.2", s3_endpoints=[endpoint]),
    ]


@pytest.mark.parametrize("bench", ["put", "get", "mixed", "stat", "list"])
def test_every_benchmark_argv_is_one_warp_reads(bench: str) -> None:
    o = {"endpoint": "rgw", "benchmark": bench, "objects": 500, "autoterm": True, "duration": "30s",
         "extra": ["--noclear"]}  # fmt: skip
    invs = plan("warp", o, nodes(access_key_env="K", secret_key_env="S"), Slot(workdir="/w"))
    assert [i.nodes for i in invs] == [("n1",), ("n2",)]
    argv = invs[0].client.argv
    assert argv[:9] == ("sh", "-c", argv[2], "aibench-warp", "", "", "K", "S", "/w/warp/s.n1.r0")
    assert argv[9] == "warp"
    assert warp_replay.check(list(argv[10:]), KNOWN) == "", argv
    assert argv[argv.index("--host") + 1] == "10.0.0.9:7480"


def test_the_replay_refuses_keys_and_unknown_flags() -> None:
    assert "a key on the command line" in warp_replay.check(["put", "--secret-key", "x"], KNOWN)
    assert "unknown flag '--objsize'" in warp_replay.check(["put", "--objsize", "1"], KNOWN)
    assert "unknown benchmark" in warp_replay.check(["fill"], KNOWN)


def test_https_endpoints_give_tls_and_port_443() -> None:
    assert host_and_tls("https://s3.example.org") == ("s3.example.org:443", True)
    assert host_and_tls("http://10.0.0.9:7480/") == ("10.0.0.9:7480", False)


@pytest.mark.parametrize("source", ["env", "file"])
def test_keys_reach_warps_environment_and_no_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    access, secret = "AKIAREPLAYTEST12", "replay-secret-value-0123456789"
    if source == "env":
        monkeypatch.setenv("TEST_WARP_AK", access)
        monkeypatch.setenv("TEST_WARP_SK", secret)
        ep = {"access_key_env": "TEST_WARP_AK", "secret_key_env": "TEST_WARP_SK"}
    else:
        cred = tmp_path / "s3.cred"
        cred.write_text(
            f"[bench]\naws_access_key_id = {access}\naws_secret_access_key = {secret}\n"
        )
        cred.chmod(0o600)
        ep = {"credentials_file": str(cred), "profile": "bench"}
    bin_dir = tmp_path / "bin"
    wrapper(bin_dir, "warp", REPLAY, "--fixture", str(OUTPUT))
    options = {"endpoint": "rgw", "benchmark": "put", "bin_dir": str(bin_dir), "duration": "58s"}
    suite = suite_of("warp", options, workdir=tmp_path / "work")
    endpoint = {"name": "rgw", "url": "http://127.0.0.1:9000", **ep}
    (res,) = run(tmp_path / "run", suite, [node("ws", "127.0.0.1", s3_endpoints=[endpoint])])
    assert res.status is StepStatus.OK, res.reason
    err = (tmp_path / "run" / res.stderr_path).read_text()
    assert f"replay keys: {len(access)}/{len(secret)} " in err
    ops = {(m.metric, m.dims.get("stat")): m.value for m in res.measurements}
    assert ops["throughput", "mean"] == 80.15
    assert {m.dims["endpoint"] for m in res.measurements} == {"rgw"}
    written = [f for f in (tmp_path / "run").rglob("*") if f.is_file()]
    assert written  # the raw stdout and stderr at least
    for f in written:
        text = f.read_text(errors="replace")
        assert secret not in text, f
        assert access not in text, f
    assert all(secret not in a and access not in a for p in res.processes for a in p.argv)
