"""fio: flexible I/O tester.

Reads the output of ``fio ... --output-format=json`` (also ``json+``), of the normal
text output (``--output-format=normal``, the default) and of ``--output-format=terse``
(terse version 3). Tested on real output: JSON of fio 2.1.3, 2.18, 3.16 and 3.33; normal
text of fio 3.x (3.0-era documentation examples, 3.25, 3.28, 3.33; the 2.x text format is
read by the same code but no real 2.x text capture was tested); terse of 3.33. Lines
printed before the JSON document (warnings, errors) are skipped and kept for the error
message.

Emitted per job and per direction with IO (a direction whose section is all zeros, such
as the write section of a read job, is not emitted):

* ``bw`` (KiB/s, fio's ``bw``), ``iops`` (IOPS), ``io_bytes`` (B), ``runtime`` (ms);
* ``lat_mean``, ``lat_stdev``, ``clat_mean``, ``slat_mean``: in ``ns`` for fio 3.x
  (``*_ns`` objects, ``(nsec)`` in text) and ``us`` for older schemas (``(usec)``);
  a latency fio did not measure (no samples) is not emitted;
* ``clat_percentile`` with dim ``percentile`` (a float: 99.0, 99.9 ...), same unit.
  For the ``sync`` direction (fsync/fdatasync) fio reports one latency, the sync call's:
  it is emitted as ``lat_mean``/``lat_stdev`` and its percentiles as ``clat_percentile``.

Dims: ``job`` (the job name), ``direction`` (read | write | trim | sync), and from the
job options when the output carries them: ``rw``, ``bs``, ``iodepth`` (int),
``ioengine``, ``numjobs`` (int), ``direct`` (bool).

A job with a non-zero ``error`` is a ToolFailure whose message holds fio's error lines
and the job's error code; the records of the output are in ``partial``.

A run cut short is a ToolFailure too, with fio's own words as the reason and what it
reported in ``partial``: ``fio: terminating on signal N`` (Ctrl-C, or the SIGTERM of a
timeout: fio then still prints a complete-looking report for the part that ran, in every
output format), ``fio: pid=N, got signal=N`` (a job process killed) and fio's ``... it
appears to be stuck. Doing forceful exit of this job.``. Tested on fio 3.33 stopped by
``timeout -s INT`` and ``timeout`` (SIGTERM), JSON and text.

Several runs appended to one log (the same job file run twice, say; text, or JSON
documents one after the other) are numbered: every record then has the dim ``run`` (1, 2
...), in the order of the log; a log of one run has no ``run`` dim.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import replace

from aibench.errors import ParseError, ToolFailure
from aibench.model import FrozenDims, Measurement
from aibench.parsers import Parser
from aibench.parsers._fio_common import TOOL
from aibench.parsers._fio_json import parse_json
from aibench.parsers._fio_terse import is_terse, parse_terse


def _is_json(text: str) -> bool:
    # fio's JSON starts with "{" on a line of its own; text and terse never do.
    return text.lstrip().startswith("{") or "\n{" in text


# fio's client/server driver: "hostname=H, be=0, 64-bit, ..." per server, "All clients:"
_CLIENT_TEXT = re.compile(
    r"^hostname=\S+, be=\d+, \d+-bit, os=\S+, arch=\S+, fio=fio-|^All clients: \(groupid=",
    re.MULTILINE,
)
# fio's own words when a run was stopped before its end (backend.c, fio.c)
_CUT = re.compile(
    r"^fio: (?:terminating on signal \d+|pid=\d+, got signal=\d+)"
    r"|^fio: job .* appears to be stuck\. Doing forceful exit of this job\.",
    re.MULTILINE,
)


def parse(text: str) -> list[Measurement]:
    cut = _CUT.search(text) if "fio: " in text else None
    if cut is None:
        return _parse(text)
    no = text.count("\n", 0, cut.start()) + 1
    words = cut[0].strip()
    reason = f"{words}: the run was cut short, its numbers cover only the part that ran"
    try:
        records = _parse(text)
    except ToolFailure as exc:
        raise ToolFailure(TOOL, f"{words}; {exc.reason}", no, partial=exc.partial) from None
    except ParseError:
        records = []  # stopped before it reported anything readable: the signal says why
    raise ToolFailure(TOOL, reason, no, partial=list(records))


# fio's JSON document opens with "{" alone on a line; nested objects never start a line
_DOC_START = re.compile(r"^\{[ \t]*$", re.MULTILINE)


def _parse(text: str) -> list[Measurement]:
    if not _is_json(text) and _CLIENT_TEXT.search(text):
        raise ParseError(TOOL, "fio client/server output (--client): read it with fio-cluster")
    if _is_json(text):
        return _json_runs(text)
    if is_terse(text):
        return parse_terse(text)
    from aibench.parsers._fio_text import parse_text  # its patterns are compiled on import

    return parse_text(text)


def _json_runs(text: str) -> list[Measurement]:
    """One JSON document, or several appended (each run's records with the dim ``run``)."""
    starts = [m.start() for m in _DOC_START.finditer(text)]
    if len(starts) < 2:
        return parse_json(text)
    bounds = [0, *starts[1:], len(text)]
    out: list[Measurement] = []
    failed: list[tuple[int, str]] = []
    for run, (a, b) in enumerate(itertools.pairwise(bounds), 1):
        offset = text.count("\n", 0, a)
        try:
            records = parse_json(text[a:b])
        except ToolFailure as exc:
            records = [r for r in exc.partial if isinstance(r, Measurement)]
            failed.append(((exc.line or 1) + offset, f"run {run}: {exc.reason}"))
        except ParseError as exc:
            line = (exc.line or 1) + offset
            raise ParseError(TOOL, f"run {run}: {exc.reason}", line) from None
        out += [replace(r, dims=FrozenDims({**r.dims, "run": run})) for r in records]
    if failed:
        raise ToolFailure(TOOL, "; ".join(w for _, w in failed), failed[0][0], partial=[*out])
    return out


_DETECT = re.compile(
    r'"fio version"|^\S[^\n]*: \(groupid=\d+, jobs=\d+\): err=|^\S[^\n]*: \(g=\d+\): rw='
    r"|^[34];fio-\d|^Run status group \d+ \(all jobs\):",
    re.MULTILINE,
)


def detect(text: str) -> bool:
    head = text[:65536]
    # client/server mode (no "jobs" list, several hosts' reports): the fio-cluster parser
    return (
        _DETECT.search(head) is not None
        and '"client_stats"' not in head
        and _CLIENT_TEXT.search(head) is None
    )


PARSER = Parser(
    name="fio",
    parse=parse,
    description="fio JSON, json+, normal text and terse v3 output",
    detect=detect,
)
