"""pytest fixtures of the test bed, registered once by the root ``tests/conftest.py``
(``pytest_plugins``) so that every test shares one bed.

``testbed_hosts`` (session): 4 namespace hosts with sshd. ``testbed_slurm`` (session):
the same hosts as a 4-node Slurm cluster. ``testbed_soak`` and ``testbed_serving``
(session): 4 hosts each, in layouts of their own for the soak tests and the serving
test. ``testbed_big`` (session): 64 namespace hosts
with sshd in a layout of their own (``abx-h1`` .. ``abx-h64``, 10.213.8.0/24), which
can stand beside the 4-host bed; about 3 s to build and 5 s to take down on a 2-core
machine. All skip with the reason when the machine cannot host the bed (not root, no
``ip netns``, no sshd / slurmd).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from tests.testbed.bed import TestBed
from tests.testbed.net import BIG, SERVING, SMALL, SOAK, Layout, netns_available
from tests.testbed.slurm import SlurmCluster

N_HOSTS = 4
N_BIG = 64


def _skip_reason(*tools: str) -> str | None:
    reason = netns_available()
    if reason:
        return reason
    for t in tools:
        if shutil.which(t) is None and not shutil.os.path.exists(f"/usr/sbin/{t}"):  # type: ignore[attr-defined]
            return f"{t} is not installed"
    return None


def _bed(tmp: pytest.TempPathFactory, n: int, folder: str, layout: Layout) -> Iterator[TestBed]:
    """The body of a bed's session fixture: up (or skip with the reason), yield, down."""
    reason = _skip_reason("sshd", "ssh-keygen", "nsenter", "unshare")
    if reason:
        pytest.skip(reason)
    bed = TestBed.up(n, tmp.mktemp(folder), layout)
    try:
        yield bed
    finally:
        bed.down()


@pytest.fixture(scope="session")
def testbed_hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestBed]:
    yield from _bed(tmp_path_factory, N_HOSTS, "testbed", SMALL)


@pytest.fixture(scope="session")
def testbed_big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestBed]:
    yield from _bed(tmp_path_factory, N_BIG, "testbed-big", BIG)


@pytest.fixture(scope="session")
def testbed_serving(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestBed]:
    """4 namespace hosts with sshd (``abs-h1`` .. ``abs-h4``, 10.213.20.0/24) for the
    serving test, a bed of its own so that it runs beside the 4-host bed's tests."""
    yield from _bed(tmp_path_factory, N_HOSTS, "testbed-serving", SERVING)


@pytest.fixture(scope="session")
def testbed_soak(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestBed]:
    """4 namespace hosts with sshd (``sk-h1`` .. ``sk-h4``, 10.213.21.0/24) for the soak
    tests, which wait on the soak's clock for minutes: a bed of their own, so that they
    run beside the 4-host bed's tests on another worker."""
    yield from _bed(tmp_path_factory, N_HOSTS, "testbed-soak", SOAK)


@pytest.fixture(scope="session")
def testbed_slurm(testbed_hosts: TestBed) -> SlurmCluster:
    reason = _skip_reason("slurmctld", "slurmd", "munged", "srun")
    if reason:
        pytest.skip(reason)
    return testbed_hosts.start_slurm()
