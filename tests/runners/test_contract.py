"""The four runners meet the runner contract: registered by name, strict options, pure plans."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from aibench.runners import RUNNERS
from aibench.runners.base import Slot
from tests.runners.helpers import node, plan

MINIMAL = {
    "nccl-tests": {},
    "perftest": {},
    "mlperf-inference": {"command": ["h"], "scenario": "Offline"},
    "mlperf-training": {"benchmark": "llama31_8b", "command": ["t"]},
}
PLACEMENT = {
    "nccl-tests": "each",
    "perftest": "pairs",
    "mlperf-inference": "each",
    "mlperf-training": "all",
}


def test_registered_by_name() -> None:
    assert set(MINIMAL) <= set(RUNNERS.names())
    for name in MINIMAL:
        r = RUNNERS.get(name)
        assert r.name == name
        assert r.tool == name
        assert r.default_placement == PLACEMENT[name]
        assert callable(getattr(r, "collect", None))


@pytest.mark.parametrize("name", sorted(MINIMAL))
def test_options_forbid_unknown_keys_and_are_frozen(name: str) -> None:
    options = RUNNERS.get(name).Options
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        options.model_validate({**MINIMAL[name], "no_such_option": 1})
    o = options.model_validate(MINIMAL[name])
    with pytest.raises(ValidationError):
        o.timeout = 1  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", sorted(MINIMAL))
def test_plans_are_pure_and_repeatable(name: str) -> None:
    group = [node("a", "10.0.0.1", gpus=2), node("b", "10.0.0.2", gpus=2)]
    group = group if name in ("perftest", "mlperf-training") else group[:1]
    first = plan(name, MINIMAL[name], group, Slot(index=1, repeat=2))
    again = plan(name, MINIMAL[name], group, Slot(index=1, repeat=2))
    assert first == again
    for inv in first:
        assert inv.tool == name
        assert inv.repeat == 2
        assert all(isinstance(a, str) for a in inv.client.argv)
        assert inv.step_id.endswith("/r2")
