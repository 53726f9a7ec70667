"""The s5cmd and redis-benchmark runners' plans (argv, where credentials go, the inventory
fields they read) and their collect on real captures (tests/fixtures/s5cmd, redis-benchmark)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from aibench.config import validate
from aibench.errors import ConfigError, ParseError, ToolFailure
from aibench.inventory import Node
from aibench.inventory_file import InventoryModel, S3EndpointModel, build_inventory
from aibench.parsers.s5cmd import parse as parse_s5cmd
from aibench.runners.base import Output, Slot
from aibench.runners.redis_benchmark import RUNNER as REDIS
from aibench.runners.redis_benchmark import RedisBenchmarkOptions
from aibench.runners.s5cmd import RUNNER as S5
from aibench.runners.s5cmd import S5cmdOptions, size_bytes

FIX = Path(__file__).resolve().parent.parent / "fixtures"


def _nodes(**s3: str) -> list[Node]:
    ep = S3EndpointModel.model_validate({"name": "rgw", "url": "http://10.0.0.9:7480/", **s3})
    facts = {
        "s3_endpoints": [ep.model_dump(exclude_none=True)],
        "redis_endpoints": [{"name": "cache", "host": "10.0.0.8", "port": 16379}],
        "tool_dirs": {"s5cmd": "/opt/s5cmd/bin"},
    }
    return [Node("n1", "10.0.0.1", facts=facts), Node("n2", "10.0.0.2", facts=facts)]


def test_s5cmd_plan_names_the_credentials_file_never_a_key() -> None:
    o = S5cmdOptions.model_validate({"endpoint": "rgw", "large_size": "8MiB", "streams": 2})
    invs = S5.invocations("s3", o, _nodes(credentials_file="/etc/s3.cred"), Slot(workdir="/w"))
    assert [i.nodes for i in invs] == [("n1",), ("n2",)]
    argv = invs[0].client.argv
    assert argv[:4] == ("bash", "-c", argv[2], "aibench-s5cmd")
    assert argv[4:] == (
        "/w/s5cmd/s3.n1.r0", "rgw", "/opt/s5cmd/bin/s5cmd", "http://10.0.0.9:7480", "aibench",
        "aibench/s3/n1/r0", "/etc/s3.cred", "", "", "", str(8 * 1024**2), "16", "4096", "512",
        "2", "1",
    )  # fmt: skip
    assert invs[0].client.env == {}
    assert invs[0].network


def test_s5cmd_plan_passes_variable_names_for_env_credentials() -> None:
    o = S5cmdOptions.model_validate({"endpoint": "rgw"})
    nodes = _nodes(access_key_env="S3_KEY_ID", secret_key_env="S3_SECRET")
    argv = S5.invocations("s3", o, nodes, Slot())[0].client.argv
    assert argv[10:14] == ("", "", "S3_KEY_ID", "S3_SECRET")


def test_s5cmd_unknown_endpoint_names_the_known_ones() -> None:
    o = S5cmdOptions.model_validate({"endpoint": "minio"})
    with pytest.raises(ValueError, match=r"'minio' is not in the inventory of n1 \(rgw\)"):
        S5.invocations("s3", o, _nodes(), Slot())


@pytest.mark.parametrize(
    ("value", "expected"), [(4096, 4096), ("4KiB", 4096), ("64MiB", 64 * 1024**2), ("1GB", 10**9)]
)
def test_sizes(value: int | str, expected: int) -> None:
    assert size_bytes(value) == expected


def test_bad_options_are_refused() -> None:
    for bad in ({"endpoint": "rgw", "large_size": "lots"}, {"endpoint": "rgw", "bucket": "A_B"},
                {"endpoint": "rgw", "bin_dir": "rel/dir"}):  # fmt: skip
        with pytest.raises(ValidationError):
            S5cmdOptions.model_validate(bad)


@pytest.mark.parametrize(
    ("endpoint", "why"),
    [
        ({"access_key_env": "A"}, "give both access_key_env and secret_key_env"),
        ({"access_key_env": "A", "secret_key_env": "B", "credentials_file": "/f"}, "not both"),
        ({"profile": "p"}, "profile needs credentials_file"),
        ({"url": "http://x:1/$(id)"}, "url"),
        ({"secret_key": "s3cr3t"}, "secret_key"),
    ],
)
def test_inventory_refuses_bad_s3_endpoints(endpoint: dict[str, str], why: str) -> None:
    ep = {"name": "rgw", "url": "http://10.0.0.9:7480", **endpoint}
    doc = {"nodes": [{"name": "n1"}], "defaults": {"s3_endpoints": [ep]}}
    with pytest.raises(ConfigError, match=why):
        build_inventory(validate(InventoryModel, doc, "inv.yaml"), "inv.yaml")


def _out(text: str, rc: int | None = 0) -> Output:
    return Output(text, "", rc, Path("."))


def test_s5cmd_collect_stamps_the_endpoint() -> None:
    o = S5cmdOptions.model_validate({"endpoint": "rgw"})
    inv = S5.invocations("s3", o, _nodes(), Slot())[0]
    text = (FIX / "s5cmd" / "rgw-two-nodes-h1.out").read_text()
    got = S5.collect(inv, _out(text))
    assert {m.dims["endpoint"] for m in got} == {"rgw"}
    assert {(m.dims["op"], m.dims["object"]) for m in got if m.metric == "throughput"} == {
        ("put", "large"),
        ("get", "large"),
        ("put", "small"),
        ("get", "small"),
    }


def test_s5cmd_collect_of_a_stopped_gateway_fails_with_the_errors_counted() -> None:
    o = S5cmdOptions.model_validate({"endpoint": "rgw"})
    inv = S5.invocations("s3", o, _nodes(), Slot())[0]
    text = (FIX / "s5cmd" / "rgw-gateway-stopped.out").read_text()
    with pytest.raises(ToolFailure, match="operations failed") as exc:
        S5.collect(inv, _out(text, 1))
    errors = {m.dims["op"] + "-" + m.dims["object"]: m.value for m in exc.value.partial
              if m.metric == "errors"}  # type: ignore[attr-defined]  # fmt: skip
    assert errors == {"put-large": 7, "get-large": 8, "put-small": 200, "get-small": 200}
    # the parser's partial records carry the endpoint too
    assert {m.dims["endpoint"] for m in exc.value.partial} == {"rgw"}  # type: ignore[attr-defined]


def test_redis_plan_and_collect() -> None:
    o = RedisBenchmarkOptions.model_validate({"endpoint": "cache", "requests": 20000})
    [inv, _] = REDIS.invocations("cache", o, _nodes(), Slot())
    assert inv.client.argv == (
        "redis-benchmark", "-h", "10.0.0.8", "-p", "16379", "-t", "set,get", "-n", "20000",
        "-c", "50", "-d", "64", "-r", "100000", "-P", "1", "--precision", "3", "--csv",
    )  # fmt: skip
    text = (FIX / "redis-benchmark" / "set-get-64b-c20-h1.csv").read_text()
    got = REDIS.collect(inv, _out(text))
    rates = {m.dims["op"]: m.value for m in got if m.metric == "ops_rate"}
    assert rates == {"set": 5878.90, "get": 6493.51}
    assert {m.dims["endpoint"] for m in got} == {"cache"}
    killed = (FIX / "redis-benchmark" / "server-killed.out").read_text()
    with pytest.raises(ToolFailure, match="Server closed the connection"):
        REDIS.collect(inv, _out(killed, 1))


def test_redis_tests_option_is_checked() -> None:
    with pytest.raises(ValidationError):
        RedisBenchmarkOptions.model_validate({"endpoint": "cache", "tests": "set;rm -rf"})


def test_the_object_cache_examples_load_and_plan() -> None:
    from aibench.inventory_file import load_inventory
    from aibench.plan import build_plan
    from aibench.suite import load_suite
    from aibench.thresholds.spec import load_spec

    examples = FIX.parent.parent / "examples"
    plan = build_plan(
        load_suite(str(examples / "suite-object-cache.yaml")),
        load_inventory(examples / "inventory-object-cache.yaml"),
    )
    assert {i.tool for i in plan.invocations} == {"s5cmd", "redis-benchmark"}
    assert len(plan.invocations) == 32
    s3 = next(i for i in plan.invocations if i.tool == "s5cmd")
    assert "/etc/aibench/s3-credentials" in s3.client.argv
    spec = load_spec(str(examples / "spec-object-cache.yaml"))
    assert {c.id for c in spec.checks} >= {"s3-errors", "cache-get-rate"}


def test_s5cmd_driver_without_the_binary_fails_with_its_reason(tmp_path: Path) -> None:
    """The real driver script, run here: no s5cmd at the given path."""
    import subprocess

    o = S5cmdOptions.model_validate({"endpoint": "rgw", "bin_dir": str(tmp_path / "none")})
    inv = S5.invocations("s3", o, _nodes(), Slot(workdir=str(tmp_path)))[0]
    r = subprocess.run(inv.client.argv, capture_output=True, text=True, timeout=30)
    assert r.returncode == 127
    with pytest.raises(ToolFailure, match="command not found"):
        S5.collect(inv, Output(r.stdout, r.stderr, r.returncode, tmp_path))


@pytest.mark.parametrize(
    ("prefix", "mangled"),
    [
        ("aibench-s5cmd stream 0 start", "aibench-s5cmd stream 0 start .796323509.167786"),
        (
            "aibench-s5cmd phase put-large start",
            "aibench-s5cmd phase put-large start 1.2.3 objects 8 size 16777216 streams 4",
        ),
        ("aibench-s5cmd phase put-large end", "aibench-s5cmd phase put-large end 17963235..09"),
    ],
)
def test_s5cmd_a_time_stamp_that_is_no_number_is_a_parse_error_naming_its_line(
    prefix: str, mangled: str
) -> None:
    """(The first is what the fuzz test made of a real capture.)"""
    lines = (FIX / "s5cmd" / "rgw-two-nodes-h1.out").read_text().splitlines()
    n = next(i for i, line in enumerate(lines) if line.startswith(prefix))
    lines[n] = mangled
    with pytest.raises(ParseError, match=rf"line {n + 1}: not a time stamp"):
        parse_s5cmd("\n".join(lines) + "\n")
