"""aibench submit writes a batch script whose arguments arrive verbatim."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from aibench.cli import main


def _inventory(tmp_path: Path) -> Path:
    inv = tmp_path / "cluster $(reboot); x.yaml"
    inv.write_text(
        "schema_version: 1\nname: c\ndefaults: {executor: slurm}\nnodes:\n  - name: n[1-2]\n"
    )
    return inv


def test_script_quotes_every_argument(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inv = _inventory(tmp_path)
    script = tmp_path / "job.sh"
    out = tmp_path / "runs"
    code = main(
        [
            "submit",
            "--inventory",
            str(inv),
            "--nodes",
            "2",
            "--output-dir",
            str(out),
            "--script-only",
            str(script),
        ]
    )
    assert code == 0, capsys.readouterr().err
    text = script.read_text()
    assert "#SBATCH --nodes=2" in text
    exec_line = next(ln for ln in text.splitlines() if ln.startswith("exec "))
    argv = shlex.split(exec_line)[1:]
    assert argv[1:5] == ["run", "--suite", "acceptance", "--inventory"]
    assert argv[5] == str(inv.resolve())
    assert argv[argv.index("--output-dir") + 1] == str(out.resolve())


def test_bad_sbatch_value_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "submit",
            "--inventory",
            str(_inventory(tmp_path)),
            "--partition",
            "gpu;reboot",
            "--script-only",
            str(tmp_path / "j.sh"),
        ]
    )
    assert code == 2
    assert "invalid sbatch value 'gpu;reboot'" in capsys.readouterr().err
    assert not (tmp_path / "j.sh").exists()


def test_inputs_are_validated_before_submitting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "suite.yaml"
    bad.write_text("schema_version: 1\nname: x\nsteps: []\n")
    code = main(
        [
            "submit",
            "--inventory",
            str(_inventory(tmp_path)),
            "--suite",
            str(bad),
            "--script-only",
            str(tmp_path / "j.sh"),
        ]
    )
    assert code == 2
    assert f"{bad}: steps:" in capsys.readouterr().err
