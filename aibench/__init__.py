"""aibench: benchmarking and acceptance tests for AI compute clusters.

The Python API for analysis is :func:`load_run` and :func:`load_history` (tidy pandas
DataFrames, see :mod:`aibench.frames`). Importing ``aibench`` stays cheap: pandas is
imported when one of them is called, not here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from aibench.frames import HistoryFrames, RunFrames

__version__ = "0.1.0"
__all__ = ["__version__", "load_history", "load_run"]


def load_run(path: str | Path) -> RunFrames:
    """The measurements, verdicts, facts and steps of a stored run as DataFrames.

    ``path`` is a run directory written by ``aibench run`` (or its run.json).
    """
    from aibench.frames import load_run as load

    return load(path)


def load_history(db: str | Path) -> HistoryFrames:
    """The runs, per-series points and verdicts of a history database as DataFrames."""
    from aibench.frames import load_history as load

    return load(db)
