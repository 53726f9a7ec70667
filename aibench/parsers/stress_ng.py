"""stress-ng: the metrics of ``stress-ng ... --metrics-brief`` (or ``--metrics``), as text
(the ``metrc:`` lines, on stdout with ``--stdout``) or as the ``--yaml FILE`` document.

Text: the lines ``stress-ng: metrc: [PID] <stressor> <bogo ops> <real time> <usr time>
<sys time> <bogo ops/s real> <bogo ops/s usr+sys> [<CPU used per instance %> <RSS max KB>]``
under the two header lines; ``--metrics`` adds the last two columns, ``--metrics-brief``
leaves out stressors with no bogo ops. The columns are read by the labels of the header
line (the first ``bogo ops/s`` over real time, the second over usr+sys time), so a
version that prints fewer cannot shift a value into another's name. stress-ng before
0.13 prints the table on ``info:`` lines; it is read the same. With ``--timestamp`` every
line carries the time of day after ``stress-ng:``. The ``miscellaneous metrics:`` block
after the table (figures of each stressor's own kind, "close calls per sec") is not read.
YAML: the ``metrics:`` list (``bogo-ops``, ``bogo-ops-per-second-real-time`` ...). Tested
on stress-ng 0.15.06 (Debian 12), captured here, and on public outputs of 0.03.11, 0.17.03
and 0.18.12 and of the colin-king PPA.

Emitted for the run (no dims): ``run_time`` (s, the ``run completed in`` length), with
``--times`` ``times_run_time``, ``cpu_time_available``, ``cpu_time_user``,
``cpu_time_system``, ``cpu_time_total`` (s) and ``load_average`` (dim ``minutes`` 1, 5,
15), and, from 0.13 on, ``stressors_passed``, ``stressors_failed``, ``stressors_skipped``
(count of instances). A run without ``--metrics``/``--metrics-brief`` gives these alone.

Emitted per stressor (dims ``stressor``): ``bogo_ops`` (count), ``bogo_ops_rate`` (ops/s,
over the wall-clock time), ``bogo_ops_rate_cpu`` (ops/s, over usr+sys time), ``wall_time``,
``usr_time``, ``sys_time`` (s) and, when printed, ``cpu_per_instance`` (%) and ``max_rss``
(KiB). With ``--rapl``, ``rapl_power`` (W, dims ``stressor`` and ``domain``: ``pkg-0``,
``dram``, ``core`` ...). Notes (warnings): the ``info:`` line saying perf counters cannot
be read (``--perf`` asked), ``metrics untrustworthy: N`` when N is not 0, and every
``warn:`` line that does not say something failed (``metrics-check: all bogo-op counters
are zero, data may be incorrect``, ``WARNING! using HPET clocksource ...``), in its words.

Lengths. stress-ng spells them its own way, by version: ``2.97s``, ``61.10s (1 min, 1.10
secs)``, ``5.25 secs``, ``1 min``, ``1 min, 1.14 secs``, ``1 hour, 30 mins``; all are read,
in the ``setting to a ... run per stressor`` line as in the ``run completed in`` one.

Failures. stress-ng prints ``unsuccessful run completed`` (or ``fail:`` lines, ``FAILED``/
``failed`` in its error lines, a ``failed: N`` summary with N > 0) when a stressor failed,
and nothing but its complaint for a bad option: both are a ToolFailure; the metrics table an
unsuccessful run still prints is kept as ``partial``. A run stopped by a signal still says
``successful run completed in T``; the text names the requested length, so a run that ended
before 90 % of it is a ToolFailure ("cut short"), with the rates measured until then as
``partial``. The YAML carries no requested length; read the text when that matters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from aibench.errors import ParseError, ToolFailure
from aibench.model import FrozenDims, Measurement, Note
from aibench.parsers import Parser, Record

TOOL = "stress-ng"

# "stress-ng: " then, with --timestamp, the time of day, then the kind of line
_PREFIX = r"^stress-ng:(?: [0-9:.\-]+)? "
_METRC = re.compile(_PREFIX + r"metrc: \[\d+\]\s+(.*)$")
_INFO = re.compile(_PREFIX + r"info: +\[\d+\] ?(.*)$")
_FAIL = re.compile(_PREFIX + r"fail: +\[\d+\] ?(.*)$")
_WARN = re.compile(_PREFIX + r"warn: +\[\d+\] ?(.*)$")
_KIND = re.compile(_PREFIX + r"(\w+):")
_COMPLETED = re.compile(r"\b(successful|unsuccessful) run completed in (.+?)\s*$")
# "2.97s", "300.13s (5 mins, 0.13 secs)", "1 min", "1 min, 0.02 secs", "1 hour, 30 mins"
_PLAIN_SECONDS = re.compile(r"^([0-9]+(?:\.[0-9]+)?)\s*s\b")
_SPELLED = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*(day|hour|min|sec)[a-z]*")
_ASKED = re.compile(r"(?:setting|defaulting) to a\s+(.+?)\s+run per stressor")
_SUMMARY = re.compile(r"^(failed|metrics untrustworthy): (\d+)")
# the stressor instances that passed, failed, were skipped (0.13+ prints them at the end)
_COUNTS = re.compile(r"^(passed|failed|skipped): (\d+)\b")
# --times: "for a 60.03s run time:", "5762.40s available CPU time", "7.71s user time ( 0.13%)"
_TIMES = re.compile(r"^for a ([0-9.]+)s run time:$")
_TIMES_ROW = re.compile(r"^([0-9.]+)s (available CPU|user|system|total) time\b")
_TIMES_NAME = {
    "available CPU": "cpu_time_available",
    "user": "cpu_time_user",
    "system": "cpu_time_system",
    "total": "cpu_time_total",
}
_LOAD = re.compile(r"^load average: ([0-9.]+) ([0-9.]+) ([0-9.]+)$")
_FAILED = re.compile(r"\b(FAILED|failed|FAIL:|aborted|cannot|not implemented)\b")
# a RAPL reading under "<stressor>:" with --rapl: "pkg-0   51.78 W"
_RAPL = re.compile(r"^\s+([A-Za-z][\w-]*)\s+([0-9]+(?:\.[0-9]+)?) W$")
_UNIT_SECONDS = {"day": 86400, "hour": 3600, "min": 60, "sec": 1}
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
# the column labels of the table's first header line, in the order printed
_LABEL = re.compile(r"bogo ops/s|bogo ops|real time|usr time|sys time|CPU used per|RSS Max")
_LABEL_COLUMN = {
    "bogo ops": ("bogo_ops", "count"),
    "real time": ("wall_time", "s"),
    "usr time": ("usr_time", "s"),
    "sys time": ("sys_time", "s"),
    "CPU used per": ("cpu_per_instance", "%"),
    "RSS Max": ("max_rss", "KiB"),
}
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


def parse(text: str) -> list[Record]:
    if text.lstrip().startswith("---") and "metrics:" in text:
        return _parse_yaml(text)
    return _parse_text(text)


@dataclass
class _Run:
    """What the text said so far."""

    out: list[Record] = field(default_factory=list)
    requested: float = 0.0
    completed: tuple[str, float] | None = None
    failures: list[str] = field(default_factory=list)
    misc: bool = False  # inside the "miscellaneous metrics:" block of the table
    rapl: str | None = None  # the stressor whose RAPL readings follow
    columns: tuple[tuple[str, str], ...] | None = None  # from the header line, once seen
    info_table: bool = False  # stress-ng before 0.13: the table on info: lines


def _parse_text(text: str) -> list[Record]:
    run = _Run()
    for n, line in enumerate(text.splitlines(), 1):
        m = _METRC.match(line)
        if m:
            _metrc(run, m.group(1), n)
            continue
        c = _COMPLETED.search(line)
        if c:
            run.completed = (c.group(1), _seconds(c.group(2), n))
            continue
        asked = _ASKED.search(line)
        if asked:
            run.requested = _seconds(asked.group(1), n)
            continue
        info = _INFO.match(line)
        if info:
            _info(run, info.group(1), n)
            continue
        fail = _FAIL.match(line)
        if fail or (_FAILED.search(line) and _loud(line)):
            run.failures.append((fail.group(1) if fail else line.split("] ", 1)[-1]).strip())
        elif warn := _WARN.match(line):
            # stress-ng's warnings beside its numbers ("metrics-check: all bogo-op counters
            # are zero, data may be incorrect", "using HPET clocksource"): kept as Notes
            run.out.append(Note(TOOL, warn.group(1).strip(), "warning", n))
    return _verdict(run, text)


def _loud(line: str) -> bool:
    """A stress-ng line that may carry a failure: not a debug (``-v``) or metrics line."""
    kind = _KIND.match(line)
    return "stress-ng:" in line and (kind is None or kind.group(1) not in ("debug", "metrc"))


def _seconds(spelled: str, n: int) -> float:
    """``2.97s``, ``300.13s (5 mins, 0.13 secs)``, ``60 second``, ``1 min``, ``1 min, 0.02
    secs``, ``1 hour, 30 mins``: the seconds they say."""
    plain = _PLAIN_SECONDS.match(spelled.strip())
    if plain:
        return float(plain.group(1))
    parts = _SPELLED.findall(spelled.split("(")[0])
    if not parts:
        raise ParseError(TOOL, f"a length stress-ng printed is not understood: {spelled!r}", n)
    return sum(float(v) * _UNIT_SECONDS[u] for v, u in parts)


def _header(text: str) -> tuple[tuple[str, str], ...]:
    """The columns a header line names; the first ``bogo ops/s`` is over real time, the
    second over usr+sys time (the second header line says so)."""
    out: list[tuple[str, str]] = []
    for label in _LABEL.findall(text):
        if label == "bogo ops/s":
            rated = any(m == "bogo_ops_rate" for m, _ in out)
            out.append(("bogo_ops_rate_cpu" if rated else "bogo_ops_rate", "ops/s"))
        else:
            out.append(_LABEL_COLUMN[label])
    return tuple(out)


def _metrc(run: _Run, rest: str, n: int) -> None:
    cells = rest.split()
    if cells[:1] == ["stressor"]:
        run.columns = _header(rest)
        return
    if not cells or cells[0].startswith("("):
        return
    if rest.strip() == "miscellaneous metrics:":
        run.misc = True  # per-stressor figures of its own kind ("close calls per sec"), not read
        return
    if not run.misc:
        run.out += _row(cells, n, run.columns)


def _info(run: _Run, rest: str, n: int) -> None:
    text = rest.strip()
    if text.startswith("stressor ") and "bogo ops" in text:  # before 0.13: on info: lines
        run.info_table = True
    if run.info_table:
        cells = text.split()
        if cells and (cells[0] == "stressor" or cells[0].startswith("(") or _is_row(cells)):
            _metrc(run, text, n)
            return
        run.info_table = False
    if _run_figures(run, text):
        return
    summary = _SUMMARY.match(text)
    rapl = _RAPL.match(rest) if run.rapl else None
    if rapl and run.rapl:
        dims = FrozenDims({"stressor": run.rapl, "domain": rapl.group(1)})
        run.out.append(Measurement(TOOL, "rapl_power", float(rapl.group(2)), "W", dims))
    elif re.fullmatch(r"[a-z][\w-]*:", text):
        run.rapl = text[:-1]  # with --rapl: "cpu:", then one line per power domain
    elif summary:
        if int(summary.group(2)) and summary.group(1) == "failed":
            run.failures.append(text)
        elif int(summary.group(2)):
            run.out.append(Note(TOOL, text, "warning", n))
    elif "perf counters" in text or "perf events" in text:
        run.out.append(Note(TOOL, text, "warning", n))  # --perf asked, nothing to show
    elif _FAILED.search(text):
        run.failures.append(text)


def _run_figures(run: _Run, text: str) -> bool:
    """The figures of the whole run on an ``info:`` line: ``--times`` (``times_run_time``,
    ``cpu_time_available`` / ``_user`` / ``_system`` / ``_total`` in s, ``load_average``
    with dim ``minutes``) and the instances ``stressors_passed`` / ``_failed`` /
    ``_skipped`` (count). A ``failed: N`` line is also left to the failure check."""
    m = _TIMES.match(text) or _TIMES_ROW.match(text)
    if m is not None:
        name = "times_run_time" if m.re is _TIMES else _TIMES_NAME[m.group(2)]
        run.out.append(Measurement(TOOL, name, float(m.group(1)), "s", FrozenDims({})))
        return True
    load = _LOAD.match(text)
    if load is not None:
        for minutes, value in zip((1, 5, 15), load.groups(), strict=True):
            dims = FrozenDims({"minutes": minutes})
            run.out.append(Measurement(TOOL, "load_average", float(value), "count", dims))
        return True
    counts = _COUNTS.match(text)
    if counts is not None:
        kind, n = counts.groups()
        run.out.append(Measurement(TOOL, f"stressors_{kind}", float(n), "count", FrozenDims({})))
        return kind != "failed"
    return False


def _verdict(run: _Run, text: str) -> list[Record]:
    out = run.out
    if run.completed is None:
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        if not out and first and "stress-ng:" not in first:
            raise ToolFailure(TOOL, first[:300], 1)
        raise ToolFailure(
            TOOL, "no 'run completed' line: stress-ng was killed or cut short", None, [*out]
        )
    status, seconds = run.completed
    out.append(Measurement(TOOL, "run_time", seconds, "s", FrozenDims({})))
    if status == "unsuccessful" or run.failures:
        why = " | ".join(run.failures) or "stress-ng says: unsuccessful run"
        raise ToolFailure(TOOL, why, None, [*out])
    if run.requested and seconds < 0.9 * run.requested:
        raise ToolFailure(
            TOOL,
            f"run cut short: it ended after {seconds:g} s of the {run.requested:g} s asked",
            None,
            [*out],
        )
    return out


def _is_row(cells: list[str]) -> bool:
    return len(cells) > 2 and all(re.fullmatch(r"[0-9.]+", c) for c in cells[1:])


def _row(
    cells: list[str], n: int, header: tuple[tuple[str, str], ...] | None = None
) -> list[Measurement]:
    name, values = cells[0], cells[1:]
    columns = header or _COLUMNS
    if header and len(values) != len(header):
        raise ParseError(
            TOOL, f"a metrics row has {len(values)} numbers, its header {len(header)}", n
        )
    if not header and len(values) not in (6, 8):
        raise ParseError(TOOL, f"a metrics row has {len(values)} numbers, not 6 or 8", n)
    dims = FrozenDims({"stressor": name})
    out = []
    for (metric, unit), cell in zip(columns, values, strict=False):
        try:
            v = float(cell)
        except ValueError:
            raise ParseError(TOOL, f"{metric} is not a number: {cell!r}", n) from None
        out.append(Measurement(TOOL, metric, v, unit, dims))
    return out


def _parse_yaml(text: str) -> list[Record]:
    try:
        doc: Any = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise ParseError(TOOL, f"not YAML: {e}", mark.line + 1 if mark else None) from None
    rows = doc.get("metrics") if isinstance(doc, dict) else None
    if not isinstance(rows, list) or not rows:
        raise ParseError(TOOL, "the YAML has no 'metrics' list (use --metrics-brief)")
    out: list[Record] = []
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
