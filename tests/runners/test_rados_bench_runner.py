"""The rados-bench runner's plan (argv, options refused before anything runs) and its
collect on real captures (tests/fixtures/rados-bench)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from aibench.errors import ToolFailure
from aibench.inventory import Node
from aibench.runners.base import Output, Slot
from aibench.runners.rados_bench import RUNNER, RadosBenchOptions

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "rados-bench"


def _plan(**options: object) -> tuple[str, ...]:
    o = RadosBenchOptions.model_validate({"pool": "bench", **options})
    nodes = [
        Node("n1", "10.0.0.1"),
        Node("n2", "10.0.0.2", facts={"tool_dirs": {"rados-bench": "/opt/ceph/bin"}}),
    ]
    invs = RUNNER.invocations("rb", o, nodes, Slot(repeat=1))
    assert [i.nodes for i in invs] == [("n1",), ("n2",)]
    assert invs[1].client.argv[4] == "/opt/ceph/bin/rados"
    return invs[0].client.argv


def test_argv_passes_every_value_as_an_argument_of_the_fixed_driver() -> None:
    argv = _plan(seconds=5, concurrency=4, block_size="1M", max_objects=100,
                 conf="/etc/ceph/ceph.conf", client_id="bench", keyring="/etc/ceph/k")  # fmt: skip
    assert argv[:4] == ("sh", "-c", argv[2], "aibench-rados-bench")
    assert argv[4:] == (
        "rados", "bench", "5", "aibench-rb-n1-r1", "write,seq,rand", "-b", "1M",
        "--max-objects", "100", "--", "-c", "/etc/ceph/ceph.conf", "--id", "bench",
        "--keyring", "/etc/ceph/k", "-t", "4",
    )  # fmt: skip


@pytest.mark.parametrize(
    "bad",
    [
        {"modes": ["seq"]},  # nothing written to read
        {"modes": ["write", "seq", "seq"]},
        {"pool": "-p"},
        {"pool": "a b"},
        {"block_size": "1 M"},
        {"conf": "ceph.conf"},
        {"keyring": "/k; rm -rf /"},
        {"bogus": 1},
    ],
)
def test_bad_options_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        RadosBenchOptions.model_validate({"pool": "bench", **bad})


def _inv():  # type: ignore[no-untyped-def]
    o = RadosBenchOptions.model_validate({"pool": "bench"})
    return RUNNER.invocations("rb", o, [Node("n1", "10.0.0.1")], Slot())[0]


def test_collect_adds_the_pool_to_every_record(tmp_path: Path) -> None:
    text = (FIX / "bed-write-seq-rand.out").read_text()
    records = RUNNER.collect(_inv(), Output(text, "", 0, tmp_path))
    assert {r.dims["mode"] for r in records} == {"write", "seq", "rand"}
    assert {r.dims["pool"] for r in records} == {"bench"}


def test_collect_fails_a_run_that_exits_non_zero_keeping_what_it_measured(tmp_path: Path) -> None:
    text = (FIX / "bed-write-seq-rand.out").read_text()
    with pytest.raises(ToolFailure) as e:
        RUNNER.collect(_inv(), Output(text, "", 1, tmp_path))
    assert {r.dims["pool"] for r in e.value.partial} == {"bench"}  # type: ignore[attr-defined]


def test_collect_of_a_missing_pool_names_it(tmp_path: Path) -> None:
    text = (FIX / "bed-missing-pool.out").read_text()
    with pytest.raises(ToolFailure, match="error opening pool nosuchpool"):
        RUNNER.collect(_inv(), Output(text, "", 1, tmp_path))
