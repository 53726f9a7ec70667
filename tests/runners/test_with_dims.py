"""with_dims: the one way a runner adds what it knows of an invocation (the endpoint a
load went to) to the measurements its parser read; facts pass as they are."""

from __future__ import annotations

from aibench.model import Fact, Measurement
from aibench.runners.base import with_dims


def test_measurements_gain_the_dims_and_keep_the_rest() -> None:
    m = Measurement("s5cmd", "throughput", 1.5, "MB/s", {"op": "put"}, nodes=("n1",), step="s3")
    f = Fact("s5cmd", "version", "2.2.2")
    got, fact = with_dims([m, f], endpoint="rgw")
    assert dict(got.dims) == {"op": "put", "endpoint": "rgw"}
    assert (got.tool, got.metric, got.value, got.unit, got.nodes, got.step) == (
        "s5cmd", "throughput", 1.5, "MB/s", ("n1",), "s3",
    )  # fmt: skip
    assert fact is f
