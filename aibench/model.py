"""The core records: Measurement, Fact, StepResult, Verdict, Run.

All are frozen dataclasses. Each has ``to_dict()`` and ``from_dict()`` for the versioned
JSON form written to ``run.json`` (``SCHEMA_VERSION``). A ``run.json`` with another major
schema version is refused with a clear message instead of being half-read.

Conventions (STYLE.md principle 2):

* ``metric`` is a fixed snake_case name from the tool's vocabulary (``busbw``, ``bw``,
  ``iops``, ``lat_p99``); the variable dimensions (op, size_bytes, rw, bs, direction,
  streams, scenario ...) live in ``dims``, never in the metric name.
* ``unit`` is always explicit and must be known to :mod:`aibench.units`.
* ``nodes`` is the node, the pair or the set that produced the value; parsers leave it
  empty (they know no hosts) and the orchestrator fills it in with :func:`attach`.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
import math
import sys
from array import array
from collections.abc import (
    Callable,
    ItemsView,
    Iterable,
    Iterator,
    KeysView,
    Mapping,
    Sequence,
    ValuesView,
)
from dataclasses import dataclass, field
from operator import itemgetter
from types import MappingProxyType
from typing import Any, TypeAlias, TypeVar, overload

T = TypeVar("T")

SCHEMA_VERSION = "1.2"  # 1.1: Verdict.origin, Run.judgements; 1.2: Run.inputs, Verdict.baseline

Scalar: TypeAlias = str | int | float | bool
_SCALAR_TYPES = frozenset((str, int, float, bool))


class FrozenDims(Mapping[str, Scalar]):
    """An immutable, hashable mapping of dimension name to scalar value.

    Every construction checks that names are str and values scalars, then orders the items
    by name. The check costs one ``type()`` lookup per item for the exact builtin types
    (subclasses such as numpy scalars fall back to ``isinstance``), so parsers that emit
    many records build one FrozenDims per row and share it between that row's records.
    """

    # _map holds the items ordered by name; _hash is filled on first use. One dict and no
    # item tuples: a dict of str keys and scalar values is not tracked by the garbage
    # collector, tuples are, and a large output holds one FrozenDims per row.
    __slots__ = ("_hash", "_map")

    def __init__(self, data: Mapping[str, Scalar] | Iterable[tuple[str, Scalar]] = ()) -> None:
        if type(data) is dict:
            pairs: Iterable[tuple[str, Scalar]] = data.items()
        else:
            pairs = data.items() if isinstance(data, Mapping) else data
        m: dict[str, Scalar] = {}
        for k, v in pairs:
            if type(k) is not str and not isinstance(k, str):
                raise TypeError(f"dimension names must be str, got {k!r}")
            if type(v) not in _SCALAR_TYPES and not isinstance(v, str | int | float | bool):
                raise TypeError(f"dimension {k!r} must be a scalar, got {type(v).__name__}")
            m[k] = v
        self._map = dict(sorted(m.items()))

    def __getitem__(self, key: str) -> Scalar:
        return self._map[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._map)

    def __len__(self) -> int:
        return len(self._map)

    # The inner dict's own methods and read-only views, not the Mapping mixins' (which
    # go through __iter__ and __getitem__ for every item): judging and reporting a large
    # run read the dims of every measurement.
    def __contains__(self, key: object) -> bool:
        return key in self._map

    def get(self, key: str, default: Any = None) -> Any:
        return self._map.get(key, default)

    def keys(self) -> KeysView[str]:
        return self._map.keys()

    def items(self) -> ItemsView[str, Scalar]:
        return self._map.items()

    def values(self) -> ValuesView[Scalar]:
        return self._map.values()

    def __hash__(self) -> int:
        try:
            return self._hash
        except AttributeError:
            self._hash: int = hash(tuple(self._map.items()))
            return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenDims):
            return self._map == other._map  # same names, so the same order
        if isinstance(other, Mapping):
            return self._map == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"FrozenDims({self._map!r})"

    def to_dict(self) -> dict[str, Scalar]:
        return dict(self._map)


class DimsLayout:
    """A fixed list of dimension names, to build many FrozenDims that differ in values only.

    For parsers that emit a record set per table row: the names are checked (str, no
    duplicates) and ordered once, then :meth:`make` builds each row's dims from the values
    alone. ``make`` checks the values as the FrozenDims constructor does (one C-level type
    test for the common case; anything but an exact str/int/float/bool goes through the
    constructor itself, which accepts subclasses and raises TypeError for the rest).
    """

    __slots__ = ("_names", "_pick", "_sorted_names")

    def __init__(self, names: Iterable[str]) -> None:
        self._names = tuple(names)
        for k in self._names:
            if not isinstance(k, str):
                raise TypeError(f"dimension names must be str, got {k!r}")
        if len(set(self._names)) != len(self._names):
            raise ValueError(f"duplicate dimension names in {self._names}")
        order = sorted(range(len(self._names)), key=self._names.__getitem__)
        self._sorted_names = tuple(self._names[i] for i in order)
        # values in name order -> values in sorted-name order (itemgetter: a tuple for 2+)
        self._pick: Callable[[Sequence[Scalar]], Sequence[Scalar]] = (
            itemgetter(*order) if len(order) > 1 else (lambda v: tuple(v))
        )

    @property
    def names(self) -> tuple[str, ...]:
        return self._names

    def make(self, values: Sequence[Scalar]) -> FrozenDims:
        """The FrozenDims of ``names`` to ``values`` (same order, same length)."""
        if len(values) != len(self._names):
            raise ValueError(f"{len(values)} values for the dimensions {self._names}")
        if not _SCALAR_TYPES.issuperset(map(type, values)):
            return FrozenDims(zip(self._names, values, strict=True))
        dims = FrozenDims.__new__(FrozenDims)
        # lengths checked above; zip's keyword costs a tenth of this call
        dims._map = dict(zip(self._sorted_names, self._pick(values)))  # noqa: B905
        return dims

    def make_each(self, head: Sequence[Scalar], lasts: Sequence[Scalar]) -> list[FrozenDims]:
        """One FrozenDims per value in ``lasts`` for the last name, ``head`` for the others
        (a table row's dims per placement, say): checked once, the dict copied per value."""
        if not lasts:
            return []
        first = self.make((*head, lasts[0]))
        if len(lasts) == 1 or not _SCALAR_TYPES.issuperset(map(type, lasts)):
            return [first, *(self.make((*head, v)) for v in lasts[1:])]
        last = self._names[-1]
        out = [first]
        for v in lasts[1:]:
            dims = FrozenDims.__new__(FrozenDims)
            dims._map = m = first._map.copy()  # same names, so the same order
            m[last] = v
            out.append(dims)
        return out


_NO_DIMS = FrozenDims()


class Shared:
    """One object for each repeated value while records are read back (from run.json or
    the journal): names, node tuples and dims recur in every measurement of a large run,
    and JSON gives each occurrence its own copy. A run of millions of measurements holds
    a few thousand distinct ones. ``tuples=False``: node tuples are not kept beyond the
    last one (records read one at a time and let go: all pairs of N nodes are N²/2
    distinct tuples, and a step's measurements share its own)."""

    __slots__ = ("_dims", "_last", "_nodes", "_tuples")

    def __init__(self, *, tuples: bool = True) -> None:
        self._nodes: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        self._dims: dict[tuple[Any, ...], FrozenDims] = {}
        self._tuples = tuples
        self._last: tuple[Any, ...] = ()

    @staticmethod
    def text(value: Any) -> Any:
        """``value`` interned when it is a str (anything else as it is)."""
        return sys.intern(value) if type(value) is str else value

    def nodes(self, names: Iterable[Any]) -> tuple[Any, ...]:
        t = tuple(map(self.text, names))
        if self._tuples:
            return self._nodes.setdefault(t, t)
        if t != self._last:
            self._last = t
        return self._last

    def dims(self, data: Mapping[str, Any]) -> FrozenDims:
        if not data:
            return _NO_DIMS
        key = tuple((k, type(v), v) for k, v in data.items())  # 1, 1.0 and True differ
        try:
            return self._dims[key]
        except KeyError:
            made = self._dims[key] = FrozenDims(
                {self.text(k): self.text(v) for k, v in data.items()}
            )
            return made
        except TypeError:  # an unhashable value: FrozenDims says what is wrong
            return FrozenDims(data)


@dataclass(frozen=True, slots=True)
class Measurement:
    """One number a tool produced, with its unit and the dimensions that vary.

    ``dims`` may be given as any mapping (it is turned into a FrozenDims), ``nodes`` as any
    iterable of names, ``value`` as an int or float (not a bool); the value is stored as a
    finite float, anything else is a TypeError or ValueError naming the metric.
    """

    tool: str
    metric: str
    value: float
    unit: str
    dims: FrozenDims = _NO_DIMS
    nodes: tuple[str, ...] = ()
    step: str = ""
    repeat: int = 0

    def __post_init__(self) -> None:
        _freeze(self)
        value = self.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError(f"{self.tool}.{self.metric}: value must be a number, got {value!r}")
        if not math.isfinite(value):
            raise ValueError(f"{self.tool}.{self.metric}: value must be finite, got {value}")
        object.__setattr__(self, "value", float(value))

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "metric": self.metric,
            "value": self.value,
            "unit": self.unit,
            "dims": self.dims.to_dict(),
            "nodes": list(self.nodes),
            "step": self.step,
            "repeat": self.repeat,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], shared: Shared | None = None) -> Measurement:
        sh = shared or Shared()
        return cls(
            tool=sh.text(d["tool"]),
            metric=sh.text(d["metric"]),
            value=d["value"],
            unit=sh.text(d["unit"]),
            dims=sh.dims(d.get("dims", {})),
            nodes=sh.nodes(d.get("nodes", ())),
            step=sh.text(d.get("step", "")),
            repeat=int(d.get("repeat", 0)),
        )


FactValue: TypeAlias = str | int | float | bool | None


@dataclass(frozen=True, slots=True)
class Fact:
    """One observed property of a node (driver version, swappiness, HCA state ...).

    ``value`` is None when the fact is *absent* (the tool or file does not exist on the
    node); ``absent`` is then True and ``reason`` says why. An absent fact is reported
    and judged, never silently passed.
    """

    source: str
    name: str
    value: FactValue
    unit: str | None = None
    dims: FrozenDims = _NO_DIMS
    nodes: tuple[str, ...] = ()
    reason: str = ""

    def __post_init__(self) -> None:
        _freeze(self)

    @property
    def absent(self) -> bool:
        return self.value is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "name": self.name,
            "value": self.value,
            "unit": self.unit,
            "dims": self.dims.to_dict(),
            "nodes": list(self.nodes),
            "reason": self.reason,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], shared: Shared | None = None) -> Fact:
        sh = shared or Shared()
        return cls(
            source=sh.text(d["source"]),
            name=sh.text(d["name"]),
            value=sh.text(d.get("value")),
            unit=sh.text(d.get("unit")),
            dims=sh.dims(d.get("dims", {})),
            nodes=sh.nodes(d.get("nodes", ())),
            reason=sh.text(d.get("reason", "")),
        )


def _freeze(record: Measurement | Fact) -> None:
    """Give a record its immutable forms: any mapping of dims becomes a FrozenDims, any
    iterable of node names a tuple."""
    if not isinstance(record.dims, FrozenDims):
        object.__setattr__(record, "dims", FrozenDims(record.dims or {}))
    if not isinstance(record.nodes, tuple):
        object.__setattr__(record, "nodes", tuple(record.nodes))


@dataclass(frozen=True, slots=True)
class Note:
    """A tool's own warning or remark about its run, kept beside the numbers it qualifies.

    ``text`` is the tool's words (one line, as printed); ``kind`` is ``warning`` (the tool
    says a number may be off: CPU frequency scaling, a reduced size range, an unknown
    MSS) or ``info``; ``line`` is the 1-based line of the output it was read from. A note
    never changes a verdict: it travels on the StepResult and is shown in the report.
    """

    tool: str
    text: str
    kind: str = "warning"
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"tool": self.tool, "text": self.text, "kind": self.kind, "line": self.line}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Note:
        line = d.get("line")
        return cls(
            tool=d["tool"],
            text=d["text"],
            kind=d.get("kind", "warning"),
            line=int(line) if line is not None else None,
        )


class StepStatus(enum.StrEnum):
    OK = "ok"
    FAILED = "failed"
    TIMEOUT = "timeout"
    UNREACHABLE = "unreachable"
    NOT_RUN = "not_run"


# The environment of a record read back without one: shared by them all, and read-only
_NO_ENV: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ProcessRecord:
    """The exact process a step started: where, argv, the environment it was given."""

    host: str
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    role: str = "client"  # client | server | launcher
    exit_code: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "argv": list(self.argv),
            "env": dict(self.env),
            "role": self.role,
            "exit_code": self.exit_code,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], shared: Shared | None = None) -> ProcessRecord:
        sh = shared or Shared()
        env = d.get("env")
        return cls(
            host=sh.text(d["host"]),
            argv=tuple(map(sh.text, d["argv"])),
            env=dict(env) if env else _NO_ENV,
            role=sh.text(d.get("role", "client")),
            exit_code=d.get("exit_code"),
        )


@dataclass(frozen=True, slots=True)
class StepResult:
    """One tool invocation on one placement (a node, a pair, a set of nodes)."""

    step_id: str  # unique in the run: "<step>/<placement>/r<repeat>"
    step: str  # the suite step name
    tool: str
    nodes: tuple[str, ...]
    repeat: int
    status: StepStatus
    exit_code: int | None = None
    started: str = ""  # ISO 8601 UTC
    duration_s: float = 0.0
    processes: tuple[ProcessRecord, ...] = ()
    stdout_path: str = ""  # relative to the run directory
    stderr_path: str = ""
    measurements: tuple[Measurement, ...] = ()
    facts: tuple[Fact, ...] = ()
    reason: str = ""  # one line when status is not ok
    tool_version: str = ""
    round: int = 0
    notes: tuple[Note, ...] = ()  # the tool's own warnings about this invocation

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", StepStatus(self.status))
        object.__setattr__(self, "notes", tuple(self.notes))
        object.__setattr__(self, "nodes", tuple(self.nodes))
        object.__setattr__(self, "measurements", tuple(self.measurements))
        object.__setattr__(self, "facts", tuple(self.facts))
        object.__setattr__(self, "processes", tuple(self.processes))

    @property
    def ok(self) -> bool:
        return self.status is StepStatus.OK

    def to_dict(self) -> dict[str, Any]:
        d = self._to_dict()
        if self.notes:  # written only when there are some: older run.json files read the same
            d["notes"] = [n.to_dict() for n in self.notes]
        return d

    def _to_dict(self) -> dict[str, Any]:
        return {
            "step_id": self.step_id,
            "step": self.step,
            "tool": self.tool,
            "nodes": list(self.nodes),
            "repeat": self.repeat,
            "round": self.round,
            "status": self.status.value,
            "exit_code": self.exit_code,
            "started": self.started,
            "duration_s": self.duration_s,
            "processes": [p.to_dict() for p in self.processes],
            "stdout_path": self.stdout_path,
            "stderr_path": self.stderr_path,
            "reason": self.reason,
            "tool_version": self.tool_version,
            "measurements": [m.to_dict() for m in self.measurements],
            "facts": [f.to_dict() for f in self.facts],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], shared: Shared | None = None) -> StepResult:
        sh = shared or Shared()
        return cls(
            step_id=d["step_id"],
            step=sh.text(d["step"]),
            tool=sh.text(d["tool"]),
            nodes=sh.nodes(d.get("nodes", ())),
            repeat=int(d.get("repeat", 0)),
            round=int(d.get("round", 0)),
            status=StepStatus(d["status"]),
            exit_code=d.get("exit_code"),
            started=sh.text(d.get("started", "")),
            duration_s=float(d.get("duration_s", 0.0)),
            processes=tuple(ProcessRecord.from_dict(p, sh) for p in d.get("processes", ())),
            stdout_path=d.get("stdout_path", ""),
            stderr_path=d.get("stderr_path", ""),
            reason=sh.text(d.get("reason", "")),
            tool_version=sh.text(d.get("tool_version", "")),
            measurements=tuple(Measurement.from_dict(m, sh) for m in d.get("measurements", ())),
            facts=tuple(Fact.from_dict(f, sh) for f in d.get("facts", ())),
            notes=tuple(Note.from_dict(n) for n in d.get("notes", ())),
        )


class Outcome(enum.StrEnum):
    PASS = "PASS"  # noqa: S105
    WARN = "WARN"  # inside the fail bound, outside the warn bound: does not fail the run
    FAIL = "FAIL"
    WAIVED = "WAIVED"
    MISSING = "MISSING"  # nothing was measured for the check: never a PASS
    ERROR = "ERROR"  # the measuring step failed, or the check could not be evaluated

    @property
    def failing(self) -> bool:
        return self in (Outcome.FAIL, Outcome.MISSING, Outcome.ERROR)


@dataclass(frozen=True, slots=True)
class Verdict:
    """One check of the spec, evaluated for one subject (a node, a pair, the fleet)."""

    check: str  # the check's id in the spec
    outcome: Outcome
    subject: tuple[str, ...] = ()  # the node(s) the verdict is about; () = whole run
    description: str = ""
    expected: str = ""  # human form, e.g. ">= 5000 MB/s"
    observed: float | None = None
    observed_text: str = ""  # for facts, or "3 of 4 nodes", etc.
    unit: str = ""
    reference: float | None = None
    bounds: tuple[float | None, float | None] = (None, None)  # in `unit`
    aggregate: str = ""
    samples: int = 0
    culprits: tuple[str, ...] = ()  # nodes / links that caused a FAIL
    evidence: tuple[str, ...] = ()  # step_ids (and so raw log paths)
    reason: str = ""
    benchmark: str = ""  # tool or section the check belongs to (groups JUnit testcases)
    waiver: Mapping[str, str] | None = None
    # Where the verdict comes from (:data:`ORIGINS`): a check of the spec, the coverage
    # a check requires, the fleet against itself, the inventory's declarations, history.
    origin: str = "spec"
    # A history verdict's baseline: runs (ids), n, median, spread (scaled MAD), band, unit.
    baseline: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "outcome", Outcome(self.outcome))
        object.__setattr__(self, "subject", tuple(self.subject))
        object.__setattr__(self, "culprits", tuple(self.culprits))
        object.__setattr__(self, "evidence", tuple(self.evidence))
        object.__setattr__(self, "bounds", tuple(self.bounds))

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "outcome": self.outcome.value,
            "subject": list(self.subject),
            "description": self.description,
            "expected": self.expected,
            "observed": self.observed,
            "observed_text": self.observed_text,
            "unit": self.unit,
            "reference": self.reference,
            "bounds": list(self.bounds),
            "aggregate": self.aggregate,
            "samples": self.samples,
            "culprits": list(self.culprits),
            "evidence": list(self.evidence),
            "reason": self.reason,
            "benchmark": self.benchmark,
            "waiver": dict(self.waiver) if self.waiver else None,
            "origin": self.origin,
            **({"baseline": dict(self.baseline)} if self.baseline else {}),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], shared: Shared | None = None) -> Verdict:
        sh = shared or Shared()
        b = d.get("bounds") or (None, None)
        return cls(
            check=sh.text(d["check"]),
            outcome=Outcome(d["outcome"]),
            subject=sh.nodes(d.get("subject", ())),
            description=sh.text(d.get("description", "")),
            expected=sh.text(d.get("expected", "")),
            observed=d.get("observed"),
            observed_text=d.get("observed_text", ""),
            unit=sh.text(d.get("unit", "")),
            reference=d.get("reference"),
            bounds=(b[0], b[1]),
            aggregate=sh.text(d.get("aggregate", "")),
            samples=int(d.get("samples", 0)),
            culprits=tuple(d.get("culprits", ())),
            evidence=tuple(d.get("evidence", ())),
            reason=d.get("reason", ""),
            benchmark=sh.text(d.get("benchmark", "")),
            waiver=d.get("waiver"),
            origin=sh.text(d.get("origin") or origin_of(d["check"])),
            baseline=d.get("baseline"),
        )


# Where a verdict can come from; a re-judge keeps every one of them (aibench.judge).
ORIGINS = ("spec", "coverage", "consistency", "inventory", "history", "telemetry", "step")


def overall(verdicts: Iterable[Verdict]) -> Outcome:
    """The one rule for the outcome of a run or a judgement, whoever asks (``run``,
    ``check``, ``report``, every twin): no verdict at all is MISSING (a run that judged
    nothing proves nothing); any FAIL, MISSING or ERROR is FAIL; else PASS (WARN and
    WAIVED do not fail). A failing outcome exits 1 (:data:`aibench.errors.EXIT_CHECKS_FAILED`)."""
    seen = False
    for v in verdicts:
        if v.outcome.failing:
            return Outcome.FAIL
        seen = True
    return Outcome.PASS if seen else Outcome.MISSING


def partial_text(inputs: Mapping[str, Any]) -> str:
    """What a run of part of its suite or inventory left out, from its recorded inputs:
    "" for a whole run; else e.g. "partial run: 2 of 9 steps (fio-seq-read, fio-rand-read);
    nodes gpu[01-04] (4 of 16)". Such a run is never the suite's acceptance."""
    suite = inputs.get("suite") or {}
    steps, selected = suite.get("steps") or [], suite.get("selected")
    parts = []
    if isinstance(selected, list) and steps and len(selected) < len(steps):
        names = ", ".join(str(x) for x in selected[:6]) + (", ..." if len(selected) > 6 else "")
        parts.append(f"{len(selected)} of {len(steps)} steps ({names})")
    nodes = inputs.get("nodes") or {}
    if nodes.get("expr"):
        parts.append(f"nodes {nodes['expr']} ({nodes.get('selected')} of {nodes.get('of')})")
    return "partial run: " + "; ".join(parts) if parts else ""


def origin_of(check: str) -> str:
    """The origin of a verdict stored without one (schema 1.0), by its check name:
    ``consistency.*``, ``inventory.*``, ``regression:*``, ``soak.*``, ``*.coverage``."""
    if check.startswith("consistency."):
        return "consistency"
    if check.startswith("inventory."):
        return "inventory"
    if check.startswith("regression:"):
        return "history"
    if check.startswith("soak."):
        return "telemetry"
    if check.endswith(".coverage"):
        return "coverage"
    return "spec"


class StepSource(Sequence[StepResult]):
    """Steps that stay on disk and are read again each time they are gone over: the
    results of a run of millions of invocations, judged, stored and reported at its end
    one step at a time (:meth:`aibench.orchestrator.Execution.results_log`). A Run keeps
    one as its ``steps`` as it is (any other iterable becomes a tuple). A consumer goes
    over it in one pass and keeps what it needs, not the steps. A subclass gives
    ``__len__`` and :meth:`_pick`; a pass, an index and a slice are made of it."""

    __slots__ = ()

    def _pick(self, indices: Iterable[int]) -> Iterator[StepResult]:
        """The steps at ``indices`` (ascending, from 0), in their order, read in one pass
        (one open file for the pass)."""
        raise NotImplementedError

    def __iter__(self) -> Iterator[StepResult]:
        return self._pick(range(len(self)))

    def _step(self, i: int) -> StepResult:
        """The step at index ``i`` (negative from the end; an IndexError as a list's)."""
        return next(self._pick((range(len(self))[i],)))

    def kinds(self) -> frozenset[tuple[str, str]]:
        """The (step name, tool) of its steps: those the subclass noted (``_kinds``) when
        it found where the steps are, else a pass over them."""
        noted: frozenset[tuple[str, str]] | None = getattr(self, "_kinds", None)
        return frozenset((s.step, s.tool) for s in self) if noted is None else noted

    def subset(self, indices: array[int]) -> Picked:
        """The steps at ``indices`` (ascending) as a source of their own, still on disk:
        each pass reads those steps alone."""
        return Picked(self, indices)

    @overload
    def __getitem__(self, i: int) -> StepResult: ...
    @overload
    def __getitem__(self, i: slice) -> list[StepResult]: ...
    def __getitem__(self, i: int | slice) -> StepResult | list[StepResult]:
        if isinstance(i, slice):
            return list(itertools.islice(self, *i.indices(len(self))))
        return self._step(i)


class Picked(StepSource):
    """Some steps of a :class:`StepSource`, by their indices there (8 bytes a step): the
    steps of one tool, which a report section goes over more than once."""

    __slots__ = ("indices", "source")

    def __init__(self, source: StepSource, indices: array[int]) -> None:
        self.source, self.indices = source, indices

    def __len__(self) -> int:
        return len(self.indices)

    def _pick(self, indices: Iterable[int]) -> Iterator[StepResult]:
        return self.source._pick(self.indices[i] for i in indices)


class Lazy(Sequence[T]):
    """A sequence made again on each pass by ``make`` (a filter or a map over steps left on
    disk), kept as nothing but that: its length is counted by a pass when it is not
    given, and an index or a slice is reached by going over it."""

    __slots__ = ("_n", "make")

    def __init__(self, make: Callable[[], Iterator[T]], n: int | None = None) -> None:
        self.make, self._n = make, n

    def __iter__(self) -> Iterator[T]:
        if self._n is not None:
            return self.make()
        return self._counted()

    def _counted(self) -> Iterator[T]:
        n = 0
        for n, x in enumerate(self.make(), 1):  # noqa: B007 (n is the count at the end)
            yield x
        self._n = n

    def __len__(self) -> int:
        if self._n is None:
            self._n = sum(1 for _ in self.make())
        return self._n

    @overload
    def __getitem__(self, i: int) -> T: ...
    @overload
    def __getitem__(self, i: slice) -> list[T]: ...
    def __getitem__(self, i: int | slice) -> T | list[T]:
        if isinstance(i, slice):
            return list(itertools.islice(self.make(), *i.indices(len(self))))
        if i < 0:
            i += len(self)
        if i >= 0:
            for x in itertools.islice(self.make(), i, None):
                return x
        raise IndexError("index out of range")


def step_kinds(steps: Iterable[StepResult]) -> frozenset[tuple[str, str]]:
    """The (step name, tool) pairs of ``steps``; of steps read from disk, without reading
    them when their source noted them (:meth:`StepSource.kinds`)."""
    if isinstance(steps, StepSource):
        return steps.kinds()
    return frozenset((s.step, s.tool) for s in steps)


@dataclass(frozen=True, slots=True)
class Run:
    """A whole run: what was asked, where, what happened and how it was judged."""

    id: str
    suite: str
    spec: str
    spec_sha256: str = ""
    started: str = ""
    finished: str = ""
    aibench_version: str = ""
    inventory: Mapping[str, Any] = field(default_factory=dict)
    environment: Mapping[str, Any] = field(default_factory=dict)  # per node: facts dict
    steps: Sequence[StepResult] = ()  # a tuple, or a StepSource read from disk
    verdicts: tuple[Verdict, ...] = ()
    notes: tuple[str, ...] = ()
    generated: bool = False  # measurements made by a generator (tests, scale benches)
    # Who hands over to whom: cluster, vendor, customer, site ... (free text, from the CLI)
    signoff: Mapping[str, str] = field(default_factory=dict)
    suite_sha256: str = ""
    # Fault localization of the pairwise network results (aibench.thresholds.localize):
    # one mapping per suspect: tool, metric, kind (group | node | link), name, slow_pairs,
    # pairs, median_ratio, fleet_median, unit, series (list), evidence ([a, b, value]), text.
    suspects: tuple[Mapping[str, Any], ...] = ()
    # Every judgement made of this run, oldest first: who judged (``by``), when (``at``),
    # with which spec (``spec``, ``spec_sha256``), how history was used (``history``),
    # the outcome and counts. The last one's verdicts are ``verdicts``; an earlier one
    # keeps the verdicts it gave under ``verdicts`` (see aibench.judge.record).
    judgements: tuple[Mapping[str, Any], ...] = ()
    # Time series recorded beside the steps (aibench.telemetry.compact): t0, series
    # [{node, source, metric, key, unit, t, v}], events, errors. Empty when not sampled.
    telemetry: Mapping[str, Any] = field(default_factory=dict)
    # What the run was judged with, so that it can be judged again from the record alone
    # (aibench.judge): ``suite`` (name, sha256, text: the file's bytes, steps: [name, tool]
    # of the whole suite, selected: the step names run) and ``specs`` (sha256 -> name,
    # text: every spec a stored judgement used, exactly as loaded). Empty in a run stored
    # before schema 1.2.
    inputs: Mapping[str, Any] = field(default_factory=dict)
    # Every time the run was stopped from outside before its end, oldest first: at (UTC),
    # signal (SIGTERM, SIGINT, or "unknown" for an end that left no record, a kill -9),
    # running (the step ids in flight). Kept across --resume; empty for a run never stopped.
    interruptions: tuple[Mapping[str, Any], ...] = ()
    schema_version: str = SCHEMA_VERSION

    def __post_init__(self) -> None:
        if not isinstance(self.steps, StepSource):
            object.__setattr__(self, "steps", tuple(self.steps))
        object.__setattr__(self, "verdicts", tuple(self.verdicts))
        object.__setattr__(self, "notes", tuple(self.notes))
        object.__setattr__(self, "suspects", tuple(self.suspects))
        object.__setattr__(self, "judgements", tuple(self.judgements))
        object.__setattr__(self, "interruptions", tuple(self.interruptions))

    @property
    def measurements(self) -> list[Measurement]:
        return [m for s in self.steps for m in s.measurements]

    @property
    def facts(self) -> list[Fact]:
        return [f for s in self.steps for f in s.facts]

    @property
    def outcome(self) -> Outcome:
        """The run's overall outcome (:func:`overall`)."""
        return overall(self.verdicts)

    @property
    def partial(self) -> str:
        """ "" for a run of the whole suite on the whole inventory; else what it left out
        (:func:`partial_text`)."""
        return partial_text(self.inputs)

    def replace(self, **changes: Any) -> Run:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        d = self._to_dict()
        if self.telemetry:
            d["telemetry"] = dict(self.telemetry)
        if self.inputs:
            d["inputs"] = dict(self.inputs)
        if self.interruptions:
            d["interruptions"] = [dict(x) for x in self.interruptions]
        return d

    def _to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "id": self.id,
            "suite": self.suite,
            "spec": self.spec,
            "spec_sha256": self.spec_sha256,
            "started": self.started,
            "finished": self.finished,
            "aibench_version": self.aibench_version,
            "generated": self.generated,
            "signoff": dict(self.signoff),
            "suite_sha256": self.suite_sha256,
            "inventory": dict(self.inventory),
            "environment": dict(self.environment),
            "notes": list(self.notes),
            "steps": [s.to_dict() for s in self.steps],
            "verdicts": [v.to_dict() for v in self.verdicts],
            "suspects": [dict(x) for x in self.suspects],
            "judgements": [dict(x) for x in self.judgements],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], shared: Shared | None = None) -> Run:
        version = check_schema(d.get("schema_version", ""))
        sh = shared or Shared()
        return cls(
            schema_version=version,
            id=d["id"],
            suite=d["suite"],
            spec=d["spec"],
            spec_sha256=d.get("spec_sha256", ""),
            started=d.get("started", ""),
            finished=d.get("finished", ""),
            aibench_version=d.get("aibench_version", ""),
            generated=bool(d.get("generated", False)),
            signoff=dict(d.get("signoff", {})),
            suite_sha256=d.get("suite_sha256", ""),
            inventory=d.get("inventory", {}),
            environment=d.get("environment", {}),
            notes=tuple(d.get("notes", ())),
            steps=tuple(StepResult.from_dict(s, sh) for s in d.get("steps", ())),
            verdicts=tuple(Verdict.from_dict(v, sh) for v in d.get("verdicts", ())),
            suspects=tuple(dict(x) for x in d.get("suspects", ())),
            judgements=tuple(dict(x) for x in d.get("judgements", ())),
            telemetry=dict(d.get("telemetry") or {}),
            inputs=dict(d.get("inputs") or {}),
            interruptions=tuple(dict(x) for x in d.get("interruptions") or ()),
        )


def check_schema(version: object) -> str:
    """``version`` as text when this aibench reads it (the same major version), else a
    ValueError that says which it reads."""
    text = str(version)
    if text.split(".")[0] != SCHEMA_VERSION.split(".")[0]:
        raise ValueError(
            f"run.json has schema_version {text or '(none)'}; this aibench reads "
            f"{SCHEMA_VERSION.split('.')[0]}.x"
        )
    return text


def attach(
    items: Iterable[Measurement], *, nodes: tuple[str, ...], step: str, repeat: int
) -> tuple[Measurement, ...]:
    """Give parser output its provenance (the parser itself knows no hosts)."""
    return tuple(dataclasses.replace(m, nodes=nodes, step=step, repeat=repeat) for m in items)


def with_notes(
    result: Callable[..., StepResult], notes: Sequence[Note]
) -> Callable[..., StepResult]:
    """``result`` (a StepResult factory) whose every StepResult carries ``notes``."""
    if not notes:
        return result
    kept = tuple(notes)

    def build(*args: Any, **kwargs: Any) -> StepResult:
        return dataclasses.replace(result(*args, **kwargs), notes=kept)

    return build
