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
