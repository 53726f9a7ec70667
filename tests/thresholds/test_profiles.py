"""Built-in profiles: valid, sourced, consistent with their derivations; spec explain."""

from __future__ import annotations

from pathlib import Path

import pytest

from aibench.cli import main
from aibench.config import builtin_names
from aibench.thresholds import load_spec
from aibench.thresholds.derive import derive

PROFILES = builtin_names("profiles")


def test_the_expected_profiles_exist() -> None:
    assert {
        "default",
        "seed-reference",
        "h100-ndr",
        "h200-ndr",
        "b200",
        "mi300x",
        "ascend-910b",
    } <= set(PROFILES)


@pytest.mark.parametrize("name", PROFILES)
def test_every_check_cites_its_source(name: str) -> None:
    spec = load_spec(name)
    assert spec.description
    assert spec.model.source
    for c in spec.checks:
        assert c.source, f"{name}: check {c.id} has no source"
        assert c.description, f"{name}: check {c.id} has no description"


def test_h100_derivation_matches_its_checks() -> None:
    spec = load_spec("h100-ndr")
    assert spec.hardware is not None
    exp = {e.key: e for e in derive(spec.hardware)}
    assert exp["nccl.all_reduce.ring"].value == pytest.approx(369, abs=0.5)
    assert exp["nccl.all_reduce.nvls"].value == pytest.approx(480, abs=0.5)
    checks = {c.id: c for c in spec.checks}
    assert checks["ib-write-bw-rail"].min == exp["perftest.compute.compute-rail"].value
    assert checks["nccl-all-reduce-fleet"].min == exp["nccl.all_reduce.multinode"].value
    nvme = exp["fio.seq_read.nvme"].value
    assert checks["nvme-seq-read"].min is not None
    assert checks["nvme-seq-read"].min <= nvme


def test_spec_explain_prints_the_derivation(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "explain", "h100-ndr"]) == 0
    out = capsys.readouterr().out
    assert (
        "all_reduce busbw 8×H100-SXM NVLink4 (ring, NVLS off): 450 GB/s line × 0.82 (ring "
        "efficiency" in out
    )
    assert "= 369 GB/s" in out
    assert "ib_write_bw per rail, 8× compute-rail (compute, ib): 400 Gbit/s line × 0.9" in out
    assert "= 360 Gbit/s" in out
    assert "source: >= 460 GB/s at 16 GiB: Azure azurehpc-health-checks" in out


def test_spec_list_and_show(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "list"]) == 0
    out = capsys.readouterr().out
    for name in PROFILES:
        assert name in out
    assert main(["spec", "show", "default"]) == 0
    out = capsys.readouterr().out
    assert (
        "fio-seq-read-bw: fio bw [fio-seq-read] direction=read per node, median: >= 100 MB/s" in out
    )


def test_default_bounds_are_the_documented_floors() -> None:
    checks = {c.id: c for c in load_spec("default").checks}
    assert (checks["fio-seq-read-bw"].min, checks["fio-seq-read-bw"].unit) == (100, "MB/s")
    assert (checks["fio-seq-write-bw"].min, checks["fio-seq-write-bw"].unit) == (50, "MB/s")
    assert (checks["fio-rand-read-iops"].min, checks["fio-rand-read-iops"].unit) == (2000, "IOPS")
    assert checks["fio-rand-write-iops"].min == 1000
    assert (checks["iperf3-tcp-throughput"].min, checks["iperf3-tcp-throughput"].unit) == (
        1,
        "Gbit/s",
    )


def test_every_spec_field_is_documented() -> None:
    from pathlib import Path

    from aibench.thresholds import spec as s

    doc = (Path(__file__).resolve().parents[2] / "docs" / "spec.md").read_text(encoding="utf-8")
    for model in (
        s.SpecModel,
        s.Check,
        s.Select,
        s.Tier,
        s.Waiver,
        s.Outliers,
        s.FactSelect,
        s.Hardware,
        s.NIC,
        s.Drive,
        s.TelemetryRow,
        s.StepWaiver,
    ):
        for name, f in model.model_fields.items():
            assert f"`{f.alias or name}`" in doc, f"{model.__name__}.{name} not in docs/spec.md"
            assert f.description, f"{model.__name__}.{name} has no description"


def test_spec_explain_from_an_inventory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hcas = ", ".join(f"{{name: mlx5_{i}, rate_gbps: 400}}" for i in range(8))
    inv = tmp_path / "cluster.yaml"
    inv.write_text(
        "schema_version: 1\nname: c\ndefaults:\n  executor: ssh\n"
        "  gpus: {model: H100-SXM5-80GB, count: 8}\n"
        f"nodes:\n  - name: gpu[001-003]\n    hcas: [{hcas}]\n"
        "  - name: cpu001\n    gpus: {model: none, count: 0}\n",
        encoding="utf-8",
    )
    assert main(["spec", "explain", "--inventory", str(inv)]) == 0
    out = capsys.readouterr().out
    assert "3 node(s): gpu001, gpu002, gpu003" in out
    assert "all_reduce busbw 8×H100-SXM5-80GB NVLink4 (ring, NVLS off): 450 GB/s" in out
    assert "ib_write_bw per rail, mlx5_7 (compute, ib): 400 Gbit/s line × 0.9" in out
    assert "1 node(s): cpu001" in out
    assert "nothing derived" in out
