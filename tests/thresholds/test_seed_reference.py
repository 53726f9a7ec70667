"""The seed-reference profile's checks, PASS and FAIL with their values.

* NVMe read >= 5000 MB/s through ``aibench check RUN_DIR --spec seed-reference``: on the
  real fio 3.33 output committed in tests/fixtures/fio (a 4 KiB O_DIRECT sequential read
  on a virtual disk, 299344 KiB/s = 306.5 MB/s: FAIL), and on a table value of a fast
  NVMe (6818 MiB/s = 7149 MB/s, the figure of a 1 MiB sequential read of a Gen4 NVMe;
  PASS). The table run is made here, in memory, and says so.
* The preflight facts (driver, swappiness, memory, core and thread floors per role, the
  guide's §3.1 numbers) as table cases: MemTotal 62.5 GiB (a 64 GiB node) passes the
  training floor of 60.8 GiB (64 GiB x 0.95), 47 GiB (48 GiB installed) fails it; 31.2 GiB
  passes the inference floor of 30.4 GiB, 23.54 GiB (this 24 GiB test machine's MemTotal)
  fails it. The values are table values, not captures. The same checks on real captures
  run end to end in tests/preflight/test_profiles_on_fakebin.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from aibench.cli import main
from aibench.model import Fact, Measurement, Outcome, StepResult, StepStatus, attach
from aibench.parsers import parse
from aibench.store import save_run
from aibench.thresholds import judge, load_spec
from tests.thresholds.helpers import NOW, m, run, step

FIX = Path(__file__).resolve().parent.parent / "fixtures"
SEED = load_spec("seed-reference")


def _fio_step(node: str, fixture: str) -> StepResult:
    records = parse("fio", (FIX / "fio" / fixture).read_text(encoding="utf-8"))
    ms = attach(
        [r for r in records if isinstance(r, Measurement)],
        nodes=(node,),
        step="fio-seq-read",
        repeat=0,
    )
    return StepResult(
        f"fio-seq-read/{node}/r0", "fio-seq-read", "fio", (node,), 0, StepStatus.OK, measurements=ms
    )


def _check(tmp_path: Path, steps: list[StepResult], nodes: tuple[str, ...]) -> tuple[int, str]:
    d = tmp_path / "run"
    d.mkdir()
    save_run(run(steps, nodes).replace(spec="seed-reference"), d)
    code = main(["check", str(d), "--spec", "seed-reference", "--all"])
    return code, d.name


def test_nvme_read_of_a_real_fio_output_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = _check(tmp_path, [_fio_step("n1", "v3.33_libaio_read_direct1.json")], ("n1",))
    out = capsys.readouterr().out
    assert code == 1
    line = next(ln for ln in out.splitlines() if ln.startswith("FAIL    nvme-system-read "))
    assert "306.5 MB/s" in line
    assert "is below 5000" in line
    assert "PASS    nvme-system-read.coverage" in out


def test_nvme_read_of_a_fast_drive_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kib = 6818 * 1024  # 6818 MiB/s, a table value (see the module docstring)
    steps = [
        step("fio-seq-read", "fio", ("n1",), [m("fio", "bw", kib, "KiB/s", (), direction="read")]),
        _fio_step("n2", "v3.33_libaio_read_direct1.json"),
    ]
    code, _ = _check(tmp_path, steps, ("n1", "n2"))
    out = capsys.readouterr().out
    assert code == 1  # n2 (the real slow output) still fails
    lines = [ln for ln in out.splitlines() if ln.split()[1:2] == ["nvme-system-read"]]
    assert any(ln.startswith("PASS") and " n1 " in ln and "7149 MB/s" in ln for ln in lines)
    assert any(ln.startswith("FAIL") and " n2 " in ln for ln in lines)


def _facts(node: str, **values: object) -> list[Fact]:
    names = {
        "driver": ("nvidia-smi", "driver_version", None),
        "swappiness": ("sysctl", "vm.swappiness", None),
        "memory": ("memory", "total", "GiB"),
        "cores": ("cpu", "cores", "count"),
        "threads": ("cpu", "threads", "count"),
    }
    return [
        Fact(names[k][0], names[k][1], v, names[k][2], nodes=(node,))  # type: ignore[arg-type]
        for k, v in values.items()
    ]


# (role, facts, check, outcome, observed text)
CASES = [
    ("training", {"driver": "550.54.15"}, "gpu-driver", Outcome.PASS, "550.54.15"),
    ("training", {"driver": "535.161.08"}, "gpu-driver", Outcome.FAIL, "535.161.08"),
    ("training", {"swappiness": 10}, "swappiness", Outcome.PASS, "10"),
    ("training", {"swappiness": 60}, "swappiness", Outcome.FAIL, "60"),
    ("training", {"memory": 62.5}, "training-memory", Outcome.PASS, "62.5"),
    ("training", {"memory": 47.0}, "training-memory", Outcome.FAIL, "47.0"),
    ("training", {"cores": 24}, "training-cores", Outcome.PASS, "24"),
    ("training", {"cores": 16}, "training-cores", Outcome.FAIL, "16"),
    ("training", {"threads": 48}, "training-threads", Outcome.PASS, "48"),
    ("training", {"threads": 32}, "training-threads", Outcome.FAIL, "32"),
    ("inference", {"memory": 31.2}, "inference-memory", Outcome.PASS, "31.2"),
    ("inference", {"memory": 23.54}, "inference-memory", Outcome.FAIL, "23.54"),
    ("inference", {"cores": 16}, "inference-cores", Outcome.PASS, "16"),
    ("inference", {"cores": 8}, "inference-cores", Outcome.FAIL, "8"),
    ("inference", {"threads": 32}, "inference-threads", Outcome.PASS, "32"),
    ("inference", {"threads": 16}, "inference-threads", Outcome.FAIL, "16"),
]


@pytest.mark.parametrize(("role", "values", "check", "outcome", "shown"), CASES)
def test_seed_reference_fact_checks(
    role: str, values: dict[str, object], check: str, outcome: Outcome, shown: str
) -> None:
    other = "inference" if role == "training" else "training"
    facts = _facts("a", **values) + _facts("b", cores=128, memory=2015.0)
    r = run(
        [
            step("preflight", "preflight", ("a",), facts=facts[: len(values)]),
            step("preflight", "preflight", ("b",), facts=facts[len(values) :]),
        ],
        ("a", "b"),
        labels={"a": {"role": role}, "b": {"role": other}},
    )
    got = {(v.check, v.subject): v for v in judge(SEED, r, now=NOW)}
    v = got[(check, ("a",))]
    assert v.outcome is outcome, v
    assert v.observed_text == shown
    if outcome is Outcome.FAIL:
        assert v.culprits == ("a",)


def test_h100_profile_fails_a_gpu_with_an_uncorrectable_sram_error() -> None:
    h100 = load_spec("h100-ndr")
    facts = [
        Fact("nvidia-smi", "ecc_errors", n, "count", {"gpu": g, "scope": s, "counter": c}, ("a",))
        for g in range(8)
        for s in ("volatile", "aggregate")
        for c, n in (
            ("sram_uncorrectable_parity", 0),
            ("sram_uncorrectable_sec_ded", 2 if (g, s) == (5, "volatile") else 0),
            ("dram_uncorrectable", 0),
        )
    ]
    r = run([step("preflight", "preflight", ("a",), facts=facts)], ("a",))
    (v,) = [v for v in judge(h100, r, now=NOW) if v.check == "gpu-sram-uncorrectable"]
    assert v.outcome is Outcome.FAIL
    assert "counter=sram_uncorrectable_sec_ded,gpu=5,scope=volatile: 2" in v.reason
    assert v.samples == 32  # SRAM counters only: DRAM errors go to row remapping


# the sections of the cluster guide that state checkable requirements (its digest's rows)
GUIDE_SECTIONS = {"3.1", "3.2", "3.3", "4.1", "4.2", "7.2"}


def test_every_check_cites_the_guides_section(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "explain", "seed-reference"]) == 0
    lines = capsys.readouterr().out.splitlines()
    ids = [c.id for c in SEED.checks]
    for cid in ids:
        (i,) = [k for k, ln in enumerate(lines) if ln.startswith(f"  {cid}: ")]
        source = lines[i + 1].strip()
        assert source.startswith("source: guide §"), (cid, source)
        section = source.removeprefix("source: guide §").split(":")[0]
        assert section in GUIDE_SECTIONS, (cid, section)
    # every checkable row of the guide has a check: §3.1 nodes and disk, §3.2 networks,
    # §3.3 (GPU side), §4.1 software, §4.2 shared file system, §7.2 ECC
    assert {
        "training-memory", "training-cores", "training-threads",
        "inference-memory", "inference-cores", "inference-threads",
        "system-disk-nvme", "system-disk-size", "nvme-system-read",
        "compute-fabric-bw", "hca-port-rate", "nvlink-in-node", "storage-network-bw",
        "management-network-tcp", "gpu-no-thermal-slowdown", "os-release", "cpu-governor",
        "swappiness", "gpu-driver", "gpu-persistence", "docker", "nvidia-container-toolkit",
        "gpu-ecc", "shared-read-aggregate", "shared-write-aggregate", "shared-read-client",
        "shared-metadata-create", "shared-checkpoint-write",
        "tool-fio", "tool-iperf3",  # the acceptance preflight: the measuring tools are there
    } == set(ids)  # fmt: skip


def test_the_storage_numbers_are_said_not_to_be_the_guides() -> None:
    storage = [c for c in SEED.checks if c.source.startswith("guide §4.2")]
    assert len(storage) == 5
    for c in storage:
        assert "(no number given)" in c.source, c.id
        assert "aibench's example" in c.source, c.id


def test_no_placeholder_is_left() -> None:
    for c in SEED.checks:
        assert "UNSOURCED" not in c.source
        assert "placeholder" not in c.source.lower()


@pytest.mark.parametrize(
    ("case", "size", "nvme"),
    [
        # real capture: / on a 275 GB virtio disk (no transport reported)
        ("debian12-vm-virtio-root-on-whole-disk.json", Outcome.FAIL, Outcome.FAIL),
        # constructed: / on LVM on md RAID1 over a 960 GB and a 1.92 TB NVMe disk
        ("constructed_nvme_lvm_root_and_md_mirror.json", Outcome.FAIL, Outcome.PASS),
    ],
)
def test_system_disk_checks_on_lsblk_trees(case: str, size: Outcome, nvme: Outcome) -> None:
    records = parse("lsblk-tree", (FIX / "lsblk-tree" / case).read_text(encoding="utf-8"))
    facts = [
        Fact(f.source, f.name, f.value, f.unit, f.dims, ("a",), f.reason)
        for f in records
        if isinstance(f, Fact)
    ]
    r = run([step("preflight", "preflight", ("a",), facts=facts)], ("a",))
    got = {v.check: v for v in judge(SEED, r, now=NOW) if v.subject == ("a",)}
    assert got["system-disk-size"].outcome is size
    assert got["system-disk-nvme"].outcome is nvme
    if case.startswith("constructed"):
        # the mirror's smaller disk is the one named
        assert "device=nvme0n1: 960197124096" in got["system-disk-size"].reason
