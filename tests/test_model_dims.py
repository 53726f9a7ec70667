"""FrozenDims reads as the dict it holds: sorted by name, and nothing can change it."""

from __future__ import annotations

import pytest

from aibench.model import FrozenDims


def test_reads_are_the_sorted_dict_and_cannot_change_it() -> None:
    d = FrozenDims({"size_bytes": 1024, "direction": "read", "busy": True})
    assert list(d.keys()) == ["busy", "direction", "size_bytes"]
    assert list(d.items()) == [("busy", True), ("direction", "read"), ("size_bytes", 1024)]
    assert list(d.values()) == [True, "read", 1024]
    assert "direction" in d
    assert "rack" not in d
    assert d.get("direction") == "read"
    assert d.get("rack") is None
    assert d.get("rack", 0) == 0
    assert dict(d) == {"busy": True, "direction": "read", "size_bytes": 1024}
    for view in (d.keys(), d.items(), d.values()):
        assert not hasattr(view, "__setitem__")
        assert not hasattr(view, "pop")
    with pytest.raises(TypeError):
        d["rack"] = "r1"  # type: ignore[index]
    assert d == FrozenDims({"direction": "read", "busy": True, "size_bytes": 1024})
    assert hash(d) == hash(FrozenDims(dict(d)))


def test_records_read_one_at_a_time_keep_no_table_of_node_tuples() -> None:
    """``Shared(tuples=False)`` (steps read from disk a pass at a time) keeps no node tuple
    but the last: a step's measurements share its tuple, and the next pair gets its own."""
    from aibench.model import Shared, StepResult

    def line(a: str, b: str) -> dict[str, object]:
        m = {"tool": "iperf3", "metric": "throughput", "value": 1.0, "unit": "bit/s",
             "dims": {"side": "sender"}, "nodes": [a, b]}  # fmt: skip
        return {"step_id": f"s/{a}--{b}/r0", "step": "s", "tool": "iperf3", "status": "ok",
                "nodes": [a, b], "measurements": [m, dict(m)]}  # fmt: skip

    sh = Shared(tuples=False)
    one = StepResult.from_dict(line("n1", "n2"), sh)
    two = StepResult.from_dict(line("n1", "n3"), sh)
    assert one.nodes is one.measurements[0].nodes is one.measurements[1].nodes
    assert two.nodes == ("n1", "n3")
    assert two.measurements[0].dims is one.measurements[0].dims  # dims are still shared
    assert sh._nodes == {}
    kept = Shared()
    assert StepResult.from_dict(line("n1", "n2"), kept).nodes in kept._nodes
