"""What the core knows of a tool, declared by the tool itself.

A tool is its own files: a runner (``aibench/runners/<tool>.py``) and a parser
(``aibench/parsers/<tool>.py``). Whatever the core needs to know of it beyond running and
parsing, the runner (or, for a tool that is only parsed, the parser) declares as
``traits = Traits(...)``; the core reads it here and keeps no table of tools:

* the spec vocabulary: the unit each metric is recorded in, so that a spec's unit is
  checked for its dimension when the spec is loaded (:func:`vocabulary`);
* which way is better for a metric whose unit does not say (``lower_is_better``: counts of
  retransmits, wrong results, lost packets), used by the engine and the history alike
  (:func:`higher_is_better`);
* the pairwise series fault localization compares, and the dimensions of which one value
  is kept (``pair_series``, ``keep_one``);
* the report section: the tool's own module in ``aibench/reports/sections/``, or another
  tool's renderer under this tool's name (``section``, ``title``);
* the environment facts the history compares across runs (``key_facts``) and the facts
  that must be the same on every node of the fleet (``consistency``);
* the tool-specific inventory fields are not declared here: every tool reads its binary
  directory from the node's ``tool_dirs: {TOOL: DIR}`` (see aibench/inventory.py).

A runner that only sets ``units = {...}`` (a class attribute) is read as
``Traits(units=...)``. The declaration types live in :mod:`aibench.traits`, beneath the
parsers and runners that use them; the lookups here import the runners and parsers and
sit above both.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from aibench.traits import Consistent, Traits

NONE = Traits()


def _declared(obj: Any) -> Traits | None:
    t = getattr(obj, "traits", None)
    if isinstance(t, Traits):
        return t
    units = getattr(obj, "units", None)
    if isinstance(units, Mapping) and units:
        return Traits(units=dict(units))
    return None


def traits(tool: str) -> Traits:
    """The traits ``tool`` declares: its runner's, else its parser's, else none."""
    from aibench.parsers import PARSERS
    from aibench.runners import RUNNERS

    if tool in RUNNERS:
        found = _declared(RUNNERS.get(tool))
        if found is not None:
            return found
    if tool in PARSERS:
        found = _declared(PARSERS.get(tool))
        if found is not None:
            return found
    return NONE


def all_tools() -> list[str]:
    from aibench.parsers import PARSERS
    from aibench.runners import RUNNERS

    return sorted({*RUNNERS.names(), *PARSERS.names()})


class Vocabulary(Mapping[tuple[str, str], str]):
    """(tool, metric) -> the unit the tool records it in, for every tool that says.

    Looking up one (tool, metric) reads only that tool's traits (importing its runner or
    parser alone); listing it reads every tool's."""

    def __getitem__(self, key: tuple[str, str]) -> str:
        tool, metric = key
        return traits(tool).units[metric]

    def _all(self) -> dict[tuple[str, str], str]:
        return {(tool, m): u for tool in all_tools() for m, u in traits(tool).units.items()}

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


def vocabulary() -> Vocabulary:
    """(tool, metric) -> the unit the tool records it in (see :class:`Vocabulary`)."""
    return Vocabulary()


def higher_is_better(tool: str, metric: str, unit: str) -> bool:
    """Whether a larger value is better: not for a time (latency), not for a metric its
    tool declares lower-is-better (retransmits, wrong results, lost packets)."""
    from aibench import units

    if metric in traits(tool).lower_is_better:
        return False
    try:
        return units.dimension(unit) != "time"
    except units.UnitError:
        return True


def pair_series(
    among: Iterable[str] | None = None,
) -> list[tuple[str, str, Mapping[str, object] | None]]:
    """(tool, metric, required dims) of every pairwise series fault localization reads;
    of the tools ``among`` only (those of a run) when given, which reads no other tool."""
    names = all_tools() if among is None else sorted(set(among))
    return [(tool, s.metric, s.dims) for tool in names for s in traits(tool).pair_series]


def key_facts() -> tuple[str, ...]:
    return tuple(k for tool in all_tools() for k in traits(tool).key_facts)


def consistency() -> tuple[Consistent, ...]:
    return tuple(c for tool in all_tools() for c in traits(tool).consistency)
