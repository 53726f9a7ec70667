"""perftest runner as tables: rails, ports, server/client argv, readiness."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from aibench.errors import ConfigError, UserError
from aibench.model import StepStatus
from aibench.runners.base import Slot
from tests.runners.helpers import node, plan, run, suite_of

HCAS = [
    {"name": "mlx5_0", "port": 1, "gid_index": 3, "netdev": "ens1f0"},
    {"name": "mlx5_1", "port": 1, "gid_index": 3, "netdev": "ens1f1"},
]
A = node("gpu001", "10.0.1.1", hcas=HCAS)
B = node("gpu002", "10.0.1.2", hcas=HCAS, data_address="10.9.0.2")
BARE_A = node("a", "10.0.2.1")
BARE_B = node("b", "10.0.2.2")


def test_one_invocation_per_rail_with_its_own_port_and_the_servers_address() -> None:
    invs = plan("perftest", {"size": "1M", "iters": 5000}, [A, B], Slot(index=0, base_port=18000))
    assert [i.label for i in invs] == ["gpu001--gpu002.mlx5_0", "gpu001--gpu002.mlx5_1"]
    common = ["-s", "1M", "-n", "5000", "--report_gbits", "-F"]
    for rail, inv in enumerate(invs):
        dev = f"mlx5_{rail}"
        port = str(18000 + rail)
        (srv,) = inv.servers
        assert srv.host == "gpu002"
        assert srv.role == "server"
        assert list(srv.argv) == [
            "stdbuf",
            "-oL",
            "ib_write_bw",
            "-d",
            dev,
            "-i",
            "1",
            "-x",
            "3",
            "-p",
            port,
            *common,
        ]
        assert srv.ready is not None
        assert srv.ready.pattern == "Waiting for client"
        assert srv.ready.port is None  # a probe connection would be taken for the client
        assert inv.client.host == "gpu001"
        assert list(inv.client.argv) == [
            "ib_write_bw",
            "-d",
            dev,
            "-i",
            "1",
            "-x",
            "3",
            "-p",
            port,
            *common,
            "10.9.0.2",
        ]
        assert inv.nodes == ("gpu001", "gpu002")
        assert inv.network is True
        assert inv.parser == "perftest"


@pytest.mark.parametrize(
    ("index", "ports"),
    [(0, [15201, 15202]), (1, [15233, 15234]), (3, [15297, 15298])],
)
def test_concurrent_pairs_never_share_a_port(index: int, ports: list[int]) -> None:
    invs = plan("perftest", {}, [A, B], Slot(index=index))
    got = [int(i.client.argv[i.client.argv.index("-p") + 1]) for i in invs]
    assert got == ports
    assert [int(i.servers[0].argv[i.servers[0].argv.index("-p") + 1]) for i in invs] == ports


@pytest.mark.parametrize(
    ("options", "group", "client", "server"),
    [
        # no HCA facts: one rail, perftest's first device, the host address
        (
            {},
            [BARE_A, BARE_B],
            ["ib_write_bw", "-p", "15201", "--report_gbits", "-F", "10.0.2.2"],
            ["stdbuf", "-oL", "ib_write_bw", "-p", "15201", "--report_gbits", "-F"],
        ),
        # device options, RoCE GID, duration mode, QPs, bidirectional, rdma_cm, sizes -a
        (
            {
                "test": "ib_read_bw",
                "device": "mlx5_4",
                "ib_port": 2,
                "gid_index": 5,
                "duration": 10,
                "qps": 4,
                "bidirectional": True,
                "rdma_cm": True,
                "no_cpu_freq_warning": False,
                "report_gbits": False,
                "port": 20000,
            },
            [BARE_A, BARE_B],
            [
                "ib_read_bw",
                "-d",
                "mlx5_4",
                "-i",
                "2",
                "-x",
                "5",
                "-p",
                "20000",
                "-D",
                "10",
                "-q",
                "4",
                "-b",
                "-R",
                "10.0.2.2",
            ],
            [
                "stdbuf",
                "-oL",
                "ib_read_bw",
                "-d",
                "mlx5_4",
                "-i",
                "2",
                "-x",
                "5",
                "-p",
                "20000",
                "-D",
                "10",
                "-q",
                "4",
                "-b",
                "-R",
            ],
        ),
        # latency tool: no --report_gbits; all sizes; one rail picked; a node with itself
        (
            {"test": "ib_send_lat", "all_sizes": True, "rails": ["mlx5_1"]},
            [A, A],
            [
                "ib_send_lat",
                "-d",
                "mlx5_1",
                "-i",
                "1",
                "-x",
                "3",
                "-p",
                "15201",
                "-a",
                "-F",
                "127.0.0.1",
            ],
            [
                "stdbuf",
                "-oL",
                "ib_send_lat",
                "-d",
                "mlx5_1",
                "-i",
                "1",
                "-x",
                "3",
                "-p",
                "15201",
                "-a",
                "-F",
            ],
        ),
    ],
)
def test_argv(
    options: dict[str, Any], group: list[Any], client: list[str], server: list[str]
) -> None:
    (inv,) = plan("perftest", options, group)
    assert list(inv.client.argv) == client
    assert list(inv.servers[0].argv) == server
    if "rdma_cm" in options:
        assert inv.servers[0].ready is not None
        assert inv.servers[0].ready.pattern == "Waiting for client rdma_cm QP to connect"


def test_json_output_files_and_their_directory_on_both_nodes() -> None:
    (inv, _) = plan("perftest", {"json_output": True}, [A, B], Slot(workdir="/var/tmp/ab"), "pt")
    c = "/var/tmp/ab/perftest/pt.gpu001--gpu002.mlx5_0.r0.client.json"
    assert list(inv.client.argv[-3:-1]) == ["--out_json", f"--out_json_file={c}"]
    assert inv.servers[0].argv[-1].endswith("pt.gpu001--gpu002.mlx5_0.r0.server.json")
    assert [(s.host, s.argv) for s in inv.setup] == [
        ("gpu001", ("mkdir", "-p", "/var/tmp/ab/perftest")),
        ("gpu002", ("mkdir", "-p", "/var/tmp/ab/perftest")),
    ]
    assert inv.artifacts == (c,)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"size": "1M", "all_sizes": True}, "not both"),
        ({"iters": 100, "duration": 5}, "not both"),
        ({"test": "ib_write_lat", "qps": 2}, "takes no qps"),
        ({"device": "mlx5_0 -x 9"}, "not a device name"),
        ({"test": "ib_foo_bw"}, "test"),
        ({"gbits": True}, "unknown key"),
    ],
)
def test_bad_options(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        plan("perftest", options, [A, B])


def test_unknown_rail_and_wrong_group_size() -> None:
    with pytest.raises(UserError, match="no HCA mlx5_7"):
        plan("perftest", {"rails": ["mlx5_7"]}, [A, B])
    with pytest.raises(UserError, match="pairs"):
        plan("perftest", {}, [A])


@pytest.mark.skipif(shutil.which("ib_write_bw") is None, reason="needs perftest")
@pytest.mark.skipif(
    any(Path("/sys/class/infiniband").glob("*")), reason="this machine has an RDMA device"
)
def test_a_node_without_an_rdma_device_fails_with_perftests_own_words(tmp_path: Path) -> None:
    """Real perftest on a machine without RDMA: the server never listens; the step says why."""
    here = node("ws", "127.0.0.1")
    (res,) = run(tmp_path, suite_of("perftest", {"size": "64K", "iters": 5}), [here])
    assert res.status is StepStatus.FAILED
    assert "not ready" in res.reason
    assert "Unable to find the Infiniband/RoCE device" in res.reason
    assert [p.role for p in res.processes] == ["server", "client"]


def test_collect_parses_the_clients_report_and_names_the_rail(tmp_path: Path) -> None:
    """A real captured ib_send_bw client report (NDR, --report_gbits) through collect."""
    from aibench.runners.base import Output
    from aibench.runners.perftest import RUNNER
    from tests.runners.helpers import FIXTURES

    text = FIXTURES / "perftest" / "ib_send_bw_client_IB_LID_NDR_report_gbits_single_size.txt"
    (inv, _) = plan("perftest", {"test": "ib_send_bw", "size": "65536"}, [A, B])
    records = RUNNER.collect(inv, Output(text.read_text(), "", 0, tmp_path))
    (bw,) = [r for r in records if getattr(r, "metric", "") == "bw_avg"]
    assert bw.value == 353.53
    assert bw.unit == "Gbit/s"
    assert bw.dims["device"] == "mlx5_0"
    assert bw.dims["server_device"] == "mlx5_0"


def test_collect_of_a_tool_that_found_no_device_is_its_own_message(tmp_path: Path) -> None:
    from aibench.errors import ToolFailure
    from aibench.runners.base import Output
    from aibench.runners.perftest import RUNNER

    (inv, _) = plan("perftest", {}, [A, B])
    said = " Did not detect devices \n If device exists, check if driver is up\n"
    said += " Unable to find the Infiniband/RoCE device\n"
    with pytest.raises(ToolFailure, match="Unable to find the Infiniband/RoCE device"):
        RUNNER.collect(inv, Output("", said, 1, tmp_path))
