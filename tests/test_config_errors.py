"""Malformed input files: one line naming the file, the key and the fix; exit code 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from aibench.cli import main

GOOD_STEP = "  - {name: s1, tool: fio, options: {rw: read}}\n"

# (file content, expected key path, expected words in the message)
SUITES = [
    (
        "schema_version: 1\nname: x\nsteps:\n  - {name: s1, tool: fio, options: {rw: read, bss: 4k}}\n",
        "steps[0].options.bss",
        "unknown key",
    ),
    (
        "schema_version: 1\nname: x\nsteps:\n  - {name: s1, tool: fio, options: {rw: sideways}}\n",
        "steps[0].options.rw",
        "Input should be",
    ),
    (
        "schema_version: 1\nname: x\nsteps:\n  - {name: s1, tool: fio, options: {rw: read, iodepth: -3}}\n",
        "steps[0].options.iodepth",
        "greater than or equal to 1",
    ),
    (
        "schema_version: 1\nname: x\nsteps:\n  - {name: s1, tool: fio, options: {rw: read, bs: huge}}\n",
        "steps[0].options.bs",
        "not a fio size",
    ),
    (
        "schema_version: 1\nname: x\nsteps:\n  - {name: s1, tool: fio}\n",
        "steps[0].options.rw",
        "required key is missing",
    ),
    (
        "schema_version: 1\nname: x\nsteps:\n  - {name: s1, tool: nosuchtool}\n",
        "steps[0].tool",
        "unknown tool 'nosuchtool'; valid:",
    ),
    (
        "schema_version: 1\nname: x\nsteps:\n" + GOOD_STEP + GOOD_STEP,
        "steps[1].name",
        "duplicate step name 's1'",
    ),
    ("schema_version: 1\nname: x\nsteps: []\n", "steps", "at least 1 item"),
    ("schema_version: 2\nname: x\nsteps:\n" + GOOD_STEP, "schema_version", "Input should be 1"),
    ("name: x\nsteps:\n" + GOOD_STEP, "schema_version", "required key is missing"),
    ("schema_version: 1\nname: x\nstep:\n" + GOOD_STEP, "step", "unknown key"),
    ("schema_version: 1\nname: Bad Name\nsteps:\n" + GOOD_STEP, "name", "should match pattern"),
    (
        "schema_version: 1\nname: x\nsteps:\n  - {name: s1, tool: iperf3, placement: everywhere}\n",
        "steps[0].placement",
        "unknown placement 'everywhere'",
    ),
    (
        "schema_version: 1\nname: x\nsteps:\n  - {name: s1, tool: iperf3, options: {duration: fast}}\n",
        "steps[0].options.duration",
        "valid number",
    ),
    (
        "schema_version: 1\nname: x\nsteps:\n  - {name: s1, tool: iperf3, options: {reverse: true, bidir: true}}\n",
        "steps[0].options",
        "reverse and bidir cannot both be set",
    ),
    (
        "schema_version: 1\nname: x\nsteps:\n  - {name: s1, tool: fio, repeats: 0, options: {rw: read}}\n",
        "steps[0].repeats",
        "greater than or equal to 1",
    ),
    (
        "schema_version: 1\nname: x\nsettings: {workdir: relative/dir}\nsteps:\n" + GOOD_STEP,
        "settings.workdir",
        "should match pattern",
    ),
    (
        "schema_version: 1\nname: x\nsteps:\n  - {name: s1, tool: fio, options: {rw: read, extra: ['--filename=$(reboot)']}}\n",
        "steps[0].options.extra",
        "must look like --name=value",
    ),
    (
        "schema_version: 1\nname: x\nsteps:\n  - {name: s1, tool: fio, nodes: ['n[1-'], options: {rw: read}}\n",
        "steps[0].nodes[0]",
        "invalid hostlist 'n[1-': unbalanced brackets",
    ),
    (
        "schema_version: 1\nname: x\nsteps:\n"
        + GOOD_STEP
        + "  - {name: s2, tool: fio, nodes: ['gpu[1-2]'], options: {rw: read}}\n",
        "steps[1].nodes",
        "not in the inventory local: gpu1, gpu2",
    ),
]


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str]:
    code = main(argv)
    err = capsys.readouterr().err
    return code, err


@pytest.mark.parametrize(("content", "key", "words"), SUITES, ids=[s[1] for s in SUITES])
def test_malformed_suite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, key: str, words: str
) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(content)
    code, err = _run(capsys, ["plan", "--suite", str(path)])
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"aibench: error: {path}: {key}: "), lines[0]
    assert words in lines[0]
    assert "Traceback" not in err


def test_yaml_syntax_error_names_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text("schema_version: 1\nname: x\nsteps:\n  - {name: s1, tool: fio\n")
    code, err = _run(capsys, ["run", "--suite", str(path)])
    assert code == 2
    assert err.count("\n") == 1
    assert f"{path}: invalid YAML at line" in err


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _run(capsys, ["run", "--suite", str(tmp_path / "nope.yaml")])
    assert code == 2
    assert err == f"aibench: error: {tmp_path / 'nope.yaml'}: file not found\n"


def test_unknown_builtin_suite_lists_valid_ones(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _run(capsys, ["run", "--suite", "acceptence"])
    assert code == 2
    assert "no built-in suite of that name" in err
    assert "acceptance" in err
    assert "smoke" in err


def test_document_that_is_not_a_mapping(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text("- just\n- a list\n")
    code, err = _run(capsys, ["run", "--suite", str(path)])
    assert code == 2
    assert "expected a mapping, got list" in err


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    from aibench.errors import ConfigError

    path = tmp_path / "suite.yaml"
    path.write_text("schema_version: 1\nname: x\nsteps: []\n")
    with pytest.raises(ConfigError):
        main(["--debug", "run", "--suite", str(path)])


def test_unknown_command_line_option_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["run", "--no-such-option"])
    assert exc.value.code == 2
