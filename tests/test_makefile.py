"""The Makefile's two package lists: ``make acceptance`` installs what the acceptance suite
runs and nothing of the test beds (often on a cluster's login node); ``make test`` (what CI
calls) installs everything the beds use. Read from ``make -n``, as make expands it."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BEDS_ONLY = {"ceph-mon", "glusterfs-server", "golang-go", "etcd-server", "containerd",
             "chromium", "slurm-wlm", "openmpi-bin", "nginx"}  # fmt: skip

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def installed_by(target: str) -> set[str]:
    """The packages the install loop of ``make TARGET`` checks (its dry run)."""
    out = subprocess.run(
        ["make", "-n", "-C", str(ROOT), target, "VENV=/nonexistent/venv"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    loops = re.findall(r"for p in ([^;]*); do", out)
    assert len(loops) == 1, out
    return set(loops[0].split())


def test_acceptance_installs_the_acceptance_suites_tools_and_no_bed() -> None:
    packages = installed_by("acceptance")
    assert {"fio", "iperf3", "util-linux"} <= packages
    assert not packages & BEDS_ONLY
    assert len(packages) < 10


def test_make_test_installs_the_beds_too() -> None:
    acceptance, everything = installed_by("acceptance"), installed_by("test")
    assert acceptance < everything
    assert everything >= BEDS_ONLY
    assert installed_by("system-packages") == everything
