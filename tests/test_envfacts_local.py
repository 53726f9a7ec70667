"""The environment facts of this machine are read in aibench itself: the same bytes, exit
code and error text as the fixed commands print when run (hostname, uname -srm, cat)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from aibench import envfacts


def stable(text: bytes) -> list[bytes]:
    """The lines; those whose numbers move between two reads (/proc/meminfo's amounts but
    MemTotal, which the facts read; /proc/cpuinfo's clock) by their key alone."""
    out = []
    for line in text.splitlines():
        key = line.split(b":", 1)[0]
        moves = (b" kB" in line and key != b"MemTotal") or key.startswith(b"cpu MHz")
        out.append(key if moves else line)
    return out


@pytest.mark.parametrize(
    "argv", [*envfacts._COMMANDS.values(), ("cat", "/nonexistent/os-release"), ("cat", "/proc")]
)
def test_read_in_process_is_what_the_command_prints(argv: tuple[str, ...]) -> None:
    ran = subprocess.run(argv, capture_output=True, check=False)
    code, out, err = envfacts.this_machine(argv)
    assert (code == 0) == (ran.returncode == 0)
    assert stable(out) == stable(ran.stdout)
    assert err == ran.stderr


def test_only_the_fixed_commands_are_read() -> None:
    with pytest.raises(ValueError, match="not a command"):
        envfacts.this_machine(("ls", "/"))


def test_a_local_run_keeps_its_raw_environment_files(tmp_path: Path) -> None:
    from aibench.pipeline import load_inputs, run_suite

    work = tmp_path / "work"
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "schema_version: 1\nname: envfacts\nsteps:\n  - name: read\n    tool: fio\n"
        f"    options: {{rw: read, bs: 64k, size: 1M, runtime: null, directory: {work}}}\n"
    )
    result = run_suite(load_inputs(str(suite)), output_dir=tmp_path / "runs")
    env = result.run_dir / "raw" / "env"
    node = result.run.inventory["nodes"][0]["name"]
    for key, argv in envfacts._COMMANDS.items():
        ran = subprocess.run(argv, capture_output=True, check=False)
        assert stable((env / f"{node}.{key}.out").read_bytes()) == stable(ran.stdout)
    facts = result.run.environment[node]
    assert (
        facts["kernel"]
        == subprocess.run(["uname", "-srm"], capture_output=True, text=True).stdout.strip()
    )
    assert facts["cpu_threads"] >= 1
