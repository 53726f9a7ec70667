"""IOR and mdtest runners across two hosts of the test bed (network namespaces, sshd).

The binaries are the REPLAY of real captured outputs (tests/programs/ior_replay.py,
which accepts only the options of the real ``ior -h`` / ``mdtest -h``); the launcher is
real: Open MPI's ``mpirun`` starting one rank per host over ssh. Every rank reports the
network namespace it ran in.
"""

from __future__ import annotations

import re
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from aibench.model import StepStatus
from tests.runners.helpers import FIXTURES, PROGRAMS, is_root, node, run, suite_of, wrapper
from tests.testbed.bed import TestBed
from tests.testbed.net import SUBNET

REPLAY = PROGRAMS / "ior_replay.py"

pytestmark = pytest.mark.skipif(shutil.which("mpirun") is None, reason="needs openmpi-bin")


@pytest.fixture
def bin_dir() -> Iterator[Path]:
    d = Path("/var/tmp") / f"aibench-ior-tests-{uuid.uuid4().hex[:8]}"
    ior_out = FIXTURES / "ior" / "v3.3.0_text_ssf_i3.txt"
    md_out = FIXTURES / "mdtest" / "v4.1.0dev_n200_i2.txt"
    wrapper(d, "ior", REPLAY, "--binary", "ior", "--fixture", str(ior_out))
    wrapper(d, "mdtest", REPLAY, "--binary", "mdtest", "--fixture", str(md_out))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize(
    ("tool", "place"),
    [("ior", {"test_file": "/var/tmp/pfs/f"}), ("mdtest", {"directory": "/var/tmp/pfs/d"})],
)
def test_mpirun_over_ssh_one_rank_per_namespace_host(
    tmp_path: Path, testbed_hosts: TestBed, bin_dir: Path, tool: str, place: dict[str, str]
) -> None:
    h1, h2 = testbed_hosts.hosts[:2]
    cfg = str(testbed_hosts.ssh.config)
    nodes = [node(h.name, h.address, ssh_config=cfg) for h in (h1, h2)]
    options = {
        "launcher": "mpirun",
        "ranks_per_node": 1,
        "bin_dir": str(bin_dir),
        "interfaces": f"{SUBNET}.0/24",
        "btl": "self,tcp",
        "allow_run_as_root": is_root(),
        **place,
    }
    (res,) = run(tmp_path, suite_of(tool, options), nodes)
    assert res.status is StepStatus.OK, res.reason
    argv = res.processes[-1].argv
    assert argv[:5] == ("mpirun", "--host", f"{h1.address}:1,{h2.address}:1", "-np", "2")
    err = (tmp_path / res.stderr_path).read_text()
    got = sorted(re.findall(r"replay rank (\d+/\d+) net (\S+) ", err))
    assert [r for r, _ in got] == ["0/2", "1/2"], err
    assert len({ns for _, ns in got}) == 2, "the two ranks ran in two different hosts"
    assert res.measurements
    assert all(m.nodes == (h1.name, h2.name) for m in res.measurements)
