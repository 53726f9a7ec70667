"""The cache: redis-benchmark on every node at once against an inventory Redis endpoint.

Builds ``redis-benchmark -h HOST -p PORT -t TESTS -n REQUESTS -c CLIENTS -d SIZE -r
KEYSPACE -P PIPELINE [--threads N] --precision 3 --csv`` (Debian's redis-tools; tested
with 7.0.15). The target is the ``redis_endpoints`` entry named by ``endpoint`` (host and
port come from the inventory, each its own argument). The output is read by the
``redis-benchmark`` parser: ops/s and latency percentiles per test, with the dim
``endpoint`` (its name). No password: redis-benchmark takes one only in its argv (``-a``,
``-u redis://...``; see :class:`aibench.inventory_file.RedisEndpointModel`), and 7.0.15
does not read ``REDISCLI_AUTH`` from its environment as redis-cli does (tried here: the
server still answers ``NOAUTH``, which the parser reports as the step's failure).
redis-benchmark retries a refused connection for ever, so the step's ``timeout`` is what
ends a run against a dead server.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any, ClassVar

from pydantic import Field, field_validator

from aibench.config import Strict
from aibench.errors import ToolFailure
from aibench.inventory import Node
from aibench.parsers import Record
from aibench.parsers.redis_benchmark import TOOL, UNITS, parse
from aibench.runners._checks import BinaryOptions, tool_path
from aibench.runners.base import Invocation, Output, Slot, each_node, parse_with_dims
from aibench.traits import Traits

ENDPOINT_ENV = "AIBENCH_REDIS_ENDPOINT"  # the endpoint's name, for the records
_TESTS = re.compile(r"^[a-z_]+(,[a-z_]+)*$")


class RedisBenchmarkOptions(BinaryOptions):
    """Options of a redis-benchmark step (suite ``options:``)."""

    endpoint: str = Field(
        description="an inventory Redis endpoint (redis_endpoints), or any: the node's first"
    )
    tests: str = Field("set,get", description="redis-benchmark -t: comma-separated tests")
    requests: Annotated[int, Field(ge=1, le=10**9)] = Field(100_000, description="-n per test")
    clients: Annotated[int, Field(ge=1, le=10_000)] = Field(50, description="-c connections")
    data_size: Annotated[int, Field(ge=1, le=512 * 1024**2)] = Field(
        64, description="-d: bytes of each SET/GET value"
    )
    keyspace: Annotated[int, Field(ge=1, le=10**9)] = Field(
        100_000, description="-r: random keys out of this many"
    )
    pipeline: Annotated[int, Field(ge=1, le=10_000)] = Field(1, description="-P requests")
    threads: Annotated[int, Field(ge=1, le=256)] | None = Field(None, description="--threads")
    bin_dir: str | None = Field(None, description="directory of the redis-benchmark binary")
    timeout: float = Field(300.0, gt=0, description="seconds per node before it is stopped")

    @field_validator("tests")
    @classmethod
    def _tests(cls, v: str) -> str:
        if not _TESTS.match(v):
            raise ValueError(f"tests must be names separated by commas, e.g. set,get: {v!r}")
        return v


def redis_endpoint(node: Node, name: str) -> dict[str, Any]:
    """The node's Redis endpoint ``name`` (``any``: its first)."""
    eps = {e["name"]: e for e in node.facts.get("redis_endpoints") or []}
    if name == "any" and eps:
        return dict(next(iter(eps.values())))
    if name not in eps:
        known = ", ".join(sorted(eps)) or "none"
        raise ValueError(
            f"Redis endpoint {name!r} is not in the inventory of {node.name} ({known})"
        )
    return dict(eps[name])


def argv(o: RedisBenchmarkOptions, node: Node) -> tuple[str, ...]:
    ep = redis_endpoint(node, o.endpoint)
    args = [tool_path(o.bin_dir, node, TOOL, "redis-benchmark")]
    args += ["-h", ep["host"], "-p", str(ep.get("port", 6379)), "-t", o.tests]
    args += ["-n", str(o.requests), "-c", str(o.clients), "-d", str(o.data_size)]
    args += ["-r", str(o.keyspace), "-P", str(o.pipeline)]
    if o.threads:
        args += ["--threads", str(o.threads)]
    return (*args, "--precision", "3", "--csv")


class RedisBenchmarkRunner:
    name: ClassVar[str] = TOOL
    tool: ClassVar[str] = TOOL
    default_placement: ClassVar[str] = "each"
    Options: ClassVar[type[Strict]] = RedisBenchmarkOptions
    traits: ClassVar[Traits] = Traits(
        units=UNITS,
        title="Cache (redis-benchmark)",
        key_facts=("redis-benchmark.version",),
    )

    def invocations(
        self, step: str, options: RedisBenchmarkOptions, group: Sequence[Node], slot: Slot
    ) -> list[Invocation]:
        name = redis_endpoint(group[0], options.endpoint)["name"] if group else options.endpoint
        return each_node(
            step, self.tool, TOOL, group, slot, lambda node: argv(options, node),
            options.timeout, env={ENDPOINT_ENV: name}, network=True,
        )  # fmt: skip

    def expected_seconds(self, options: RedisBenchmarkOptions) -> tuple[float, str]:
        tests = len(options.tests.split(","))
        return tests * options.requests / 20_000 + 2.0, "at 20,000 requests/s per test"

    def collect(self, inv: Invocation, out: Output) -> list[Record]:
        endpoint = _endpoint_of(inv)
        records = parse_with_dims(TOOL, parse, out.stdout + "\n" + out.stderr, endpoint=endpoint)
        if out.exit_code != 0:
            raise ToolFailure(TOOL, out.failure(), partial=list(records))
        return list(records)

    def version_argv(self) -> tuple[str, ...]:
        return ("redis-benchmark", "--version")

    def version_argv_for(self, inv: Invocation) -> tuple[str, ...]:
        return (inv.client.argv[0], "--version")

    def parse_version(self, text: str) -> str:
        m = re.search(r"redis-benchmark (\d+\.\d+\.\d+)", text)
        return m.group(1) if m else ""


def _endpoint_of(inv: Invocation) -> str:
    """The endpoint's name, which the plan put in the environment (no secret)."""
    return inv.client.env.get(ENDPOINT_ENV, "")


RUNNER = RedisBenchmarkRunner()
