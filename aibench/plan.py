"""Placements: which nodes each step runs on, grouped into rounds.

Pure functions with table tests. A *group* is a tuple of node names that one invocation
covers (a node, a pair, all nodes). A *round* is a list of groups that run at the same
time; within a round no node appears twice, so concurrent network tests never share an
endpoint.

* ``each``: every node on its own, one round.
* ``pairs``: every unordered pair, scheduled with the circle method: N-1 rounds for even
  N, N rounds for odd N (one node sits out each round). One node alone is paired with
  itself (client and server on the loopback).
* ``all``: one group of every node.
"""

from __future__ import annotations

from collections.abc import Sequence

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


PLACEMENTS = {"each": each, "pairs": pairs, "all": all_nodes}


def schedule(placement: str, nodes: Sequence[str]) -> list[Round]:
    try:
        fn = PLACEMENTS[placement]
    except KeyError:
        raise ValueError(
            f"unknown placement {placement!r}; valid: {', '.join(sorted(PLACEMENTS))}"
        ) from None
    return fn(nodes)
