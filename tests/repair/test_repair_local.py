"""The repair loop on this machine: real runs of a tiny suite over four local nodes.

Node n3's data directory is a plain file at first, so its fio step fails for real
(``mkdir -p`` refuses); the repair removes the file. The first run fails, ``aibench
retest`` plans n3's fio step alone and passes, ``aibench accept`` composes one record that
passes, shows the repair, verifies, and re-judges to the same verdicts from a copy with
every input gone. Pair planning and hardware identity are tested on the first run's
record with a verdict or a fact changed (said so in each test).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from aibench.model import Fact, Outcome, Run, Verdict
from aibench.repair import identity, planning
from aibench.store import load_run
from tests.aibench_cli import aibench

pytestmark = pytest.mark.skipif(
    not all(Path(p).exists() for p in ("/usr/bin/fio", "/usr/bin/iperf3")),
    reason="needs fio and iperf3 (make system-packages)",
)

SUITE = """\
schema_version: 1
name: tiny
settings: {{workdir: {root}/scratch, base_port: 15731}}
steps:
  - name: preflight
    tool: preflight
    options: {{gpu: false, infiniband: false, dcgm_level: 0, kernel_log: false,
               amd: false, ascend: false}}
  - name: fio-read
    tool: fio
    options: {{rw: read, bs: 64k, size: 4M, runtime: 1, iodepth: 2, direct: false,
               ioengine: psync, extra: [--invalidate=0, --pre_read=1]}}  # from the cache
  - name: iperf3-tcp
    tool: iperf3
    placement: pairs
    options: {{duration: 1, streams: 1, bandwidth: 500M}}
"""
SPEC = """\
schema_version: 1
name: tiny
checks:
  - id: fio-read-bw
    select: {{tool: fio, metric: bw, step: fio-read, dims: {{direction: read}}}}
    unit: MB/s
    min: {fio_min}
    require: every_node
  - id: iperf3-tcp
    select: {{tool: iperf3, metric: throughput, step: iperf3-tcp, dims: {{side: receiver}}}}
    scope: pair
    unit: Gbit/s
    min: 0.1
    require: every_pair
"""
NODES = ("n1", "n2", "n3", "n4")
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@dataclasses.dataclass
class Loop:
    root: Path
    runs: Path
    first: Path
    retest: Path
    retest_out: str


def write_inputs(root: Path, fio_min: float = 1) -> tuple[Path, Path, Path]:
    suite, spec, inv = root / "suite.yaml", root / "spec.yaml", root / "inv.yaml"
    suite.write_text(SUITE.format(root=root))
    spec.write_text(SPEC.format(fio_min=fio_min))
    nodes = "".join(
        f"  - {{name: {n}, address: 127.0.0.1, executor: local, data_dirs: [{root}/d/{n}]}}\n"
        for n in NODES
    )
    inv.write_text(f"name: four\nnodes:\n{nodes}")
    return suite, spec, inv


def new_dir(runs: Path, before: set[Path]) -> Path:
    (made,) = set(runs.iterdir()) - before
    return made


@pytest.fixture(scope="module")
def loop(tmp_path_factory: pytest.TempPathFactory) -> Loop:
    root = tmp_path_factory.mktemp("repair")
    suite, spec, inv = write_inputs(root)
    for n in ("n1", "n2", "n4"):
        (root / "d" / n).mkdir(parents=True)
    (root / "d" / "n3").write_text("a file where the data directory should be\n")
    runs = root / "runs"
    res = aibench(
        "run", "--suite", str(suite), "--spec", str(spec), "--inventory", str(inv),
        "--output-dir", str(runs), "--quiet",
    )  # fmt: skip
    assert res.returncode == 1, res.stdout + res.stderr
    (first,) = runs.iterdir()
    (root / "d" / "n3").unlink()  # the repair
    res = aibench("retest", str(first), "--quiet")
    assert res.returncode == 0, res.stdout + res.stderr
    return Loop(root, runs, first, new_dir(runs, {first}), res.stdout)


def test_first_run_fails_on_n3_only(loop: Loop) -> None:
    run = load_run(loop.first)
    failing = {
        (v.check, v.outcome.value, v.subject or v.culprits)
        for v in run.verdicts
        if v.outcome.failing
    }
    assert failing == {
        ("fio-read-bw", "ERROR", ("n3",)),
        ("fio-read-bw.coverage", "FAIL", ("n3",)),
    }


def test_retest_runs_n3s_fio_step_alone_and_records_its_parent(loop: Loop) -> None:
    print(loop.retest_out)
    assert "step fio-read (fio, per node)" in loop.retest_out
    assert "iperf3" not in loop.retest_out.split("retest ")[1].split("\n")[0]
    run = load_run(loop.retest)
    assert [(s.step, s.nodes) for s in run.steps] == [("fio-read", ("n3",))]
    assert run.steps[0].ok
    parent = run.inputs["parent"]
    assert parent["id"] == loop.first.name
    import hashlib

    sha = hashlib.sha256((loop.first / "run.json").read_bytes()).hexdigest()
    assert parent["run_json_sha256"] == sha
    assert run.inputs["retest"]["steps"][0]["groups"][0]["nodes"] == ["n3"]
    assert "PASS: the fleet" in loop.retest_out


def test_dry_run_prints_the_plan_and_runs_nothing(loop: Loop) -> None:
    before = set(loop.runs.iterdir())
    res = aibench("retest", str(loop.first), "--dry-run")
    assert res.returncode == 0, res.stderr
    print(res.stdout)
    lines = res.stdout.splitlines()
    assert lines[0].startswith(f"retest of {loop.first.name} (run.json sha256 ")
    assert "step fio-read (fio, per node)" in lines
    assert any(ln.strip().startswith("n3 ") and "fio-read-bw ERROR on n3" in ln for ln in lines)
    assert set(loop.runs.iterdir()) == before


def test_accept_composes_one_record_that_passes_and_reproduces_alone(
    loop: Loop, tmp_path: Path
) -> None:
    res = aibench(
        "accept", str(loop.first), str(loop.retest), "--output-dir", str(tmp_path / "acc")
    )
    assert res.returncode == 0, res.stdout + res.stderr
    print(res.stdout)
    (record,) = (tmp_path / "acc").iterdir()
    run = load_run(record)
    assert run.outcome is Outcome.PASS
    rows = {(r["check"], tuple(r["subject"])): r for r in run.inputs["accept"]["rows"]}
    n3 = rows[("fio-read-bw", ("n3",))]
    assert [e["outcome"] for e in n3["attempts"]] == ["ERROR", "PASS"]
    assert [e["run"] for e in n3["attempts"]] == [loop.first.name, loop.retest.name]
    assert sorted(p.name for p in (record / "attempts").iterdir()) == sorted(
        [loop.first.name, loop.retest.name]
    )
    fio_n3 = next(s for s in run.steps if s.step == "fio-read" and s.nodes == ("n3",))
    assert fio_n3.stdout_path.startswith(f"attempts/{loop.retest.name}/")
    assert (record / fio_n3.stdout_path).is_file()
    report = (record / "report.html").read_text()
    assert "Repairs" in report
    assert "ERROR on " in report
    assert aibench("verify", str(record)).returncode == 0
    # copied elsewhere, every input gone: the runs, the suite, spec and inventory files
    copy = tmp_path / "elsewhere" / record.name
    shutil.copytree(record, copy)
    shutil.rmtree(tmp_path / "acc")
    stored = {(v.check, v.subject, v.outcome) for v in run.verdicts}
    hidden = loop.root.with_name(loop.root.name + "-hidden")
    loop.root.rename(hidden)
    try:
        assert aibench("verify", str(copy)).returncode == 0
        res = aibench("check", str(copy), "--format", "json")
    finally:
        hidden.rename(loop.root)
    assert res.returncode == 0, res.stdout + res.stderr
    again = {
        (v["check"], tuple(v["subject"]), Outcome(v["outcome"]))
        for v in json.loads(res.stdout)["verdicts"]
    }
    assert again == stored


def test_accept_refuses_another_spec_unless_told(loop: Loop, tmp_path: Path) -> None:
    _, spec, _ = write_inputs(tmp_path, fio_min=0.5)
    res = aibench(
        "run", "--suite", str(loop.root / "suite.yaml"), "--spec", str(spec),
        "--inventory", str(loop.root / "inv.yaml"), "--output-dir", str(tmp_path / "runs"),
        "--quiet", "--steps", "fio-read", "--nodes", "n1",
    )  # fmt: skip
    assert res.returncode in (0, 1), res.stderr
    (other,) = (tmp_path / "runs").iterdir()
    res = aibench("accept", str(loop.first), str(other), "--output-dir", str(tmp_path / "acc"))
    assert res.returncode == 2
    assert "different specs" in res.stderr
    assert "--allow-mixed" in res.stderr
    res = aibench(
        "accept",
        str(loop.first),
        str(other),
        "--allow-mixed",
        "--output-dir",
        str(tmp_path / "acc"),
    )
    (record,) = (tmp_path / "acc").iterdir()
    notes = load_run(record).notes
    assert any(n.startswith("MIXED: the attempts were judged with different specs") for n in notes)


def test_a_waived_node_leaves_the_contract_with_its_reason(loop: Loop, tmp_path: Path) -> None:
    res = aibench(
        "accept", str(loop.first), "--waive", "n3=returned to the vendor, RMA 4411",
        "--output-dir", str(tmp_path),
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    (record,) = tmp_path.iterdir()
    run = load_run(record)
    assert [n["name"] for n in run.inventory["nodes"]] == ["n1", "n2", "n4"]
    assert not any("n3" in s.nodes for s in run.steps)
    assert "WAIVED NODE n3: out of the contract: returned to the vendor, RMA 4411" in run.notes
    assert run.inputs["accept"]["waived"] == {"n3": "returned to the vendor, RMA 4411"}


def test_a_failed_pair_runs_again_with_a_control_partner(loop: Loop) -> None:
    """The first run's record with one pair verdict made a FAIL here (no pair of this
    machine can be slowed alone; the bed test slows one for real)."""
    run = load_run(loop.first)
    pair = next(
        v for v in run.verdicts if v.check == "iperf3-tcp" and set(v.subject) == {"n2", "n4"}
    )
    failed = dataclasses.replace(pair, outcome=Outcome.FAIL, culprits=pair.subject)
    edited = run.replace(verdicts=tuple(failed if v is pair else v for v in run.verdicts))
    plan = _plan(edited)
    print("\n".join(planning.plan_lines(plan, run.id, "0" * 64)))
    ran = next(
        s.nodes for s in run.steps if s.step == "iperf3-tcp" and set(s.nodes) == {"n2", "n4"}
    )
    a, b = ran
    groups = list(plan.steps["iperf3-tcp"].groups)
    assert plan.control == "n1"  # n3 is named alone by the fio verdicts
    assert groups == [ran, (a, "n1"), ("n1", b)]
    assert list(plan.steps["fio-read"].groups) == [("n3",)]


def test_a_changed_serial_repeats_the_nodes_whole_per_node_suite(loop: Loop) -> None:
    """The first run's facts with n2's GPU read from a real nvidia-smi -q capture, then from
    the same capture with its serial number edited (a GPU swapped)."""
    from aibench.parsers.nvidia_smi import parse_q

    capture = (FIXTURES / "nvidia-smi-q" / "h100-mig-590.48.01-load.txt").read_text()
    swapped = capture.replace(": 0000000000000\n", ": 1654922004213\n", 1)
    assert swapped != capture
    run = load_run(loop.first)
    facts = [f for s in run.steps for f in s.facts]

    def on_n2(text: str) -> list[Fact]:
        return [dataclasses.replace(f, nodes=("n2",)) for f in parse_q(text)]

    before = identity.identities([*facts, *on_n2(capture)])
    after = identity.identities([*facts, *on_n2(swapped)])
    changed = identity.changes(before, after)
    assert [c.text for c in changed["n2"]] == [
        "nvidia-smi.serial gpu=0 0000000000000→1654922004213"
    ]
    plan = _plan(run, changed)
    assert list(plan.steps) == ["preflight", "fio-read"]  # every per-node step of the suite
    assert ("n2",) in plan.steps["preflight"].groups
    assert list(plan.steps["fio-read"].groups) == [("n3",), ("n2",)]
    why = plan.steps["preflight"].groups[("n2",)][0]
    assert why == "n2 changed since the parent: nvidia-smi.serial gpu=0 0000000000000→1654922004213"
    assert "iperf3-tcp" not in plan.steps
    assert plan.control == "n1"


def _plan(run: Run, changed: dict[str, list[identity.Change]] | None = None) -> planning.RetestPlan:
    from aibench.judge import stored_spec
    from aibench.repair.retest import recorded_suite

    spec = stored_spec(run, run.spec_sha256, "run.json")
    return planning.plan_retest(run, spec, recorded_suite(run, "run.json"), list(NODES), changed)


def test_several_rounds_a_node_that_fails_again_and_a_retest_of_a_record(
    loop: Loop, tmp_path: Path
) -> None:
    """n3 blocked again: its re-test fails too; the composed record of the two is
    re-tested once n3 is repaired, and the record of all three shows both failures."""
    blocker = loop.root / "d" / "n3"
    shutil.rmtree(blocker, ignore_errors=True)
    blocker.write_text("blocked again\n")
    try:
        res = aibench("retest", str(loop.first), "--quiet", "--output-dir", str(tmp_path / "r"))
        assert res.returncode == 1, res.stdout + res.stderr
        (second,) = (tmp_path / "r").iterdir()
        res = aibench("accept", str(loop.first), str(second), "--output-dir", str(tmp_path / "a"))
        assert res.returncode == 1, res.stdout + res.stderr
        (composed,) = (tmp_path / "a").iterdir()
    finally:
        blocker.unlink()
    res = aibench("retest", str(composed), "--quiet", "--output-dir", str(tmp_path / "r"))
    assert res.returncode == 0, res.stdout + res.stderr
    print(res.stdout)
    third = new_dir(tmp_path / "r", {second})
    assert load_run(third).inputs["parent"]["id"] == composed.name
    res = aibench("accept", str(composed), str(third), "--output-dir", str(tmp_path / "b"))
    assert res.returncode == 0, res.stdout + res.stderr
    print(res.stdout)
    (final,) = (tmp_path / "b").iterdir()
    run = load_run(final)
    assert [a["id"] for a in run.inputs["accept"]["attempts"]] == [
        loop.first.name,
        second.name,
        third.name,
    ]
    row = next(r for r in run.inputs["accept"]["rows"] if r["check"] == "fio-read-bw")
    assert [e["outcome"] for e in row["attempts"]] == ["ERROR", "ERROR", "PASS"]
    assert run.outcome is Outcome.PASS


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen")
def test_accept_signs_the_record_and_refuses_a_changed_attempt(loop: Loop, tmp_path: Path) -> None:
    import subprocess

    key = tmp_path / "vendor_ed25519"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "vendor", "-f", str(key)], check=True
    )
    signers = tmp_path / "allowed_signers"
    signers.write_text(
        "vendor@example.com " + " ".join(key.with_suffix(".pub").read_text().split()[:2]) + "\n"
    )
    res = aibench(
        "accept", str(loop.first), str(loop.retest), "--sign", str(key),
        "--vendor", "ACME Systems", "--output-dir", str(tmp_path / "acc"),
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    (record,) = (tmp_path / "acc").iterdir()
    res = aibench("verify", str(record), "--signers", str(signers))
    assert res.returncode == 0, res.stdout
    assert "good signature by vendor@example.com" in res.stdout
    assert load_run(record).signoff["vendor"] == "ACME Systems"
    # an attempt changed since its manifest was written is refused
    changed = tmp_path / "changed" / loop.retest.name
    shutil.copytree(loop.retest, changed)
    (changed / "summary.md").write_text("all good\n")
    res = aibench("accept", str(loop.first), str(changed), "--output-dir", str(tmp_path / "no"))
    assert res.returncode == 2
    assert "1 changed, 0 missing, 0 added file(s) since its manifest was written" in res.stderr
    assert not (tmp_path / "no").exists()


def test_a_fleet_verdict_naming_no_node_runs_its_step_whole_and_a_failed_steps_verdict_its_evidence(
    loop: Loop,
) -> None:
    """The first run's record with its verdicts replaced here: a coverage FAIL that names no
    node, and a verdict about a failed step (no check of the spec: found by its evidence)."""
    run = load_run(loop.first)
    fio_n3 = next(s for s in run.steps if s.step == "fio-read" and s.nodes == ("n3",))
    fleet = Verdict("iperf3-tcp.coverage", Outcome.FAIL, origin="coverage", benchmark="iperf3")
    step = Verdict(
        fio_n3.step_id, Outcome.ERROR, subject=("n3",), evidence=(fio_n3.step_id,), origin="step"
    )
    soak = Verdict("soak.throttle", Outcome.FAIL, subject=("n2",), origin="telemetry")
    plan = _plan(run.replace(verdicts=(fleet, step, soak)))
    assert plan.steps["iperf3-tcp"].whole == ["iperf3-tcp.coverage FAIL on the fleet"]
    assert plan.notes == [
        "soak.throttle FAIL on n2: no step of the suite measures it, nothing runs again"
    ]
    assert list(plan.steps["fio-read"].groups) == [("n3",)]
    assert planning.kind_of("all") == planning.kind_of("sweep") == "fleet"
    assert planning.kind_of("ring") == planning.kind_of("groups") == "pair"


def test_a_check_of_the_fleets_aggregate_runs_its_step_whole(loop: Loop) -> None:
    """The first run's spec with its fio check made of scope fleet here, failing with n3
    named as its culprit: the fleet's figure needs the whole step again."""
    from aibench.judge import stored_spec
    from aibench.repair.retest import recorded_suite

    run = load_run(loop.first)
    spec = stored_spec(run, run.spec_sha256, "run.json")
    fleet = [
        c.model_copy(update={"scope": "fleet"}) if c.id == "fio-read-bw" else c for c in spec.checks
    ]
    spec = dataclasses.replace(spec, checks=tuple(fleet))
    v = Verdict("fio-read-bw", Outcome.FAIL, culprits=("n3",), observed=3.0, unit="MB/s")
    plan = planning.plan_retest(
        run.replace(verdicts=(v,)), spec, recorded_suite(run, "run.json"), list(NODES)
    )
    assert plan.steps["fio-read"].whole == ["fio-read-bw FAIL on n3 (observed 3 MB/s)"]
    assert plan.steps["fio-read"].groups == {}
