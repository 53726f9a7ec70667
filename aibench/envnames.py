"""The name of an environment variable: one rule wherever aibench takes one.

A name is a letter or ``_`` followed by letters, digits and ``_`` (POSIX's portable names,
in either case). It is checked where a name enters (a suite's ``secret_env``, the
inventory's ``secret_env`` keys and ``*_env`` fields, a step's ``env`` and ``mca``
options) and again by each executor before it sets a variable on a node, where the name
goes into a command line (the SSH wrapper) or a Pod spec. A trailing line break is no
part of a name (``re.fullmatch``, not ``$``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# For pydantic's Field(pattern=...), whose regex engine reads "$" as the end of the text.
PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def is_env_name(name: str) -> bool:
    return _NAME.fullmatch(name) is not None


def check_env_names(names: Iterable[str]) -> None:
    """ValueError naming the first name that is not a variable name."""
    for name in names:
        if not is_env_name(name):
            raise ValueError(f"invalid environment variable name {name!r}")


def check_env(v: dict[str, str]) -> dict[str, str]:
    """A step's variables (``env:``, ``mca:``): names by the rule, values of one line."""
    check_env_names(v)
    for key, val in v.items():
        if "\n" in val or "\0" in val:
            raise ValueError(f"the value of {key} holds a line break")
    return v
