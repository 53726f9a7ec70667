"""Parsers: one module per tool, each a pure function from text to records.

Contract (STYLE.md principles 1-4). A module ``aibench/parsers/<tool>.py`` defines
``PARSER`` (a :class:`Parser`, or a list of them). ``parse(text)``:

* takes the tool's whole output as text and returns a list of records: Measurements for
  benchmarks, Facts for node-inspection tools (nvidia-smi, ibstat ...), and Notes for the
  tool's own warnings about the run (kept on the step and shown beside the numbers);
* does no I/O, reads no environment, starts no process, knows no hosts or ranks;
* raises :class:`aibench.errors.ParseError` (with the line number and a reason) when the
  output cannot be read, and :class:`aibench.errors.ToolFailure` (with the tool's own
  message, and what was measured before it failed in ``partial``) when the tool reports
  that it failed. It never turns what it cannot read into 0 or a silent skip.

``detect(text)`` (optional) says whether a text looks like this parser's input; it powers
``aibench parse --tool auto``.

The module docstring of each parser says what command it reads, which versions it was
tested on, and the metrics and dims it emits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aibench.errors import ParseError
from aibench.model import Fact, Measurement, Note
from aibench.registry import Registry

Record = Measurement | Fact | Note


@dataclass(frozen=True)
class Parser:
    """A parser of the registry. Its ``parse`` never returns an empty success: an output
    in which it reads no measurement and no fact (notes alone do not count) is a
    :class:`~aibench.errors.ParseError` naming what it looked for (its ``description``),
    unless ``empty_ok`` says that nothing is a valid reading (an empty event log)."""

    name: str  # registry name, e.g. "fio", "iperf3", "nccl-tests", "nvidia-smi-q"
    parse: Callable[[str], Sequence[Record]]
    description: str = ""
    detect: Callable[[str], bool] | None = None
    emits: str = "measurements"  # or "facts"
    aliases: tuple[str, ...] = field(default=())
    # what the core knows of a tool that is only parsed, never run (aibench.traits.Traits)
    traits: Any = None
    empty_ok: bool = False  # no record is a valid reading (an event log with no event)

    def __post_init__(self) -> None:
        if not self.empty_ok and not getattr(self.parse, "never_empty", False):
            object.__setattr__(self, "parse", _never_empty(self))


def _never_empty(p: Parser) -> Callable[[str], Sequence[Record]]:
    raw = p.parse
    what = p.description or f"{p.name} output"

    def parse(text: str) -> Sequence[Record]:
        records = raw(text)
        if not any(not isinstance(r, Note) for r in records):
            raise ParseError(p.name, f"no {p.emits} found: looked for {what}")
        return records

    parse.never_empty = True  # type: ignore[attr-defined]
    parse.__doc__ = raw.__doc__
    return parse


PARSERS: Registry[Parser] = Registry("parser", "aibench.parsers", "PARSER", key=lambda p: p.name)


def get(name: str) -> Parser:
    return PARSERS.get(name)


def parse(name: str, text: str) -> list[Record]:
    return list(get(name).parse(text))


def detect(text: str) -> list[str]:
    """Names of the parsers whose ``detect`` accepts ``text``."""
    return [p.name for p in PARSERS if p.detect is not None and p.detect(text)]
