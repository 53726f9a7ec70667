"""fio in client/server mode (``fio --client=HOST ... --output-format=json JOBFILE``), and
its normal text output (``--output-format=normal``, the default).

fio's JSON in client mode has no ``jobs`` list: ``client_stats`` holds one entry per job
(group) per client, each with the ``hostname`` the client was given (``--client=ip:ADDR``
gives ``ADDR``), and one entry named ``All clients``: fio's own sum of every client. Its
``hostname`` is one of the clients' and means nothing. Tested with fio 3.33 on loopback
and on GlusterFS across namespace hosts.

Emitted, per client (dim ``client`` = its hostname) and for the aggregate (``client`` =
``all``), with dims ``job`` (the job's name) and ``direction`` (read | write | trim):

* ``bw`` (KiB/s), ``iops`` (IOPS; for the ``filecreate``/``filestat``/``filedelete``
  engines one I/O is one file, so this is files per second), ``io_bytes`` (B),
  ``runtime`` (ms);
* per client only: ``clat_mean`` and ``clat_percentile`` (ns, dim ``percentile``): fio
  gives the aggregate no percentiles.

fio adds every job of every group into its one ``All clients`` entry. With one group
(one job, or jobs without ``stonewall``) that entry is the aggregate. With several
groups (a job file of ``stonewall`` phases), a direction that only one group used keeps
fio's figure (a checkpoint's write phase, then its read phase); a direction several
groups share (create, stat and delete all count as reads) gets, per job, the sum of the
clients' figures instead, and a Note says so.

fio exits 0 when a job file is rejected (``fio: job global dropped``) and when a client
cannot connect: a document without ``client_stats``, an entry with ``error`` set, or
lines that say a job was dropped are a ToolFailure (the entries that did run are kept as
partial records). The caller that knows which clients it asked for checks that each
answered (the ``fio-cluster`` runner does).

Normal text (read by :mod:`aibench.parsers._fio_cluster_text`; tested with fio 3.33 and
public logs that kept only the ``All clients`` reports): the same metrics and dims. There
``client`` is the server's own hostname (fio's ``<host>`` marks), not the address given to
``--client``; fio prints a server's job reports unprefixed after the mark its last message
left, so when several marks come together the reports cannot be told apart: those
clients are ``report-1``, ``report-2`` ... in arrival order, with a Note. ``All clients``
prints its bandwidth as ``1738Mi``: MiB/s. A log of ``All clients`` reports alone gives
``client=all`` records with no ``job`` (several reports: the dim ``run``). ``fio: ...
failed/refused/error`` lines (a client that could not connect) are a ToolFailure with the
records in ``partial``; text with no report at all is a ParseError.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from aibench.errors import ParseError, ToolFailure
from aibench.model import FrozenDims, Measurement, Note, Scalar
from aibench.parsers import Parser, Record
from aibench.parsers._fio_cluster_text import CLIENT_TEXT, parse_client_text
from aibench.parsers._fio_common import number, percentile_key
from aibench.parsers._util import json_document

TOOL = "fio-cluster"
ALL = "All clients"
_DIRS = ("read", "write", "trim")
_FAILED = re.compile(r"^(?:<[^>]*> )?fio: (.*(?:dropped|failed|error).*)$", re.MULTILINE)


def _m(metric: str, value: float, unit: str, dims: Mapping[str, Scalar]) -> Measurement:
    return Measurement(TOOL, metric, value, unit, FrozenDims(dims))


def _did_io(sec: Mapping[str, Any], what: str, line: int) -> bool:
    return any(number(sec.get(k, 0), f"{what}.{k}", line) != 0 for k in ("io_bytes", "runtime"))


def _rates(
    sec: Mapping[str, Any], dims: Mapping[str, Scalar], what: str, line: int
) -> list[Measurement]:
    return [
        _m("bw", number(sec.get("bw"), f"{what}.bw", line), "KiB/s", dims),
        _m("iops", number(sec.get("iops"), f"{what}.iops", line), "IOPS", dims),
        _m("io_bytes", number(sec.get("io_bytes"), f"{what}.io_bytes", line), "B", dims),
        _m("runtime", number(sec.get("runtime"), f"{what}.runtime", line), "ms", dims),
    ]


def _latency(
    sec: Mapping[str, Any], dims: Mapping[str, Scalar], what: str, line: int
) -> list[Measurement]:
    lat = sec.get("clat_ns")
    if not isinstance(lat, Mapping) or number(lat.get("N", 0), f"{what}.clat_ns.N", line) == 0:
        return []
    out = [_m("clat_mean", number(lat.get("mean"), f"{what}.clat_ns.mean", line), "ns", dims)]
    pct = lat.get("percentile")
    if isinstance(pct, Mapping):
        for key, raw in pct.items():
            p = percentile_key(key, what, line, TOOL)
            if p > 0:
                value = number(raw, f"{what}.percentile[{key}]", line)
                out.append(_m("clat_percentile", value, "ns", {**dims, "percentile": p}))
    return out


def _entry(e: Mapping[str, Any], client: str, line: int) -> list[Measurement]:
    out: list[Measurement] = []
    job = str(e.get("jobname"))
    for d in _DIRS:
        sec = e.get(d)
        what = f"{client} {job}.{d}"
        if not isinstance(sec, Mapping) or not _did_io(sec, what, line):
            continue
        dims: dict[str, Scalar] = {"job": job, "direction": d, "client": client}
        out += _rates(sec, dims, what, line)
        if client != "all":
            out += _latency(sec, dims, what, line)
    return out


def _summed(entries: Sequence[Mapping[str, Any]], shared: set[str], line: int) -> list[Measurement]:
    """Per job, the clients' sums for the directions several groups share."""
    sums: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for e in entries:
        for d in shared:
            sec = e.get(d)
            what = f"{e.get('hostname')} {e.get('jobname')}.{d}"
            if not isinstance(sec, Mapping) or not _did_io(sec, what, line):
                continue
            acc = sums[(str(e.get("jobname")), d)]
            for k in ("bw", "iops", "io_bytes"):
                acc[k] += number(sec.get(k), f"{what}.{k}", line)
            acc["runtime"] = max(
                acc["runtime"], number(sec.get("runtime"), f"{what}.runtime", line)
            )
    out = []
    units = {"bw": "KiB/s", "iops": "IOPS", "io_bytes": "B", "runtime": "ms"}
    for (job, d), acc in sums.items():
        dims: dict[str, Scalar] = {"job": job, "direction": d, "client": "all"}
        out += [_m(k, acc[k], units[k], dims) for k in ("bw", "iops", "io_bytes", "runtime")]
    return out


def _aggregate(
    entries: Sequence[Mapping[str, Any]], total: Mapping[str, Any] | None, line: int
) -> list[Record]:
    if total is None:
        return []
    groups: dict[str, set[int]] = defaultdict(set)
    for e in entries:
        for d in _DIRS:
            sec = e.get(d)
            if isinstance(sec, Mapping) and _did_io(sec, d, line):
                groups[d].add(int(number(e.get("groupid", 0), "groupid", line)))
    shared = {d for d, g in groups.items() if len(g) > 1}
    out: list[Record] = []
    for d, g in groups.items():
        if d in shared:
            continue
        job = next(str(e.get("jobname")) for e in entries if int(e.get("groupid", 0)) in g)
        sec = total.get(d)
        if isinstance(sec, Mapping) and _did_io(sec, f"{ALL}.{d}", line):
            dims: dict[str, Scalar] = {"job": job, "direction": d, "client": "all"}
            out += _rates(sec, dims, f"{ALL}.{d}", line)
    if shared:
        out += _summed(entries, shared, line)
        out.append(
            Note(
                TOOL,
                f"fio's '{ALL}' adds {len(set().union(*groups.values()))} job groups in "
                f"{', '.join(sorted(shared))}: the aggregate of each job there is the sum of "
                "its clients",
                kind="info",
            )
        )
    return out


def parse(text: str) -> list[Record]:
    if not text.lstrip().startswith("{") and CLIENT_TEXT.search(text):
        return parse_client_text(text)
    doc, line = json_document(TOOL, text)
    stats = doc.get("client_stats") if isinstance(doc, Mapping) else None
    if not isinstance(stats, list):
        raise ParseError(TOOL, "no client_stats: not fio client/server JSON", line=line)
    entries = [e for e in stats if isinstance(e, Mapping) and e.get("jobname") != ALL]
    total = next((e for e in stats if isinstance(e, Mapping) and e.get("jobname") == ALL), None)
    if len(entries) == 1 and total is None:
        total = entries[0]  # one client, one job: fio prints no sum
    records: list[Record] = []
    for e in entries:
        records += _entry(e, str(e.get("hostname", "")), line)
    records += _aggregate(entries, total, line)
    head = text[: text.find("{")]
    problems = [m.group(1) for m in _FAILED.finditer(head)]
    problems += [
        f"{e.get('hostname')} job {e.get('jobname')}: error {e.get('error')}"
        for e in entries
        if e.get("error")
    ]
    if not entries:
        problems.append("no client reported a job")
    if problems:
        partial: list[object] = list(records)
        raise ToolFailure(TOOL, "; ".join(dict.fromkeys(problems)), partial=partial)
    return records


def detect(text: str) -> bool:
    head = text[:65536]
    if '"client_stats"' in head[:4096] and '"fio version"' in head[:4096]:
        return True
    return not head.lstrip().startswith("{") and CLIENT_TEXT.search(head) is not None


PARSER = Parser(
    name=TOOL,
    parse=parse,
    description="fio client/server JSON or text (fio --client ...): per client and All clients",
    detect=detect,
)
