"""Planning (:func:`build_plan`) turns a suite over an inventory into a :class:`Plan`: per
step, its rounds of invocations, each built by the step's runner for one group of one
round when the round is asked for (the orchestrator runs them one after another, so a
plan of all pairs of a thousand nodes is never held whole). It touches no node. The
rounds of ``pairs`` are themselves computed one at a time (:class:`PairRounds`).
The estimate of a plan's duration comes from each runner's ``expected_seconds``
(what the step's options say it will take), never from the text of its command line.
Which nodes each step runs on, in which rounds, is :mod:`aibench.placement`'s.
"""

from __future__ import annotations

import itertools
import math
import re
import shlex
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from aibench.placement import PairRounds, Round, SuspectRounds, rounds_of
from aibench.secret import REDACTED, Secrets

if TYPE_CHECKING:
    from aibench.executors.capacity import Capacity
    from aibench.inventory import Inventory, KubernetesSettings, Limits, Node
    from aibench.model import StepResult
    from aibench.runners.base import Invocation
    from aibench.suite import Step, Suite


@dataclass(frozen=True)
class PlannedRound:
    step: str
    tool: str
    repeat: int
    round: int
    invocations: tuple[Invocation, ...]


@dataclass(frozen=True)
class RoundShape:
    """What the estimate and the concurrency of a round need: how many runs it holds, how
    many of them are network tests, and the longest expected run of each kind."""

    runs: int
    network: int = 0
    longest: float = 0.0
    longest_network: float = 0.0

    @staticmethod
    def of(invocations: Sequence[Invocation]) -> RoundShape:
        net = [i.expected_s for i in invocations if i.network]
        return RoundShape(
            runs=len(invocations),
            network=len(net),
            longest=max((i.expected_s for i in invocations), default=0.0),
            longest_network=max(net, default=0.0),
        )


@dataclass(frozen=True)
class PlannedStep:
    """One enabled suite step over its nodes: its rounds are made when they are asked
    for (:meth:`rounds`), never all held at once. Its counts and estimate come from its
    round *shapes* (:meth:`shapes`): a placement whose rounds are made on demand (all
    pairs) is measured on the rounds that cover every node once (the first two); when
    every group there plans alike (the same number of runs, network flag and expected
    time), every round of the step is taken to; otherwise every round is made once and
    measured. A repeat plans as the first one does."""

    step: Step
    runner: Any = field(repr=False)
    schedule: Sequence[Round] = field(repr=False)
    inventory: Inventory = field(repr=False)
    base_port: int
    workdir: str
    estimate: tuple[float, str] | None = None
    # placement auto: which placement it chose and why, and every pair's step (its
    # estimate is printed beside the choice)
    choice: str = ""
    alternative: PlannedStep | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.step.name

    @property
    def repeats(self) -> int:
        return self.step.model.repeats

    def round(self, repeat: int, r_index: int) -> PlannedRound:
        """Round ``r_index`` of repeat ``repeat``, its invocations made now."""
        return PlannedRound(
            self.step.name,
            self.step.tool,
            repeat,
            r_index,
            tuple(self._invocations(repeat, r_index, self.schedule[r_index])),
        )

    def rounds(self) -> Iterator[PlannedRound]:
        for repeat in range(self.repeats):
            for r_index in range(len(self.schedule)):
                yield self.round(repeat, r_index)

    def _invocations(self, repeat: int, r_index: int, rnd: Round) -> Iterator[Invocation]:
        from aibench.runners import Slot

        step, timeout = self.step, self.step.model.timeout
        for index, group in enumerate(rnd):
            slot = Slot(
                round=r_index,
                index=index,
                repeat=repeat,
                base_port=self.base_port,
                workdir=self.workdir,
            )
            members = [self.inventory.node(n) for n in group]
            for inv in self.runner.invocations(step.name, step.options, members, slot):
                if timeout is not None:
                    inv = _with_timeout(inv, timeout)
                secs, why = self.estimate or expected_seconds(None, None, inv.client.timeout)
                yield replace(inv, expected_s=float(secs), estimate=str(why))

    def covering_rounds(self) -> list[int]:
        """The rounds (of the first repeat) in which every node of the step runs: the
        first two of all pairs (one node sits out the first when their number is odd),
        else every round."""
        if isinstance(self.schedule, PairRounds):
            return list(range(min(2, len(self.schedule))))
        return list(range(len(self.schedule)))

    def sample(self) -> Iterator[Invocation]:
        """The invocations of :meth:`covering_rounds`, made one at a time: what the
        version probes and an example command are read from."""
        for r in self.covering_rounds():
            yield from self._invocations(0, r, self.schedule[r])

    @cached_property
    def _measured(self) -> tuple[list[RoundShape], Invocation | None]:
        return self._measure()

    def _assumed(self) -> list[RoundShape]:
        """The rounds of a second phase not planned yet: every pair among as many nodes
        as its schedule assumes (suspects and references)."""
        sched = self.schedule
        assert isinstance(sched, SuspectRounds)
        n = min(len(sched.nodes), sched.assumed + sched.references)
        if n < 2:
            return []
        g = RoundShape.of(list(self._invocations(0, 0, [(sched.nodes[0], sched.nodes[1])])))
        per = n // 2
        shape = RoundShape(g.runs * per, g.network * per, g.longest, g.longest_network)
        return [shape] * (n - 1 if n % 2 == 0 else n)

    def _measure(self) -> tuple[list[RoundShape], Invocation | None]:
        """The shape of every round of the first repeat, and the first invocation."""
        n_rounds = len(self.schedule)
        if not n_rounds:
            return [], None
        first = next(self._invocations(0, 0, self.schedule[0]), None)
        if isinstance(self.schedule, PairRounds):
            per_group: set[RoundShape] = set()
            for r in self.covering_rounds():
                for group in self.schedule[r]:
                    per_group.add(RoundShape.of(list(self._invocations(0, r, [group]))))
            if len(per_group) == 1:
                (g,) = per_group
                n = len(self.schedule[0])
                shape = RoundShape(g.runs * n, g.network * n, g.longest, g.longest_network)
                return [shape] * n_rounds, first
        shapes = [
            RoundShape.of(list(self._invocations(0, r, self.schedule[r]))) for r in range(n_rounds)
        ]
        return shapes, first

    @property
    def pending(self) -> bool:
        """A second phase whose rounds wait for the results of the step before it."""
        return isinstance(self.schedule, SuspectRounds) and not self.schedule.resolved

    def shapes(self) -> list[RoundShape]:
        """The shape of each round of one repeat (every repeat has the same); a second
        phase not planned yet has none (:meth:`expected_shapes`)."""
        if isinstance(self.schedule, SuspectRounds):
            return [] if self.pending else self._measure()[0]
        return self._measured[0]

    def expected_shapes(self) -> list[RoundShape]:
        """:meth:`shapes`, or for a second phase not planned yet the rounds it assumes:
        what the estimate counts."""
        return self._assumed() if self.pending else self.shapes()

    def example(self) -> Invocation | None:
        """The step's first invocation (repeat 1, round 1), or None when it plans none."""
        if isinstance(self.schedule, SuspectRounds):
            return None if self.pending else self._measure()[1]
        return self._measured[1]

    def runs(self) -> int:
        return self.repeats * sum(s.runs for s in self.shapes())

    def round_count(self) -> int:
        return self.repeats * len(self.schedule)


def parallel(limits: Limits) -> int:
    """``max_parallel`` of limits whose default has been filled in (:func:`with_capacity`)."""
    return max(1, limits.max_parallel or 1)


def with_capacity(limits: Limits, hosts: int) -> tuple[Limits, Capacity | None]:
    """``limits`` with ``max_parallel`` filled in when the inventory leaves it out: what
    the controller holds at once over ``hosts`` nodes (:mod:`aibench.executors.capacity`),
    and that capacity (None when the inventory sets it)."""
    if limits.max_parallel is not None:
        return limits, None
    from aibench.executors.capacity import capacity

    cap = capacity(hosts)
    return replace(limits, max_parallel=cap.invocations), cap


def at_once(shape: RoundShape, limits: Limits) -> int:
    """How many runs of a round of ``shape`` run at the same time under ``max_parallel``
    and ``max_network_parallel`` (the network ones count against both)."""
    net = shape.network
    capped = min(net, limits.max_network_parallel) if limits.max_network_parallel else net
    return min(parallel(limits), shape.runs - net + capped)


def round_seconds(shape: RoundShape, limits: Limits) -> float:
    """Rough wall time of a round: its longest expected run times the waves the
    concurrency limits make of it."""
    if not shape.runs:
        return 0.0
    t = math.ceil(shape.runs / parallel(limits)) * shape.longest
    if shape.network and limits.max_network_parallel:
        waves = math.ceil(shape.network / limits.max_network_parallel)
        t = max(t, waves * shape.longest_network)
    return t


@dataclass(frozen=True)
class Plan:
    """The steps of a suite over an inventory. Rounds are made as they are iterated
    (:meth:`iter_rounds`), so that a plan of a million runs is not held in memory; the
    counts and the estimate are read from the steps' round shapes. ``rounds`` and
    ``invocations`` make every round (for small plans and tests)."""

    suite: Suite
    inventory: Inventory
    steps: tuple[PlannedStep, ...]

    def secrets(self) -> Secrets:
        """The secret names of this run: :func:`run_secrets`."""
        return run_secrets(self.suite, self.inventory)

    @cached_property
    def _limits(self) -> tuple[Limits, Capacity | None]:
        return with_capacity(self.inventory.limits, len(self.inventory))

    @property
    def limits(self) -> Limits:
        """The inventory's limits, ``max_parallel`` filled in from the controller's
        capacity when the inventory leaves it out."""
        return self._limits[0]

    @property
    def capacity(self) -> Capacity | None:
        """What the controller holds at once, when it set ``max_parallel``."""
        return self._limits[1]

    def iter_rounds(
        self, results_of: Callable[[str], Iterable[StepResult]] | None = None
    ) -> Iterator[PlannedRound]:
        """Every round, made when it is its turn. A second phase (the suspects of a
        ``cover`` step) is planned when its turn comes, from ``results_of(step)``: the
        results the first phase has left by then (without it, it keeps what it has)."""
        for step in self.steps:
            if step.pending and results_of is not None:
                assert isinstance(step.schedule, SuspectRounds)
                resolve_suspects(step, results_of(step.schedule.after))
            yield from step.rounds()

    def iter_invocations(self) -> Iterator[Invocation]:
        for rnd in self.iter_rounds():
            yield from rnd.invocations

    @property
    def rounds(self) -> tuple[PlannedRound, ...]:
        return tuple(self.iter_rounds())

    @property
    def invocations(self) -> list[Invocation]:
        return list(self.iter_invocations())

    def run_count(self) -> int:
        return sum(s.runs() for s in self.steps)

    def round_count(self) -> int:
        return sum(s.round_count() for s in self.steps)

    def hosts(self) -> list[str]:
        """Every node some run of the plan is placed on, sorted."""
        seen: set[str] = set()
        for s in self.steps:
            if isinstance(s.schedule, PairRounds):
                seen.update(s.schedule.nodes)
            else:
                seen.update(n for rnd in s.schedule for g in rnd for n in g)
        return sorted(seen)

    def sample_invocations(self) -> Iterator[Invocation]:
        """For each step, the invocations of the rounds in which each of its nodes runs
        (:meth:`PlannedStep.sample`)."""
        for s in self.steps:
            yield from s.sample()

    def at_once(self, rnd: PlannedRound) -> int:
        """How many invocations of the round run at the same time under the inventory's
        ``max_parallel`` and ``max_network_parallel`` (the network ones count against both)."""
        return at_once(RoundShape.of(rnd.invocations), self.limits)

    def step_seconds(self, step: PlannedStep) -> float:
        limits = self.limits
        return step.repeats * sum(round_seconds(s, limits) for s in step.expected_shapes())

    def estimated_seconds(self) -> float:
        """Rough wall time: per round, the longest expected run, times the waves the
        concurrency limits make of the round (rounds run one after another)."""
        return sum(self.step_seconds(s) for s in self.steps)

    def warnings(self) -> list[str]:
        """What the plan's reader must know before running it: a round the controller
        cannot hold whole; an estimate past the suite's ``max_hours``, with the options
        that would shorten it."""
        out: list[str] = self._too_long()
        cap = self.capacity
        biggest = max((s.runs for st in self.steps for s in st.shapes()), default=0)
        if cap is not None and biggest > cap.invocations:
            out.append(
                f"the controller cannot hold a round of {biggest} runs: {cap.describe()}; "
                "rounds run in waves (raise the hard open-file limit, ulimit -Hn, or use "
                "a controller with more memory)"
            )
        return out

    def _too_long(self) -> list[str]:
        limit = self.suite.settings.max_hours * 3600.0
        total = self.estimated_seconds()
        if total <= limit:
            return []
        options = list(self._shorter())
        return [
            f"the estimate, {fmt_seconds(total)}, passes the suite's limit of "
            f"{fmt_seconds(limit)} (settings.max_hours); "
            + ("to shorten it: " + "; ".join(options) if options else "no option shortens it")
        ]

    def _shorter(self) -> Iterator[str]:
        """The options that would shorten the longest steps (those over a tenth of the
        total), each with what it would bring the step to."""
        total = self.estimated_seconds()
        key = {s.name: _step_key(self.suite, s.step) for s in self.steps}
        for s in self.steps:
            took = self.step_seconds(s)
            if took < total / 10:
                continue
            where = f"{key[s.name]} ({s.name}, {fmt_seconds(took)})"
            if isinstance(s.schedule, PairRounds) and len(s.schedule) > s.step.model.partners:
                k = s.step.model.partners
                cover = took * k / len(s.schedule)
                yield (
                    f"{where}: placement: auto or cover, each node against {k} partners "
                    f"and then the suspects pairwise, about {fmt_seconds(cover)}"
                )
            if s.repeats > 1:
                yield f"{where}: repeats: 1, about {fmt_seconds(took / s.repeats)}"
            limits = self.inventory.limits
            biggest = max((x.runs for x in s.shapes()), default=0)
            if limits.max_parallel is not None and limits.max_parallel < biggest:
                yield (
                    f"the inventory's limits.max_parallel ({limits.max_parallel}) runs the "
                    f"{biggest} runs of a round of {s.name} in waves: leave it out (a whole "
                    "round at once)"
                )
        yield "--steps to run part of the suite"

    def estimate_basis(self) -> list[str]:
        """How each step's duration was estimated (the runners' own words), once a step."""
        seen: dict[str, str] = {}
        for s in self.steps:
            ex = s.example()
            if ex is not None:
                seen.setdefault(ex.step, ex.estimate)
        return [f"{step}: {why}" for step, why in seen.items() if why]


def expected_seconds(runner: Any, options: Any, timeout: float) -> tuple[float, str]:
    """What one invocation of ``runner`` with ``options`` is expected to take, and how
    that was found: the runner's ``expected_seconds(options)`` where it has one, else its
    timeout capped at a minute (said so)."""
    own = getattr(runner, "expected_seconds", None)
    if own is not None:
        seconds, why = own(options)
        return float(seconds), str(why)
    return min(timeout, 60.0), "no estimate from its options: its timeout, at most 60 s"


def select_nodes(step: Step, inventory: Inventory, suite: Suite | None = None) -> list[Node]:
    """The inventory's nodes a step runs on: its ``nodes:`` (names or hostlists) and
    ``labels:``. A bad hostlist or a name the inventory lacks is a ConfigError naming the
    suite file and the key (``steps[i].nodes[j]``)."""
    from aibench import hostlist
    from aibench.errors import ConfigError

    nodes = list(inventory.nodes)
    m = step.model
    where = _step_key(suite, step)
    file = suite.source if suite is not None else f"step {m.name}"
    if m.nodes:
        wanted: list[str] = []
        for j, expr in enumerate(m.nodes):
            try:
                wanted.extend(hostlist.expand(expr) if hostlist.is_expression(expr) else [expr])
            except ValueError as exc:
                raise ConfigError(file, f"{where}.nodes[{j}]", str(exc)) from None
        known = {x.name for x in nodes}
        unknown = [n for n in dict.fromkeys(wanted) if n not in known]
        if unknown:
            shown = ", ".join(unknown[:10]) + (
                f" (and {len(unknown) - 10} more)" if len(unknown) > 10 else ""
            )
            raise ConfigError(
                file,
                f"{where}.nodes",
                f"not in the inventory {inventory.name}: {shown}",
                hint="check the suite's nodes: list against the inventory",
            )
        nodes = [n for n in nodes if n.name in set(wanted)]
    if m.labels:
        nodes = [n for n in nodes if all(n.labels.get(k) == v for k, v in m.labels.items())]
    if m.requires:
        from aibench.inventory import declares

        nodes = [n for n in nodes if declares(n.facts, m.requires)]
    return nodes


def _step_key(suite: Suite | None, step: Step) -> str:
    """``steps[i]``: the step's place in the suite file (kept when steps are filtered)."""
    raw = suite.raw.get("steps") if suite is not None and isinstance(suite.raw, dict) else None
    if isinstance(raw, list):
        for i, d in enumerate(raw):
            if isinstance(d, dict) and d.get("name") == step.name:
                return f"steps[{i}]"
    return f"step {step.name}"


def build_plan(suite: Suite, inventory: Inventory) -> Plan:
    """The steps of every enabled step of ``suite`` over ``inventory`` (pure); their rounds
    are made when iterated, their shapes (counts, estimate) measured here. A ``cover``
    step (placement ``cover``, or ``auto`` above ``cover_above`` nodes) is followed by its
    second phase, ``<step>-suspects``, planned when the first has run."""
    from aibench.runners import RUNNERS

    steps: list[PlannedStep] = []
    for step in suite.steps:
        if not step.model.enabled:
            continue
        runner = RUNNERS.get(step.tool)
        nodes = select_nodes(step, inventory, suite)
        if step.model.requires and not nodes:
            continue  # the inventory declares nothing this step measures
        placement, why = choose_placement(step, nodes)
        planned = _planned(suite, inventory, step, runner, _schedule(step, nodes, placement))
        if step.model.placement == "auto":
            every = _planned(suite, inventory, step, runner, PairRounds(_names(nodes)))
            planned = replace(planned, choice=why, alternative=every)
        # measured now: a step the runner refuses to plan is an error here, before
        # anything runs, as when every run was made up front
        planned.shapes()
        refuse_kubernetes_launch(planned, suite.settings.kubernetes.pods)
        steps.append(planned)
        if placement == "cover":
            second = replace(
                step,
                model=step.model.model_copy(
                    update={"name": f"{step.name}-suspects", "placement": "pairs"}
                ),
            )
            schedule = SuspectRounds(_names(nodes), after=step.name)
            steps.append(_planned(suite, inventory, second, runner, schedule))
    return Plan(suite=suite, inventory=inventory, steps=tuple(steps))


COVER_LABELS = ("leaf", "switch", "rack", "rail")  # the group labels cover looks for


def _names(nodes: Sequence[Node]) -> tuple[str, ...]:
    return tuple(n.name for n in nodes)


def _cover_label(step: Step, nodes: Sequence[Node]) -> str | None:
    """The label whose groups ``cover`` crosses: the step's ``group_by``, else the first
    of :data:`COVER_LABELS` that some node carries."""
    if step.model.group_by is not None:
        return step.model.group_by
    return next((k for k in COVER_LABELS if any(k in n.labels for n in nodes)), None)


def choose_placement(step: Step, nodes: Sequence[Node]) -> tuple[str, str]:
    """The step's placement (``auto`` decided by the number of nodes) and, for ``auto``,
    why."""
    m = step.model
    if m.placement != "auto":
        return m.placement or "", ""  # none: the runner's default (_schedule)
    n = len(nodes)
    if n <= m.cover_above:
        return "pairs", f"{n} nodes, at most cover_above ({m.cover_above}): every pair"
    label = _cover_label(step, nodes)
    across = f", one at least in every other {label}" if label else ""
    return "cover", (
        f"{n} nodes, more than cover_above ({m.cover_above}): each node against "
        f"{m.partners} partners{across}, then every pair among the suspects"
    )


def _schedule(step: Step, nodes: Sequence[Node], placement: str) -> Sequence[Round]:
    from aibench.placement import cover

    names = [n.name for n in nodes]
    if not placement:
        from aibench.runners import RUNNERS

        placement = RUNNERS.get(step.tool).default_placement
    if placement == "cover":
        label = _cover_label(step, nodes)
        labels = {n.name: n.labels.get(label, "") for n in nodes} if label else None
        return cover(names, step.model.partners, labels)
    kwargs: dict[str, Any] = {}
    if step.model.sample is not None:
        kwargs["k"] = step.model.sample
    if step.model.group_by is not None:
        kwargs["labels"] = {n.name: n.labels.get(step.model.group_by, "") for n in nodes}
    return rounds_of(placement, names, **kwargs)


def _planned(
    suite: Suite, inventory: Inventory, step: Step, runner: Any, schedule: Sequence[Round]
) -> PlannedStep:
    own = getattr(runner, "expected_seconds", None)
    return PlannedStep(
        step=step,
        runner=runner,
        schedule=schedule,
        inventory=inventory,
        base_port=suite.settings.base_port,
        workdir=suite.settings.workdir,
        estimate=own(step.options) if own is not None else None,
    )


def resolve_suspects(step: PlannedStep, results: Iterable[StepResult]) -> None:
    """Plan the second phase ``step`` from the first phase's ``results``: its pairs'
    values as the tool's fault localization reads them (the runner's pair series, the
    median over repeats, the slowest direction), and its failed pairs."""
    from aibench.placement import suspect_nodes

    sched = step.schedule
    assert isinstance(sched, SuspectRounds)
    wanted = step.runner.traits.pair_series
    seen: dict[tuple[str, str], dict[object, list[float]]] = {}
    failed: list[tuple[str, str]] = []
    for r in results:
        if len(set(r.nodes)) != 2:
            continue
        p = (min(r.nodes), max(r.nodes))
        if not r.ok:
            failed.append(p)
            continue
        for m in r.measurements:
            for ps in wanted:
                if m.metric == ps.metric and all(
                    m.dims.get(k) == v for k, v in (ps.dims or {}).items()
                ):
                    key = tuple(sorted((k, str(v)) for k, v in m.dims.items()))
                    seen.setdefault(p, {}).setdefault(key, []).append(m.value)
    values = {p: min(_median(v) for v in by.values()) for p, by in seen.items()}
    suspects = suspect_nodes(values, failed, limit=sched.limit)
    best = sorted(values, key=lambda p: -values[p])
    good = [n for p in best for n in p if n not in set(suspects)]
    sched.resolve(suspects, list(dict.fromkeys(good)))


def _median(xs: list[float]) -> float:
    ordered = sorted(xs)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def refuse_kubernetes_launch(planned: PlannedStep, pods: str = "per_node") -> None:
    """A run across Kubernetes nodes whose processes do not each sit on their own node (a
    launcher such as mpirun reaching the others from one Pod) runs only as an mpirun
    launch with ``mpi_launch: ssh`` (a launcher Pod and a worker Pod per node); anything
    else is refused with one line when the step is planned, not at run time. With
    ``pods: per_rank`` (a Pod per rank) an mpirun on one node is launched that way too,
    and a launch whose resources do not divide among a node's ranks is refused
    (:func:`refuse_per_rank`)."""
    from aibench.errors import UserError

    first = planned._measured[1]
    if first is None:
        return
    if not any(planned.inventory.node(n).executor == "kubernetes" for n in first.nodes):
        return
    mpirun = first.client.role == "launcher" and first.client.argv[0] == "mpirun"
    if mpirun and pods == "per_rank":  # on one node or more
        refuse_per_rank(planned, first)
        return
    if len(first.nodes) < 2:
        return
    placed = {p.host for p in (first.client, *first.servers)}
    left = [n for n in first.nodes if n not in placed]
    settings = planned.inventory.node(first.client.host).kubernetes
    if left and mpirun and settings is not None and settings.mpi_launch in ("ssh", "mpijob"):
        return  # a launcher Pod and worker Pods with sshd (executors/kubernetes_mpi.py)
    if left:
        raise UserError(
            f"step {planned.name}: {planned.step.tool} across {len(first.nodes)} Kubernetes "
            f"nodes is launched from {first.client.host} onto {', '.join(left[:3])}"
            f"{' ...' if len(left) > 3 else ''}, which the kubernetes executor cannot do "
            "without mpi_launch: ssh in the inventory's kubernetes block",
            hint="set kubernetes.mpi_launch: ssh (mpirun in a launcher Pod, sshd in a worker "
            "Pod per other node) or mpijob (the same as an MPIJob of the MPI operator), run "
            "it on one node per group (placement: each), or with these "
            "nodes as executor: ssh or slurm",
        )


def mpijob_launches(plan: Plan) -> list[tuple[str, KubernetesSettings]]:
    """The steps of ``plan`` that run as an MPIJob (an mpirun launch across Kubernetes
    nodes with ``mpi_launch: mpijob``): each one's name and its launcher node's settings."""
    out = []
    for planned in plan.steps:
        first = planned.example()
        if first is None or len(first.nodes) < 2 or first.client.role != "launcher":
            continue
        node = planned.inventory.node(first.client.host)
        settings = node.kubernetes
        if (
            node.executor == "kubernetes"
            and settings is not None
            and (settings.mpi_launch == "mpijob" and first.client.argv[0] == "mpirun")
        ):
            out.append((planned.name, settings))
    return out


def refuse_per_rank(planned: PlannedStep, first: Invocation) -> None:
    """A Pod per rank of an mpirun launch: only with ``mpi_launch: ssh``, ranks placed
    ``ppr:N:node`` (or by slot or node), and each node's resources dividing into whole
    units among its ranks; else one line when the step is planned."""
    from aibench.errors import UserError
    from aibench.executors.kubernetes_mpi import share, slots_of

    def refuse(why: str, hint: str | None = None) -> UserError:
        return UserError(f"step {planned.name}: settings.kubernetes.pods: per_rank: {why}",
                         hint=hint)  # fmt: skip

    argv = first.client.argv
    head = planned.inventory.node(first.client.host).kubernetes
    if head is None or head.mpi_launch != "ssh":
        raise refuse("a Pod per rank is launched with mpi_launch: ssh only")
    for flag, value in itertools.pairwise(argv):
        if flag in ("--map-by", "-map-by") and not re.fullmatch(r"ppr:\d+:node|slot|node", value):
            raise refuse(f"--map-by {value} places ranks inside a node's Pod; use ppr:N:node")
    slots = slots_of(argv)
    for name in first.nodes:
        node = planned.inventory.node(name)
        if node.kubernetes is None:
            continue
        try:
            share(node.kubernetes.resources, slots.get(node.host, 1))
        except ValueError as exc:
            raise refuse(f"node {name}: kubernetes.resources {exc}",
                         "ranks per node that divide every quantity of the inventory's "
                         "kubernetes.resources, or pods: per_node") from None  # fmt: skip


def _with_timeout(inv: Invocation, timeout: float) -> Invocation:
    client = replace(inv.client, timeout=timeout)
    servers = tuple(replace(s, timeout=timeout + 10.0) for s in inv.servers)
    return replace(inv, client=client, servers=servers)


# --------------------------------------------------------------------------- display


def format_plan(plan: Plan, full: bool = False) -> str:
    """:func:`plan_lines` as one text."""
    return "\n".join(plan_lines(plan, full=full))


def run_secrets(suite: Suite, inventory: Inventory) -> Secrets:
    """The secret names of a run (aibench.secret): those that look secret, and those the
    suite marks (``settings.secret_env``) or the inventory takes from a Kubernetes Secret."""
    marked = set(suite.settings.secret_env)
    for node in inventory:
        if node.kubernetes is not None:
            marked.update(node.kubernetes.secret_env)
    return Secrets(frozenset(marked))


def plan_lines(plan: Plan, full: bool = False) -> Iterator[str]:
    """The plan as ``aibench plan`` prints it, line by line: a header with the number of
    runs and rounds and the estimate, then per step how long a run takes (and how that
    was estimated), its runs, rounds and estimate, how many run at once, and one example
    run: each process's node, role and command line (secret-looking environment values as
    ``***``). ``full``: instead of the example, every round and every run of it, made one
    round at a time."""
    marked = plan.secrets()
    yield (
        f"suite {plan.suite.name} ({plan.suite.source}) on {len(plan.inventory)} node(s) "
        f"of {plan.inventory.name}: {plan.run_count()} runs in {plan.round_count()} rounds, "
        f"about {fmt_seconds(plan.estimated_seconds())}"
    )
    for line in plan.warnings():
        yield f"warning: {line}"
    for step in plan.steps:
        if step.pending:
            yield from _pending_lines(plan, step)
            continue
        if not step.round_count():
            continue
        head = f"\nstep {step.name} ({step.step.tool})"
        first = step.example()
        if first is not None:
            head += f": about {fmt_seconds(first.expected_s)} a run"
            head += f" ({first.estimate})" if first.estimate else ""
        yield head
        if full:
            for rnd in step.rounds():
                n, k = len(rnd.invocations), plan.at_once(rnd)
                concurrency = f"{n} run(s) at once" if k >= n else f"{n} run(s), {k} at once"
                yield f"  repeat {rnd.repeat + 1} round {rnd.round + 1}: {concurrency}"
                for inv in rnd.invocations:
                    yield from _run_lines(inv, "    ", marked)
            continue
        yield from _summary_lines(plan, step)
        if first is not None:
            yield "  for example:"
            yield from _run_lines(first, "    ", marked)
    if not full:
        yield "\n(aibench plan --full lists every run of every round)"


def _summary_lines(plan: Plan, step: PlannedStep) -> Iterator[str]:
    """A step's placement choice, runs, rounds, estimate and concurrency."""
    if step.choice:
        yield f"  placement auto: {step.choice}"
    if step.alternative is not None and step.alternative.schedule is not step.schedule:
        every = step.alternative
        yield (
            f"  (every pair instead: {_count(every.runs(), 'run')} in "
            f"{_count(every.round_count(), 'round')}, about "
            f"{fmt_seconds(plan.step_seconds(every))})"
        )
    shapes = step.shapes()
    repeats = f" ({step.repeats} repeats of {len(shapes)})" if step.repeats > 1 else ""
    yield (
        f"  {_count(step.runs(), 'run')} in {_count(step.round_count(), 'round')}{repeats}, "
        f"about {fmt_seconds(plan.step_seconds(step))}"
    )
    sizes = sorted({s.runs for s in shapes})
    most = max(at_once(s, plan.limits) for s in shapes)
    if len(sizes) == 1:
        n = sizes[0]
        concurrency = f"{n} run(s) at once" if most >= n else f"{n} run(s), {most} at once"
        yield f"  each round: {concurrency}"
    else:
        yield f"  rounds of {sizes[0]} to {sizes[-1]} run(s), at most {most} at once"


def _pending_lines(plan: Plan, step: PlannedStep) -> Iterator[str]:
    """A second phase: what it will run, once the first phase's results exist."""
    sched = step.schedule
    assert isinstance(sched, SuspectRounds)
    yield f"\nstep {step.name} ({step.step.tool}): planned from the results of {sched.after}"
    yield (
        f"  every pair among the nodes of its slow and failed pairs, and {sched.references} "
        f"good nodes for reference; for {sched.assumed} suspects: "
        f"{_count(step.repeats * sum(x.runs for x in step.expected_shapes()), 'run')}, "
        f"about {fmt_seconds(plan.step_seconds(step))}"
    )


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def _run_lines(inv: Invocation, indent: str, marked: Secrets) -> Iterator[str]:
    secrets = marked.with_values(p.env for p in (*inv.setup, *inv.servers, inv.client))
    for s in inv.setup:
        yield f"{indent}{s.host:<16} setup   {_command(s, secrets)}"
    for s in inv.servers:
        yield f"{indent}{s.host:<16} server  {_command(s, secrets)}"
    yield f"{indent}{inv.client.host:<16} {inv.client.role:<7} {_command(inv.client, secrets)}"


def _command(spec: Any, secrets: Secrets) -> str:
    """``NAME=value ... argv`` as a shell would read it; secret values (aibench.secret: a
    secret-looking name, or one the suite or inventory marks) as ***."""
    env = " ".join(
        f"{k}={v if v == REDACTED else shlex.quote(v)}"
        for k, v in sorted(secrets.redact_env(spec.env).items())
    )
    return secrets.scrub(f"{env} {shlex.join(spec.argv)}".strip())


def fmt_seconds(s: float) -> str:
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"
