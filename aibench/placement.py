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
* ``cover``: every node against ``k`` partners, for fleets too large for all pairs
  (:func:`cover`): when the nodes carry a group label (leaf switch, rack, rail), first a
  matching of every two groups, so that every node has a partner in every other group,
  then random perfect matchings (a union of random matchings is an expander: a slow
  node or link cannot hide behind a few neighbours) until each node has ``k`` partners;
  every round is a set of disjoint pairs. What it finds is measured again pairwise:
  :func:`suspect_nodes` picks the nodes of the slow and failed pairs, and
  :class:`SuspectRounds` plans every pair among them (with a few good nodes for
  reference) once those results exist.
* ``all``: one group of every node.
* ``sweep``: the first 1, 2, 4 ... nodes and then all of them, one group per round.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Sequence as SequenceABC
from itertools import combinations
from typing import Any, overload

Group = tuple[str, ...]
Round = list[Group]


def each(nodes: Sequence[str]) -> list[Round]:
    return [[(n,) for n in nodes]] if nodes else []


def all_nodes(nodes: Sequence[str]) -> list[Round]:
    return [[tuple(nodes)]] if nodes else []


def sweep(nodes: Sequence[str]) -> list[Round]:
    """One round per size, the first 1, 2, 4 ... nodes and then all of them: where a
    shared service (a file system) stops growing with its clients."""
    sizes = [1 << i for i in range(max(len(nodes), 1).bit_length()) if 1 << i < len(nodes)]
    return [[tuple(nodes[:k])] for k in (*sizes, len(nodes))] if nodes else []


def pairs(nodes: Sequence[str]) -> list[Round]:
    """Round-robin tournament over ``nodes``: every unordered pair exactly once."""
    return list(PairRounds(tuple(nodes)))


class PairRounds(SequenceABC[Round]):
    """The rounds of :func:`pairs`, each made when asked for: round ``r`` of the circle
    method is computed from ``r`` alone, so that all pairs of thousands of nodes (N^2/2
    groups) are never held at once. Every round has ``len(nodes) // 2`` pairs."""

    def __init__(self, nodes: tuple[str, ...]) -> None:
        self.nodes = nodes
        n = len(nodes)
        self._ring: tuple[str | None, ...] = (*nodes, None) if n % 2 else nodes
        self._rounds = 0 if n == 0 else 1 if n == 1 else len(self._ring) - 1

    def __len__(self) -> int:
        return self._rounds

    @overload
    def __getitem__(self, r: int) -> Round: ...
    @overload
    def __getitem__(self, r: slice) -> list[Round]: ...
    def __getitem__(self, r: int | slice) -> Round | list[Round]:
        if isinstance(r, slice):
            return [self[i] for i in range(*r.indices(self._rounds))]
        if r < 0:
            r += self._rounds
        if not 0 <= r < self._rounds:
            raise IndexError(r)
        if len(self.nodes) == 1:
            solo: Round = [(self.nodes[0], self.nodes[0])]
            return solo
        # after r rotations of all but the first, the tail has turned right by r
        first, tail = self._ring[0], self._ring[1:]
        k = r % len(tail)
        ring = (first, *tail[len(tail) - k :], *tail[: len(tail) - k])
        m = len(ring)
        rnd: Round = []
        for i in range(m // 2):
            a, b = ring[i], ring[m - 1 - i]
            if a is not None and b is not None:
                rnd.append((a, b))
        return rnd

    def group_size(self) -> int:
        return 2


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
    n = len(nodes)
    every = n * (n - 1) // 2
    # the same draw as sampling the list of every pair (combinations order), without
    # making that list: sample() picks positions, mapped here to their pair
    import random

    chosen = random.Random(seed).sample(range(every), min(k, every))
    return pack([_nth_pair(nodes, i) for i in chosen])


def _nth_pair(nodes: Sequence[str], i: int) -> Group:
    """The ``i``-th pair of ``itertools.combinations(nodes, 2)``."""
    n = len(nodes)
    # pairs starting at a: n-1-a; those before a: a*(2n-a-1)/2
    a = int((2 * n - 1 - math.sqrt((2 * n - 1) ** 2 - 8 * i)) // 2)
    while a > 0 and a * (2 * n - a - 1) // 2 > i:
        a -= 1
    while (a + 1) * (2 * n - a - 2) // 2 <= i:
        a += 1
    b = a + 1 + i - a * (2 * n - a - 1) // 2
    return (nodes[a], nodes[b])


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
    "sweep": sweep,
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
    return list(rounds_of(placement, nodes, k=k, seed=seed, labels=labels, **unknown))


def rounds_of(
    placement: str,
    nodes: Sequence[str],
    *,
    k: int | None = None,
    seed: int = 0,
    labels: Mapping[str, str] | None = None,
    **unknown: Any,
) -> Sequence[Round]:
    """:func:`schedule`, with the rounds of ``pairs`` made one at a time when asked for."""
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
    if placement == "pairs":
        return PairRounds(tuple(nodes))
    if placement == "cover":
        return fn(nodes, k if k is not None else 16, labels, seed)
    return fn(nodes)


def cover(
    nodes: Sequence[str], k: int, labels: Mapping[str, str] | None = None, seed: int = 0
) -> list[Round]:
    """Rounds of disjoint pairs in which every node meets at least ``k`` distinct partners
    (all the others when there are fewer), and, when ``labels`` name groups, a partner in
    every other group. The same nodes, labels and seed give the same rounds."""
    import random

    if k < 1:
        raise ValueError(f"cover: k must be at least 1, got {k}")
    if len(nodes) <= max(2, k + 1):
        return pairs(nodes)
    rng = random.Random(seed)
    rounds = _across_groups(nodes, labels) if labels else []
    met: dict[str, set[str]] = {n: set() for n in nodes}
    for rnd in rounds:
        for a, b in rnd:
            met[a].add(b)
            met[b].add(a)
    while min(len(m) for m in met.values()) < k:
        rnd = _matching(nodes, met, rng)
        if not rnd:
            break
        rounds.append(rnd)
    return rounds


def _across_groups(nodes: Sequence[str], labels: Mapping[str, str]) -> list[Round]:
    """Every two groups matched node to node (the i-th of the larger group with the
    i mod m-th of the smaller), packed into rounds of disjoint pairs; the groups meet in
    the order of a round-robin over the groups, so equal groups take one round each."""
    by: dict[str, list[str]] = {}
    for n in nodes:
        by.setdefault(labels.get(n, ""), []).append(n)
    members = list(by.values())
    if len(members) < 2:
        return []
    order = [i for rnd in pairs([str(i) for i in range(len(members))]) for i in rnd]
    cross: list[Group] = []
    for gi, hi in order:
        g, h = members[int(gi)], members[int(hi)]
        big, small = (g, h) if len(g) >= len(h) else (h, g)
        cross.extend((n, small[i % len(small)]) for i, n in enumerate(big))
    return pack(cross)


def _matching(nodes: Sequence[str], met: Mapping[str, set[str]], rng: Any) -> Round:
    """A random set of disjoint pairs of nodes that have not met, the nodes with the
    fewest partners first; the pairs are noted in ``met``."""
    order = list(nodes)
    rng.shuffle(order)
    order.sort(key=lambda n: len(met[n]))
    free = set(order)
    rnd: Round = []
    for i, a in enumerate(order):
        if a not in free:
            continue
        free.discard(a)
        for b in order[i + 1 :]:
            if b in free and b not in met[a]:
                free.discard(b)
                rnd.append((a, b))
                met[a].add(b)
                met[b].add(a)
                break
    return rnd


def suspect_nodes(
    values: Mapping[tuple[str, str], float],
    failed: Sequence[tuple[str, str]] = (),
    drop: float = 0.15,
    limit: int | None = None,
) -> list[str]:
    """The nodes to measure again pairwise: both ends of every pair more than ``drop``
    below the median of ``values`` (one value per pair, higher is better) and of every
    pair in ``failed``, sorted; at most ``limit`` of them, those of the failed and then
    the slowest pairs first (every pair among many suspects is nearly every pair)."""
    worst: dict[str, float] = {n: float("-inf") for p in failed for n in p}
    if values:
        ordered = sorted(values.values())
        mid = len(ordered) // 2
        median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
        for p, v in values.items():
            if v < median * (1 - drop):
                for n in p:
                    worst[n] = min(worst.get(n, v), v)
    kept = sorted(worst, key=lambda n: (worst[n], n))[:limit]
    return sorted(kept)


class SuspectRounds(SequenceABC[Round]):
    """The second phase of ``cover``: every pair among the suspects of the first phase
    and ``references`` nodes that it found good (so that a node slow with everyone is
    told from a link slow with one partner). It holds no round until :meth:`resolve` is
    given the first phase's suspects (the orchestrator does, when the phase before has
    run); :attr:`assumed` suspects are what a plan's estimate counts on until then."""

    def __init__(self, nodes: tuple[str, ...], after: str, references: int = 2) -> None:
        self.nodes = nodes
        self.after = after  # the step whose results name the suspects
        self.references = references
        self.assumed = 8
        self.limit = 64  # the most suspects measured pairwise (2016 pairs, 63 rounds)
        self.suspects: tuple[str, ...] | None = None
        self._rounds: PairRounds = PairRounds(())

    def resolve(self, suspects: Sequence[str], good: Sequence[str] = ()) -> None:
        """Plan the pairs among ``suspects`` and the first ``references`` of ``good``."""
        self.suspects = tuple(suspects)
        chosen = list(self.suspects)
        if chosen:
            chosen += [n for n in good if n not in set(chosen)][: self.references]
        self._rounds = PairRounds(tuple(chosen) if len(chosen) > 1 else ())

    @property
    def resolved(self) -> bool:
        return self.suspects is not None

    def __len__(self) -> int:
        return len(self._rounds)

    @overload
    def __getitem__(self, r: int) -> Round: ...
    @overload
    def __getitem__(self, r: slice) -> list[Round]: ...
    def __getitem__(self, r: int | slice) -> Round | list[Round]:
        return self._rounds[r]


PLACEMENTS["cover"] = cover  # k: the partners (rounds_of), labels: the groups to cross
