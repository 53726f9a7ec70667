"""Small helpers shared by parsers (kept pure: no I/O)."""

from __future__ import annotations

import json
import math
from typing import Any

from aibench.errors import ParseError


def json_document(tool: str, text: str) -> tuple[Any, int]:
    """Parse the JSON document in ``text``, skipping non-JSON lines before it.

    Tools such as fio print warnings before their JSON. Returns the document and the
    1-based line where it starts. A truncated or broken document is a ParseError with the
    line where decoding failed.
    """
    start = text.find("{")
    if start < 0:
        raise ParseError(tool, "no JSON object in the output", line=None)
    first_line = text.count("\n", 0, start) + 1
    try:
        doc, _end = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as exc:
        line = text.count("\n", 0, exc.pos) + 1
        raise ParseError(tool, f"invalid or truncated JSON: {exc.msg}", line=line) from None
    return doc, first_line


def cell_number(tool: str, cell: str, line: int | None) -> float:
    """The finite number in a table cell; a ParseError naming the cell when it holds none."""
    try:
        value = float(cell)
    except ValueError:
        raise ParseError(tool, f"not a number: {cell!r}", line=line) from None
    if not math.isfinite(value):
        raise ParseError(tool, f"not a finite number: {cell!r}", line=line)
    return value
