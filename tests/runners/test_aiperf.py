"""The serving runner's plan (argv, key handling, failover processes) and its collect on
the driver's framed output, without AIPerf: the exports fed in are real captures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from aibench.errors import ToolFailure
from aibench.inventory import Node
from aibench.inventory_file import EndpointModel
from aibench.parsers._aiperf_records import Request, failover_records, read_jsonl
from aibench.runners.aiperf import RUNNER, AiperfOptions, split_bundle
from aibench.runners.base import Output, Slot

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "aiperf"


def _nodes() -> list[Node]:
    b1 = EndpointModel(name="b1", url="http://10.0.0.2:8000", model="m", role="backend",
                       api_key_env="SERVING_KEY").model_dump(exclude_none=True)  # fmt: skip
    lb = EndpointModel(name="lb", url="http://10.0.0.4:8080", model="m", role="balancer",
                       backends=["b1"], api_key_file="/etc/key").model_dump(exclude_none=True)  # fmt: skip
    return [
        Node("drv", "10.0.0.1"),
        Node("n2", "10.0.0.2", facts={"endpoints": [b1]}),
        Node("n4", "10.0.0.4", facts={"endpoints": [lb]}),
    ]


def _opts(**kw: object) -> AiperfOptions:
    base: dict[str, object] = {
        "endpoint": "lb", "concurrency": [1, 2, 4], "requests": 10, "tokenizer": "/opt/tok"
    }  # fmt: skip
    return AiperfOptions.model_validate({**base, **kw})


def test_plan_argv_has_no_key_and_names_the_endpoint() -> None:
    [inv] = RUNNER.invocations("s", _opts(), _nodes(), Slot(workdir="/w"))
    argv = inv.client.argv
    assert inv.client.host == "drv"
    assert argv[:4] == ("sh", "-c", argv[2], "aibench-aiperf")
    assert argv[4:9] == ("/w/aiperf/s.r0", "/etc/key", "", "lb", "balancer")
    assert argv[argv.index("--concurrency") + 1] == "1,2,4"
    assert argv[argv.index("--url") + 1] == "http://10.0.0.4:8080"
    assert "--api-key" not in argv
    assert inv.client.env == {}
    # the services whose output aibench does not read, and which fail a run on a loaded
    # driver when they miss two heartbeats, are not started
    assert {"--no-server-metrics", "--no-gpu-telemetry"} <= set(argv)


def test_rate_sweep_is_poisson() -> None:
    [inv] = RUNNER.invocations("s", _opts(concurrency=[], rate=[1.5, 3]), _nodes(), Slot())
    argv = inv.client.argv
    assert argv[argv.index("--request-rate") + 1] == "1.5,3"
    assert argv[argv.index("--request-rate-mode") + 1] == "poisson"


@pytest.mark.parametrize(
    "bad",
    [
        {"concurrency": []},
        {"rate": [1.0]},
        {"requests": None},
        {"tokenizer": "a b"},
        {"failover": {"endpoint": "b1", "stop": ["kill"], "start": ["x"]}},
    ],
)
def test_bad_options(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        _opts(**bad)


def test_failover_argv_may_not_hold_the_separator() -> None:
    with pytest.raises(ValidationError):
        _opts(concurrency=[4], failover={"endpoint": "b1", "stop": ["a", ";"], "start": ["b"]})


def test_unknown_endpoint_is_named() -> None:
    with pytest.raises(ValueError, match="'nope' is not on the step's nodes"):
        RUNNER.invocations("s", _opts(endpoint="nope"), _nodes(), Slot())


def test_failover_runs_on_the_backend_node() -> None:
    o = _opts(concurrency=[4], failover={"endpoint": "b1", "stop": ["systemctl", "stop", "x"],
              "start": ["systemctl", "start", "x"], "stop_after_s": 1, "start_after_s": 2})  # fmt: skip
    [inv] = RUNNER.invocations("s", o, _nodes(), Slot())
    [fault] = inv.servers
    assert fault.host == "n2"
    assert fault.argv[3:7] == ("aibench-failover", "8000", "1", "2")
    assert fault.argv[7:] == ("systemctl", "stop", "x", ";", "systemctl", "start", "x")


def test_fault_script_runs_stop_then_start(tmp_path: Path) -> None:
    """The constant script splits the two argvs at ';' (run here with sh, ss stubbed)."""
    import subprocess

    from aibench.runners.aiperf import FAULT

    fake = tmp_path / "bin"
    fake.mkdir()
    # a stream flowing: each call reports more bytes sent (a counter in a file)
    (fake / "ss").write_text(
        f"#!/bin/sh\nn=$(cat {tmp_path}/n 2>/dev/null || echo 0); n=$((n + 100))\n"
        f'echo $n > {tmp_path}/n\necho "ESTAB cubic bytes_sent:$n bytes_acked:1"\n'
    )
    (fake / "ss").chmod(0o755)
    (fake / "sleep").write_text('#!/bin/sh\n[ "$1" = 86400 ] && exit 0\nexit 0\n')
    (fake / "sleep").chmod(0o755)
    env = {"PATH": f"{fake}:/usr/bin:/bin"}
    argv = ["sh", "-c", FAULT, "aibench-failover", "8000", "0", "0",
            "echo", "STOP", "a", ";", "echo", "START"]  # fmt: skip
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=10).stdout
    lines = out.splitlines()
    assert lines[0] == "aibench-failover armed"
    assert lines[2] == "STOP a"
    assert lines[5] == "START"
    assert lines[1].startswith("aibench-failover stop at ")
    assert lines[4].startswith("aibench-failover start at ")


def test_endpoint_model_refuses_two_key_sources() -> None:
    with pytest.raises(ValidationError):
        EndpointModel(name="x", url="http://h:1", model="m", api_key_env="A", api_key_file="/f")


def _bundle(*files: tuple[str, str]) -> str:
    return "".join(f"==> {p} <==\n{t}\n" for p, t in files)


def test_collect_reads_every_level_and_adds_the_endpoint(tmp_path: Path) -> None:
    [inv] = RUNNER.invocations("s", _opts(), _nodes(), Slot())
    text = (FIX / "v0.13.0_chat_stream_c4.json").read_text()
    text2 = (FIX / "v0.13.0_completions_sweep_c2.json").read_text()
    out = Output(_bundle(("concurrency_4/profile_export_aiperf.json", text),
                         ("concurrency_2/profile_export_aiperf.json", text2)),
                 "", 0, tmp_path)  # fmt: skip
    recs = RUNNER.collect(inv, out)
    levels = {m.dims["concurrency"] for m in recs}  # type: ignore[union-attr]
    assert levels == {2, 4}
    assert all(m.dims["endpoint"] == "lb" for m in recs)  # type: ignore[union-attr]
    itl = [m for m in recs if m.metric == "itl" and m.dims["concurrency"] == 4]  # type: ignore[union-attr]
    assert {m.dims["stat"]: m.value for m in itl}["mean"] == pytest.approx(  # type: ignore[union-attr]
        json.loads(text)["inter_token_latency"]["avg"]
    )


def test_collect_failed_run_is_a_tool_failure(tmp_path: Path) -> None:
    [inv] = RUNNER.invocations("s", _opts(), _nodes(), Slot())
    with pytest.raises(ToolFailure, match="no summary"):
        RUNNER.collect(inv, Output("", "boom\n", 1, tmp_path))


def test_split_bundle_refuses_unframed_text() -> None:
    from aibench.errors import ParseError

    with pytest.raises(ParseError):
        split_bundle("{}")


def test_failover_timeline() -> None:
    stop = 1000.0
    reqs = [
        Request(998.2, 998.5, 300.0, None),
        Request(999.9, 1000.1, None, "ClientConnectorError"),
        Request(1000.2, 1000.3, None, "http_503"),
        Request(1001.5, 1001.9, 400.0, None),
    ]
    ms = {(m.metric, m.dims.get("kind"), m.dims.get("t")): m.value
          for m in failover_records(reqs, stop, 1003.0)}  # fmt: skip
    assert ms[("failover_errors", "all", None)] == 2
    assert ms[("failover_errors", "http_503", None)] == 1
    assert ms[("recovery_time", None, None)] == pytest.approx(0.3)
    assert ms[("backend_down_time", None, None)] == pytest.approx(3.0)
    assert ms[("failover_error_rate", None, None)] == 50.0
    assert ms[("timeline_errors", None, -1)] == 1
    assert ms[("timeline_latency", None, 1)] == 400.0


def test_read_jsonl_on_a_real_error_record() -> None:
    line = json.dumps({"metadata": {"request_start_ns": 1796305043200035718,
                                    "request_end_ns": 1796305043200035718},
                       "metrics": {"error_isl": {"value": 16, "unit": "tokens"}},
                       "error": {"code": 500, "type": "Internal Server Error",
                                 "message": "injected failure"}})  # fmt: skip
    [r] = read_jsonl(line)
    assert r.error == "http_500"
    assert r.latency_ms is None


def test_max_rate_under_slo_from_a_rate_sweep(tmp_path: Path) -> None:
    """Two real exports as two levels: with a TTFT p99 bound between their p99s, only the
    level under it counts, and the maximum is that level's throughput."""
    o = _opts(concurrency=[], rate=[1, 2], slo={"ttft_p99_ms": 60, "error_rate_pct": 0})
    [inv] = RUNNER.invocations("s", o, _nodes(), Slot())
    a = json.loads((FIX / "v0.13.0_completions_sweep_c2.json").read_text())
    b = json.loads((FIX / "v0.13.0_chat_stream_c4.json").read_text())
    assert a["time_to_first_token"]["p99"] < 60 < b["time_to_first_token"]["p99"]
    out = Output(_bundle(("a/profile_export_aiperf.json", json.dumps(a)),
                         ("b/profile_export_aiperf.json", json.dumps(b))), "", 0, tmp_path)  # fmt: skip
    recs = RUNNER.collect(inv, out)
    met = {m.dims["concurrency"]: m.value for m in recs if m.metric == "slo_met"}  # type: ignore[union-attr]
    assert met == {2: 1.0, 4: 0.0}
    [best] = [m for m in recs if m.metric == "max_rate_under_slo"]
    assert best.value == pytest.approx(a["request_throughput"]["avg"])


def test_fault_script_waits_while_connections_are_idle(tmp_path: Path) -> None:
    """Pooled idle connections (bytes_sent constant) do not arm the stop."""
    import subprocess

    from aibench.runners.aiperf import FAULT

    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "ss").write_text('#!/bin/sh\necho "ESTAB cubic bytes_sent:5000 bytes_acked:1"\n')
    (fake / "ss").chmod(0o755)
    argv = ["sh", "-c", FAULT, "aibench-failover", "8000", "0", "0", "echo", "STOP", ";", "true"]
    with pytest.raises(subprocess.TimeoutExpired) as exc:
        subprocess.run(argv, env={"PATH": f"{fake}:/usr/bin:/bin"}, capture_output=True,
                       text=True, timeout=1.5)  # fmt: skip
    assert b"STOP" not in (exc.value.stdout or b"")


def test_version_of_the_aiperf_the_step_runs() -> None:
    [inv] = RUNNER.invocations("s", _opts(aiperf="/opt/venv/bin/aiperf"), _nodes(), Slot())
    assert RUNNER.version_argv_for(inv) == ("/opt/venv/bin/aiperf", "--version")
    assert RUNNER.parse_version("0.13.0\n") == "0.13.0"
