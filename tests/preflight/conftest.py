"""The multi-host test bed (namespace hosts with sshd) for the SSH preflight test."""

from __future__ import annotations

from tests.testbed.fixtures import testbed_hosts

__all__ = ["testbed_hosts"]
