"""The replays accept only the options of the real tools, so the runners cannot drift.

The option lists are the tools' own: ``<binary> --help`` of perftest 4.5-0.17 (Debian 12,
captured here) and the "Arguments" list of the nccl-tests 2.17.10 README (sources in
tests/fixtures/tool-help/SOURCES.md). Every argv the perftest and nccl-tests runners can
build, with every option they have switched on, is read by the replay's own option reader;
an option the tool does not have (a misspelling, a flag of another version, a bandwidth
flag given to a latency test) makes the replay exit 2, the way the real tool refuses it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, get_args

import pytest

from aibench.runners.base import Slot
from aibench.runners.perftest import Test
from tests.runners.helpers import node, plan

PROGRAMS = Path(__file__).resolve().parent.parent / "programs"
sys.path.insert(0, str(PROGRAMS))

import nccl_tests_replay  # noqa: E402
import perftest_replay  # noqa: E402

HCAS = [{"name": "mlx5_0", "port": 1, "gid_index": 3}]


def perftest_options(binary: str) -> tuple[set[str], set[str]]:
    text = (perftest_replay.HELP_DIR / f"{binary}--help.txt").read_text(encoding="utf-8")
    return perftest_replay.options(text)


EVERYTHING: dict[str, Any] = {
    "size": "64K",
    "iters": 1000,
    "qps": 4,
    "bidirectional": True,
    "report_gbits": True,
    "no_cpu_freq_warning": True,
    "rdma_cm": True,
    "json_output": True,
}


@pytest.mark.parametrize("test", get_args(Test))
@pytest.mark.parametrize(
    "extra",
    [{}, {"all_sizes": True, "size": None}, {"duration": 5, "iters": None}],
    ids=["size", "all_sizes", "duration"],
)
def test_every_perftest_argv_is_one_the_real_tool_reads(test: str, extra: dict[str, Any]) -> None:
    o = {k: v for k, v in {**EVERYTHING, **extra, "test": test}.items() if v is not None}
    if test.endswith("_lat"):  # the runner refuses these for latency tests (ConfigError)
        o = {k: v for k, v in o.items() if k not in ("qps", "bidirectional")}
    if test.startswith("ib_atomic"):  # and a message size for atomic tests
        o = {k: v for k, v in o.items() if k not in ("size", "all_sizes")}
    (inv,) = plan(
        "perftest", o, [node("a", "10.0.0.1", hcas=HCAS), node("b", "10.0.0.2", hcas=HCAS)]
    )
    valued, flags = perftest_options(test)
    (srv,) = inv.servers
    server = list(srv.argv)
    assert server[:2] == ["stdbuf", "-oL"]
    for argv in (server[2:], list(inv.client.argv)):
        assert argv[0] == test
        opts, _ = perftest_replay.read_args(argv[1:], valued, flags)
        assert opts["-d"] == "mlx5_0"


@pytest.mark.parametrize(
    ("binary", "argv"),
    [
        ("ib_write_lat", ["--report_gbits"]),  # a bandwidth flag: latency tests lack it
        ("ib_write_bw", ["--report-gbits"]),  # misspelled
        ("ib_write_bw", ["--out-json"]),
        ("ib_write_bw", ["-Y", "1"]),  # no such letter
        ("ib_write_bw", ["-s"]),  # a value is missing
    ],
)
def test_an_option_the_tool_lacks_is_refused(
    binary: str, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        perftest_replay.read_args(argv, *perftest_options(binary))
    assert exc.value.code == 2
    assert "replay:" in capsys.readouterr().err


@pytest.mark.parametrize("test", ["ib_atomic_bw", "ib_atomic_lat"])
@pytest.mark.parametrize("size", [{"size": "64K"}, {"all_sizes": True}])
def test_atomic_tests_take_no_message_size(test: str, size: dict[str, Any]) -> None:
    """Found by the replay: the atomic tests' --help has no -s / -a (perftest exits 1)."""
    from aibench.errors import ConfigError

    with pytest.raises(ConfigError, match="fixed 8-byte message"):
        plan("perftest", {"test": test, **size}, [node("a", "10.0.0.1"), node("b", "10.0.0.2")])
    valued, flags = perftest_options(test)
    assert "-s" not in valued
    assert "-a" not in flags


def test_the_help_capture_is_read_with_values_where_perftest_takes_them() -> None:
    valued, flags = perftest_options("ib_write_bw")
    # "-D, --duration" shows no "=<...>", perftest's getopt string says "D:"
    assert {"-D", "--duration", "-s", "--size", "--out_json_file", "-d", "-x"} <= valued
    assert {"-a", "-b", "-F", "-R", "--report_gbits", "--out_json"} <= flags


NCCL_EVERYTHING: dict[str, Any] = {
    "min_bytes": "8",
    "max_bytes": "8G",
    "iters": 20,
    "warmup_iters": 5,
    "check": 1,
    "gpus_per_process": 1,
    "datatype": "bfloat16",
    "op": "sum",
    "blocking": True,
    "average": 1,
    "json_output": True,
    "launcher": "none",
}


@pytest.mark.parametrize(
    "step", [{"step_factor": 2}, {"step_bytes": "1M"}], ids=["factor", "bytes"]
)
def test_every_nccl_tests_argv_is_one_the_real_tool_reads(step: dict[str, Any]) -> None:
    (inv,) = plan("nccl-tests", {**NCCL_EVERYTHING, **step}, [node("g1", gpus=8)], Slot())
    argv = list(inv.client.argv)
    assert argv[0].endswith("all_reduce_perf")
    opts = nccl_tests_replay.read_args(argv[1:])
    assert opts["b"] == "8"
    assert "J" in opts


@pytest.mark.parametrize(
    "argv",
    [["-y", "0"], ["--min_bytes", "8"], ["-X", "1"], ["-b"], ["--json", "x.json"]],
)
def test_nccl_tests_options_it_lacks_are_refused(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        nccl_tests_replay.read_args(argv)
    assert exc.value.code == 2
    assert "replay:" in capsys.readouterr().err


def test_nccl_tests_long_and_short_forms() -> None:
    assert nccl_tests_replay.read_args(["--minbytes", "8", "--maxbytes=1G", "-J", "o.json"]) == {
        "b": "8",
        "e": "1G",
        "J": "o.json",
    }
