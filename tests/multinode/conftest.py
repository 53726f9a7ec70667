"""The multi-host test bed fixtures (namespace hosts with sshd, a Slurm cluster on them)."""

from __future__ import annotations

from tests.testbed.fixtures import testbed_hosts, testbed_slurm

__all__ = ["testbed_hosts", "testbed_slurm"]
