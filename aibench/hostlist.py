"""Hostlist expressions (``gpu[001-128]``, ``rack[1-2]-n[01-04]``, ``a,b,c[1,3]``).

A thin wrapper around the python-hostlist library (the same syntax as Slurm's
``scontrol show hostnames``) that turns its errors into ``ValueError`` with the
expression in the message, and caps the expansion so that a typo such as
``n[1-99999999]`` cannot exhaust memory.
"""

from __future__ import annotations

import hostlist as _hl

MAX_HOSTS = 100_000


def expand(expr: str) -> list[str]:
    """Every name of ``expr``, in order, duplicates kept out."""
    try:
        names = _hl.expand_hostlist(expr, allow_duplicates=False, sort=False)
    except _hl.BadHostlist as exc:
        raise ValueError(f"invalid hostlist {expr!r}: {exc}") from None
    if not names:
        raise ValueError(f"hostlist {expr!r} names no host")
    if len(names) > MAX_HOSTS:
        raise ValueError(f"hostlist {expr!r} names {len(names)} hosts (at most {MAX_HOSTS})")
    return [str(n) for n in names]


def collect(names: list[str]) -> str:
    """The shortest expression for ``names`` (``["n1", "n2"]`` -> ``n[1-2]``)."""
    return str(_hl.collect_hostlist(names))


def is_expression(value: str) -> bool:
    return "[" in value or "," in value
