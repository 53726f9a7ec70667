"""Shared test configuration. Area-specific fixtures live beside their tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def artifacts_dir() -> Path:
    """A folder for files a person may want to look at after the tests (screenshots)."""
    d = Path(os.environ.get("AIBENCH_TEST_ARTIFACTS", ROOT / "test-artifacts"))
    d.mkdir(parents=True, exist_ok=True)
    return d
