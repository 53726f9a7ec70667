"""Parser throughput in MB/s on large inputs built from real fixtures.

For every registered parser, a real fixture of tests/fixtures/<parser>/ is repeated
until the input is about ``--mb`` megabytes: text outputs are concatenated (for fio, one
output per job, as a long log would hold them); iperf2 and iperf3 text and CSV become one
long run (a real output's first interval lines repeated with later times, then its final
lines over the whole span: one log holding several runs is a ParseError for them); for
JSON formats one large document is built from a real one (fio: its ``jobs`` list
repeated; iperf3: its ``intervals`` list repeated). Each input is parsed ``--repeat``
times and the best time is kept.

    python bench/parse_throughput.py            # ~20 MB per input
    python bench/parse_throughput.py --mb 50 --only fio

Prints one row per (parser, input): size, best time, MB/s (1 MB = 10^6 bytes), records
and thousands of records per second (record-dense outputs such as fio's are bound by
building the records, not by reading the text),
and whether the parse raised (concatenating some tools' outputs is not a valid output
of that tool; the row then measures the time to read up to the error). Target: at
least 50 MB/s for text parsers.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aibench import parsers  # noqa: E402
from aibench.errors import OutputError  # noqa: E402

FIX = ROOT / "tests" / "fixtures"


def repeat_text(text: str, size: int) -> str:
    if not text.endswith("\n"):
        text += "\n"
    return text * max(1, size // len(text.encode()))


_RANGE = re.compile(r"(\d+(?:\.\d+)?)\s*-\s*(\d+(?:\.\d+)?)(?=\s+sec|,)")


def long_run(text: str, size: int) -> str:
    """One iperf run of about ``size`` bytes: the first interval's lines repeated with
    later times, then the lines from the last interval on with the whole span."""
    lines = text.splitlines(keepends=True)
    ranged = [(i, m) for i, ln in enumerate(lines) if (m := _RANGE.search(ln))]
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
    return "".join(lines[:first]) + "".join(body) + tail


def fio_json(text: str, size: int) -> str:
    doc = json.loads(text[text.index("{") :])
    job_size = len(json.dumps(doc["jobs"][0], indent=2))
    doc["jobs"] = doc["jobs"] * max(1, size // job_size)
    return json.dumps(doc, indent=2)


def iperf3_json(text: str, size: int) -> str:
    doc = json.loads(text)
    iv = len(json.dumps(doc["intervals"][0], indent=1))
    doc["intervals"] = doc["intervals"][:1] * max(1, size // iv)
    return json.dumps(doc, indent=1)


# (parser, fixture, builder, format label); the first rows are the parsers of this area.
OWN: list[tuple[str, str, Callable[[str, int], str], str]] = [
    ("fio", "v3.33_randrw_libaio_nj2_text.txt", repeat_text, "text"),
    ("fio", "v3.33_rw_libaio_nj2_terse.txt", repeat_text, "terse"),
    ("fio", "v3.33_randrw_nj2_json.json", fio_json, "json"),
    ("iperf3", "v3_text_tcp_client_P3_SUM.txt", long_run, "text"),
    ("iperf3", "v3.12_lo_udp_bidir_P2.json", iperf3_json, "json"),
    ("iperf2", "v2.0_text_udp_server_i1.txt", long_run, "text"),
    ("iperf2", "v2.0_text_tcp_client_i1.txt", long_run, "text"),
    ("iperf2", "v2.0_csv_tcp_client_i1.csv", long_run, "csv"),
]


def other_rows() -> list[tuple[str, str, Callable[[str, int], str], str]]:
    rows = []
    own = {r[0] for r in OWN}
    for name in parsers.PARSERS.names():
        d = FIX / name
        if name in own or not d.is_dir():
            continue
        files = sorted(
            f
            for f in d.iterdir()
            if f.is_file()
            and f.name not in ("SOURCES.md", "README.md")
            and not f.name.endswith(".expected.json")
        )
        if files:
            biggest = max(files, key=lambda f: f.stat().st_size)
            rows.append((name, biggest.name, repeat_text, "repeated"))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--mb", type=float, default=20.0, help="input size in MB (default 20)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", metavar="PARSER")
    ap.add_argument("--all", action="store_true", help="also the other registered parsers")
    args = ap.parse_args(argv)
    size = int(args.mb * 1e6)
    rows = OWN + (other_rows() if args.all else [])
    print(
        f"{'parser':<26}{'format':<9}{'fixture':<40}{'MB':>7}{'best s':>9}{'MB/s':>9}"
        f"{'records':>10}{'krec/s':>9}  result"
    )
    for name, fixture, build, label in rows:
        if args.only and name != args.only:
            continue
        text = build((FIX / name / fixture).read_text(encoding="utf-8", errors="replace"), size)
        mb = len(text.encode()) / 1e6
        parse = parsers.get(name).parse
        best, nrec, result = float("inf"), 0, "ok"
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            try:
                nrec = len(parse(text))
            except OutputError as exc:
                result = f"{type(exc).__name__}: {exc.reason[:40]}"
            best = min(best, time.perf_counter() - t0)
        print(
            f"{name:<26}{label:<9}{fixture[:39]:<40}{mb:>7.1f}{best:>9.3f}{mb / best:>9.1f}"
            f"{nrec:>10}{nrec / best / 1e3:>9.1f}  {result}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
