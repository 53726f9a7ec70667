"""s5cmd's ``--stat`` summary, for the s5cmd parser.

As text (s5cmd 2.x, tab-separated; 1.x added a ``=========`` line under the head)::

    Operation	Total	Error	Success
    cp		5	2	3

and with ``--json`` one line per operation: ``{"operation":"cp","success":1,"error":0}``.
The counts are of s5cmd *commands* (a ``cp 'dir/*' s3://b/`` that copies three objects is
one), not of objects.
"""

from __future__ import annotations

import json
import re

from aibench.errors import ParseError

TOOL = "s5cmd"
_HEAD = re.compile(r"^Operation\s+Total\s+Error\s+Success\s*$")
_ROW = re.compile(r"^([a-z-]+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$")
_RULE = re.compile(r"^=+(\s+=+)*\s*$")


def stat_counts(text: str) -> dict[str, tuple[int, int]]:
    """Per operation, (commands that succeeded, commands that failed)."""
    out: dict[str, tuple[int, int]] = {}
    in_table = False
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if _HEAD.match(line):
            in_table = True
        elif in_table and (m := _ROW.match(line)):
            total, error, success = (int(m.group(i)) for i in (2, 3, 4))
            if total != error + success:
                raise ParseError(TOOL, f"--stat row: Total {total} is not Error + Success", n)
            out[m.group(1)] = (success, error)
        elif in_table and not _RULE.match(line):
            in_table = False
        elif line.startswith('{"operation"') and '"source"' not in line:
            out.update(_json_stat(line, n))
    return out


def _json_stat(line: str, n: int) -> dict[str, tuple[int, int]]:
    try:
        doc = json.loads(line)
    except json.JSONDecodeError:
        return {}
    if not isinstance(doc, dict):
        return {}
    ok, err = doc.get("success"), doc.get("error")
    if type(ok) is not int or type(err) is not int:
        return {}  # a result line (success is a bool), not the --stat summary
    if ok < 0 or err < 0:
        raise ParseError(TOOL, f"--stat line with a negative count: {line[:120]}", n)
    return {str(doc.get("operation", "")): (ok, err)}
