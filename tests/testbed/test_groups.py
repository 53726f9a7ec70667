"""Side by side (``make test``: pytest-xdist with ``--dist loadgroup``) every test has an
``xdist_group``: the tests of one test bed share one worker, which builds the bed once; the
tests of a module share one worker (they may reuse a port or a file name one after the
other); two beds have names, subnets and locks of their own, so they stand at once."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tests.conftest import (
    BED_GROUPS,
    LONGEST_FIRST,
    ROOT,
    longest_first,
    marked_group,
    xdist_group_of,
)
from tests.testbed.bed import lock_path
from tests.testbed.gluster import GL
from tests.testbed.net import LAYOUTS


def _item(nodeid: str, *fixtures: str) -> Any:
    return SimpleNamespace(nodeid=nodeid, fixturenames=list(fixtures))


def test_the_tests_of_a_bed_share_a_group_whatever_their_module() -> None:
    a = _item("tests/multinode/test_x.py::test_a", "tmp_path", "testbed_hosts")
    b = _item("tests/runners/test_y.py::test_b[1]", "testbed_slurm", "testbed_hosts")
    c = _item("tests/scale/test_faults.py::test_c", "testbed_big")
    assert xdist_group_of(a) == xdist_group_of(b) == "bed-abt"
    assert xdist_group_of(c) == "bed-abx"


def test_any_other_test_runs_with_its_module() -> None:
    one = _item("tests/bmc/test_ipmi.py::test_a", "tmp_path")
    two = _item("tests/bmc/test_ipmi.py::test_b[x-y]")
    assert xdist_group_of(one) == xdist_group_of(two) == "tests/bmc/test_ipmi.py"


def test_a_test_of_two_beds_is_refused_at_collection() -> None:
    both = _item("tests/t.py::test_both", "testbed_hosts", "testbed_big")
    with pytest.raises(pytest.UsageError, match="two test beds"):
        xdist_group_of(both)


def test_every_bed_has_a_lock_prefix_and_subnet_of_its_own() -> None:
    assert len({lock_path(x) for x in LAYOUTS}) == len(LAYOUTS)
    beds = (*LAYOUTS, GL)  # and the beds with fixtures of their own
    for part in ("prefix", "veth", "bridge", "subnet"):
        assert len({getattr(x, part) for x in beds}) == len(beds), part
    # the session beds: 4 hosts, 64 hosts, serving, soak, the Kubernetes cluster
    assert len(set(BED_GROUPS.values())) == 5


def test_the_markers_of_this_module_show_its_group(request: pytest.FixtureRequest) -> None:
    [mark] = list(request.node.iter_markers("xdist_group"))
    assert mark.args == ("tests/testbed/test_groups.py",)


def test_the_longest_groups_are_handed_out_first_and_the_rest_keep_their_order() -> None:
    groups = ["tests/a.py", "bed-abs", "tests/a.py", "bed-sk", "tests/b.py", "bed-abs"]
    order = longest_first(groups)
    assert [groups[i] for i in order] == [
        "bed-sk", "bed-abs", "bed-abs", "tests/a.py", "tests/a.py", "tests/b.py",
    ]  # fmt: skip
    assert order[1:3] == [1, 5]  # a group's own tests in their order


def test_every_group_listed_longest_first_exists() -> None:
    """A renamed module or bed would drop out of the list without a word."""
    for group in LONGEST_FIRST:
        assert group in BED_GROUPS.values() or (ROOT / group).is_file(), group
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)


def test_this_run_was_collected_longest_first(request: pytest.FixtureRequest) -> None:
    """The session's own items: every test of a listed group before any test of another."""
    groups = [marked_group(item) for item in request.session.items]
    ranks = [LONGEST_FIRST.index(g) if g in LONGEST_FIRST else len(LONGEST_FIRST) for g in groups]
    assert ranks == sorted(ranks)
