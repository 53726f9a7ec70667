"""The multi-host test bed fixtures, for the runners' tests across hosts."""

from __future__ import annotations

from tests.testbed.fixtures import testbed_hosts, testbed_slurm

__all__ = ["testbed_hosts", "testbed_slurm"]
