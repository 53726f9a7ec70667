"""fio's normal text in client/server mode: the fio-cluster parser reads it, fio refuses it."""

from __future__ import annotations

import pytest

from aibench import parsers
from aibench.errors import ParseError
from aibench.model import Measurement
from tests.golden import FIXTURES
from tests.golden import value_of as _value

DIR = FIXTURES / "fio-cluster"


def test_the_fio_parser_refuses_client_text() -> None:
    with pytest.raises(ParseError, match="fio-cluster"):
        parsers.parse("fio", (DIR / "v3.33_text_2clients_checkpoint.txt").read_text())


def test_all_clients_is_fios_sum_and_each_server_is_named() -> None:
    text = (DIR / "v3.33_text_2clients_checkpoint.txt").read_text()
    recs = parsers.parse("fio-cluster", text)
    assert "  write: IOPS=1684, BW=1684Mi (1766M)(64.0MiB/38msec); 0 zone resets" in text
    assert _value(recs, "bw", client="all", direction="write") == 1684 * 1024
    assert _value(recs, "io_bytes", client="all", direction="write") == 64 * 1024**2
    assert _value(recs, "iops", client="fio-h1", direction="write") == 842
    assert _value(recs, "iops", client="fio-h2", direction="read") == 2909


def test_reports_whose_server_fio_does_not_say_are_numbered() -> None:
    recs = parsers.parse("fio-cluster", (DIR / "v3.33_text_2clients_read.txt").read_text())
    clients = {r.dims["client"] for r in recs if isinstance(r, Measurement)}
    assert clients == {"report-1", "report-2", "all"}
    assert any("does not name the server" in getattr(r, "text", "") for r in recs)


def test_text_without_any_report_is_a_parse_error() -> None:
    head = "hostname=h1, be=0, 64-bit, os=Linux, arch=x86-64, fio=fio-3.33, flags=1\n"
    with pytest.raises(ParseError, match="no client report"):
        parsers.parse("fio-cluster", head)
