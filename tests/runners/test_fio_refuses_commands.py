"""fio options that make fio run a command (``exec_prerun``/``exec_postrun`` go through a
shell, ``--trigger``/``--trigger-remote`` run one on a trigger, the ``exec`` ioengine runs
``program`` with ``arguments``, ``external:`` loads a library) are refused when the suite is
validated, with one line naming the file, the step and the option: before any node is
touched. The option names are those of fio 3.33's ``--cmdhelp=all`` and ``--help``."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from aibench.errors import ConfigError
from aibench.suite import load_suite


def _suite(tmp_path: Path, options: dict[str, object]) -> Path:
    doc = {
        "schema_version": 1,
        "name": "t",
        "steps": [
            {"name": "disk-ok", "tool": "fio", "options": {"rw": "read"}},
            {"name": "disk-seq", "tool": "fio", "options": {"rw": "read", **options}},
        ],
    }
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize(
    "options",
    [
        {"extra": ["--exec_prerun=/tmp/x.sh"]},
        {"extra": ["--exec_postrun=reboot"]},
        {"extra": ["--trigger=/usr/bin/touch"]},
        {"extra": ["--ioengine=exec", "--program=/bin/true"]},
        {"extra": ["--program=/bin/true"]},
        {"extra": ["--arguments=x"]},
        {"extra": ["--ioengine=external"]},
        {"ioengine": "exec"},
    ],
    ids=lambda o: str(o),
)
def test_an_option_that_runs_a_command_is_refused(
    tmp_path: Path, options: dict[str, object]
) -> None:
    with pytest.raises(ConfigError) as err:
        load_suite(str(_suite(tmp_path, options)))
    text = str(err.value)
    assert "\n" not in text
    assert "suite.yaml" in text
    assert "steps[1].options" in text
    assert "(step disk-seq)" in text
    assert "run" in text
    assert "refused" in text


def test_ordinary_extra_options_still_pass(tmp_path: Path) -> None:
    suite = load_suite(str(_suite(tmp_path, {"extra": ["--fsync=1", "--ioengine=psync"]})))
    assert suite.steps[1].options.extra == ["--fsync=1", "--ioengine=psync"]
