"""Malformed spec files: one line naming file and key path, exit 2, through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aibench.cli import main
from aibench.errors import ConfigError
from aibench.model import Run
from aibench.thresholds import load_spec

OK_CHECK = "  - id: a\n    select: {tool: fio, metric: bw}\n    unit: MB/s\n    min: 1\n"
HEAD = "schema_version: 1\nname: bad\nchecks:\n"

# (file text, key path expected in the message, words expected in the message)
BAD = [
    (HEAD + OK_CHECK.replace("min: 1", "mni: 1"), "checks[0].mni", "did you mean 'min'"),
    (HEAD + OK_CHECK.replace("MB/s", "MB/sec"), "checks[0].unit", "unknown unit 'MB/sec'"),
    (HEAD + OK_CHECK.replace("MB/s", "IOPS"), "checks[0]", "cannot judge fio bw"),
    (
        HEAD + OK_CHECK.replace("metric: bw", "metric: bw, dims: {bs: {like: 1M}}"),
        "checks[0].select.dims.bs.like",
        "unknown key",
    ),
    (
        HEAD + OK_CHECK + "    waiver: {reason: slow disk, owner: ops}\n",
        "checks[0].waiver.expires",
        "required key is missing",
    ),
    (
        HEAD + OK_CHECK + "    waiver: {reason: slow disk, owner: ops, expires: someday}\n",
        "checks[0].waiver.expires",
        "date",
    ),
    (HEAD + OK_CHECK.replace("min: 1", "lower: -0.1"), "checks[0]", "reference"),
    (
        HEAD + OK_CHECK.replace("min: 1", "min: 10\n    warn: {min: 5}"),
        "checks[0]",
        "warn bounds must be inside",
    ),
    (
        HEAD
        + "  - id: f\n    fact: {source: nvidia-smi, name: driver_version}\n    op: version_ge\n"
        "    value: latest\n",
        "checks[0]",
        "dotted numeric",
    ),
    (
        HEAD + "  - id: f\n    fact: {source: sysctl, name: vm.swappiness}\n    op: matches\n"
        "    value: 10\n",
        "checks[0].op",
        "Input should be",
    ),
    (HEAD + OK_CHECK + OK_CHECK, "", "duplicate check id 'a'"),
    (
        HEAD + OK_CHECK.replace("scope: node", "") + "    scope: rack\n",
        "checks[0].scope",
        "Input should be",
    ),
    ("schema_version: 2\nname: bad\nchecks: []\n", "schema_version", "Input should be 1"),
    (
        HEAD + "  - id: a\n    select: {tool: fio, metric: bw}\n    unit: MB/s\n",
        "checks[0]",
        "give bounds",
    ),
    (HEAD + "  - {id: a, unit: MB/s, min: 1}\n", "checks[0]", "exactly one of `select`"),
    (
        "schema_version: 1\nname: bad\nchecks:\n  - id: a\n   select: x\n",
        "",
        "invalid YAML at line",
    ),
]


@pytest.mark.parametrize(("text", "key", "words"), BAD)
def test_load_spec_names_file_and_key(tmp_path: Path, text: str, key: str, words: str) -> None:
    p = tmp_path / "bad.yaml"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_spec(str(p))
    assert info.value.file == str(p)
    assert info.value.key == key, str(info.value)
    assert words in str(info.value)


@pytest.mark.parametrize(("text", "key", "words"), BAD[:8])
def test_cli_spec_show_exit_2_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, key: str, words: str
) -> None:
    p = tmp_path / "bad.yaml"
    p.write_text(text, encoding="utf-8")
    assert main(["spec", "show", str(p)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith(f"aibench: error: {p}: {key}")
    assert words in err


@pytest.mark.parametrize(("text", "key", "words"), BAD[8:13])
def test_cli_check_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, key: str, words: str
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "run.json").write_text(json.dumps(Run(id="r", suite="s", spec="default").to_dict()))
    p = tmp_path / "bad.yaml"
    p.write_text(text, encoding="utf-8")
    assert main(["check", str(run_dir), "--spec", str(p)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"{p}: {key}" in err
    assert words in err


def test_unknown_profile_lists_the_valid_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "show", "h100-nrd"]) == 2
    err = capsys.readouterr().err
    assert "no built-in spec profile" in err
    assert "h100-ndr" in err
