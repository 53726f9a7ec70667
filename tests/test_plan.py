"""Table tests for every placement of aibench.plan."""

from __future__ import annotations

from itertools import combinations

import pytest

from aibench import plan
from aibench.plan import Round


def names(n: int) -> list[str]:
    return [f"n{i}" for i in range(1, n + 1)]


def no_node_twice(rounds: list[Round]) -> None:
    for rnd in rounds:
        flat = [x for g in rnd for x in g]
        assert len(flat) == len(set(flat)), rnd


def unordered(rounds: list[Round]) -> list[frozenset[str]]:
    return [frozenset(g) for rnd in rounds for g in rnd]


@pytest.mark.parametrize("n", range(1, 13))
def test_pairs_every_pair_once_in_the_right_number_of_rounds(n: int) -> None:
    nodes = names(n)
    rounds = plan.pairs(nodes)
    if n == 1:
        assert rounds == [[("n1", "n1")]]
        return
    no_node_twice(rounds)
    got = unordered(rounds)
    assert len(got) == len(set(got)) == n * (n - 1) // 2
    assert set(got) == {frozenset(p) for p in combinations(nodes, 2)}
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)
    for rnd in rounds:  # every round is as full as it can be
        assert len(rnd) == n // 2


def test_pairs_empty() -> None:
    assert plan.pairs([]) == []


@pytest.mark.parametrize(
    ("nodes", "expected"),
    [
        ([], []),
        (["a"], [[("a",)]]),
        (["a", "b", "c"], [[("a",), ("b",), ("c",)]]),
    ],
)
def test_each(nodes: list[str], expected: list[Round]) -> None:
    assert plan.each(nodes) == expected


@pytest.mark.parametrize(
    ("nodes", "expected"),
    [([], []), (["a"], [[("a",)]]), (["a", "b", "c"], [[("a", "b", "c")]])],
)
def test_all_nodes(nodes: list[str], expected: list[Round]) -> None:
    assert plan.all_nodes(nodes) == expected


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (0, []),
        (1, [[("n1", "n1")]]),
        (2, [[("n1", "n2")]]),
        (3, [[("n1", "n2")], [("n2", "n3")], [("n3", "n1")]]),
        (4, [[("n1", "n2"), ("n3", "n4")], [("n2", "n3"), ("n4", "n1")]]),
        (
            5,
            [
                [("n1", "n2"), ("n3", "n4")],
                [("n2", "n3"), ("n4", "n5")],
                [("n5", "n1")],
            ],
        ),
    ],
)
def test_ring_table(n: int, expected: list[Round]) -> None:
    assert plan.ring(names(n)) == expected


@pytest.mark.parametrize("n", range(3, 13))
def test_ring_every_neighbour_once(n: int) -> None:
    nodes = names(n)
    rounds = plan.ring(nodes)
    no_node_twice(rounds)
    assert sorted(g for r in rounds for g in r) == sorted(
        (nodes[i], nodes[(i + 1) % n]) for i in range(n)
    )
    assert len(rounds) == (2 if n % 2 == 0 else 3)


def test_sample_is_reproducible_and_distinct() -> None:
    nodes = names(10)
    a = plan.sample(nodes, 7, seed=42)
    b = plan.sample(nodes, 7, seed=42)
    c = plan.sample(nodes, 7, seed=43)
    assert a == b
    assert a != c
    no_node_twice(a)
    got = unordered(a)
    assert len(got) == len(set(got)) == 7
    assert all(len(p) == 2 for p in got)


def test_sample_caps_at_every_pair_and_small_inputs() -> None:
    assert set(unordered(plan.sample(names(4), 100))) == {
        frozenset(p) for p in combinations(names(4), 2)
    }
    assert plan.sample(["a"], 3) == [[("a", "a")]]
    assert plan.sample([], 3) == []
    with pytest.raises(ValueError, match="k must be at least 1"):
        plan.sample(names(4), 0)


def test_groups_intra_then_inter() -> None:
    labels = {"a1": "r1", "a2": "r1", "a3": "r1", "b1": "r2", "b2": "r2", "c1": "r3"}
    rounds = plan.groups(list(labels), labels)
    no_node_twice(rounds)
    got = unordered(rounds)
    intra = {frozenset(p) for p in [("a1", "a2"), ("a1", "a3"), ("a2", "a3"), ("b1", "b2")]}
    # every node crosses to every other group once: the larger group's i-th node with the
    # smaller group's (i mod m)-th
    inter = {
        frozenset(p)
        for p in [
            ("a1", "b1"), ("a2", "b2"), ("a3", "b1"),
            ("a1", "c1"), ("a2", "c1"), ("a3", "c1"),
            ("b1", "c1"), ("b2", "c1"),
        ]
    }  # fmt: skip
    assert set(got) == intra | inter
    assert len(got) == len(set(got))
    # intra-group rounds come first; groups share those rounds side by side
    n_intra = 3  # a group of 3 takes 3 rounds
    first = unordered(rounds[:n_intra])
    assert set(first) == intra
    assert rounds[0] == [("a2", "a3"), ("b1", "b2")]


@pytest.mark.parametrize("sizes", [(2, 2), (3, 2), (4, 1), (5, 3, 2), (1, 1, 1, 1), (8, 8, 8)])
def test_groups_every_node_crosses_to_every_other_group(sizes: tuple[int, ...]) -> None:
    labels = {f"g{k}n{i}": f"g{k}" for k, size in enumerate(sizes) for i in range(size)}
    rounds = plan.groups(list(labels), labels)
    no_node_twice(rounds)
    got = unordered(rounds)
    assert len(got) == len(set(got))  # no pair twice
    inter = [p for p in got if len({labels[n] for n in p}) == 2]
    for node, group in labels.items():
        crossed = {labels[m] for p in inter if node in p for m in p if m != node}
        assert crossed == set(labels.values()) - {group}, node
    # max(size) pairs per two groups, not size x size
    expected = sum(max(a, b) for a, b in combinations(sizes, 2))
    assert len(inter) == expected
    intra = [p for p in got if len({labels[n] for n in p}) == 1]
    assert len(intra) == sum(n * (n - 1) // 2 for n in sizes)


def test_groups_without_label_form_one_group() -> None:
    rounds = plan.groups(["x", "y", "z"], {"x": "r1"})
    assert set(unordered(rounds)) == {frozenset(p) for p in [("y", "z"), ("x", "y"), ("x", "z")]}


def test_groups_single_group_is_pairs() -> None:
    nodes = names(4)
    assert plan.groups(nodes, dict.fromkeys(nodes, "r")) == plan.pairs(nodes)


def test_schedule_dispatch_and_errors() -> None:
    nodes = names(4)
    assert plan.schedule("pairs", nodes) == plan.pairs(nodes)
    assert plan.schedule("each", nodes) == plan.each(nodes)
    assert plan.schedule("all", nodes) == plan.all_nodes(nodes)
    assert plan.schedule("ring", nodes) == plan.ring(nodes)
    assert plan.schedule("sample", nodes, k=2, seed=5) == plan.sample(nodes, 2, 5)
    lab = {"n1": "a", "n2": "a", "n3": "b", "n4": "b"}
    assert plan.schedule("groups", nodes, labels=lab) == plan.groups(nodes, lab)
    # labels given for another placement are ignored (group_by applies to groups only)
    assert plan.schedule("pairs", nodes, labels=lab) == plan.pairs(nodes)
    with pytest.raises(ValueError, match="unknown placement 'rings'; valid: all, each"):
        plan.schedule("rings", nodes)
    with pytest.raises(ValueError, match="needs k"):
        plan.schedule("sample", nodes)
    with pytest.raises(ValueError, match="needs labels"):
        plan.schedule("groups", nodes)
    with pytest.raises(TypeError, match="unknown argument"):
        plan.schedule("pairs", nodes, bogus=1)


def test_pack_first_fit() -> None:
    assert plan.pack([("a", "b"), ("b", "c"), ("c", "d"), ("a", "d")]) == [
        [("a", "b"), ("c", "d")],
        [("b", "c"), ("a", "d")],
    ]
