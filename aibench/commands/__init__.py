"""CLI commands: one module per command, discovered, never listed by hand.

A module ``aibench/commands/<name>.py`` defines ``COMMAND`` (a :class:`Command`).
``add_arguments`` fills the command's argparse parser; ``run`` returns the exit code and
raises :class:`aibench.errors.UserError` for anything the user can fix. Modules must import
heavy libraries (pandas, matplotlib, asyncssh) inside ``run``, not at module level:
``aibench --help`` has to start fast.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from aibench.registry import Registry


@dataclass(frozen=True)
class Command:
    name: str
    help: str  # one line, shown in `aibench --help`
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    description: str = ""  # longer text for `aibench NAME --help`
    epilog: str = ""  # examples
    order: int = 50  # position in `aibench --help`


COMMANDS: Registry[Command] = Registry(
    "command", "aibench.commands", "COMMAND", key=lambda c: c.name
)
