"""Placements: which nodes each step runs on, grouped into rounds.

Pure functions with table tests. A *group* is a tuple of node names that one invocation
covers (a node, a pair, all nodes). A *round* is a list of groups that run at the same
time; within a round no node appears twice, so concurrent network tests never share an
endpoint. A pair is ordered: the first node is the client, the second the server.

* ``each``: every node on its own, one round.
* ``pairs``: every unordered pair, scheduled with the circle method: N-1 rounds for even
  N, N rounds for odd N (one node sits out each round). One node alone is paired with
  itself (client and server on the loopback).
* ``ring``: node i with node i+1, the last with the first (N pairs for N >= 3, one for
  N = 2): two rounds for even N, three for odd N.
* ``sample``: ``k`` distinct unordered pairs drawn at random with ``seed`` (the same seed
  and nodes give the same pairs), packed into rounds.
* ``groups``: nodes grouped by an inventory label (``labels``: node -> value, e.g. rack);
  first every pair inside each group (the groups' rounds run side by side), then for
  every two groups a matching across them: the i-th node of the larger group with the
  (i mod m)-th of the smaller (m nodes), so that *every* node crosses to every other
  group at least once, in max(size) pairs per two groups rather than size x size. All
  inter-group pairs would be nearly every pair of the cluster (``pairs`` does that);
  the matching finds a node whose path out of its group is bad at the cost of one pair
  per node. Nodes without the label form one group.
* ``all``: one group of every node.

Planning (:func:`build_plan`) turns a suite over an inventory into a :class:`Plan`: rounds
of invocations, each built by the step's runner for one group of one round. It touches no
node. The estimate of a plan's duration comes from each runner's ``expected_seconds``
(what the step's options say it will take), never from the text of its command line.
"""

from __future__ import annotations

import math
import random
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aibench.inventory import Inventory, Node
    from aibench.runners.base import Invocation
    from aibench.suite import Step, Suite

Group = tuple[str, ...]
Round = list[Group]


def each(nodes: Sequence[str]) -> list[Round]:
    return [[(n,) for n in nodes]] if nodes else []


def all_nodes(nodes: Sequence[str]) -> list[Round]:
    return [[tuple(nodes)]] if nodes else []


def pairs(nodes: Sequence[str]) -> list[Round]:
    """Round-robin tournament over ``nodes``: every unordered pair exactly once."""
    n = len(nodes)
    if n == 0:
        return []
    if n == 1:
        return [[(nodes[0], nodes[0])]]
    ring: list[str | None] = list(nodes)
    if n % 2:
        ring.append(None)  # the bye
    m = len(ring)
    rounds: list[Round] = []
    for _ in range(m - 1):
        rnd: Round = []
        for i in range(m // 2):
            a, b = ring[i], ring[m - 1 - i]
            if a is not None and b is not None:
                rnd.append((a, b))
        rounds.append(rnd)
        ring = [ring[0], ring[-1], *ring[1:-1]]  # rotate all but the first
    return rounds


def pack(groups: Sequence[Group]) -> list[Round]:
    """Put groups into rounds in order, each in the first round that shares no node with it."""
    rounds: list[Round] = []
    used: list[set[str]] = []
    for g in groups:
        for rnd, busy in zip(rounds, used, strict=True):
            if busy.isdisjoint(g):
                rnd.append(g)
                busy.update(g)
                break
        else:
            rounds.append([g])
            used.append(set(g))
    return rounds


def ring(nodes: Sequence[str]) -> list[Round]:
    n = len(nodes)
    if n <= 2:
        return pairs(nodes)
    return pack([(nodes[i], nodes[(i + 1) % n]) for i in range(n)])


def sample(nodes: Sequence[str], k: int, seed: int = 0) -> list[Round]:
    if k < 1:
        raise ValueError(f"sample: k must be at least 1, got {k}")
    if len(nodes) < 2:
        return pairs(nodes)
    every = list(combinations(nodes, 2))
    chosen = random.Random(seed).sample(every, min(k, len(every)))
    return pack(chosen)


def groups(nodes: Sequence[str], labels: Mapping[str, str]) -> list[Round]:
    by: dict[str, list[str]] = {}
    for n in nodes:
        by.setdefault(labels.get(n, ""), []).append(n)
    members = list(by.values())
    intra: list[Round] = []
    for g in members:
        if len(g) < 2:
            continue
        for j, rnd in enumerate(pairs(g)):
            if j == len(intra):
                intra.append([])
            intra[j].extend(rnd)
    inter: list[Group] = []
    for g, h in combinations(members, 2):
        big, small = (g, h) if len(g) >= len(h) else (h, g)
        for i, n in enumerate(big):
            pair = (n, small[i % len(small)])
            inter.append(pair if big is g else (pair[1], pair[0]))
    return intra + pack(inter)


Placement = Callable[..., list[Round]]

PLACEMENTS: dict[str, Placement] = {
    "each": each,
    "pairs": pairs,
    "ring": ring,
    "sample": sample,
    "groups": groups,
    "all": all_nodes,
}


def schedule(
    placement: str,
    nodes: Sequence[str],
    *,
    k: int | None = None,
    seed: int = 0,
    labels: Mapping[str, str] | None = None,
    **unknown: Any,
) -> list[Round]:
    """Rounds of ``placement`` over ``nodes``; ``k``/``seed`` for sample, ``labels`` for groups."""
    try:
        fn = PLACEMENTS[placement]
    except KeyError:
        raise ValueError(
            f"unknown placement {placement!r}; valid: {', '.join(sorted(PLACEMENTS))}"
        ) from None
    if unknown:
        raise TypeError(f"schedule: unknown argument(s) {', '.join(sorted(unknown))}")
    if placement == "sample":
        if k is None:
            raise ValueError("placement sample needs k (the number of pairs)")
        return sample(nodes, k, seed)
    if placement == "groups":
        if labels is None:
            raise ValueError("placement groups needs labels (set group_by to a label name)")
        return groups(nodes, labels)
    return fn(nodes)


# --------------------------------------------------------------------------- planning


@dataclass(frozen=True)
class PlannedRound:
    step: str
    tool: str
    repeat: int
    round: int
    invocations: tuple[Invocation, ...]


@dataclass(frozen=True)
class Plan:
    suite: Suite
    inventory: Inventory
    rounds: tuple[PlannedRound, ...]

    @property
    def invocations(self) -> list[Invocation]:
        return [inv for r in self.rounds for inv in r.invocations]

    def at_once(self, rnd: PlannedRound) -> int:
        """How many invocations of the round run at the same time under the inventory's
        ``max_parallel`` and ``max_network_parallel`` (the network ones count against both)."""
        limits = self.inventory.limits
        n = len(rnd.invocations)
        net = sum(1 for i in rnd.invocations if i.network)
        capped = min(net, limits.max_network_parallel) if limits.max_network_parallel else net
        return min(max(1, limits.max_parallel), n - net + capped)

    def estimated_seconds(self) -> float:
        """Rough wall time: per round, the longest expected run, times the waves the
        concurrency limits make of the round (rounds run one after another)."""
        limits = self.inventory.limits
        total = 0.0
        for r in self.rounds:
            if not r.invocations:
                continue
            longest = max(i.expected_s for i in r.invocations)
            waves = math.ceil(len(r.invocations) / max(1, limits.max_parallel))
            net = [i.expected_s for i in r.invocations if i.network]
            t = waves * longest
            if net and limits.max_network_parallel:
                t = max(t, math.ceil(len(net) / limits.max_network_parallel) * max(net))
            total += t
        return total

    def estimate_basis(self) -> list[str]:
        """How each step's duration was estimated (the runners' own words), once a step."""
        seen: dict[str, str] = {}
        for r in self.rounds:
            for inv in r.invocations:
                seen.setdefault(inv.step, inv.estimate)
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
    """The rounds of every enabled step of ``suite`` over ``inventory`` (pure)."""
    from aibench.runners import RUNNERS, Slot

    rounds: list[PlannedRound] = []
    for step in suite.steps:
        if not step.model.enabled:
            continue
        runner = RUNNERS.get(step.tool)
        nodes = select_nodes(step, inventory, suite)
        placement = step.model.placement or runner.default_placement
        kwargs: dict[str, Any] = {}
        if step.model.sample is not None:
            kwargs["k"] = step.model.sample
        if step.model.group_by is not None:
            kwargs["labels"] = {n.name: n.labels.get(step.model.group_by, "") for n in nodes}
        groups_by_round = schedule(placement, [n.name for n in nodes], **kwargs)
        own = getattr(runner, "expected_seconds", None)
        estimate = own(step.options) if own is not None else None
        for repeat in range(step.model.repeats):
            for r_index, rnd in enumerate(groups_by_round):
                invs: list[Invocation] = []
                for index, group in enumerate(rnd):
                    slot = Slot(
                        round=r_index,
                        index=index,
                        repeat=repeat,
                        base_port=suite.settings.base_port,
                        workdir=suite.settings.workdir,
                    )
                    members = [inventory.node(n) for n in group]
                    for inv in runner.invocations(step.name, step.options, members, slot):
                        if step.model.timeout is not None:
                            inv = _with_timeout(inv, step.model.timeout)
                        secs, why = estimate or expected_seconds(None, None, inv.client.timeout)
                        invs.append(replace(inv, expected_s=float(secs), estimate=str(why)))
                rounds.append(PlannedRound(step.name, step.tool, repeat, r_index, tuple(invs)))
    return Plan(suite=suite, inventory=inventory, rounds=tuple(rounds))


def _with_timeout(inv: Invocation, timeout: float) -> Invocation:
    client = replace(inv.client, timeout=timeout)
    servers = tuple(replace(s, timeout=timeout + 10.0) for s in inv.servers)
    return replace(inv, client=client, servers=servers)


# --------------------------------------------------------------------------- display


def format_plan(plan: Plan) -> str:
    """The plan as ``aibench plan`` prints it: a header with the estimate, then per step
    and round how many runs it holds and how many run at once, and each process's node,
    role and command line (secret-looking environment values as ``***``)."""
    lines = [
        f"suite {plan.suite.name} ({plan.suite.source}) on {len(plan.inventory)} node(s) "
        f"of {plan.inventory.name}: {len(plan.invocations)} runs in {len(plan.rounds)} rounds, "
        f"about {fmt_seconds(plan.estimated_seconds())}"
    ]
    current = None
    for rnd in plan.rounds:
        if rnd.step != current:
            current = rnd.step
            head = f"\nstep {rnd.step} ({rnd.tool})"
            if rnd.invocations:
                first = rnd.invocations[0]
                head += f": about {fmt_seconds(first.expected_s)} a run"
                head += f" ({first.estimate})" if first.estimate else ""
            lines.append(head)
        n, at_once = len(rnd.invocations), plan.at_once(rnd)
        concurrency = f"{n} run(s) at once" if at_once >= n else f"{n} run(s), {at_once} at once"
        lines.append(f"  repeat {rnd.repeat + 1} round {rnd.round + 1}: {concurrency}")
        for inv in rnd.invocations:
            for s in inv.setup:
                lines.append(f"    {s.host:<16} setup   {_command(s)}")
            for s in inv.servers:
                lines.append(f"    {s.host:<16} server  {_command(s)}")
            lines.append(f"    {inv.client.host:<16} {inv.client.role:<7} {_command(inv.client)}")
    return "\n".join(lines)


def _command(spec: Any) -> str:
    """``NAME=value ... argv`` as a shell would read it; secret-looking values as ***."""
    from aibench.executors.base import REDACTED, redact_env

    env = " ".join(
        f"{k}={v if v == REDACTED else shlex.quote(v)}"
        for k, v in sorted(redact_env(spec.env).items())
    )
    return f"{env} {shlex.join(spec.argv)}".strip()


def fmt_seconds(s: float) -> str:
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"
