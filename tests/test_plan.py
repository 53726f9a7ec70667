"""Table tests for every placement of aibench.placement, and for planning (aibench.plan)."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import pytest

from aibench import placement
from aibench.placement import Round


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
    rounds = placement.pairs(nodes)
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
    assert placement.pairs([]) == []


@pytest.mark.parametrize("n", [0, 1, 2, 5, 8])
def test_pair_rounds_are_made_one_at_a_time_as_pairs_lists_them(n: int) -> None:
    nodes = names(n)
    lazy = placement.PairRounds(tuple(nodes))
    every = placement.pairs(nodes)
    assert len(lazy) == len(every)
    assert [lazy[r] for r in range(len(lazy))] == every
    assert lazy[-1:] == every[-1:]
    with pytest.raises(IndexError):
        lazy[len(every)]


@pytest.mark.parametrize(
    ("nodes", "expected"),
    [
        ([], []),
        (["a"], [[("a",)]]),
        (["a", "b", "c"], [[("a",), ("b",), ("c",)]]),
    ],
)
def test_each(nodes: list[str], expected: list[Round]) -> None:
    assert placement.each(nodes) == expected


@pytest.mark.parametrize(
    ("nodes", "expected"),
    [([], []), (["a"], [[("a",)]]), (["a", "b", "c"], [[("a", "b", "c")]])],
)
def test_all_nodes(nodes: list[str], expected: list[Round]) -> None:
    assert placement.all_nodes(nodes) == expected


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
    assert placement.ring(names(n)) == expected


@pytest.mark.parametrize("n", range(3, 13))
def test_ring_every_neighbour_once(n: int) -> None:
    nodes = names(n)
    rounds = placement.ring(nodes)
    no_node_twice(rounds)
    assert sorted(g for r in rounds for g in r) == sorted(
        (nodes[i], nodes[(i + 1) % n]) for i in range(n)
    )
    assert len(rounds) == (2 if n % 2 == 0 else 3)


def test_sample_is_reproducible_and_distinct() -> None:
    nodes = names(10)
    a = placement.sample(nodes, 7, seed=42)
    b = placement.sample(nodes, 7, seed=42)
    c = placement.sample(nodes, 7, seed=43)
    assert a == b
    assert a != c
    no_node_twice(a)
    got = unordered(a)
    assert len(got) == len(set(got)) == 7
    assert all(len(p) == 2 for p in got)


def test_sample_caps_at_every_pair_and_small_inputs() -> None:
    assert set(unordered(placement.sample(names(4), 100))) == {
        frozenset(p) for p in combinations(names(4), 2)
    }
    assert placement.sample(["a"], 3) == [[("a", "a")]]
    assert placement.sample([], 3) == []
    with pytest.raises(ValueError, match="k must be at least 1"):
        placement.sample(names(4), 0)


def test_groups_intra_then_inter() -> None:
    labels = {"a1": "r1", "a2": "r1", "a3": "r1", "b1": "r2", "b2": "r2", "c1": "r3"}
    rounds = placement.groups(list(labels), labels)
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
    rounds = placement.groups(list(labels), labels)
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
    rounds = placement.groups(["x", "y", "z"], {"x": "r1"})
    assert set(unordered(rounds)) == {frozenset(p) for p in [("y", "z"), ("x", "y"), ("x", "z")]}


def test_groups_single_group_is_pairs() -> None:
    nodes = names(4)
    assert placement.groups(nodes, dict.fromkeys(nodes, "r")) == placement.pairs(nodes)


def test_schedule_dispatch_and_errors() -> None:
    nodes = names(4)
    assert placement.schedule("pairs", nodes) == placement.pairs(nodes)
    assert placement.schedule("each", nodes) == placement.each(nodes)
    assert placement.schedule("all", nodes) == placement.all_nodes(nodes)
    assert placement.schedule("ring", nodes) == placement.ring(nodes)
    assert placement.schedule("sample", nodes, k=2, seed=5) == placement.sample(nodes, 2, 5)
    lab = {"n1": "a", "n2": "a", "n3": "b", "n4": "b"}
    assert placement.schedule("groups", nodes, labels=lab) == placement.groups(nodes, lab)
    # labels given for another placement are ignored (group_by applies to groups only)
    assert placement.schedule("pairs", nodes, labels=lab) == placement.pairs(nodes)
    with pytest.raises(ValueError, match="unknown placement 'rings'; valid: all, cover, each"):
        placement.schedule("rings", nodes)
    with pytest.raises(ValueError, match="needs k"):
        placement.schedule("sample", nodes)
    with pytest.raises(ValueError, match="needs labels"):
        placement.schedule("groups", nodes)
    with pytest.raises(TypeError, match="unknown argument"):
        placement.schedule("pairs", nodes, bogus=1)


def test_pack_first_fit() -> None:
    assert placement.pack([("a", "b"), ("b", "c"), ("c", "d"), ("a", "d")]) == [
        [("a", "b"), ("c", "d")],
        [("b", "c"), ("a", "d")],
    ]


# --------------------------------------------------------------------------- aibench plan

PLAN_SUITE = """\
schema_version: 1
name: plan-test
steps:
  - name: disk
    tool: fio
    options: {rw: read, bs: 1M, size: 64M, runtime: 2}
  - name: net
    tool: iperf3
    placement: pairs
    options: {duration: 3, streams: 2}
  - name: nccl
    tool: nccl-tests
    nodes: ['node[1-2]']
    placement: all
    options: {launcher: mpirun, ranks_per_node: 8, env: {NCCL_DEBUG: INFO, HF_TOKEN: hunter2}}
"""

# SSH nodes on TEST-NET-1 (192.0.2.0/24, never routed) with a known_hosts file that does
# not exist: a plan that tried to reach them would fail or hang.
PLAN_INVENTORY = """\
name: lab
defaults: {{executor: ssh}}
ssh: {{user: bench, known_hosts: {known_hosts}, connect_timeout: 30}}
limits: {{max_parallel: {max_parallel}, max_network_parallel: {max_network_parallel}}}
nodes:
  - name: node[1-4]
    address_pattern: "192.0.2.{{n}}"
"""


@pytest.fixture
def no_contact(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to start a process or open a connection fails the test."""
    import asyncio
    import socket
    import subprocess

    import asyncssh

    def refuse(*a: object, **k: object) -> None:
        raise AssertionError(f"a node or process was contacted: {a!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(asyncio, "create_subprocess_exec", refuse)
    monkeypatch.setattr(asyncssh, "connect", refuse)


def plan_files(tmp_path: Path, max_parallel: int = 16, max_network_parallel: int = 0) -> list[str]:
    suite = tmp_path / "suite.yaml"
    suite.write_text(PLAN_SUITE)
    inv = tmp_path / "inventory.yaml"
    inv.write_text(
        PLAN_INVENTORY.format(
            known_hosts=tmp_path / "no-such-known_hosts",
            max_parallel=max_parallel,
            max_network_parallel=max_network_parallel,
        )
    )
    return ["--suite", str(suite), "--inventory", str(inv)]


def run_cli(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    from aibench.cli import main

    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_plan_prints_rounds_commands_and_duration_touching_no_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_contact: None
) -> None:
    files = plan_files(tmp_path)
    out = run_cli(capsys, ["plan", "--full", *files])
    lines = out.splitlines()
    # fio 2 s + 1, three rounds of iperf3 3 s + 1, nccl-tests with no duration: its
    # timeout's share, capped at 60 s
    assert lines[0] == (
        f"suite plan-test ({tmp_path / 'suite.yaml'}) on 4 node(s) of lab: "
        "11 runs in 5 rounds, about 75 s"
    )
    rounds = [ln.strip() for ln in lines if ln.strip().startswith("repeat ")]
    assert rounds == [
        "repeat 1 round 1: 4 run(s) at once",  # fio on each node
        "repeat 1 round 1: 2 run(s) at once",  # iperf3: 3 rounds of 2 pairs for 4 nodes
        "repeat 1 round 2: 2 run(s) at once",
        "repeat 1 round 3: 2 run(s) at once",
        "repeat 1 round 1: 1 run(s) at once",  # nccl-tests: one job over node1, node2
    ]
    cmds = [ln.split(None, 2) for ln in lines if ln.startswith("    ")]
    fio = [c for c in cmds if c[2].startswith("fio ")]
    assert sorted(c[0] for c in fio) == ["node1", "node2", "node3", "node4"]
    assert {c[1] for c in fio} == {"client"}
    # every pair once, its server started on the second node and the client aimed at it
    servers = {c[0]: c for c in cmds if c[1] == "server"}
    pairs = set()
    i = 0
    body = [c for c in cmds if c[2].startswith("iperf3 ")]
    while i < len(body):
        server, client = body[i], body[i + 1]
        assert server[1] == "server"
        assert client[1] == "client"
        s_argv, c_argv = server[2].split(), client[2].split()
        assert c_argv[c_argv.index("-c") + 1] == f"192.0.2.{server[0][-1]}"
        assert c_argv[c_argv.index("-p") + 1] == s_argv[s_argv.index("-p") + 1]
        assert "-t 3 -P 2" in client[2]
        pairs.add(frozenset((client[0], server[0])))
        i += 2
    assert len(pairs) == 6
    assert servers
    # the launcher line: mpirun with its host list and slots; the secret is not printed
    (nccl,) = [c for c in cmds if "all_reduce_perf" in c[2]]
    assert nccl[0:2] == ["node1", "launcher"]
    assert "HF_TOKEN=*** NCCL_DEBUG=INFO mpirun --host 192.0.2.1:8,192.0.2.2:8 -np 16" in nccl[2]
    assert "hunter2" not in out


def test_dry_run_prints_the_plan_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_contact: None
) -> None:
    files = plan_files(tmp_path)
    planned = run_cli(capsys, ["plan", *files])
    out = tmp_path / "runs"
    dry = run_cli(capsys, ["run", "--dry-run", *files, "--output-dir", str(out)])
    assert dry == planned
    full = run_cli(capsys, ["plan", "--full", *files])
    assert run_cli(capsys, ["run", "--dry-run", "--full", *files, "--output-dir", str(out)]) == full
    assert full != planned
    assert not out.exists()  # no run directory


def test_plan_prints_a_summary_per_step_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_contact: None
) -> None:
    files = plan_files(tmp_path, max_parallel=3, max_network_parallel=1)
    out = run_cli(capsys, ["plan", *files])
    lines = out.splitlines()
    assert lines[0].endswith("on 4 node(s) of lab: 11 runs in 5 rounds, about 2 min")
    assert not [ln for ln in lines if ln.strip().startswith("repeat ")]  # no round listing
    assert [ln for ln in lines if ln.startswith("step ")] == [
        "step disk (fio): about 3 s a run (runtime 2 s)",
        "step net (iperf3): about 4 s a run (-t 3 s)",
        "step nccl (nccl-tests): about 60 s a run "
        "(no estimate from its options: its timeout, at most 60 s)",
    ]
    # per step: runs, rounds and its share of the estimate (6 + 24 + 60 s = the header's)
    assert [ln.strip() for ln in lines if " in " in ln and ln.startswith("  ")] == [
        "4 runs in 1 round, about 6 s",
        "6 runs in 3 rounds, about 24 s",
        "1 run in 1 round, about 60 s",
    ]
    assert [ln.strip() for ln in lines if ln.strip().startswith("each round")] == [
        "each round: 4 run(s), 3 at once",
        "each round: 2 run(s), 1 at once",
        "each round: 1 run(s) at once",
    ]
    # one example run per step, as --full prints that run first
    full = run_cli(capsys, ["plan", "--full", *files]).splitlines()
    examples = [ln for ln in lines if ln.startswith("    ")]
    assert len(examples) == 2 + 2 + 1  # fio: setup and client; iperf3: server and client
    for ex in examples:
        assert ex in full
    assert examples[2].split()[:2] == ["node4", "server"]
    assert examples[3].split()[:2] == ["node1", "client"]
    assert "HF_TOKEN=***" in examples[4]
    assert "hunter2" not in out
    assert lines[-1] == "(aibench plan --full lists every run of every round)"


def test_summary_counts_are_those_of_the_full_listing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_contact: None
) -> None:
    """The summary counts runs without making them; --full makes them: the same numbers,
    with repeats and an odd number of nodes (one sits out each round of pairs)."""
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "schema_version: 1\nname: count\nsteps:\n"
        "  - {name: net, tool: iperf3, placement: pairs, repeats: 2,"
        " options: {duration: 1}}\n"
        "  - {name: ring, tool: iperf3, placement: ring, options: {duration: 1}}\n"
    )
    inv = tmp_path / "inventory.yaml"
    inv.write_text(
        "name: odd\ndefaults: {executor: ssh}\n"
        f"ssh: {{user: bench, known_hosts: {tmp_path / 'kh'}}}\n"
        "nodes:\n  - name: h[1-7]\n    address_pattern: '192.0.2.{n}'\n"
    )
    files = ["--suite", str(suite), "--inventory", str(inv)]
    summary = run_cli(capsys, ["plan", *files]).splitlines()
    full = run_cli(capsys, ["plan", "--full", *files]).splitlines()
    assert summary[0] == full[0]
    # 2 x 21 pairs + 7 ring pairs, each round 2 s
    assert summary[0].endswith("49 runs in 17 rounds, about 34 s")
    assert "  42 runs in 14 rounds (2 repeats of 7), about 28 s" in summary
    assert sum(1 for ln in full if " client " in ln) == 49
    assert sum(1 for ln in full if ln.strip().startswith("repeat ")) == 17


def test_a_plan_of_all_pairs_is_counted_without_making_its_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """All pairs of 400 nodes are 79800 runs in 399 rounds: the summary and the
    estimate come from the two rounds in which every node runs, not from 79800 calls
    of the runner; the orchestrator then makes one round at a time."""
    from aibench.inventory import Inventory, Limits, Node
    from aibench.plan import build_plan, plan_lines
    from aibench.runners import RUNNERS
    from aibench.suite import load_suite

    path = tmp_path / "pairs.yaml"
    path.write_text(
        "schema_version: 1\nname: pairs\nsteps:\n"
        "  - {name: net, tool: iperf3, placement: pairs, options: {duration: 5}}\n"
    )
    nodes = tuple(Node(f"n{i:04d}", executor="ssh") for i in range(400))
    inventory = Inventory("scale", nodes, limits=Limits(max_parallel=64))
    runner = RUNNERS.get("iperf3")
    calls = 0
    real = runner.invocations

    def counting(*a: object, **k: object) -> object:
        nonlocal calls
        calls += 1
        return real(*a, **k)  # type: ignore[arg-type]

    plan = build_plan(load_suite(str(path)), inventory)
    monkeypatch.setattr(runner, "invocations", counting)
    text = list(plan_lines(plan))
    assert plan.run_count() == 400 * 399 // 2
    assert plan.round_count() == 399
    # 200 pairs a round at 64 at once: 4 waves of 6 s, 399 times
    assert text[0].endswith("79800 runs in 399 rounds, about 2.7 h")
    assert calls <= 2 * 200 + 1, calls
    first = next(plan.iter_rounds())
    assert len(first.invocations) == 200
    assert calls <= 3 * 200 + 1


def test_plan_shows_the_concurrency_limits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_contact: None
) -> None:
    files = plan_files(tmp_path, max_parallel=3, max_network_parallel=1)
    lines = run_cli(capsys, ["plan", "--full", *files]).splitlines()
    rounds = [ln.strip() for ln in lines if ln.strip().startswith("repeat ")]
    assert rounds == [
        "repeat 1 round 1: 4 run(s), 3 at once",  # max_parallel
        "repeat 1 round 1: 2 run(s), 1 at once",  # max_network_parallel
        "repeat 1 round 2: 2 run(s), 1 at once",
        "repeat 1 round 3: 2 run(s), 1 at once",
        "repeat 1 round 1: 1 run(s) at once",
    ]
    # fio in two waves (2 x 3 s), each iperf3 round in two (2 x 4 s), nccl-tests 60 s: 90 s
    assert lines[0].endswith("11 runs in 5 rounds, about 2 min")


# ------------------------------------------------------------------ planning at scale


class CountingNodes(tuple):  # type: ignore[type-arg]
    """A node list that counts how many of its entries are visited."""

    visits = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        for n in super().__iter__():
            CountingNodes.visits += 1
            yield n


def _pairs_plan_visits(tmp: Path, n: int) -> tuple[int, int]:
    """(node-list visits, planned runs) of an all-pairs iperf3 step over n nodes."""
    from aibench.inventory import Inventory, Node
    from aibench.plan import build_plan
    from aibench.suite import load_suite

    path = tmp / "pairs.yaml"
    path.write_text(
        "schema_version: 1\nname: pairs\nsteps:\n  - {name: net, tool: iperf3, placement: pairs}\n"
    )
    suite = load_suite(str(path))
    nodes = CountingNodes(Node(f"n{i:04d}", executor="ssh") for i in range(n))
    inventory = Inventory("scale", nodes)
    CountingNodes.visits = 0
    planned = len(build_plan(suite, inventory).invocations)
    return CountingNodes.visits, planned


def test_planning_does_not_walk_the_node_list_per_planned_run(tmp_path: Path) -> None:
    """All pairs of N nodes are N(N-1)/2 runs; looking up each run's nodes by walking the
    node list made planning O(N^3). The visits per planned run must not grow with N."""
    small_visits, small_runs = _pairs_plan_visits(tmp_path, 16)
    big_visits, big_runs = _pairs_plan_visits(tmp_path, 64)
    assert big_runs == 64 * 63 // 2
    assert big_visits / big_runs <= small_visits / small_runs + 0.01, (small_visits, big_visits)


SIZE_BOUND = """\
schema_version: 1
name: size-bound
steps:
  - name: small-reads
    tool: fio
    repeats: 20
    options: {rw: read, bs: 1M, size: 16M, runtime: null}
  - name: small-random
    tool: fio
    options: {rw: randread, bs: 4k, size: 64M, runtime: null}
"""


def test_a_size_bound_fio_job_is_estimated_from_its_size_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_contact: None
) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SIZE_BOUND)
    out = run_cli(capsys, ["plan", "--suite", str(suite)])
    header = out.splitlines()[0]
    # 20 x (16 MiB at 500 MiB/s + 1 s) + (64 MiB at 50 MiB/s + 1 s): about 23 s, not 21 min
    assert header.endswith("21 runs in 21 rounds, about 23 s"), header
    assert "step small-reads (fio): about 1 s a run (size 16M x 1 job(s) at an assumed " in out
    assert "500 MiB/s)" in out
    assert "(size 64M x 1 job(s) at an assumed 50 MiB/s)" in out


def test_a_closed_pipe_ends_the_plan_quietly(tmp_path: Path) -> None:
    """``aibench plan ... | head -1``: no BrokenPipeError traceback, the status of a
    command killed by SIGPIPE (141), as command-line tools end. The plan is all pairs of
    64 nodes, far more than a pipe holds, so the writer meets the closed pipe."""
    import subprocess
    import sys

    files = plan_files(tmp_path)
    inv = Path(files[files.index("--inventory") + 1])
    inv.write_text(inv.read_text().replace("node[1-4]", "node[1-64]"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "aibench", "plan", "--full", *files],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    proc.stdout.readline()
    proc.stdout.close()  # the reader goes away after one line, like head -1
    _, err = proc.communicate(timeout=120)
    assert err.decode() == ""
    assert proc.returncode == 141
