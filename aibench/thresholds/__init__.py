"""Judging: specs, the thresholds engine, derived expectations, outliers, localization.

Public contract used by ``aibench run``, ``aibench check`` and ``aibench report``:

* :func:`load_spec` (name of a built-in profile in ``aibench/thresholds/profiles/`` or a
  path) -> :class:`Spec`, validated; an error is one ConfigError naming file and key path.
* :func:`judge` (spec, run, now=None) -> list of :class:`~aibench.model.Verdict`.
* :func:`not_applicable` (spec, run) -> one line per role check that does not apply to
  the run's inventory (no node has that role): callers print or note them.
* :func:`check_spec_names` (spec, suite steps=None): the tools, metrics and steps a spec
  selects, checked before anything runs (a ConfigError with the nearest valid name).
"""

from __future__ import annotations

from aibench.thresholds.engine import judge, not_applicable
from aibench.thresholds.names import check_spec_names
from aibench.thresholds.spec import Check, Spec, SpecModel, load_spec

__all__ = [
    "Check",
    "Spec",
    "SpecModel",
    "check_spec_names",
    "judge",
    "load_spec",
    "not_applicable",
]
