"""stress-ng: the metrics of ``stress-ng ... --metrics-brief`` (or ``--metrics``), as text
(the ``metrc:`` lines, on stdout with ``--stdout``) or as the ``--yaml FILE`` document.

Text: the lines ``stress-ng: metrc: [PID] <stressor> <bogo ops> <real time> <usr time>
<sys time> <bogo ops/s real> <bogo ops/s usr+sys> [<CPU used per instance %> <RSS max KB>]``
under the two header lines; ``--metrics`` adds the last two columns, ``--metrics-brief``
leaves out stressors with no bogo ops. YAML: the ``metrics:`` list (``bogo-ops``,
``bogo-ops-per-second-real-time`` ...). Tested on stress-ng 0.15.06 (Debian 12), captured
here.

Emitted per stressor (dims ``stressor``): ``bogo_ops`` (count), ``bogo_ops_rate`` (ops/s,
over the wall-clock time), ``bogo_ops_rate_cpu`` (ops/s, over usr+sys time), ``wall_time``,
``usr_time``, ``sys_time`` (s) and, when printed, ``cpu_per_instance`` (%) and ``max_rss``
(KiB).

Failures. stress-ng prints ``unsuccessful run completed`` (or ``FAILED``/``failed`` lines)
when a stressor failed, and nothing but its complaint for a bad option: both are a
ToolFailure. A run stopped by a signal still says ``successful run completed in T s``;
the text names the requested length (``setting to a N second run per stressor``), so a run
that ended before 90 % of it is a ToolFailure ("cut short"), with the rates measured until
then as ``partial``. The YAML carries no requested length; read the text when that matters.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from aibench.errors import ParseError, ToolFailure
from aibench.model import FrozenDims, Measurement
from aibench.parsers import Parser

TOOL = "stress-ng"

_METRC = re.compile(r"^stress-ng: metrc: \[\d+\]\s+(.*)$")
_SETTING = re.compile(r"setting to a (?:(\d+) (?:day|hour|min|second)s?,?\s*)+run per stressor")
_REQUESTED = re.compile(r"(\d+) (day|hour|min|second)s?")
_COMPLETED = re.compile(r"\b(successful|unsuccessful) run completed in ([0-9]+(?:\.[0-9]+)?)\s*s")
_FAILED = re.compile(r"\b(FAILED|failed|FAIL:|aborted|cannot|not implemented)\b")
_UNIT_SECONDS = {"day": 86400, "hour": 3600, "min": 60, "second": 1}
# (metric, unit) of the number columns of a text row, in order
_COLUMNS = (
    ("bogo_ops", "count"),
    ("wall_time", "s"),
    ("usr_time", "s"),
    ("sys_time", "s"),
    ("bogo_ops_rate", "ops/s"),
    ("bogo_ops_rate_cpu", "ops/s"),
    ("cpu_per_instance", "%"),
    ("max_rss", "KiB"),
)
_YAML_KEYS = {
    "bogo-ops": ("bogo_ops", "count"),
    "wall-clock-time": ("wall_time", "s"),
    "user-time": ("usr_time", "s"),
    "system-time": ("sys_time", "s"),
    "bogo-ops-per-second-real-time": ("bogo_ops_rate", "ops/s"),
    "bogo-ops-per-second-usr-sys-time": ("bogo_ops_rate_cpu", "ops/s"),
    "cpu-usage-per-instance": ("cpu_per_instance", "%"),
    "max-rss": ("max_rss", "KiB"),
}


def parse(text: str) -> list[Measurement]:
    if text.lstrip().startswith("---") and "metrics:" in text:
        return _parse_yaml(text)
    return _parse_text(text)


def _parse_text(text: str) -> list[Measurement]:
    out: list[Measurement] = []
    requested = 0.0
    completed: tuple[str, float] | None = None
    failures: list[str] = []
    for n, line in enumerate(text.splitlines(), 1):
        m = _METRC.match(line)
        if m:
            cells = m.group(1).split()
            if not cells or cells[0] == "stressor" or cells[0].startswith("("):
                continue
            out += _row(cells, n)
            continue
        if "setting to a" in line and "run per stressor" in line:
            requested = float(sum(int(v) * _UNIT_SECONDS[u] for v, u in _REQUESTED.findall(line)))
        c = _COMPLETED.search(line)
        if c:
            completed = (c.group(1), float(c.group(2)))
        elif line.startswith("stress-ng: fail:") or (
            "stress-ng:" in line and _FAILED.search(line) and "metrc:" not in line
        ):
            failures.append(line.split("] ", 1)[-1].strip())
    if completed is None:
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        if not out and first and "stress-ng:" not in first:
            raise ToolFailure(TOOL, first[:300], 1)
        raise ToolFailure(
            TOOL, "no 'run completed' line: stress-ng was killed or cut short", None, [*out]
        )
    status, seconds = completed
    if status == "unsuccessful" or failures:
        why = " | ".join(failures) or "stress-ng says: unsuccessful run"
        raise ToolFailure(TOOL, why, None, [*out])
    if requested and seconds < 0.9 * requested:
        raise ToolFailure(
            TOOL,
            f"run cut short: it ended after {seconds:g} s of the {requested:g} s asked",
            None,
            [*out],
        )
    if not out:
        raise ParseError(TOOL, "no metrics rows: run stress-ng with --metrics-brief", None)
    return out


def _row(cells: list[str], n: int) -> list[Measurement]:
    name, values = cells[0], cells[1:]
    if len(values) not in (6, 8):
        raise ParseError(TOOL, f"a metrics row has {len(values)} numbers, not 6 or 8", n)
    dims = FrozenDims({"stressor": name})
    out = []
    for (metric, unit), cell in zip(_COLUMNS, values, strict=False):
        try:
            v = float(cell)
        except ValueError:
            raise ParseError(TOOL, f"{metric} is not a number: {cell!r}", n) from None
        out.append(Measurement(TOOL, metric, v, unit, dims))
    return out


def _parse_yaml(text: str) -> list[Measurement]:
    try:
        doc: Any = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise ParseError(TOOL, f"not YAML: {e}", mark.line + 1 if mark else None) from None
    rows = doc.get("metrics") if isinstance(doc, dict) else None
    if not isinstance(rows, list) or not rows:
        raise ParseError(TOOL, "the YAML has no 'metrics' list (use --metrics-brief)")
    out: list[Measurement] = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or not isinstance(row.get("stressor"), str):
            raise ParseError(TOOL, f"metrics[{i}] has no stressor name")
        dims = FrozenDims({"stressor": row["stressor"]})
        for key, (metric, unit) in _YAML_KEYS.items():
            if key not in row:
                continue
            v = row[key]
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise ParseError(TOOL, f"metrics[{i}].{key} is not a number: {v!r}")
            out.append(Measurement(TOOL, metric, v, unit, dims))
    return out


def _detect(text: str) -> bool:
    return (
        text.lstrip().startswith("stress-ng:")
        or "stress-ng: metrc:" in text
        or ("stress-ng-version:" in text and "metrics:" in text)
    )


PARSER = Parser("stress-ng", parse, "stress-ng stressor metrics (text or --yaml)", _detect)
