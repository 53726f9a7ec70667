"""A test that uses the bed is marked by its fixtures (tests/conftest.py), not by hand.

``pytest -m "not netns"`` must select no test that asks for ``testbed_hosts`` or
``testbed_slurm``, and ``-m slurm`` must select every test that asks for the cluster,
including those whose module declares no marker (the runner tests over the bed).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

# (test module, test function) pairs that use the bed and declare no marker of their own
UNMARKED_HOSTS = [
    "tests/runners/test_perftest_multihost.py::test_every_pair_and_rail_of_four_hosts",
    "tests/runners/test_nccl_tests_multihost.py::test_mpirun_over_ssh_across_two_namespace_hosts",
]
UNMARKED_SLURM = [
    "tests/runners/test_nccl_tests_multihost.py::test_srun_pmix_on_the_slurm_cluster",
    "tests/runners/test_mlperf_training_slurm.py::test_three_runs_through_srun_are_checked_and_scored",
]
FILES = sorted({t.split("::")[0] for t in UNMARKED_HOSTS + UNMARKED_SLURM})
NO_BED = "tests/runners/test_nccl_tests_local.py"  # a module of the same area without the bed


def collected(*args: str) -> set[str]:
    # without Hypothesis's plugin, whose import is most of a collection's start-up and
    # which marks nothing (the markers come from tests/conftest.py)
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-p", "no:hypothesispytest", "--collect-only", *args, *FILES, NO_BED],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert r.returncode in (0, 5), r.stdout + r.stderr  # 5: everything deselected
    return {ln.strip() for ln in r.stdout.splitlines() if "::" in ln}


def test_the_bed_modules_declare_no_marker_themselves() -> None:
    # the point of the test: these modules rely on the fixture-driven markers
    for f in FILES:
        text = (ROOT / f).read_text()
        assert "mark.netns" not in text, f
        assert "mark.slurm" not in text, f


def test_not_netns_deselects_every_test_that_uses_the_bed() -> None:
    everything = collected()
    assert set(UNMARKED_HOSTS + UNMARKED_SLURM) <= everything
    kept = collected("-m", "not netns")
    assert kept.isdisjoint(UNMARKED_HOSTS + UNMARKED_SLURM), kept
    assert kept  # the tests that need no bed stay selected
    assert all(t.startswith(NO_BED) for t in kept), kept


def test_slurm_selects_the_tests_that_use_the_cluster() -> None:
    got = collected("-m", "slurm")
    assert got == set(UNMARKED_SLURM), got
    assert set(UNMARKED_HOSTS + UNMARKED_SLURM) <= collected("-m", "netns")
