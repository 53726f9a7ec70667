"""nccl-tests runner with real processes on this machine.

No GPU here, so the binary is a REPLAY (tests/programs/nccl_tests_replay.py) of a real
captured nccl-tests 2.17.8 log, installed as ``all_reduce_perf`` in a temporary bin_dir.
Everything else is real: the runner's argv, a real ``mpirun`` starting two ranks, the
orchestrator, the parser, the collect hook.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from aibench.model import Fact, StepStatus
from tests.runners.helpers import (
    FIXTURES,
    PROGRAMS,
    ROOT_ENV,
    is_root,
    node,
    run,
    suite_of,
    wrapper,
)

LOG = FIXTURES / "nccl-tests" / "v2.17.8_2node_2gpu_allreduce_sendrecv_smoke.txt"
JSON = FIXTURES / "nccl-tests" / "constructed_json_v3_2node_all_reduce_from_smoke_log.json"
REPLAY = PROGRAMS / "nccl_tests_replay.py"

needs_mpirun = pytest.mark.skipif(shutil.which("mpirun") is None, reason="needs openmpi-bin")


def replay_bin(tmp_path: Path, *extra: str) -> Path:
    bin_dir = tmp_path / "bin"
    for name in ("all_reduce_perf", "sendrecv_perf"):
        wrapper(bin_dir, name, REPLAY, "--fixture", str(LOG), "--binary", name, *extra)
    return bin_dir


@needs_mpirun
def test_mpirun_two_local_ranks_run_the_replay_through_the_runners_argv(tmp_path: Path) -> None:
    bin_dir = replay_bin(tmp_path)
    options = {
        "collective": "sendrecv",
        "launcher": "mpirun",
        "ranks_per_node": 2,
        "launcher_args": ["--oversubscribe"],
        "allow_run_as_root": is_root(),
        "bin_dir": str(bin_dir),
        "nccl_debug": "INFO",
        "min_bytes": "32M",
        "max_bytes": "512M",
    }
    (res,) = run(tmp_path / "run", suite_of("nccl-tests", options), [node("ws", "127.0.0.1")])
    assert res.status is StepStatus.OK, res.reason
    (proc,) = res.processes
    assert proc.argv[:5] == ("mpirun", "--host", "localhost:2", "-np", "2")
    assert proc.argv[proc.argv.index("-x") + 1] == "NCCL_DEBUG"
    assert proc.env["NCCL_DEBUG"] == "INFO"
    if is_root():
        assert {k: proc.env[k] for k in ROOT_ENV} == ROOT_ENV
    # both ranks ran, each saw the forwarded NCCL_DEBUG and the runner's nccl-tests args
    stderr = (tmp_path / "run" / res.stderr_path).read_text()
    # searched, not read line by line: mpirun forwards each rank's stderr as it comes, and
    # a line of one rank may land behind an unterminated line of mpirun or the other rank
    ranks = sorted(re.findall(r"replay rank (\d+/\d+) ", stderr))
    assert ranks == ["0/2", "1/2"], stderr
    assert stderr.count("NCCL_DEBUG=INFO args=-b 32M -e 512M -f 2 -n 20") == 2
    # rank 0 printed the sendrecv block: its numbers, with the op
    expected = json.loads(LOG.with_suffix(".expected.json").read_text())
    want = {
        (r["dims"]["size_bytes"], r["dims"]["placement"]): r["value"]
        for r in expected["records"]
        if r.get("metric") == "busbw" and r["dims"].get("op") == "sendrecv"
    }
    got = {
        (m.dims["size_bytes"], m.dims["placement"]): m.value
        for m in res.measurements
        if m.metric == "busbw"
    }
    assert got == want
    assert len(got) == 10
    assert {m.dims["op"] for m in res.measurements} == {"sendrecv"}
    assert all(m.nodes == ("ws",) and m.step == "s" for m in res.measurements)
    facts = {(f.source, f.name): f for f in res.facts}
    assert facts["nccl-tests", "version"].value == "2.17.8"
    assert res.tool_version == "2.17.8"
    # the launcher's version, from the mpirun the step ran, is a fact of the step's node
    launcher = facts["mpirun", "version"]
    assert str(launcher.value).startswith("Open MPI "), launcher
    assert launcher.nodes == ("ws",)
    assert launcher.value == mpirun_version()


def mpirun_version() -> str:
    import subprocess

    out = subprocess.run(["mpirun", "--version"], capture_output=True, text=True, check=True)
    return "Open MPI " + out.stdout.split("(Open MPI)")[1].split()[0]


def test_direct_run_reads_the_json_file_when_asked(tmp_path: Path) -> None:
    bin_dir = replay_bin(tmp_path, "--json-fixture", str(JSON))
    suite = suite_of("nccl-tests", {"bin_dir": str(bin_dir), "json_output": True})
    suite = suite.__class__(
        **{
            **suite.__dict__,
            "settings": suite.settings.model_copy(update={"workdir": str(tmp_path / "work")}),
        }
    )
    (res,) = run(tmp_path / "run", suite, [node("ws", "127.0.0.1")])
    assert res.status is StepStatus.OK, res.reason
    facts = {f.name: f.value for f in res.facts if isinstance(f, Fact)}
    assert facts["output_file"] == str(tmp_path / "work" / "nccl-tests" / "s.ws.r0.json")
    assert {m.dims["op"] for m in res.measurements} == {"all_reduce"}
    assert any(m.metric == "busbw" for m in res.measurements)


def test_a_crashing_binary_fails_with_its_own_words(tmp_path: Path) -> None:
    bin_dir = replay_bin(tmp_path, "--exit-code", "3")
    # the replay rejects an option the real binary does not have, exit 2, before printing
    options = {"bin_dir": str(bin_dir), "extra": ["--nonsense"]}
    (res,) = run(tmp_path / "run", suite_of("nccl-tests", options), [node("ws", "127.0.0.1")])
    assert res.status is StepStatus.FAILED
    assert "exit code 2" in res.reason
    assert "unknown option '--nonsense'" in res.reason
    assert res.measurements == ()


def test_a_missing_binary_is_named(tmp_path: Path) -> None:
    options = {"bin_dir": str(tmp_path / "nowhere")}
    (res,) = run(tmp_path / "run", suite_of("nccl-tests", options), [node("ws", "127.0.0.1")])
    assert res.status is StepStatus.FAILED
    assert "all_reduce_perf" in res.reason
    assert res.measurements == ()


CUT_WRONG = (
    FIXTURES
    / "nccl-tests"
    / "2024-06_v2.13-2.16fmt_2node_2gpu_RTX3090_allreduce_wrong_cut_by_us_inside_row_32.txt"
)
# two checks on the step: busbw and time bounds that its complete rows would pass
CUT_SPEC = """schema_version: 1
name: cut
checks:
  - id: busbw
    select: {tool: nccl-tests, metric: busbw, dims: {placement: out_of_place}, largest: size_bytes}
    unit: GB/s
    min: 1
  - id: time
    select: {tool: nccl-tests, metric: time, dims: {placement: in_place}, largest: size_bytes}
    unit: us
    max: 1000000
"""


def test_a_cut_log_with_wrong_elements_keeps_its_rows_and_fails_every_check(
    tmp_path: Path,
) -> None:
    """A real log with #wrong above 0 on every row, cut inside its table, run through the
    runner and judged by the real judge: its complete rows are the step's measurements,
    and no check of the step passes, though the numbers alone would."""
    from aibench.judge import judge_run
    from aibench.model import Outcome
    from tests.thresholds.helpers import NOW, spec_from
    from tests.thresholds.helpers import run as run_of

    bin_dir = tmp_path / "bin"
    wrapper(
        bin_dir,
        "all_reduce_perf",
        REPLAY,
        "--fixture",
        str(CUT_WRONG),
        "--binary",
        "all_reduce_perf",
    )
    suite = suite_of("nccl-tests", {"bin_dir": str(bin_dir), "max_bytes": "1G"})
    (res,) = run(tmp_path / "run", suite, [node("ws", "127.0.0.1")])
    assert res.status is StepStatus.FAILED
    assert "the results table was cut at line 32 (a row cut short)" in res.reason
    assert "16777204 wrong elements (data corruption" in res.reason
    # the 21 complete rows, printed by the tool, are kept: 2 placements x 4 metrics
    printed = CUT_WRONG.read_text().splitlines()[10:31]
    assert len(res.measurements) == 21 * 2 * 4
    wrong = {
        (m.dims["size_bytes"], m.dims["placement"]): m.value
        for m in res.measurements
        if m.metric == "wrong"
    }
    for line in printed:
        f = line.split()
        assert wrong[int(f[0]), "out_of_place"] == float(f[8])
        assert wrong[int(f[0]), "in_place"] == float(f[12])
    verdicts = judge_run(run_of([res], ("ws",)), spec_from(tmp_path, CUT_SPEC), now=NOW).verdicts
    got = {v.check: v for v in verdicts}
    assert set(got) == {"busbw", "time"}
    for v in got.values():
        assert v.outcome is not Outcome.PASS
        assert v.outcome is Outcome.ERROR, v
        assert "wrong elements (data corruption" in v.reason
