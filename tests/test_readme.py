"""The README's commands table: one Markdown table (a blank line ends a table, and the rows
after it render as plain text) with a row for every command aibench has."""

from __future__ import annotations

import re

from aibench.commands import COMMANDS
from tests.conftest import ROOT


def _commands_section() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Commands\n", 1)[1].split("\n#", 1)[0]
    return section.strip("\n").splitlines()


def test_the_commands_table_is_one_table_with_every_command() -> None:
    lines = _commands_section()
    start = next(i for i, line in enumerate(lines) if line.startswith("| command"))
    table = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        table.append(line)
    rest = lines[start + len(table) :]
    assert not any(line.startswith("| `aibench") for line in rest), (
        "a row of the commands table after a blank line (it renders as plain text)"
    )
    named = {m.group(1) for line in table if (m := re.match(r"\| `aibench (\w+)", line))}
    assert named == set(COMMANDS.names())
