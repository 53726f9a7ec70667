"""hccl_test: Huawei HCCL collective benchmarks (``all_reduce_test`` ... run through mpirun).

Command read: the stdout of a CANN ``hccl_test`` binary (``all_reduce_test``,
``all_gather_test``, ``reduce_scatter_test``, ``alltoall_test``, ``broadcast_test``,
``reduce_test`` ...), usually ``mpirun -n N ./bin/all_reduce_test -p NPUS -b 8K -e 64M -f 2
-d fp32 -o sum``. The table is::

    the minbytes is 8192, maxbytes is 67108864, iters is 20, warmup_iters is 5
    data_size(Bytes): |   avg_time(us): | alg_bandwidth(GB/s): | check_result:
    8192              |     764.55    |       0.00998        | success

Where it does not match NCCL-tests' table (so the table reader of
:mod:`aibench.parsers._nccl_table` is not used, only its reading of a number): columns are
separated by ``|``; there is one placement (no out-of-place / in-place pair), no ``count``,
``type``, ``redop`` or ``root`` columns, no bus bandwidth (only the algorithm bandwidth,
data size / time), no ``#wrong`` count but a ``check_result`` flag (``success``, ``failed``,
or ``NULL`` when checking was off or could not be done), no ``# Avg bus bandwidth`` footer
and no version line. What matches: one row per message size, time in microseconds and
bandwidth in GB/s (decimal), so the records have the NCCL-tests names and units.

Emitted per row: ``time`` (us) and ``algbw`` (GB/s), dims ``size_bytes`` (and, when the
same size is printed more than once, as several ranks may print the table, ``row``: 0, 1
... in the order printed). The op (``all_reduce`` ...) is not printed: the runner adds the
``op`` dim from the binary it ran. Versions: the column is ``avg_time(us)`` in the
documented output and ``aveg_time(us)`` in the binary's source and in other published
runs; both are read. hccl_test's own error line (``hccl interface return err
<file:line>, retcode: N`` and ``This is an error in init_hcclComm.``, as when a rank cannot
start: retcode 7 is left-over hccl_test processes on a peer) is a :class:`ToolFailure` with
its words. A row whose ``check_result`` is ``failed`` is a
:class:`ToolFailure` (the result was wrong) with the rows before it as ``partial``; a log
without the header is a :class:`ParseError`.
"""

from __future__ import annotations

import re
from collections import Counter

from aibench.errors import ParseError, ToolFailure
from aibench.model import FrozenDims, Measurement
from aibench.parsers import Parser
from aibench.parsers._nccl_table import number

TOOL = "hccl-tests"
_HEADER = re.compile(
    r"data_size\(Bytes\):\s*\|\s*a(?:ve?g)_time\(us\):\s*\|\s*alg_bandwidth\(GB/s\):\s*\|\s*check_result:"
)
# hccl_test's own complaint (common/src/hccl_test_common.cc), then "This is an error in X."
_ERR = re.compile(r"hccl interface return err (\S+), retcode: (\d+)")
_BANNER = re.compile(r"^the minbytes is \d+, maxbytes is \d+", re.M)
_ROW = re.compile(r"^\s*(\d+)\s*\|\s*(\S+)\s*\|\s*(\S+)\s*\|\s*(\S+)\s*$")
_CHECKS = ("success", "failed", "NULL")


def parse(text: str) -> list[Measurement]:
    out: list[Measurement] = []
    header_seen = False
    seen: Counter[int] = Counter()
    rows: list[tuple[int, float, float, int]] = []
    lines = text.splitlines()
    for lineno, raw in enumerate(lines, 1):
        err = _ERR.search(raw)
        if err:
            after = lines[lineno].strip() if lineno < len(lines) else ""
            why = f"{raw.strip()} {after}" if after.startswith("This is an error") else raw
            raise ToolFailure(TOOL, why.strip(), lineno, list[object](_records(rows)))
        if _HEADER.search(raw):
            header_seen = True
            continue
        if not header_seen:
            continue
        m = _ROW.match(raw)
        if not m:
            continue
        size = int(m.group(1))
        time_us, algbw = number(m.group(2)), number(m.group(3))
        if time_us is None or algbw is None:  # not a number, or not a finite one
            raise ParseError(TOOL, f"not a number in row {raw.strip()!r}", line=lineno)
        check = m.group(4)
        if check not in _CHECKS:
            raise ParseError(
                TOOL, f"check_result {check!r} is not success/failed/NULL", line=lineno
            )
        if check == "failed":
            raise ToolFailure(
                TOOL,
                f"check_result failed at {size} bytes (wrong result)",
                line=lineno,
                partial=list[object](_records(rows)),
            )
        rows.append((size, time_us, algbw, seen[size]))
        seen[size] += 1
    if not header_seen:
        raise ParseError(
            TOOL, "no 'data_size(Bytes): | avg_time(us): ...' header: not hccl_test output"
        )
    if not rows:
        raise ParseError(TOOL, "the results table has no rows")
    repeated = {size for size, n in seen.items() if n > 1}
    out = _records(rows, repeated)
    return out


def _records(
    rows: list[tuple[int, float, float, int]], repeated: set[int] | None = None
) -> list[Measurement]:
    out: list[Measurement] = []
    for size, time_us, algbw, nth in rows:
        dims: dict[str, int] = {"size_bytes": size}
        if repeated and size in repeated:
            dims["row"] = nth
        frozen = FrozenDims(dims)
        out.append(Measurement(TOOL, "time", time_us, "us", frozen))
        out.append(Measurement(TOOL, "algbw", algbw, "GB/s", frozen))
    return out


PARSER = Parser(
    "hccl-tests",
    parse,
    "HCCL collective benchmarks (hccl_test all_reduce_test ...)",
    lambda t: (
        bool(_HEADER.search(t[:5000]) or _BANNER.search(t[:5000]))
        or (_ERR.search(t[:5000]) is not None)
    ),
)
