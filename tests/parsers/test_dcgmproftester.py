"""dcgmproftester worker lines as Kubernetes pod logs show them: exponent gflops."""

from __future__ import annotations

import re

import pytest

from aibench.parsers import dcgmproftester, detect
from tests.golden import FIXTURES

D = FIXTURES / "dcgmproftester"


@pytest.mark.parametrize(
    "name",
    ["k8s-dcgm3.3.5-t1004-exponent-gflops.txt", "k8s-dcgm3.3.5-t1004-exponent-gflops-elided.txt"],
)
def test_exponent_gflops_and_the_spaced_field_id(name: str) -> None:
    text = (D / name).read_text()
    printed = re.findall(r"^Worker 0:0 \[1004\]: .*\(([0-9.e+]+) gflops\)\.$", text, re.M)
    assert detect(text) == ["dcgmproftester"]
    (rec,) = [r for r in dcgmproftester.parse(text) if r.metric == "gflops"]
    assert (rec.value, rec.unit) == (float(printed[-1]), "Gflop/s")  # the last value, 1.89e+05
    assert dict(rec.dims) == {"gpu": 0, "worker": 0, "field_id": 1004,
                              "field": "TensorEngineActive"}  # fmt: skip
    samples = [r for r in dcgmproftester.parse(text) if r.metric == "samples"]
    assert samples[0].value == len(printed)
