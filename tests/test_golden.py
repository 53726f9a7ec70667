"""One parametrized test over every golden fixture; a parser with no fixture fails."""

from __future__ import annotations

import json

import pytest

from aibench import parsers
from tests.golden import FIXTURES, OTHER_FOLDERS, actual, cases, expected_path

CASES = cases()


@pytest.mark.parametrize(("parser", "case"), CASES, ids=[f"{p}/{c.name}" for p, c in CASES])
def test_golden(parser: str, case) -> None:
    exp_file = expected_path(case)
    assert exp_file.exists(), f"{case} has no {exp_file.name}; create it with tests/golden.py"
    expected = json.loads(exp_file.read_text())
    got = actual(parser, case)
    if "error" in expected:
        assert "error" in got, f"{case.name}: expected a {expected['error']['type']}, got records"
        assert got["error"]["type"] == expected["error"]["type"]
        assert expected["error"]["reason"] in got["error"]["reason"]
        if expected["error"].get("line") is not None:
            assert got["error"]["line"] == expected["error"]["line"]
        assert got["partial"] == expected.get("partial", [])
    else:
        assert "records" in got, f"{case.name}: parser raised {got.get('error')}"
        assert got["records"] == expected["records"]


def test_every_parser_has_fixtures() -> None:
    covered = {p for p, _ in CASES}
    missing = [name for name in parsers.PARSERS.names() if name not in covered]
    assert not missing, f"parsers without golden fixtures: {missing}"


def test_every_fixture_folder_is_a_parser_or_named() -> None:
    """A folder that is not a parser's name would be skipped silently: it must be listed."""
    names = set(parsers.PARSERS.names())
    odd = [d.name for d in FIXTURES.iterdir() if d.is_dir() and d.name not in names]
    assert set(odd) <= set(OTHER_FOLDERS), f"fixture folders named after no parser: {odd}"


def test_every_fixture_folder_has_sources() -> None:
    folders = {c.parent for _, c in CASES} | {FIXTURES / name for name in OTHER_FOLDERS}
    for folder in folders:
        src = folder / "SOURCES.md"
        assert src.exists(), f"{folder.name} has no SOURCES.md"
        text = src.read_text()
        for f in folder.iterdir():
            if f.name.endswith(".expected.json") or f.name in {"SOURCES.md", "README.md"}:
                continue
            assert f.name in text, f"{folder.name}/{f.name} has no source line in SOURCES.md"
