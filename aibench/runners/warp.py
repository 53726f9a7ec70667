"""warp runner: MinIO's S3 benchmark from every node at once against an inventory endpoint.

Builds ``warp BENCHMARK --host HOST:PORT [--tls] --bucket B --duration D --concurrent N
--obj.size S [--objects N] [--autoterm] --benchdata FILE --no-color [extra]`` (BENCHMARK:
put, get, mixed, stat or list) for each node of the placement (default ``each``: every
node loads the service at once, and a spec sums them). The flags are those of warp's
source at commit d06f8e6 (each benchmark's own flag set, kept in
tests/fixtures/tool-help/warp/). The endpoint is an inventory ``s3_endpoints`` entry, the
same one the s5cmd step uses: its URL gives ``--host`` and ``--tls``.

Credentials never reach an argv: warp reads ``WARP_ACCESS_KEY`` and ``WARP_SECRET_KEY``
from its environment (warp's README), and a small ``sh`` driver on the node sets them from
the endpoint's ``access_key_env``/``secret_key_env`` (variables of the node's
environment, read with ``printenv``) or from its ``credentials_file`` (an AWS credentials
file: ``aws_access_key_id`` and ``aws_secret_access_key`` of ``[profile]``, default
``[default]``), then execs warp. warp's raw benchmark data (``.csv.zst``) goes to the
step's work folder on the node, not to the current directory.

Records: the ``warp`` parser's (throughput, ops/s, latency and TTFB per operation), with
the dim ``endpoint``. warp is not packaged for Debian and no MinIO runs here: the tests
run a replay that accepts only each benchmark's flags and prints a published warp output.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from aibench.config import Strict
from aibench.errors import ParseError, ToolFailure
from aibench.inventory import Node
from aibench.parsers import Record
from aibench.parsers.warp import parse
from aibench.runners import _checks as checks
from aibench.runners.base import Invocation, Output, Slot, each_node, parse_with_dims
from aibench.runners.s5cmd import s3_endpoint
from aibench.traits import Traits

TOOL = "warp"
ENDPOINT_ENV = "AIBENCH_WARP_ENDPOINT"  # the endpoint's name, for the records
DRIVER = r"""cred=$1 profile=$2 akenv=$3 skenv=$4 data=$5
shift 5
fail() { echo "aibench: $*" >&2; exit 3; }
key() { awk -v s="[${profile:-default}]" -v k="$1" '
  $0 == s { on = 1; next } /^\[/ { on = 0 }
  on { sub(/[ \t]*=[ \t]*/, "="); split($0, kv, "="); if (kv[1] == k) print kv[2] }' "$cred"; }
if [ -n "$akenv" ]; then
  WARP_ACCESS_KEY=$(printenv -- "$akenv") || fail "$akenv is not set"
  WARP_SECRET_KEY=$(printenv -- "$skenv") || fail "$skenv is not set"
  export WARP_ACCESS_KEY WARP_SECRET_KEY
elif [ -n "$cred" ]; then
  [ -r "$cred" ] || fail "cannot read $cred"
  WARP_ACCESS_KEY=$(key aws_access_key_id) WARP_SECRET_KEY=$(key aws_secret_access_key)
  [ -n "$WARP_ACCESS_KEY" ] && [ -n "$WARP_SECRET_KEY" ] ||
    fail "no keys of [${profile:-default}] in $cred"
  export WARP_ACCESS_KEY WARP_SECRET_KEY
fi
mkdir -p -- "${data%/*}" || fail "cannot create ${data%/*}"
exec "$@"
"""
_DURATION = re.compile(r"^[0-9]+(s|m|h)$")
_SIZE = re.compile(r"^[0-9]+(B|KiB|MiB|GiB|KB|MB|GB)?$")


class WarpOptions(checks.BinaryOptions):
    """Options of a warp step (suite ``options:``)."""

    endpoint: str = Field(description="name of an inventory S3 endpoint (s3_endpoints)")
    benchmark: Literal["put", "get", "mixed", "stat", "list"] = Field(
        "put", description="the warp benchmark"
    )
    duration: str = Field("1m", description="--duration: 30s, 5m ...")
    concurrent: Annotated[int, Field(ge=1, le=10_000)] = Field(20, description="--concurrent")
    obj_size: str = Field("10MiB", description="--obj.size: 4KiB, 10MiB ...")
    objects: Annotated[int, Field(ge=1)] | None = Field(
        None, description="--objects: the pool of get, mixed, stat and list"
    )
    bucket: str = Field(
        "warp-benchmark-bucket", pattern=r"^[a-z0-9][a-z0-9.-]{2,62}$", description="--bucket"
    )
    autoterm: bool = Field(False, description="--autoterm: stop once throughput is stable")
    bin_dir: str | None = Field(None, description="directory of the warp binary")
    extra: list[str] = Field(default_factory=list, description="more warp flags")
    timeout: Annotated[float, Field(gt=0)] = Field(900.0, description="seconds per node")

    @field_validator("duration")
    @classmethod
    def _duration(cls, v: str) -> str:
        if not _DURATION.match(v):
            raise ValueError(f"not a warp duration: {v!r} (30s, 5m, 1h)")
        return v

    @field_validator("obj_size")
    @classmethod
    def _size(cls, v: str) -> str:
        if not _SIZE.match(v):
            raise ValueError(f"not a warp size: {v!r} (4096, 4KiB, 10MiB)")
        return v


def host_and_tls(url: str) -> tuple[str, bool]:
    """``http://10.0.0.9:7480`` -> ("10.0.0.9:7480", False); https without a port: 443."""
    parts = urlsplit(url)
    tls = parts.scheme == "https"
    port = parts.port or (443 if tls else 80)
    return f"{parts.hostname}:{port}", tls


def argv(step: str, o: WarpOptions, node: Node, slot: Slot) -> tuple[str, ...]:
    ep = s3_endpoint(node, o.endpoint)
    host, tls = host_and_tls(ep["url"])
    data = f"{slot.workdir.rstrip('/')}/warp/{step}.{node.name}.r{slot.repeat}"
    warp = [checks.tool_path(o.bin_dir, node, TOOL, "warp"), o.benchmark, "--host", host]
    warp += ["--tls"] if tls else []
    warp += ["--bucket", o.bucket, "--duration", o.duration]
    warp += ["--concurrent", str(o.concurrent), "--obj.size", o.obj_size]
    if o.objects is not None and o.benchmark != "put":
        warp += ["--objects", str(o.objects)]
    warp += ["--autoterm"] if o.autoterm else []
    warp += ["--benchdata", data, "--no-color", *o.extra]
    creds = (ep.get("credentials_file") or "", ep.get("profile") or "",
             ep.get("access_key_env") or "", ep.get("secret_key_env") or "")  # fmt: skip
    return ("sh", "-c", DRIVER, "aibench-warp", *creds, data, *warp)


class WarpRunner:
    name: ClassVar[str] = TOOL
    tool: ClassVar[str] = TOOL
    default_placement: ClassVar[str] = "each"
    Options: ClassVar[type[Strict]] = WarpOptions
    traits: ClassVar[Traits] = Traits(
        units={"throughput": "MiB/s", "ops_rate": "ops/s", "latency": "ms", "ttfb": "ms"},
        lower_is_better=frozenset({"latency", "ttfb", "errors"}),
        title="Object storage over S3 (warp)",
    )

    def invocations(
        self, step: str, options: WarpOptions, group: Sequence[Node], slot: Slot
    ) -> list[Invocation]:
        return each_node(
            step, self.tool, TOOL, group, slot, lambda node: argv(step, options, node, slot),
            options.timeout, env={ENDPOINT_ENV: options.endpoint}, network=True,
        )  # fmt: skip

    def version_argv(self) -> tuple[str, ...]:
        return ("warp", "--version")

    def version_argv_for(self, inv: Invocation) -> tuple[str, ...]:
        return (inv.client.argv[9], "--version")

    def parse_version(self, text: str) -> str:
        m = re.search(r"warp version (\S+)", text)
        return m.group(1) if m else ""

    def collect(self, inv: Invocation, out: Output) -> list[Record]:
        endpoint = inv.client.env.get(ENDPOINT_ENV, "")
        try:
            records = parse_with_dims(
                TOOL, parse, out.stdout + "\n" + out.stderr, endpoint=endpoint
            )
        except ParseError:
            if out.exit_code != 0:  # warp refused to start or the driver failed: say why
                raise ToolFailure(TOOL, out.failure()) from None
            raise
        if out.exit_code != 0:
            raise ToolFailure(TOOL, out.failure(), partial=list(records))
        return records


RUNNER = WarpRunner()
