"""Shared test configuration. Area-specific fixtures live beside their tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The multi-host test bed's fixtures are registered once, here: a session fixture imported
# into several conftest files would be a separate fixture in each, and the second bed
# would wait for the first one's lock until the end of the session.
pytest_plugins = ["tests.testbed.fixtures"]


@pytest.fixture
def artifacts_dir() -> Path:
    """A folder for files a person may want to look at after the tests (screenshots)."""
    d = Path(os.environ.get("AIBENCH_TEST_ARTIFACTS", ROOT / "test-artifacts"))
    d.mkdir(parents=True, exist_ok=True)
    return d
