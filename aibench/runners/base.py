"""The runner contract: a runner turns a suite step into planned invocations.

A runner *plans*; executors *run* (STYLE.md principle 6). ``invocations()`` is a pure
function of the step's options, the group of nodes and the slot it runs in: it returns
argv lists, environments, servers to start first and the parser for the output. It has
no side effects and touches no node, so ``aibench plan`` and table tests call it freely.

A module ``aibench/runners/<tool>.py`` defines ``RUNNER`` (an object satisfying
:class:`Runner`). Options are a pydantic model (unknown keys are errors), validated when
the suite is loaded, before any node is touched.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from aibench.config import Strict
from aibench.errors import ToolFailure
from aibench.executors.base import ReadyCheck
from aibench.model import FrozenDims, Measurement, Scalar
from aibench.registry import Registry

if TYPE_CHECKING:
    from aibench.inventory import Node
    from aibench.model import ProcessRecord


@dataclass(frozen=True)
class ProcessSpec:
    """One process to start on one node."""

    host: str  # node name
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    role: str = "client"  # client | server | launcher
    ready: ReadyCheck | None = None  # servers: how to know they listen
    timeout: float = 600.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "argv", tuple(self.argv))


@dataclass(frozen=True)
class Invocation:
    """One planned tool run on one placement group; becomes one StepResult."""

    step: str  # suite step name
    tool: str
    nodes: tuple[str, ...]  # the subject: a node, a pair (client first), a set
    label: str  # file-system-safe name of the group, e.g. "h1" or "h1--h2"
    repeat: int
    client: ProcessSpec  # the process whose stdout is parsed
    parser: str  # parser registry name
    servers: tuple[ProcessSpec, ...] = ()
    setup: tuple[ProcessSpec, ...] = ()  # run first, in order (mkdir of a scratch dir ...)
    round: int = 0
    network: bool = False  # counts against the fabric-load cap
    # Files the client writes that the runner's ``collect`` reads (e.g. MLPerf logs);
    # relative to the step's raw directory.
    artifacts: tuple[str, ...] = ()
    # What the plan expects it to take (the runner's ``expected_seconds``) and how that
    # was estimated; filled in by :func:`aibench.plan.build_plan`.
    expected_s: float = 0.0
    estimate: str = ""

    @property
    def step_id(self) -> str:
        return f"{self.step}/{self.label}/r{self.repeat}"


@dataclass(frozen=True)
class Slot:
    """Where an invocation sits in the schedule: used for ports and file names."""

    round: int = 0
    index: int = 0  # position in the round: concurrent invocations get distinct ports
    repeat: int = 0
    base_port: int = 15201
    workdir: str = "/var/tmp/aibench"  # scratch directory on the node (fio files ...)
    raw_dir: str = ""  # the step's raw directory in the run (local path)


@dataclass(frozen=True)
class Output:
    """What one finished invocation left behind, handed to a runner's ``collect``."""

    stdout: str
    stderr: str
    exit_code: int | None  # None: killed, or never started (see reason)
    raw_dir: Path  # the step's local raw folder (logs, fetched artifacts)
    reason: str = ""  # the executor's one-line reason when something went wrong
    # ``collect`` appends the processes it knows of beyond the planned ones (each run an
    # MLPerf sequencer started, the checker it ran here); they are recorded on the step.
    processes: list[ProcessRecord] = field(default_factory=list)

    def failure(self) -> str:
        """The one-line reason of a run that failed: ``exit code N: <its last lines>``
        (``killed``, or the executor's reason, when it has no exit code)."""
        from aibench.textio import exit_tail

        return exit_tail(self.exit_code, self.stdout, self.stderr, self.reason)


class Runner(Protocol):
    """Required members below. Optional: ``collect(self, inv, out: Output) -> list[Record]``,
    ``version_argv_for(self, inv) -> argv | None`` (the version command of the binary an
    invocation actually runs, e.g. under its ``bin_dir``; default ``version_argv()``) and
    ``version_exit_codes`` (exit codes whose output is read for the version; default 0) and
    ``expected_seconds(self, options) -> (seconds, how)`` (what one invocation takes, from
    its options, for the plan's estimate; without it: the timeout, at most 60 s).

    Without ``collect`` the orchestrator parses the client's stdout with ``inv.parser``
    (a non-zero exit makes the step ``failed``, the tool's message kept as the reason).
    A runner defines ``collect`` when its results are not simply its stdout: MLPerf logs
    in files, the compliance checker's verdict, node facts where a missing command is
    itself a fact. ``collect`` raises ParseError / ToolFailure like a parser.
    """

    name: ClassVar[str]  # registry name == tool name in suites
    tool: ClassVar[str]
    default_placement: ClassVar[str]  # each | pairs | all
    Options: ClassVar[type[Strict]]

    def invocations(
        self, step: str, options: Any, group: Sequence[Node], slot: Slot
    ) -> list[Invocation]: ...

    def version_argv(self) -> tuple[str, ...] | None:
        """argv that prints the tool's version (run once per node), or None."""
        ...

    def parse_version(self, text: str) -> str: ...


RUNNERS: Registry[Runner] = Registry("runner", "aibench.runners", "RUNNER", key=lambda r: r.name)


def with_dims(records: Iterable[Any], **dims: Scalar) -> list[Any]:
    """The records with ``dims`` added to each measurement's dimensions (facts and notes
    as they are): what a runner knows of an invocation that its parser cannot, such as the
    endpoint a load went to."""
    return [
        dataclasses.replace(r, dims=FrozenDims({**r.dims, **dims}))
        if isinstance(r, Measurement)
        else r
        for r in records
    ]


def parse_with_dims(
    tool: str, parse: Callable[[str], list[Any]], text: str, **dims: Scalar
) -> list[Any]:
    """``parse(text)`` with ``dims`` added (:func:`with_dims`); when the tool reports that
    it failed, the ToolFailure keeps its partial measurements with ``dims`` too."""
    try:
        return with_dims(parse(text), **dims)
    except ToolFailure as exc:
        raise ToolFailure(tool, exc.reason, partial=with_dims(exc.partial, **dims)) from None


def label_for(nodes: Sequence[str]) -> str:
    if len(nodes) <= 3:
        return "--".join(nodes)
    return f"{nodes[0]}--{nodes[-1]}-{len(nodes)}nodes"


def each_node(
    step: str,
    tool: str,
    parser: str,
    group: Sequence[Node],
    slot: Slot,
    argv_for: Callable[[Node], Sequence[str]],
    timeout: float,
    *,
    env: Mapping[str, str] | None = None,
    network: bool = False,
) -> list[Invocation]:
    """One invocation per node of the group, all at once (placement ``each``); ``network``
    when the tool's traffic counts against the fabric-load cap."""
    return [
        Invocation(
            step=step,
            tool=tool,
            nodes=(node.name,),
            label=label_for((node.name,)),
            repeat=slot.repeat,
            round=slot.round,
            parser=parser,
            network=network,
            client=ProcessSpec(node.name, tuple(argv_for(node)), env=env or {}, timeout=timeout),
        )
        for node in group
    ]
