"""perftest: the stdout (and stderr) of ib_write_bw, ib_read_bw, ib_send_bw, ib_atomic_bw
and ib_write_lat, ib_read_lat, ib_send_lat, ib_atomic_lat, client or server side.

One parser reads every tool: the banner line (``RDMA_Write BW Test``, ``Send Latency
Test``, ``Atomic FETCH_AND_ADD BW Test`` ...) names the verb and the kind of test.

Versions tested (golden fixtures): perftest 3.x/4.x banners without the ``PCIe relax
order``/``ibv_wr* API`` lines and 4.5/5.x banners with them; tab- and space-separated
banners; ``Post List`` and ``Bidirectional`` banners, the ``Connected:`` /
``Completed:`` / ``Total run time`` lines of newest perftest; server sides (``Waiting for
client to connect``, rdma_cm); single size and ``-a``; ``MB/sec`` and ``Gb/sec``
(``--report_gbits``) tables. The latency table is read by its header names, so the
5-column format before perftest 2016 (t_min, t_max, t_typical) and the 9-column format
since (t_avg, t_stdev, 99% and 99.9% percentiles) both work; the duration-mode latency
table (``-D``: t_avg, tps) gives ``lat_avg``.

Units. perftest divides bytes/s by ``format_factor = (report_fmt == MBS) ? 0x100000 :
125000000`` (``print_report_bw`` in src/perftest_parameters.c of linux-rdma/perftest):
its ``MB/sec`` is therefore 2^20 bytes/s, i.e. **MiB/s** (the header itself says
``MiB/sec`` since perftest commit 1d202bb, 2024), and ``Gb/sec`` is 10^9 bit/s, i.e.
**Gbit/s**. Every bandwidth row is cross-checked against its own message rate
(``BW average`` = ``MsgRate`` x size in the header's unit, within rounding); a row that
disagrees (a unit label that does not fit the numbers) is a ParseError, never a guess.
This happens for real: the server of an ``ib_write_bw`` run prints the *client's*
report (``xchg_bw_reports`` then ``print_full_bw_report(&rem_bw_rep)`` in write_bw.c)
under a header made from its *own* ``--report_gbits`` flag, so a server started without
the flag prints Gbit/s numbers under ``MB/sec``. Run both sides with the same unit flag.
Latencies are in us as printed: ``write``/``send`` latency is half the round trip,
``read``/``atomic`` the full round trip (``rtt_factor`` in ``print_report_lat``);
``--report-cycles`` output (same header, values in cycles) cannot be told apart.

Emitted per row. BW tests: ``bw_peak``, ``bw_avg`` (MiB/s or Gbit/s), ``msg_rate``
(Mpps), ``iterations`` (count). ``bw_peak`` is left out when the run printed
``BW peak won't be measured`` or when the peak column is 0 while the average is not
(duration mode: the peak was not measured). Latency tests: ``lat_min``, ``lat_max``,
``lat_typical``, ``lat_avg``, ``lat_stdev``, ``lat_p99``, ``lat_p99_9`` (us, those the
header has) and ``iterations``. Dims on every record of a run: ``test``
(write/read/send/atomic), ``size_bytes``, ``side`` (client/server: ``Waiting for client``
or no ``TX depth`` line means server; a bidirectional client prints nothing that tells
it from a server, so it gets no ``side``), ``device``, ``link_layer`` (IB/Ethernet),
``transport`` (RC/UC/UD/XRC/DC: the banner's ``Connection type``), ``qps``, ``mtu``,
``gid_index`` (when printed; ``Gid index`` in perftest of 2016) and, for BW tests,
``bidirectional``. Also ignored: the ``tps average`` column of duration-mode latency,
per-port columns (``--report-per-port``) and the ``#sl`` column (``--raw_qos``). A
non-finite cell (``inf``, ``nan``) is a ParseError: perftest prints finite numbers.

Errors: perftest reports failures as lines such as ``Couldn't connect to HOST:PORT``,
``Unable to ...``, ``Failed to ...``, ``Did not detect devices`` (no RDMA device at
all), ``ethernet_read_keys: Couldn't read remote address``, ``Completion with error``.
Any such line is a ToolFailure whose reason is the tool's lines (joined with `` | ``)
and whose ``partial`` holds the rows read. Output
with neither a result table nor such a line is a ParseError. An output that holds only
such lines (a client that could not reach its server: ``Couldn't connect to HOST:PORT``,
``Unable to init the socket connection``; a QP that could not be connected: ``Failed to
modify QP N to RTR`` / `` Unable to Connect the HCA's through the link``) is still
recognized as perftest's by ``detect``, so ``aibench parse auto`` reports it in its words.

Warnings (Notes, in the tool's words): ``Conflicting CPU frequency values detected: A !=
B. CPU Frequency is not max.`` (perftest measured the CPU clock below its maximum: the
latency and cycle figures may be off) and ``WARNING: ...`` lines (``BW peak won't be
measured in this run.``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from aibench.errors import ParseError, ToolFailure
from aibench.model import DimsLayout, Measurement, Note, Scalar
from aibench.parsers import Parser, Record

TOOL = "perftest"

_TITLE = re.compile(
    r"^\s*(Send|RDMA_Write|RDMA_Read|Atomic)\s+(?:\w+_AND_\w+\s+)?(Bidirectional\s+)?"
    r"(?:Post List\s+)?(BW|Latency)\b.*Test\s*$"
)
_TESTS = {"Send": "send", "RDMA_Write": "write", "RDMA_Read": "read", "Atomic": "atomic"}
# (dim, pattern, is an integer, a substring the pattern cannot match without, or "")
_FACTS: tuple[tuple[str, re.Pattern[str], bool, str], ...] = (
    ("device", re.compile(r"Device\s*:\s*(\S+)"), False, "Device"),
    ("qps", re.compile(r"Number of qps\s*:\s*(\d+)"), True, "Number of qps"),
    ("transport", re.compile(r"Connection type\s*:\s*(\S+)"), False, "Connection type"),
    ("mtu", re.compile(r"Mtu\s*:\s*(\d+)"), True, "Mtu"),
    ("link_layer", re.compile(r"Link type\s*:\s*(\S+)"), False, "Link type"),
    ("gid_index", re.compile(r"GID index\s*:\s*(\d+)", re.IGNORECASE), True, ""),
)
_ERROR = re.compile(
    r"^(?:[\w.]+: )?(?:Couldn't|Could not|Unable to|Failed|Can't|Cannot|Completion with error"
    r"|Problems? |Error|ERROR|No IB devices|IB device \S+ not found|Invalid"
    r"|Did not detect devices)"
)
# perftest's warnings about a run (kept as Notes): the CPU frequency check of get_cpu_mhz
# (the cycle counter's rate is not the CPU's maximum, so cycle-based numbers may be off),
# and lines it prints as "WARNING: ..." (e.g. "BW peak won't be measured in this run.")
_NOTE = re.compile(
    r"^(?:Conflicting CPU frequency values detected.*|.*CPU Frequency is not max.*"
    r"|WARNING: .*)$"
)
_BW_UNITS = {"MB/sec": "MiB/s", "MiB/sec": "MiB/s", "Gb/sec": "Gbit/s"}
_BYTES_PER_UNIT = {"MiB/s": 2**20, "Gbit/s": 125_000_000}
_LAT_COLUMNS = (
    ("t_min", "lat_min"),
    ("t_max", "lat_max"),
    ("t_typical", "lat_typical"),
    ("t_avg", "lat_avg"),
    ("t_stdev", "lat_stdev"),
    ("99.9% percentile", "lat_p99_9"),
    ("99% percentile", "lat_p99"),
)


_NO_LAYOUT = DimsLayout(())
_LAYOUTS: dict[tuple[str, ...], DimsLayout] = {}


def _layout(names: tuple[str, ...]) -> DimsLayout:
    """One DimsLayout per set of dim names (a run's facts, its side, size_bytes)."""
    found = _LAYOUTS.get(names)
    if found is None:
        found = _LAYOUTS[names] = DimsLayout(names)
    return found


class _Run:
    def __init__(self, server_banner: bool, no_peak: bool) -> None:
        self.dims: dict[str, Scalar] = {}
        self.kind = ""  # "bw" | "lat"
        self.server_banner = server_banner
        self.no_peak = no_peak
        self.banner = False  # the test's banner was read (side can be told)
        self.tx_depth = False
        self.bidirectional = False
        self.columns: list[str] = []  # metric per row field after #bytes
        self.unit = ""
        # set by header(), when the dims and columns of the rows are known
        self.units: dict[str, str] = {}
        self.layout = _NO_LAYOUT
        self.row_dims: tuple[Scalar, ...] = ()
        self.rate_cells = (0, 0)

    def final_dims(self) -> dict[str, Scalar]:
        dims = dict(self.dims)
        if self.server_banner:
            dims["side"] = "server"
        elif self.banner and not self.bidirectional:
            dims["side"] = "client" if self.tx_depth else "server"
        if self.kind == "bw":
            dims["bidirectional"] = self.bidirectional
        return dims

    def header(self, line: str, no: int) -> None:
        if "BW average" in line or "BW peak" in line:
            m = re.search(r"BW average\[([^\]]+)\]", line)
            if not m or m.group(1) not in _BW_UNITS:
                raise ParseError(TOOL, f"unknown bandwidth unit in header: {line.strip()}", no)
            self.kind, self.unit = "bw", _BW_UNITS[m.group(1)]
            cols = ["iterations", "bw_peak", "bw_avg", "msg_rate"]
            self.columns = ["sl", *cols] if "#sl" in line else cols
            self._rows_ready()
            return
        cols = ["iterations"]
        rest = line
        found: list[tuple[int, str]] = []
        for name, metric in _LAT_COLUMNS:
            i = rest.find(name)
            if i >= 0:
                found.append((i, metric))
                rest = rest.replace(name, " " * len(name), 1)
        if not found:
            raise ParseError(TOOL, f"unknown result header: {line.strip()}", no)
        self.kind = "lat"
        self.columns = cols + [m for _, m in sorted(found)]
        if "tps" in line:
            self.columns.append("tps")
        self._rows_ready()

    def _rows_ready(self) -> None:
        """The facts are read before the header: the rows' dims and units are fixed now."""
        dims = self.final_dims()
        self.layout = _layout((*dims, "size_bytes"))
        self.row_dims = tuple(dims.values())
        self.units = {
            "iterations": "count",
            "msg_rate": "Mpps",
            "bw_peak": self.unit,
            "bw_avg": self.unit,
        }
        if self.kind == "bw":  # the tokens of BW average and MsgRate in a row
            self.rate_cells = (
                1 + self.columns.index("bw_avg"),
                1 + self.columns.index("msg_rate"),
            )


def parse(text: str) -> list[Record]:
    reader = _Reader()
    for no, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line:
            reader.read(no, raw, line)
    return reader.outcome()


@dataclass
class _Reader:
    """What the output read so far holds: rows' records, notes, error lines, the run whose
    banner or table is being read, and what the lines before its banner said of it."""

    out: list[Measurement] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    errors: list[tuple[int, str]] = field(default_factory=list)
    run: _Run | None = None
    pending_server: bool = False
    pending_no_peak: bool = False
    in_table: bool = False
    saw_table: bool = False

    def read(self, no: int, raw: str, line: str) -> None:
        """One line (``line``: ``raw`` stripped, not empty)."""
        # a line that starts with a digit (a row) is an error line only after "NAME: "
        if (not line[0].isdigit() or ": " in line) and _ERROR.match(line):
            self.errors.append((no, line))
            return
        if ("requency" in line or "WARNING" in line) and _NOTE.match(line):
            self.notes.append(Note(TOOL, line, line=no))
        if "BW peak won't be measured" in line:
            self.pending_no_peak = True
            if self.run is not None and not self.run.columns:
                self.run.no_peak = True
            return
        if "Waiting for client to connect" in line:
            self.pending_server = True
            return
        # a banner's first word (after the blanks strip() also removes) is Send, RDMA_* or Atomic
        m = _TITLE.match(raw) if line[0] in "SRA" else None
        if m:
            self._banner(m)
            return
        if line.startswith("---"):
            self.in_table = False
            return
        if self.run is None and line.startswith("#bytes"):
            self.run = _Run(self.pending_server, self.pending_no_peak)
        run = self.run
        if run is None:
            return
        if not run.columns:
            _banner_facts(run, line)
        if line.startswith("#bytes"):
            run.header(line, no)
            self.in_table = self.saw_table = True
            return
        if self.in_table:
            tokens = line.split()
            if tokens[0].isdigit():
                self.out.extend(_row(run, line, tokens, no))

    def _banner(self, m: re.Match[str]) -> None:
        """A banner's title (``Send BW Test``, ``RDMA_Read Latency Test`` ...) starts a run."""
        run = self.run = _Run(self.pending_server, self.pending_no_peak)
        self.pending_server = self.pending_no_peak = False
        run.dims["test"] = _TESTS[m.group(1)]
        run.kind = "bw" if m.group(3) == "BW" else "lat"
        run.bidirectional = bool(m.group(2))
        run.banner = True
        self.in_table = False

    def outcome(self) -> list[Record]:
        """The records and notes; a ToolFailure (with them) if an error line was printed."""
        out, notes, errors = self.out, self.notes, self.errors
        if errors:
            reason = " | ".join(msg for _, msg in errors)
            raise ToolFailure(TOOL, reason, line=errors[0][0], partial=[*out, *notes])
        if not self.saw_table:
            raise ParseError(
                TOOL, "no perftest result table (no '#bytes' header) and no error message"
            )
        return [*out, *notes]


def _banner_facts(run: _Run, line: str) -> None:
    """The test's settings printed in the banner before the table (dims of the run)."""
    for name, rx, is_int, needle in _FACTS:
        if needle and needle not in line:
            continue
        fm = rx.search(line)
        if fm:
            run.dims[name] = int(fm.group(1)) if is_int else fm.group(1)
    if line.startswith("TX depth"):
        run.tx_depth = True


def _row(run: _Run, line: str, tokens: list[str], no: int) -> list[Measurement]:
    cols = run.columns
    if len(tokens) < len(cols) + 1 or (run.kind == "lat" and len(tokens) > len(cols) + 2):
        raise ParseError(
            TOOL, f"row has {len(tokens)} fields, the header has {len(cols) + 1}: {line}", no
        )
    size = int(tokens[0])
    cells = tokens[1 : len(cols) + 1]  # the columns are distinct names
    try:
        numbers = list(map(float, cells))
    except ValueError:
        numbers = []
    if len(numbers) == len(cols) and all(map(math.isfinite, numbers)):
        values = dict(zip(cols, numbers, strict=True))
    else:  # read them one by one to say which cell is wrong
        values = {}
        for name, tok in zip(cols, cells, strict=True):
            try:
                v = float(tok)
            except ValueError:
                raise ParseError(TOOL, f"{name}: {tok!r} is not a number", no) from None
            if v - v != 0.0:  # perftest prints %.2f of finite doubles: inf/nan is damage
                raise ParseError(TOOL, f"{name}: {tok!r} is not a finite number", no)
            values[name] = v
    if run.kind == "bw":
        _check_rate(run, size, values, tokens, no)
        if run.no_peak or (values["bw_peak"] == 0 and values["bw_avg"] > 0):
            del values["bw_peak"]
    values.pop("sl", None)
    values.pop("tps", None)
    units = run.units
    fd = run.layout.make((*run.row_dims, size))
    return [Measurement(TOOL, k, v, units.get(k, "us"), fd) for k, v in values.items()]


def _check_rate(run: _Run, size: int, values: dict[str, float], tokens: list[str], no: int) -> None:
    """BW average must equal MsgRate x size in the header's unit (both are rounded)."""
    avg, rate = values["bw_avg"], values["msg_rate"]
    if avg <= 0 or rate <= 0:
        return
    expected = rate * 1e6 * size / _BYTES_PER_UNIT[run.unit]
    i_avg, i_rate = run.rate_cells
    rel = _half_ulp(tokens[i_avg]) / avg + _half_ulp(tokens[i_rate]) / rate + 0.01
    if abs(expected - avg) > rel * avg:
        other = "Gbit/s" if run.unit == "MiB/s" else "MiB/s"
        alt = rate * 1e6 * size / _BYTES_PER_UNIT[other]
        hint = f"; the numbers fit {other}" if abs(alt - avg) <= rel * avg else ""
        raise ParseError(
            TOOL,
            f"BW average {tokens[i_avg]} {run.unit} disagrees with MsgRate {tokens[i_rate]} Mpps "
            f"x {size} B = {expected:.2f} {run.unit}{hint}: the unit label does not fit the row",
            no,
        )


def _half_ulp(tok: str) -> float:
    decimals = len(tok.split(".", 1)[1]) if "." in tok else 0
    return 0.5 * 10.0**-decimals


# Messages only perftest prints: a run that failed before its banner is still perftest's.
_OWN_ERRORS = re.compile(
    r"ethernet_(?:read|write)_(?:keys|data)|Unable to init the socket connection"
    r"|Unable to Connect the HCA's through the link|Failed to modify QP \d+ to RT[RS]"
    r"|^ ?Couldn't connect to [\w.:%\[\]-]+:\d+$"
    r"|Failed to exchange data between server and clients|Did not detect devices"
    r"|Unable to find the Infiniband/RoCE device|Unable to read to socket/rdma_cm",
    re.MULTILINE,
)


def detect(text: str) -> bool:
    head = text[:20000]
    if "#bytes" in head and ("#iterations" in head):
        return True
    return any(_TITLE.match(line) for line in head.splitlines()[:40]) or bool(
        _OWN_ERRORS.search(head)
    )


PARSER = Parser(
    name=TOOL,
    parse=parse,
    detect=detect,
    description="perftest ib_*_bw / ib_*_lat (client or server): BW peak/average, MsgRate, latency",
)
