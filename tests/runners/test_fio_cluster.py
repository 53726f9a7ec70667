"""fio-cluster: the plan (servers, the driver, the job file) and real runs of fio's
client/server mode over loopback addresses (three nodes on 127.0.0.1-3)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aibench.model import StepStatus
from aibench.placement import sweep
from aibench.runners.fio_cluster import BYTES_PER_PARAM, DRIVER, JOB_WRITER
from tests.runners.helpers import node, plan, run, suite_of

NODES = [node("n1", "127.0.0.1"), node("n2", "127.0.0.2"), node("n3", "127.0.0.3")]


def test_plan_starts_a_server_per_node_and_drives_them_from_the_first() -> None:
    (inv,) = plan("fio-cluster", {"rw": "write", "directory": "/mnt/shared"}, NODES, step="w")
    assert [s.argv for s in inv.servers] == [
        ("fio", "--server=ip:127.0.0.1,18765"),
        ("fio", "--server=ip:127.0.0.2,18766"),
        ("fio", "--server=ip:127.0.0.3,18767"),
    ]
    assert [s.ready.port for s in inv.servers if s.ready] == [18765, 18766, 18767]
    assert inv.client.host == "n1"
    assert inv.client.argv[:3] == ("sh", "-c", DRIVER)
    job, scratch = inv.client.argv[4:6]
    assert scratch == "/mnt/shared/aibench-w-n1--n2--n3-r0"
    # the clients first, then the output format (before them fio runs one client only)
    assert inv.client.argv[6:] == (
        "--client=ip:127.0.0.1,18765",
        "--client=ip:127.0.0.2,18766",
        "--client=ip:127.0.0.3,18767",
        "--output-format=json",
    )
    mkdir, writer = inv.setup
    assert mkdir.argv[-1] == scratch
    assert writer.argv[:5] == ("sh", "-c", JOB_WRITER, "aibench-fio-job", job)
    lines = writer.argv[5:]
    assert f"directory={scratch}" in lines
    assert "[write]" in lines
    assert "time_based" in lines
    assert "filename_format=$clientuid.$jobname.$jobnum.$filenum" in lines


def test_plan_values_are_arguments_never_script_text() -> None:
    (inv,) = plan("fio-cluster", {"directory": "/mnt/a b;rm -rf x"}, NODES[:1])
    assert inv.client.argv[2] == DRIVER
    assert "rm -rf x" not in inv.client.argv[2]
    assert inv.setup[1].argv[2] == JOB_WRITER


def test_metadata_and_checkpoint_job_files() -> None:
    (md,) = plan("fio-cluster", {"kind": "metadata", "files": 50, "dirs": 8}, NODES)
    lines = md.setup[1].argv[5:]
    for want in ("[create]", "ioengine=filecreate", "[stat]", "ioengine=filestat",
                 "[delete]", "ioengine=filedelete", "nrfiles=50", "numjobs=8"):  # fmt: skip
        assert want in lines
    assert lines.count("stonewall") == 2
    (ck,) = plan("fio-cluster", {"kind": "checkpoint", "size": "1G", "model_params": 8e9}, NODES)
    lines = ck.setup[1].argv[5:]
    assert lines[0] == f"# checkpoint of 8e+09 parameters x {BYTES_PER_PARAM:g} bytes"
    assert "[save]" in lines
    assert "[restore]" in lines
    assert "size=1G" in lines


def test_bad_options_are_refused() -> None:
    from aibench.errors import UserError

    for bad in ({"directory": "relative"}, {"size": "lots"}, {"ioengine": "x;y"}, {"kind": "x"}):
        with pytest.raises(UserError):
            plan("fio-cluster", bad, NODES)


@pytest.mark.parametrize("engine", ["exec", "external"])
def test_an_ioengine_that_runs_a_program_is_refused_as_for_fio(engine: str) -> None:
    from aibench.errors import UserError

    with pytest.raises(UserError, match="makes fio run a program: refused"):
        plan("fio-cluster", {"ioengine": engine}, NODES)


def test_sweep_placement_doubles_then_takes_all() -> None:
    names = [f"h{i}" for i in range(1, 7)]
    assert [len(r[0]) for r in sweep(names)] == [1, 2, 4, 6]
    assert sweep(names)[1] == [("h1", "h2")]


needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")


@needs_fio
def test_three_clients_over_loopback_give_clients_aggregate_and_checkpoint(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    options = {"kind": "checkpoint", "size": "16M", "directory": str(shared)}
    (res,) = run(tmp_path / "run", suite_of("fio-cluster", options, workdir=tmp_path / "w"), NODES)
    assert res.status is StepStatus.OK, res.reason
    bw = {(m.dims["client"], m.dims["direction"]): m for m in res.measurements if m.metric == "bw"}
    assert {c for c, _ in bw} == {"n1", "n2", "n3", "all"}
    assert bw[("n2", "write")].nodes == ("n2",)
    assert bw[("all", "write")].nodes == ("n1", "n2", "n3")
    (save,) = [m for m in res.measurements if m.metric == "checkpoint_write_s"]
    assert save.value == pytest.approx(70e9 * 14 / (bw[("all", "write")].value * 1024))
    assert list(shared.iterdir()) == []  # the scratch tree is gone
    assert not list((tmp_path / "w" / "fio-cluster").iterdir())  # so is the job file


@needs_fio
def test_a_node_whose_server_cannot_start_fails_the_step(tmp_path: Path) -> None:
    # n2's address is one no server can bind here: fio exits 0 with the others' results
    nodes = [NODES[0], node("n2", "192.0.2.1")]
    options = {"rw": "write", "size": "8M", "runtime": 1, "directory": str(tmp_path / "s")}
    (res,) = run(tmp_path / "run", suite_of("fio-cluster", options, workdir=tmp_path / "w"), nodes)
    assert res.status is StepStatus.FAILED
    assert "n2" in res.reason
