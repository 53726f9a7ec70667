"""Parser throughput in MB/s on large inputs that repeat real fixtures.

Every registered parser gets at least one row. Each input is built from a real captured
output in ``tests/fixtures/<parser>/`` (the golden fixtures, sources in each folder's
SOURCES.md) and is checked to be a valid input for the tool: it is parsed once before
timing, and a row whose input does not parse prints ``n/a`` with the parser's reason
instead of a figure. Inputs are built in one of these ways (the ``input`` column):

* ``rows``: the body rows of each results table repeated inside that table of one log
  (nccl-tests text: the ``Avg bus bandwidth`` footer stays the mean of the rows; nccl-tests
  ``-J`` JSON: the ``results`` list repeated);
* ``runs``: whole outputs one after the other, as a log of consecutive runs holds them
  (nccl-tests, fio normal text and terse, perftest, dmesg);
* ``jobs``: fio JSON, one document whose ``jobs`` list repeats the fixture's jobs;
* ``devices``: one listing of many adapters or GPUs (ibstat CA blocks, ibv_devinfo hca_id
  blocks, nvidia-smi -q GPU sections with ``Attached GPUs`` set to their number,
  nvidia-smi --query-gpu rows), each copy renamed or renumbered;
* ``run``: one long iperf run: the first interval's lines repeated with later times,
  then the final lines over the whole span (text and CSV); iperf3 ``-J``: the
  ``intervals`` list repeated (one log holding several runs is an error for iperf);
* ``outputs``: tools whose output is one bounded document per run or per node (MLPerf
  logs, dcgmi, nvidia-smi table and topo, node facts): the fixture parsed once per copy,
  as for a fleet of nodes; the per-call cost is part of the figure.

Each input is parsed ``--repeat`` times and the best CPU time (``time.process_time``) is
kept: it counts this process only, but other load on the machine still moves it (shared
caches and cores; expect some 10-20 % on a busy machine). MB/s uses 1 MB = 10^6 bytes.
Per row the columns are: input size, best CPU seconds, MB/s, records and thousands of
records per second; ``rec-only`` is the MB/s the parser would reach if reading the text
cost nothing: the input size over the time to build the same records again (the same
Measurement or Fact constructor with the same values and the parser's own dims objects,
so not even the dims are rebuilt). It is the bound that CPython object creation sets,
and for record-dense formats (nccl-tests rows: 8 records per 130-byte row) it is below
the target. ``target`` is PASS or MISS against the 50 MB/s target for text parsers
(``-`` for JSON inputs), with the rec-only bound when that bound is itself below the
target.

    python bench/parse_throughput.py                 # every parser, ~20 MB per input
    python bench/parse_throughput.py --mb 5 --only fio
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aibench import parsers  # noqa: E402
from aibench.errors import OutputError  # noqa: E402
from aibench.model import Fact, Measurement  # noqa: E402

FIX = ROOT / "tests" / "fixtures"
TARGET_MB_S = 50.0

Builder = Callable[[str, int], list[str]]


def _copies(text: str, size: int) -> int:
    return max(1, size // max(1, len(text.encode())))


def runs(text: str, size: int) -> list[str]:
    """Whole outputs one after the other, in one text."""
    if not text.endswith("\n"):
        text += "\n"
    return [text * _copies(text, size)]


def outputs(text: str, size: int) -> list[str]:
    """The same output once per call, as many nodes or runs produce them."""
    return [text] * _copies(text, size)


def nccl_rows(text: str, size: int) -> list[str]:
    """Each results table's body rows repeated inside the table (footers still hold)."""
    header = re.compile(r"^#.*\bsize\b.*\bbusbw\b")
    pieces: list[str | list[str]] = []  # a line kept as is, or the rows of one table
    in_table = False
    for ln in text.splitlines(keepends=True):
        s = ln.strip()
        if in_table and s and not s.startswith("#") and s.split()[0].isdigit():
            if not isinstance(pieces[-1], list):
                pieces.append([])
            rows = pieces[-1]
            assert isinstance(rows, list)
            rows.append(ln)
            continue
        if s.startswith("#"):
            if header.match(s):
                in_table = True
            elif pieces and isinstance(pieces[-1], list):
                in_table = False  # the footer after the rows
        pieces.append(ln)
    row_bytes = sum(len("".join(p).encode()) for p in pieces if isinstance(p, list))
    if row_bytes == 0:
        raise ValueError("no results table rows in the fixture")
    k = max(1, (size - len(text.encode())) // row_bytes + 1)
    return ["".join("".join(p) * k if isinstance(p, list) else p for p in pieces)]


def nccl_json_rows(text: str, size: int) -> list[str]:
    """The ``results`` list of a ``-J`` document repeated (the average is unchanged)."""
    doc = json.loads(text)
    one = len(json.dumps(doc).encode())
    per_row = max(1, (len(json.dumps({**doc, "results": doc["results"] * 2})) - one))
    doc["results"] = doc["results"] * max(1, size // per_row)
    return [json.dumps(doc)]


def fio_jobs(text: str, size: int) -> list[str]:
    """One fio JSON document whose ``jobs`` list repeats the fixture's jobs."""
    doc = json.loads(text[text.index("{") :])
    one = len(json.dumps(doc, indent=2))
    per_copy = max(1, len(json.dumps({**doc, "jobs": doc["jobs"] * 2}, indent=2)) - one)
    doc["jobs"] = doc["jobs"] * max(1, size // per_copy)
    return [json.dumps(doc, indent=2)]


def _blocks(text: str, start: re.Pattern[str]) -> tuple[str, list[str]]:
    """(head, blocks): the text split before each line that matches ``start``."""
    lines = text.splitlines(keepends=True)
    idx = [i for i, ln in enumerate(lines) if start.match(ln)]
    if not idx:
        raise ValueError(f"no line matching {start.pattern!r} in the fixture")
    head = "".join(lines[: idx[0]])
    blocks = ["".join(lines[a:b]) for a, b in zip(idx, [*idx[1:], len(lines)], strict=True)]
    return head, blocks


def _renamed_blocks(
    text: str, size: int, start: str, rename: Callable[[str, int], str]
) -> tuple[str, str, int]:
    """(head, body, n): the fixture's blocks (split before lines matching ``start``)
    repeated to about ``size`` bytes, block number i renamed by ``rename(block, i)``."""
    head, blocks = _blocks(text, re.compile(start))
    k = _copies("".join(blocks), size)
    body = [rename(b, i) for i, b in enumerate(blocks * k)]
    return head, "".join(body), len(body)


def ibstat_cas(text: str, size: int) -> list[str]:
    """One ibstat listing of many adapters: the fixture's CA blocks, renamed."""
    head, body, _ = _renamed_blocks(
        text, size, r"^CA '", lambda b, i: re.sub(r"^CA '[^']*'", f"CA 'mlx5_{i}'", b, count=1)
    )
    return [head + body]


def ibv_hcas(text: str, size: int) -> list[str]:
    """One ibv_devinfo listing of many adapters: the fixture's hca_id blocks, renamed."""
    head, body, _ = _renamed_blocks(
        text,
        size,
        r"^hca_id:",
        lambda b, i: re.sub(r"^hca_id:\s*\S+", f"hca_id:\tmlx5_{i}", b, count=1),
    )
    return [head + body]


def smi_gpus(text: str, size: int) -> list[str]:
    """One nvidia-smi -q report of many GPUs: the fixture's GPU sections with new bus ids,
    and ``Attached GPUs`` set to their number."""
    head, body, n = _renamed_blocks(
        text,
        size,
        r"^GPU [0-9A-Fa-f]{8}:",
        lambda b, i: re.sub(r"^GPU \S+", f"GPU {i // 256:08X}:{i % 256:02X}:00.0", b, count=1),
    )
    head = re.sub(r"(Attached GPUs\s*:\s*)\d+", rf"\g<1>{n}", head, count=1)
    return [head + body]


def query_gpu_rows(text: str, size: int) -> list[str]:
    """One nvidia-smi --query-gpu CSV of many GPUs: the header once, the fixture's rows
    repeated with ``index`` renumbered."""
    lines = text.splitlines()
    header = [h.strip() for h in lines[0].split(",")]
    rows = [ln for ln in lines[1:] if ln.strip()]
    at = header.index("index") if "index" in header else -1
    k = _copies("\n".join(rows), size)
    out, n = [lines[0]], 0
    for _ in range(k):
        for r in rows:
            cells = r.split(",")
            if at >= 0:
                cells[at] = f" {n}"
            out.append(",".join(cells))
            n += 1
    return ["\n".join(out) + "\n"]


_RANGE = re.compile(r"(\d+(?:\.\d+)?)\s*-\s*(\d+(?:\.\d+)?)(?=\s+sec|,)")


def long_run(text: str, size: int) -> list[str]:
    """One iperf run (text or CSV): the first interval's lines repeated with later
    times, then the lines from the last interval on with the whole span."""
    lines = text.splitlines(keepends=True)
    ranged = [(i, m) for i, ln in enumerate(lines) if (m := _RANGE.search(ln))]
    if not ranged:
        raise ValueError("no interval lines in the fixture")
    first, m0 = ranged[0]
    width = float(m0[2]) - float(m0[1])
    nxt = next(i for i, m in ranged if m[0] != m0[0])
    block = "".join(lines[first:nxt])
    # the final lines span more than one interval from 0; the last other line ends them
    last = max(i for i, m in ranged if not (float(m[1]) == 0 and float(m[2]) > width))
    n = max(1, size // len(block.encode()))
    d = len(m0[1].partition(".")[2])

    def shift(k: int) -> Callable[[re.Match[str]], str]:
        return lambda m: f"{k * width:.{d}f}-{(k + 1) * width:.{d}f}"

    body = [_RANGE.sub(shift(k), block) for k in range(n)]
    tail = _RANGE.sub(lambda m: f"{0:.{d}f}-{n * width:.{d}f}", "".join(lines[last + 1 :]))
    return ["".join(lines[:first]) + "".join(body) + tail]


def iperf3_intervals(text: str, size: int) -> list[str]:
    """One iperf3 -J document whose ``intervals`` list repeats its first interval."""
    doc = json.loads(text)
    one = len(json.dumps(doc["intervals"][0], indent=1))
    doc["intervals"] = doc["intervals"][:1] * max(1, size // one)
    return [json.dumps(doc, indent=1)]


@dataclass(frozen=True)
class Row:
    parser: str
    fixture: str  # a file name in tests/fixtures/<parser>/; "" = the largest that parses
    build: Builder
    label: str  # "text" or "json": the 50 MB/s target is for text
    how: str  # the ``input`` column


ROWS: list[Row] = [
    Row("nccl-tests", "v2.17.8_1node_8gpu_H100_5collectives.txt", nccl_rows, "text", "rows"),
    Row("nccl-tests", "v2.17.8_1node_8gpu_H100_5collectives.txt", runs, "text", "runs"),
    Row(
        "nccl-tests",
        "constructed_json_v3_2node_all_reduce_from_smoke_log.json",
        nccl_json_rows,
        "json",
        "rows",
    ),
    Row("fio", "v3.33_randrw_libaio_nj2_text.txt", runs, "text", "runs"),
    Row("fio", "v3.33_rw_libaio_nj2_terse.txt", runs, "text", "runs"),
    Row("fio", "v3.33_randrw_nj2_json.json", fio_jobs, "json", "jobs"),
    Row(
        "perftest",
        "ib_write_bw_server_bidirectional_a_q4_report_gbits_ionic_Connected_Completed_lines.txt",
        runs,
        "text",
        "runs",
    ),
    Row(
        "perftest",
        "ib_send_lat_client_IB_9col_newest_perftest_cpu_freq_warnings_in_table.txt",
        runs,
        "text",
        "runs",
    ),
    Row("ibstat", "h100-all-active-mixed-ib-ethernet.txt", ibstat_cas, "text", "devices"),
    Row("ibv-devinfo", "mlx4-verbose-port2-polling.txt", ibv_hcas, "text", "devices"),
    Row("nvidia-smi-q", "", smi_gpus, "text", "devices"),
    Row("nvidia-smi-query-gpu", "", query_gpu_rows, "text", "devices"),
    Row("dmesg-xid", "", runs, "text", "runs"),
    Row("iperf3", "v3_text_tcp_client_P3_SUM.txt", long_run, "text", "run"),
    Row("iperf3", "v3.12_lo_udp_bidir_P2.json", iperf3_intervals, "json", "run"),
    Row("iperf2", "v2.0_text_udp_server_i1.txt", long_run, "text", "run"),
    Row("iperf2", "v2.0_text_tcp_client_i1.txt", long_run, "text", "run"),
    Row("iperf2", "v2.0_csv_tcp_client_i1.csv", long_run, "text", "run"),
]
# Every other registered parser: its largest fixture that parses, once per call.
JSON_PARSERS = {"lsblk-json", "findmnt-json"}


def _fixtures(parser: str) -> list[Path]:
    d = FIX / parser
    if not d.is_dir():
        return []
    return sorted(
        f
        for f in d.iterdir()
        if f.is_file()
        and f.name not in ("SOURCES.md", "README.md")
        and not f.name.endswith(".expected.json")
    )


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def _largest_that_parses(parser: str) -> tuple[Path | None, str]:
    """The largest fixture of ``parser`` that parses without error, and why none does."""
    parse = parsers.get(parser).parse
    why = "no fixture"
    for f in sorted(_fixtures(parser), key=lambda p: p.stat().st_size, reverse=True):
        try:
            parse(_read(f))
        except OutputError as exc:
            why = f"every fixture fails to parse, e.g. {f.name}: {exc.reason}"
            continue
        return f, ""
    return None, why


def all_rows(only: str | None) -> list[Row]:
    rows = list(ROWS)
    covered = {r.parser for r in rows}
    for name in parsers.PARSERS.names():
        if name not in covered:
            label = "json" if name in JSON_PARSERS else "text"
            rows.append(Row(name, "", outputs, label, "outputs"))
    return [r for r in rows if not only or r.parser == only]


def _time(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return max(best, 1e-9)


def _rebuild(records: Sequence[object]) -> list[object]:
    """The same records built again, reusing the parser's dims objects."""
    out: list[object] = []
    for r in records:
        if isinstance(r, Measurement):
            out.append(Measurement(r.tool, r.metric, r.value, r.unit, r.dims))
        elif isinstance(r, Fact):
            out.append(Fact(r.source, r.name, r.value, r.unit, r.dims, r.nodes, r.reason))
    return out


def measure(row: Row, size: int, repeat: int) -> str:
    """One line of the table for ``row``."""
    lead = f"{row.parser:<25}{row.label:<5}{row.how:<8}"
    if row.fixture:
        path: Path | None = FIX / row.parser / row.fixture
        why = "" if path and path.is_file() else f"fixture {row.fixture} not found"
    else:
        path, why = _largest_that_parses(row.parser)
    if path is None or why:
        return f"{lead}{'-':<33}n/a ({why})"
    name = path.name if len(path.name) <= 32 else path.name[:29] + "..."
    lead += f"{name:<33}"
    try:
        texts = row.build(_read(path), size)
    except (ValueError, KeyError, IndexError, StopIteration) as exc:
        return f"{lead}n/a (input not built: {exc!r})"
    parse = parsers.get(row.parser).parse
    try:
        records = [r for t in texts for r in parse(t)]
    except OutputError as exc:
        return f"{lead}n/a (input not valid for this tool: {exc})"
    mb = sum(len(t.encode()) for t in texts) / 1e6
    best = _time(lambda: [parse(t) for t in texts], repeat)
    floor = _time(lambda: _rebuild(records), repeat)
    rate, bound = mb / best, mb / floor
    if row.label != "text":
        verdict = "-"
    elif rate >= TARGET_MB_S:
        verdict = "PASS"
    elif bound < TARGET_MB_S:
        verdict = f"MISS (rec-only {bound:.0f})"
    else:
        verdict = "MISS"
    return (
        f"{lead}{mb:>6.1f}{best:>8.3f}{rate:>8.1f}{len(records):>9}"
        f"{len(records) / best / 1e3:>8.1f}{_short(bound):>10}  {verdict}"
    )


def _short(x: float) -> str:
    return f"{x:.1f}" if x < 1e5 else f"{x:.1e}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--mb", type=float, default=20.0, help="input size in MB (default 20)")
    ap.add_argument("--repeat", type=int, default=3, help="timed parses per input (best kept)")
    ap.add_argument("--only", metavar="PARSER", help="only the rows of this parser")
    args = ap.parse_args(argv)
    size = int(args.mb * 1e6)
    rows = all_rows(args.only)
    if not rows:
        print(f"no rows for {args.only!r}", file=sys.stderr)
        return 2
    print(
        f"{'parser':<25}{'fmt':<5}{'input':<8}{'fixture':<33}{'MB':>6}{'cpu s':>8}{'MB/s':>8}"
        f"{'records':>9}{'krec/s':>8}{'rec-only':>10}  target {TARGET_MB_S:.0f} MB/s (text)"
    )
    for row in rows:
        print(measure(row, size, args.repeat), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
