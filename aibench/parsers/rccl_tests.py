"""RCCL-tests (ROCm's fork of NCCL-tests): the NCCL-tests table reader under its own name.

Reads what ``all_reduce_perf`` & co. of rccl-tests print: the same header, table and
footer as NCCL-tests (see :mod:`aibench.parsers.nccl_tests` for the contract), plus the
collectives only RCCL has (``alltoallv``) and the ``rccl-tests: Version ...`` header line.
Tested on real public outputs: ROCm 4.2 rccl-tests on 2 x MI100 (colon-style header,
``0e+00`` error column) and rccl-tests HEAD:e1b8a3a on 8 x MI355X (a table its publisher
cut, which must be a ParseError: its footer is not the mean of the rows left) and ROCm
6.2 rccl-tests on 8 x MI300X VF (cut by us inside a row: a ToolFailure with the complete
rows). Emits the NCCL-tests records with ``tool: rccl-tests``.

Detected by ``aibench parse --tool auto`` when the log says it is RCCL's (an NCCL-tests
log otherwise): the ``rccl-tests: Version`` line, an RCCL banner (``RCCL version``,
``librccl``), an AMD device name (``AMD Instinct MI355X``) or the ``Device 738c`` that HIP
prints for a GPU it cannot name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from aibench.errors import ParseError, ToolFailure
from aibench.model import Measurement, Note
from aibench.parsers import Parser, Record
from aibench.parsers.nccl_tests import _table_log, rccl_marked
from aibench.parsers.nccl_tests import parse as parse_nccl

TOOL = "rccl-tests"


def _own(records: Sequence[object]) -> list[Any]:
    """The records with this tool's name (measurements and notes; facts name a source)."""
    return [
        dataclasses.replace(r, tool=TOOL) if isinstance(r, Measurement | Note) else r
        for r in records
    ]


def parse(text: str) -> list[Record]:
    try:
        return _own(parse_nccl(text))
    except ToolFailure as exc:
        raise ToolFailure(TOOL, exc.reason, exc.line, partial=_own(exc.partial)) from None
    except ParseError as exc:
        raise ParseError(TOOL, exc.reason, exc.line) from None


PARSER = Parser(
    name=TOOL,
    parse=parse,
    description="RCCL-tests text output (ROCm fork of NCCL-tests; same tables)",
    detect=lambda text: _table_log(text) and rccl_marked(text),
)
