"""CLI commands: one module per command, discovered, never listed by hand.

A module ``aibench/commands/<name>.py`` defines ``COMMAND`` (a :class:`Command`).
``add_arguments`` fills the command's argparse parser; ``run`` returns the exit code and
raises :class:`aibench.errors.UserError` for anything the user can fix. Modules must import
heavy libraries (pandas, matplotlib, asyncssh) inside ``run``, not at module level:
``aibench --help`` has to start fast.
"""

from __future__ import annotations

import argparse
import gc
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
    # True: ``run`` calls :func:`startup_over` itself once its inputs are loaded (the
    # collector stays off until then); False: the command starts with it on
    startup: bool = False


COMMANDS: Registry[Command] = Registry(
    "command", "aibench.commands", "COMMAND", key=lambda c: c.name
)


def startup_over() -> None:
    """End of a command's start-up: collection of cyclic garbage starts.

    ``aibench`` starts with the collector off: importing and validating make tens of
    thousands of objects that all live to the end, and the collections they set off
    (each scanning every object made so far) were a twentieth of a second of a run. What
    start-up made is then moved out of the collector's way for good (``gc.freeze``).
    Does nothing where the collector is on already (a command called from Python).
    """
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
