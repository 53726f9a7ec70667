"""The declaration types of a tool: what its runner (or parser) says of itself.

``Traits`` with its ``PairSeries`` and ``Consistent``: plain values that a runner or a
parser sets as its ``traits`` and that :mod:`aibench.tools` reads. This module imports
nothing of aibench, so that a parser declaring its traits is no nearer to the runners
than it was before (see :mod:`aibench.tools` for what each field is read by).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class PairSeries:
    """A pairwise result fault localization compares: a metric, and the dimensions a
    measurement must have to belong (e.g. iperf3's receiver side)."""

    metric: str
    dims: Mapping[str, object] | None = None


@dataclass(frozen=True)
class Consistent:
    """A fact that must be the same on every node: verdict ``consistency.<check>``."""

    check: str
    source: str
    name: str
    severity: str = "fail"  # fail | warn: the outcome of the odd node out


@dataclass(frozen=True)
class Traits:
    units: Mapping[str, str] = field(default_factory=dict)
    lower_is_better: frozenset[str] = frozenset()
    pair_series: tuple[PairSeries, ...] = ()
    keep_one: Mapping[str, str] = field(default_factory=dict)
    section: str = ""  # render with this tool's report section (under this tool's name)
    title: str = ""  # the report section's title
    key_facts: tuple[str, ...] = ()  # flattened fact names; a name ending in "." a prefix
    consistency: tuple[Consistent, ...] = ()
