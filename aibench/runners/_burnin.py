"""What the burn-in runners share: validated names and paths, one invocation per node."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from aibench.inventory import Node
from aibench.runners.base import Invocation, ProcessSpec, Slot, label_for

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


def each_node(
    step: str,
    tool: str,
    parser: str,
    group: Sequence[Node],
    slot: Slot,
    argv_for: Callable[[Node], Sequence[str]],
    timeout: float,
) -> list[Invocation]:
    """One invocation per node of the group, all at once (placement ``each``)."""
    return [
        Invocation(
            step=step,
            tool=tool,
            nodes=(node.name,),
            label=label_for((node.name,)),
            repeat=slot.repeat,
            round=slot.round,
            parser=parser,
            client=ProcessSpec(node.name, tuple(argv_for(node)), timeout=timeout),
        )
        for node in group
    ]
