"""``--resume`` is exact or refused.

Before: a step inserted before a finished one lost the finished step's measurement (the
journal was matched to the plan by position) and turned its checks ERROR; options edited
between the two halves ran the repeats of one step with two sets of options; the suite,
spec and inventory were read again from their files as they now were; a finished (and
signed) run was judged again and rewritten; ``started`` became the resume's time.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

from aibench.executors.local import LocalExecutor
from aibench.inventory_file import load_inventory
from aibench.orchestrator import JOURNAL, OPTIONS, Execution, execute
from aibench.plan import build_plan
from aibench.suite import load_suite
from tests.hostile.tiny import Bed, aibench, needs_fio, record, statuses, wait_for


def insert_step(bed: Bed) -> str:
    text = bed.suite.read_text()
    extra = (
        "  - name: extra\n    tool: fio\n    options: {rw: read, bs: 1M, size: 4M, runtime: 0.2}\n"
    )
    bed.suite.write_text(text.replace("  - name: quick", extra + "  - name: quick"))
    return "step 'extra' inserted"


def change_options(bed: Bed) -> str:
    bed.suite.write_text(
        bed.suite.read_text().replace(
            "bs: 1M, size: 4M, runtime: 3", "bs: 4k, size: 4M, runtime: 3"
        )
    )
    return "options of step 'slow' changed"


def change_spec(bed: Bed) -> str:
    bed.spec.write_text(bed.spec.read_text().replace("min: 1", "min: 2"))
    return f"spec {bed.spec} changed: min of check 'quick-read' changed"


def change_inventory(bed: Bed) -> str:
    text = (
        bed.inventory.read_text() + "  - name: there\n    address: 127.0.0.1\n    executor: local\n"
    )
    bed.inventory.write_text(text)
    return f"inventory {bed.inventory} changed: node 'there' inserted"


EDITS: list[Callable[[Bed], str]] = [insert_step, change_options, change_spec, change_inventory]


def interrupted(bed: Bed) -> Path:
    proc = bed.start()
    bed.stop_in_slow(proc)
    assert proc.returncode == 143
    return bed.run_dir()


@needs_fio
def test_each_kind_of_edit_is_refused_then_the_unedited_inputs_resume(tmp_path: Path) -> None:
    bed = Bed(tmp_path)
    run_dir = interrupted(bed)
    before = (run_dir / "run.json").read_bytes()
    originals = {p: p.read_bytes() for p in (bed.suite, bed.spec, bed.inventory)}
    for edit in EDITS:
        says = edit(bed)
        res = aibench("run", "--resume", str(run_dir), "--quiet")
        assert res.returncode == 2, (edit.__name__, res.stdout, res.stderr)
        (line,) = res.stderr.strip().splitlines()
        assert says in line, line
        assert "--restart" in line
        assert (run_dir / "run.json").read_bytes() == before, "a refused resume wrote nothing"
        for p, data in originals.items():
            p.write_bytes(data)
    first = record(run_dir)
    res = aibench("run", "--resume", str(run_dir), "--quiet")
    assert res.returncode == 0, res.stdout + res.stderr
    final = record(run_dir)
    assert statuses(final) == {"quick/here/r0": "ok", "slow/here/r0": "ok"}
    assert final.steps[0].started == first.steps[0].started
    assert final.started == first.started


@needs_fio
def test_restart_runs_the_edited_inputs_as_a_new_run(tmp_path: Path) -> None:
    bed = Bed(tmp_path, slow=0.3)
    res = subprocess.run(bed.argv(), capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    run_dir = bed.run_dir()
    first = (run_dir / "run.json").read_bytes()
    insert_step(bed)
    res = aibench("run", "--resume", str(run_dir), "--restart", "--quiet")
    assert res.returncode == 0, res.stdout + res.stderr
    assert (run_dir / "run.json").read_bytes() == first
    (new,) = [d for d in bed.runs.iterdir() if d.is_dir() and d != run_dir]
    assert set(statuses(record(new))) == {"extra/here/r0", "quick/here/r0", "slow/here/r0"}
    assert record(new).steps[1].started > record(run_dir).steps[0].started  # nothing reused


@needs_fio
def test_resuming_a_finished_run_is_refused(tmp_path: Path) -> None:
    bed = Bed(tmp_path, slow=0.3)
    res = subprocess.run(bed.argv(), capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    run_dir = bed.run_dir()
    kept = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}
    res = aibench("run", "--resume", str(run_dir), "--quiet")
    assert res.returncode == 2
    assert "this run finished; there is nothing to resume" in res.stderr
    assert {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()} == kept


@needs_fio
def test_a_suite_file_gone_is_read_from_the_record(tmp_path: Path) -> None:
    bed = Bed(tmp_path)
    run_dir = interrupted(bed)
    shutil.move(bed.suite, tmp_path / "elsewhere.yaml")
    res = aibench("run", "--resume", str(run_dir), "--quiet")
    assert res.returncode == 0, res.stdout + res.stderr
    assert statuses(record(run_dir)) == {"quick/here/r0": "ok", "slow/here/r0": "ok"}


@needs_fio
def test_sigkill_then_resume_records_an_interruption_of_unknown_signal(tmp_path: Path) -> None:
    bed = Bed(tmp_path)
    proc = bed.start()
    try:
        wait_for(lambda: any(bed.runs.glob("*/raw/slow/*.stdout")), proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
    run_dir = bed.run_dir()
    assert not (run_dir / "run.json").exists()
    config = json.loads((run_dir / "run-config.json").read_text())
    res = aibench("run", "--resume", str(run_dir), "--quiet")
    assert res.returncode == 0, res.stdout + res.stderr
    final = record(run_dir)
    assert final.started == config["started"]
    assert [x["signal"] for x in final.interruptions] == ["unknown (no record written)"]


@needs_fio
def test_finished_work_is_matched_by_step_id_and_options_not_by_place(tmp_path: Path) -> None:
    """The journal of one plan read with another: each result found where the new plan has
    its step id, and a step whose options changed is not taken (it runs again)."""
    bed = Bed(tmp_path, slow=0.2)
    inventory = load_inventory(bed.inventory)
    loc = LocalExecutor(kill_grace=0.5)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    ex = Execution(run_dir, build_plan(load_suite(str(bed.suite)), inventory), lambda n: loc)
    asyncio.run(execute(ex))
    lines = [json.loads(x) for x in (run_dir / JOURNAL).read_text().splitlines()]
    assert {d["step_id"]: d["plan_index"] for d in lines} == {"quick/here/r0": 0, "slow/here/r0": 1}
    assert all(d[OPTIONS] for d in lines)
    insert_step(bed)
    bed.suite.write_text(
        bed.suite.read_text().replace("runtime: 0.2, iodepth", "runtime: 0.25, iodepth")
    )
    again = Execution(run_dir, build_plan(load_suite(str(bed.suite)), inventory), lambda n: loc)
    again.load_journal()
    assert again.done == {"quick/here/r0"}
    got = {r.step_id: r for r in again.results_log()}
    assert list(got) == ["extra/here/r0", "quick/here/r0", "slow/here/r0"]
    assert got["quick/here/r0"].ok
    assert got["quick/here/r0"].started == next(d["started"] for d in lines if d["step"] == "quick")
    assert got["extra/here/r0"].status.value == "not_run"
    assert got["slow/here/r0"].status.value == "not_run"


SECRET_SUITE = """\
schema_version: 1
name: sec
settings: {secret_env: [DSN]}
steps:
  - name: nccl
    tool: nccl-tests
    options: {env: {MY_TOKEN: planted-token-value, DSN: "postgres://u:planted-pw@db"}}
"""


def test_the_copy_kept_for_resume_holds_no_secret_value(tmp_path: Path) -> None:
    """run-config.json's copy of the suite has the secret values replaced; such a copy
    is never read back (a resume needs the unchanged file)."""
    from aibench.pipeline import load_inputs
    from aibench.resume import copies

    suite = tmp_path / "sec.yaml"
    suite.write_text(SECRET_SUITE)
    inputs = load_inputs(str(suite))
    kept = copies(
        inputs, build_plan(inputs.suite, inputs.inventory),
        suite=str(suite), spec="default", inventory=None,
    )  # fmt: skip
    text = json.dumps(kept)
    assert "planted-token-value" not in text
    assert "planted-pw" not in text
    assert kept["suite"]["complete"] is False
    assert kept["suite"]["sha256"] == inputs.suite.sha256  # the original's identity


@needs_fio
def test_a_run_of_an_older_aibench_resumes_by_its_hashes(tmp_path: Path) -> None:
    """Its run-config.json has no copies, only the suite's and spec's hashes: an edited
    suite is refused all the same, the unedited one resumes."""
    bed = Bed(tmp_path)
    run_dir = interrupted(bed)
    config_path = run_dir / "run-config.json"
    config = json.loads(config_path.read_text())
    for key in ("inputs", "started", "telemetry"):
        del config[key]
    config_path.write_text(json.dumps(config))
    from aibench import manifest

    manifest.write(run_dir)  # the older aibench's directory matches its own manifest
    original = bed.suite.read_bytes()
    insert_step(bed)
    res = aibench("run", "--resume", str(run_dir), "--quiet")
    assert res.returncode == 2
    assert f"suite {bed.suite} changed" in res.stderr
    bed.suite.write_bytes(original)
    res = aibench("run", "--resume", str(run_dir), "--quiet")
    assert res.returncode == 0, res.stdout + res.stderr
    assert statuses(record(run_dir)) == {"quick/here/r0": "ok", "slow/here/r0": "ok"}
