"""What the burn-in runners share: validated names and paths (one invocation per node is
:func:`aibench.runners.base.each_node`)."""

from __future__ import annotations

import re

from aibench.inventory import Node

TOKEN = re.compile(r"^[A-Za-z0-9_.%+-]+$")


def check_token(v: str, what: str) -> str:
    if not TOKEN.match(v):
        raise ValueError(f"{what} must be letters, digits and _.%+- only: {v!r}")
    return v


def check_dir(v: str | None) -> str | None:
    if v is not None and (not v.startswith("/") or any(c in v for c in " :\n\t")):
        raise ValueError(f"bin_dir must be an absolute path without spaces or ':': {v!r}")
    return v


def binary(name: str, bin_dir: str | None, node: Node, fact: str) -> str:
    """``bin_dir/name``, else ``<node fact>/name``, else ``name`` (found on PATH)."""
    directory = bin_dir or node.facts.get(fact)
    return f"{str(directory).rstrip('/')}/{name}" if directory else name
