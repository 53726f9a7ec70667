"""IOR and mdtest runners with real processes on this machine.

Neither tool is packaged for Debian, so the binaries are a REPLAY
(tests/programs/ior_replay.py) of real captured IOR and mdtest outputs, installed as
``ior`` and ``mdtest`` in a temporary bin_dir; the replay accepts only the options of
the real tools' ``-h`` lists. Everything else is real: the runners' argv, a real
``mpirun`` starting two ranks, the orchestrator, the parsers, the collect hook.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from aibench.model import Fact, StepStatus
from aibench.runners.base import Slot
from aibench.suite import load_suite
from tests.runners.helpers import FIXTURES, PROGRAMS, is_root, node, plan, run, suite_of, wrapper

sys.path.insert(0, str(PROGRAMS))

import ior_replay

REPLAY = PROGRAMS / "ior_replay.py"
IOR_OUT = FIXTURES / "ior" / "v4.1.0dev_text_fpp_i2.txt"
MDTEST_OUT = FIXTURES / "mdtest" / "v4.1.0dev_easy_files_P.txt"
needs_mpirun = pytest.mark.skipif(shutil.which("mpirun") is None, reason="needs openmpi-bin")


def accepted(binary: str, argv: tuple[str, ...]) -> str:
    flags, valued = ior_replay.options(ior_replay.HELP[binary].read_text(encoding="utf-8"))
    return ior_replay.check(list(argv[1:]), flags, valued)


IOR_ALL: dict[str, Any] = {
    "test_file": "/mnt/pfs/ior/file", "api": "POSIX", "transfer_size": "47008",
    "block_size": "47008", "segments": 1000, "iterations": 3, "file_per_process": True,
    "reorder_tasks": True, "task_offset": 1, "fsync": True, "keep_file": True,
    "use_existing": True, "random_offsets": True, "barriers": True, "stonewall_seconds": 30,
    "stonewall_status": True, "json_summary": True, "extra": ["--posix.odirect"],
}  # fmt: skip
MDTEST_ALL: dict[str, Any] = {
    "directory": "/mnt/pfs/md", "items": 100, "iterations": 2, "unique_dir": True,
    "leaf_only": True, "only": "files", "stride": 1, "print_time": True, "create": True,
    "stat": True, "read": False, "remove": True, "write_bytes": 3901, "read_bytes": 3901,
    "depth": 2, "branch": 3, "stonewall_seconds": 30, "stonewall_status": True, "sync": True,
}  # fmt: skip


@pytest.mark.parametrize(("tool", "options"), [("ior", IOR_ALL), ("mdtest", MDTEST_ALL)])
def test_every_option_the_runner_builds_is_one_the_real_tool_reads(
    tool: str, options: dict[str, Any]
) -> None:
    (inv,) = plan(tool, options, [node("a", "10.0.0.1")])
    assert accepted(tool, inv.client.argv) == "", inv.client.argv


def test_the_replay_refuses_an_option_the_tool_lacks() -> None:
    assert "unknown option '--blocksize'" in accepted("ior", ("ior", "--blocksize", "1m"))
    assert "needs a value" in accepted("mdtest", ("mdtest", "-n"))


def test_io500_preset_phases_plan_argv_the_tools_read() -> None:
    suite = load_suite("io500")
    nodes = [node("a", "10.0.0.1"), node("b", "10.0.0.2")]
    files = {}
    for step in suite.steps:
        (inv,) = plan(step.model.tool, step.model.options, nodes, Slot(workdir="/mnt/pfs"),
                      step=step.model.name)  # fmt: skip
        argv = inv.client.argv
        program = argv[argv.index("-x") + 1 :] if "-x" in argv[:8] else argv
        start = next(i for i, a in enumerate(program) if a.endswith(step.model.tool))
        assert accepted(step.model.tool, program[start:]) == "", (step.model.name, argv)
        assert argv[:2] == ("mpirun", "--host")
        files[step.model.name] = program[
            program.index("-o" if "ior" in step.model.tool else "-d") + 1
        ]
    # a read or stat phase works on what the write or create phase of its dataset made
    assert files["ior-easy-read"] == files["ior-easy-write"] == "/mnt/pfs/ior/ior-easy/testfile"
    assert (
        files["mdtest-hard-delete"] == files["mdtest-hard-create"] == "/mnt/pfs/mdtest/mdtest-hard"
    )


def replay_bin(tmp_path: Path, exit_code: int = 0, ior_out: Path = IOR_OUT) -> Path:
    bin_dir = tmp_path / "bin"
    wrapper(bin_dir, "ior", REPLAY, "--binary", "ior", "--fixture", str(ior_out),
            "--exit-code", str(exit_code))  # fmt: skip
    wrapper(bin_dir, "mdtest", REPLAY, "--binary", "mdtest", "--fixture", str(MDTEST_OUT))
    return bin_dir


def launched(tool: str, bin_dir: Path, work: Path, **more: Any) -> dict[str, Any]:
    return {
        "bin_dir": str(bin_dir),
        "launcher": "mpirun",
        "ranks_per_node": 2,
        "launcher_args": ["--oversubscribe"],
        "allow_run_as_root": is_root(),
        ("test_file" if tool == "ior" else "directory"): str(work / tool / "x"),
        **more,
    }


@needs_mpirun
@pytest.mark.parametrize("tool", ["ior", "mdtest"])
def test_mpirun_two_local_ranks_run_the_replay_through_the_runners_argv(
    tmp_path: Path, tool: str
) -> None:
    options = launched(tool, replay_bin(tmp_path), tmp_path / "work")
    (res,) = run(tmp_path / "run", suite_of(tool, options), [node("ws", "127.0.0.1")])
    assert res.status is StepStatus.OK, res.reason
    stderr = (tmp_path / "run" / res.stderr_path).read_text()
    assert sorted(re.findall(r"replay rank (\d+/\d+) ", stderr)) == ["0/2", "1/2"], stderr
    versions = {f.value for f in res.facts if isinstance(f, Fact) and f.name == "version"}
    assert "4.1.0+dev" in versions
    if tool == "ior":
        bw = {
            (m.dims["op"], m.dims.get("stat")): m.value
            for m in res.measurements
            if m.metric == "bw"
        }
        assert bw["write", "mean"] == 1013.00  # Mean(MiB) of the captured summary
    else:
        rates = {m.dims["op"]: m.value for m in res.measurements
                 if m.metric == "ops_rate" and m.dims["stat"] == "mean"}  # fmt: skip
        assert rates["file_create"] == 56944.499
    assert all(m.nodes == ("ws",) and m.step == "s" for m in res.measurements)


@needs_mpirun
def test_an_ior_error_fails_the_step_with_iors_words(tmp_path: Path) -> None:
    bin_dir = replay_bin(tmp_path, 255, FIXTURES / "ior" / "v4.1.0dev_missing_dir.txt")
    options = launched("ior", bin_dir, tmp_path / "work")
    (res,) = run(tmp_path / "run", suite_of("ior", options), [node("ws", "127.0.0.1")])
    assert res.status is StepStatus.FAILED
    assert "open64" in res.reason


def test_the_io500_spec_judges_every_phase_of_the_io500_suite() -> None:
    from aibench.thresholds.spec import load_spec

    suite = load_suite("io500")
    assert suite.spec == "io500"
    steps = {s.model.name: s.model.tool for s in suite.steps}
    selected = {c.select.step: c.select.tool for c in load_spec("io500").checks if c.select}
    assert selected == steps


def test_srun_names_the_slurm_nodes_and_their_tasks() -> None:
    nodes = [node("c1", "10.0.0.1", partition="pfs"), node("c2", "10.0.0.2", partition="pfs")]
    (inv,) = plan("mdtest", {"launcher": "srun", "ranks_per_node": 4, "directory": "/p/md"}, nodes)
    argv = inv.client.argv
    assert argv[:10] == ("srun", "--mpi=pmix", "-N", "2", "--ntasks-per-node", "4",
                         "--nodelist", "c1,c2", "-p", "pfs")  # fmt: skip
    assert accepted("mdtest", argv[argv.index("mdtest") :]) == ""


def test_ranks_without_a_launcher_and_a_job_inside_a_slurm_step_are_user_errors() -> None:
    from aibench.errors import UserError

    with pytest.raises(UserError, match="needs a launcher"):
        plan("ior", {"launcher": "none", "ranks_per_node": 2}, [node("a", "10.0.0.1")])
    inside = [node("a", "10.0.0.1", executor="slurm"), node("b", "10.0.0.2", executor="slurm")]
    with pytest.raises(UserError, match="inside a Slurm job step"):
        plan("ior", {}, inside)
