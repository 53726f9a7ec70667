"""Fixtures for the report tests: generated runs written to disk and rendered once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from aibench.reports import write_all
from tests.reports.gen import Generated, make_run, write_run


@dataclass(frozen=True)
class Rendered:
    gen: Generated
    run_dir: Path
    files: dict[str, Path]

    @property
    def html(self) -> str:
        return (self.run_dir / "report.html").read_text(encoding="utf-8")


def _render(tmp: Path, n: int, hostile: bool = False) -> Rendered:
    gen = make_run(n, hostile=hostile)
    run_dir = tmp / "run"
    write_run(gen, run_dir)
    return Rendered(gen, run_dir, write_all(gen.run, run_dir))


@pytest.fixture(scope="session")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    return _render(tmp_path_factory.mktemp("r8"), 8)


@pytest.fixture(scope="session")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    return _render(tmp_path_factory.mktemp("hostile"), 6, hostile=True)
