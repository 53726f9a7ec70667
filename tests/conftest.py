"""Shared test configuration. Area-specific fixtures live beside their tests."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The multi-host test bed's fixtures are registered once, here: a session fixture imported
# into several conftest files would be a separate fixture in each, and the second bed
# would wait for the first one's lock until the end of the session.
pytest_plugins = ["tests.testbed.fixtures"]

# Markers follow the fixtures: a test that uses the bed's hosts is ``netns``, one that uses
# its Slurm cluster is ``netns`` and ``slurm`` (``testbed_slurm`` builds on the hosts), so
# ``pytest -m "not netns"`` never touches the bed, whatever the test module declares.
_BED_MARKERS = {
    "testbed_hosts": ("netns",),
    "testbed_big": ("netns",),
    "testbed_serving": ("netns",),
    "testbed_soak": ("netns",),
    "testbed_slurm": ("netns", "slurm"),
}

# Side by side (``make test`` runs pytest-xdist with ``--dist loadgroup``): the tests of a
# bed run on one worker, which builds it once and keeps it until it ends; every test that
# asks for a fixture here goes to that fixture's group. A bed's names (namespaces, bridge,
# subnet) are its own, so beds of different groups stand at once on different workers. A
# new bed: give it a name prefix of its own, a lock of its own (tests/testbed/bed.py) and a
# group here. Any other test runs with the rest of its module (tests of one module share
# module fixtures and may reuse one port or file name one after the other).
BED_GROUPS = {
    "testbed_hosts": "bed-abt",
    "testbed_slurm": "bed-abt",  # the Slurm cluster runs on the 4-host bed
    "testbed_big": "bed-abx",
    "testbed_serving": "bed-abs",
    "testbed_soak": "bed-sk",
    "k8s_cluster": "bed-k8s",  # every module of tests/k8s shares the one cluster
}


# The groups that take longest (seconds of one worker, measured with ``--durations`` over a
# whole run of ``make test`` on 2 cores), in the order they are handed out. ``make test``
# passes ``--no-loadscope-reorder``, so that xdist hands out the groups in the order the
# tests are collected, and the collection puts these first. Each of the 6 workers starts
# with two groups, the first six here one to each, then the next six in the same order:
# the worker of the Kubernetes cluster, the longest by far (most of the suite's wall time),
# gets a module of a few seconds as its second; the others get the next longest so that
# the first six workers' pairs come out near one another. The hundreds of short tests fill
# the gaps at the end. (xdist's own order, most tests first, left a one-test group such as
# the serving bed's or GlusterFS's to start last and run on alone.) Refresh it when a
# group's time changes by a minute or more; a group not listed runs after these.
LONGEST_FIRST = (
    "bed-k8s",  # 380 s: a Kubernetes cluster, its Pods, MPI launches, the CronJob
    "bed-sk",  # 250 s: the soak tests' waiting on the soak's clock
    "bed-abt",  # 150-225 s: 39 tests on the 4-host bed and its Slurm
    "tests/multinode/test_ceph_bed.py",  # 200-220 s: Ceph, CephFS with two MDS, S3 gateway
    "bed-abx",  # 100-135 s: 64 hosts, brought up once for the fault tests
    "tests/multinode/test_storage_gluster.py",  # 95-125 s: GlusterFS on the bed
    "tests/test_function_length.py",  # 3 s: the Kubernetes worker's second group
    "bed-abs",  # 90-115 s: AIPerf through HAProxy and Nginx
    "tests/parsers/test_fuzz.py",  # 25-75 s
    "tests/multinode/test_object_cache.py",  # 40-60 s: Ceph's S3 gateway and Redis
    "tests/hostile/test_resume.py",  # 30-60 s
    "tests/repair/test_repair_local.py",  # 30-50 s
)


def longest_first(groups: list[str]) -> list[int]:
    """The order (indexes into ``groups``, one per test) that puts the tests of the groups in
    :data:`LONGEST_FIRST` first, in its order, and keeps every other test where it was."""
    rank = {g: i for i, g in enumerate(LONGEST_FIRST)}
    return sorted(range(len(groups)), key=lambda i: rank.get(groups[i], len(rank)))


def xdist_group_of(item: pytest.Item) -> str:
    """The group a test runs in when the suite runs side by side."""
    names = set(getattr(item, "fixturenames", ()))
    groups = sorted({g for f, g in BED_GROUPS.items() if f in names})
    if len(groups) > 1:
        raise pytest.UsageError(
            f"{item.nodeid} uses two test beds ({', '.join(groups)}): a worker that builds "
            "one waits for the other's until its worker ends; give them one group"
        )
    return groups[0] if groups else item.nodeid.split("::", 1)[0]


@pytest.hookimpl(tryfirst=True)  # before xdist's worker reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        for fixture, markers in _BED_MARKERS.items():
            if fixture in names:
                for marker in markers:
                    if item.get_closest_marker(marker) is None:
                        item.add_marker(marker)
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(xdist_group_of(item)))
    groups = [marked_group(item) for item in items]
    items[:] = [items[i] for i in longest_first(groups)]


def marked_group(item: pytest.Item) -> str:
    """The ``xdist_group`` a test is marked with (its own or the one given above)."""
    marker = item.get_closest_marker("xdist_group")
    assert marker is not None
    return str(marker.kwargs.get("name", marker.args[0] if marker.args else ""))


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C reaches the processes the tests start, however the suite was started.

    A shell without job control starts ``cmd &`` with SIGINT ignored, and an ignored
    signal stays ignored across fork and exec: every ``aibench`` a test starts would then
    ignore the SIGINT that the interrupt tests send it, and run on to the end. Putting
    Python's own handler back here (in the controller and in every worker) gives the
    children SIGINT's default again, as a terminal would."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def artifacts_dir() -> Path:
    """A folder for files a person may want to look at after the tests (screenshots)."""
    d = Path(os.environ.get("AIBENCH_TEST_ARTIFACTS", ROOT / "test-artifacts"))
    d.mkdir(parents=True, exist_ok=True)
    return d


# Skip reasons that stay skips under AIBENCH_TEST_STRICT: this machine having *more* than
# the tests assume (a GPU, an RDMA device), and the shared output corpus, which a plain
# clone does not have (its coverage test runs wherever the corpus is present).
_LEGITIMATE_SKIPS = ("this machine has", "a plain clone has no corpus")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """With ``AIBENCH_TEST_STRICT=1`` (set by ``.ci/run``) a test skipped for a missing tool
    or a test bed that could not be built fails instead: CI must not go green on tests that
    never ran. Locally, without the variable, such tests skip with the reason."""
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or os.environ.get("AIBENCH_TEST_STRICT") != "1":
        return
    if hasattr(report, "wasxfail"):
        return
    reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else ""
    if any(s in reason for s in _LEGITIMATE_SKIPS):
        return
    report.outcome = "failed"
    report.longrepr = f"skipped under AIBENCH_TEST_STRICT=1: {reason}"
