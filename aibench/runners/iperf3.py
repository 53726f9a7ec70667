"""iperf3 runner: server on one node of a pair, client on the other, JSON output.

For a pair (client, server): the server runs ``iperf3 -s -1 -p PORT --forceflush`` (one
test, then it exits; ``--forceflush`` so the "Server listening" line reaches the log at
once and readiness can be seen), the client ``iperf3 -c SERVER -p PORT -t DURATION -P
STREAMS -J`` (plus ``-R``, ``--bidir``, ``-u -b RATE`` ...). Ports are ``base_port +
slot index``, so the pairs of one round never collide. On a one-node cluster the pair is
the node with itself, over the loopback. Output is parsed by the ``iperf3`` parser.
``bidir`` (``--bidir``, iperf3 >= 3.7; the built-in suites use it) measures both
directions in one run, so all pairs need one run per pair instead of two: the parser
splits its records by ``direction`` (``forward``: client to server; ``reverse``).
Tested with iperf3 3.12.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, ClassVar

from pydantic import Field, field_validator, model_validator

from aibench.config import Strict
from aibench.executors.base import ReadyCheck
from aibench.inventory import Node
from aibench.runners.base import Invocation, ProcessSpec, Slot, label_for
from aibench.traits import PairSeries, Traits

_RATE = re.compile(r"^[0-9]+(\.[0-9]+)?[KMGkmg]?$")


class Iperf3Options(Strict):
    """Options of an iperf3 step (suite ``options:``)."""

    duration: Annotated[float, Field(gt=0, le=3600, description="seconds (-t)")] = 10.0
    streams: Annotated[int, Field(ge=1, le=128, description="parallel streams (-P)")] = 1
    reverse: bool = Field(False, description="server sends, client receives (-R)")
    bidir: bool = Field(False, description="both directions at once (--bidir)")
    udp: bool = Field(False, description="UDP instead of TCP (-u)")
    bandwidth: str | None = Field(None, description="target rate, e.g. 10G (-b); UDP default 1M")
    length: str | None = Field(None, description="buffer / datagram length (-l), e.g. 128K")
    omit: Annotated[int, Field(ge=0, le=60, description="seconds to omit at start (-O)")] = 0
    zerocopy: bool = Field(False, description="use sendfile (-Z)")
    port: Annotated[int, Field(ge=1024, le=65000)] | None = Field(
        None, description="first port; default: the suite's base_port"
    )

    @field_validator("bandwidth", "length")
    @classmethod
    def _rate(cls, v: str | None) -> str | None:
        if v is not None and not _RATE.match(v):
            raise ValueError(f"not a rate/size: {v!r} (examples: 100M, 10G, 128K)")
        return v

    @model_validator(mode="after")
    def _dirs(self) -> Iperf3Options:
        if self.reverse and self.bidir:
            raise ValueError("reverse and bidir cannot both be set")
        return self


def data_address(node: Node) -> str:
    """Where other nodes reach ``node`` for data traffic (facts.data_address, else host)."""
    addr = node.facts.get("data_address")
    return str(addr) if addr else node.host


class Iperf3Runner:
    traits: ClassVar[Traits] = Traits(
        units={"throughput": "bit/s", "retransmits": "count"},
        lower_is_better=frozenset({"retransmits", "lost_packets", "lost_percent"}),
        pair_series=(PairSeries("throughput", {"side": "receiver"}),),
        keep_one={"side": "receiver"},
        title="iperf3 (TCP/UDP bandwidth)",
    )
    name: ClassVar[str] = "iperf3"
    tool: ClassVar[str] = "iperf3"
    default_placement: ClassVar[str] = "pairs"
    Options: ClassVar[type[Strict]] = Iperf3Options

    def client_argv(self, o: Iperf3Options, server: str, port: int) -> tuple[str, ...]:
        args = ["iperf3", "-c", server, "-p", str(port), "-t", f"{o.duration:g}"]
        args += ["-P", str(o.streams), "-J", "--connect-timeout", "5000"]
        if o.reverse:
            args.append("-R")
        if o.bidir:
            args.append("--bidir")
        if o.udp:
            args += ["-u", "-b", o.bandwidth or "1M"]
        elif o.bandwidth:
            args += ["-b", o.bandwidth]
        if o.length:
            args += ["-l", o.length]
        if o.omit:
            args += ["-O", str(o.omit)]
        if o.zerocopy:
            args.append("-Z")
        return tuple(args)

    def server_argv(self, port: int, bind: str | None) -> tuple[str, ...]:
        args = ["iperf3", "-s", "-1", "-p", str(port), "--forceflush"]
        if bind:
            args += ["-B", bind]
        return tuple(args)

    def invocations(
        self, step: str, options: Iperf3Options, group: Sequence[Node], slot: Slot
    ) -> list[Invocation]:
        if len(group) != 2:
            raise ValueError(f"iperf3 runs on pairs; got a group of {len(group)}")
        client, server = group
        port = (options.port or slot.base_port) + slot.index
        if client.name == server.name:
            target, bind = "127.0.0.1", "127.0.0.1"
        else:
            target = data_address(server)
            bind = target
        timeout = options.duration + options.omit + 30.0
        return [
            Invocation(
                step=step,
                tool=self.tool,
                nodes=(client.name, server.name),
                label=label_for((client.name, server.name)),
                repeat=slot.repeat,
                round=slot.round,
                parser="iperf3",
                network=client.name != server.name,
                servers=(
                    ProcessSpec(
                        server.name,
                        self.server_argv(port, bind),
                        role="server",
                        ready=ReadyCheck(pattern=rf"Server listening on {port}\b", timeout=10.0),
                        timeout=timeout + 10.0,
                    ),
                ),
                client=ProcessSpec(
                    client.name, self.client_argv(options, target, port), timeout=timeout
                ),
            )
        ]

    def expected_seconds(self, o: Iperf3Options) -> tuple[float, str]:
        return o.duration + o.omit + 1.0, f"-t {o.duration:g} s"

    def version_argv(self) -> tuple[str, ...]:
        return ("iperf3", "--version")

    def parse_version(self, text: str) -> str:
        m = re.search(r"iperf (\d+\.\d+(\.\d+)?)", text)
        return m.group(1) if m else ""


RUNNER = Iperf3Runner()
