"""The environment-variable-name rule has one home (aibench/envnames.py): its cases, the
places that take a name refusing the same bad ones, and no other copy of the rule."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from aibench.envnames import PATTERN, check_env, check_env_names, is_env_name

ROOT = Path(__file__).resolve().parent.parent
GOOD = ["PATH", "_x", "NCCL_IB_HCA", "a1", "lower_case"]
BAD = ["", "1A", "A-B", "A B", "A=B", "$(id)", "A\n", "ÄB", "A.B"]


@pytest.mark.parametrize("name", GOOD)
def test_good_names(name: str) -> None:
    assert is_env_name(name)
    check_env_names([name])


@pytest.mark.parametrize("name", BAD)
def test_bad_names_everywhere(name: str) -> None:
    from aibench.executors.ssh import remote_command
    from aibench.suite import Settings

    assert not is_env_name(name)
    with pytest.raises(ValueError, match="invalid environment variable name"):
        check_env({name: "1"})
    with pytest.raises(ValueError, match="invalid environment variable name"):
        remote_command(_command(name))
    with pytest.raises(ValidationError):
        Settings(secret_env=[name])


def _command(name: str):  # type: ignore[no-untyped-def]
    from aibench.executors.base import Command

    return Command(argv=("true",), env={name: "1"})


def test_a_value_of_two_lines_is_refused() -> None:
    with pytest.raises(ValueError, match="the value of A holds a line break"):
        check_env({"A": "1\n2"})


def test_the_rule_is_written_once() -> None:
    """No module but aibench/envnames.py writes the name pattern out again."""
    body = re.escape(PATTERN.strip("^$"))
    copies = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "aibench").rglob("*.py")
        if p.name != "envnames.py" and re.search(body, p.read_text(encoding="utf-8"))
    ]
    assert copies == []
