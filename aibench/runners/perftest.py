"""perftest runner: ``ib_write_bw`` and friends between the two nodes of a pair, per rail.

For a pair (client, server) and each rail (the i-th HCA of the client with the i-th HCA
of the server, from the node facts ``hcas: [{name, port, gid_index, netdev}]``; every
rail at once, one invocation each) the server runs::

    stdbuf -oL ib_write_bw -d mlx5_0 -i 1 [-x 3] -p PORT [-s SIZE | -a] [-n N | -D SECS]
           [--report_gbits] [-q QPS] [-b] [-F] [-R] [--out_json --out_json_file=F]

and the client the same options (its own device) followed by the server's address
(``facts.data_address``, else its host; ``127.0.0.1`` for a node paired with itself). The
server prints "Waiting for client to connect..." (``... rdma_cm QP to connect`` with
``-R``) when it listens; ``stdbuf -oL`` makes that line reach its log at once so
readiness is seen (perftest writes through stdio). Ports are ``base_port + slot index ×
32 + rail``, so concurrent pairs and rails never share one (at most 32 rails per node).
Latency tools (``*_lat``) take no ``--report_gbits``, ``-q`` or ``-b``.

Without HCA facts one rail is planned with the ``device``/``ib_port``/``gid_index``
options (none: perftest's first device). Output is parsed by the ``perftest`` parser in
``collect``, which adds the rail (dims ``device``, ``server_device``). The version is
read from the binary the step runs (``BIN_DIR/<test> --version``).

``--out_json`` is opt-in (option ``json_output``), not switched on by version. The text
report is what every perftest prints, and what aibench parses and judges on every
version; the JSON report holds the same numbers, is written on the node (``workdir``)
and is not read back (a site that collects those files itself can ask for them).
Switching by version would also be a guess: builds differ from their version string
(Debian's ``4.5+0.17`` package reports ``Version: 6.06`` and lists ``--out_json`` in
its ``--help``). ``bin_dir``
names the binaries' directory (default: the PATH). Tested with perftest 6.06 on a
machine without an RDMA device (the server exits with "Unable to find the
Infiniband/RoCE device", which the step reports), and across hosts over ssh with a
replay of real reports in place of the binaries.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from aibench import parsers
from aibench.config import Strict
from aibench.errors import ParseError, ToolFailure, UserError
from aibench.executors.base import ReadyCheck
from aibench.inventory import Node
from aibench.model import FrozenDims, Measurement
from aibench.parsers import Record
from aibench.runners import _checks as checks
from aibench.runners.base import Invocation, Output, ProcessSpec, Slot, label_for
from aibench.runners.iperf3 import data_address
from aibench.traits import PairSeries, Traits

TOOL = "perftest"
RAIL_STRIDE = 32
_WORD = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")

Test = Literal[
    "ib_write_bw",
    "ib_read_bw",
    "ib_send_bw",
    "ib_atomic_bw",
    "ib_write_lat",
    "ib_read_lat",
    "ib_send_lat",
    "ib_atomic_lat",
]


class PerftestOptions(checks.BinaryOptions):
    """Options of a perftest step (suite ``options:``)."""

    test: Test = Field("ib_write_bw", description="which perftest tool")
    size: str | None = Field(None, description="message size (-s), e.g. 65536, 1M")
    all_sizes: bool = Field(False, description="every size from 2 to 2^23 (-a)")
    iters: Annotated[int, Field(ge=5)] | None = Field(None, description="exchanges (-n)")
    duration: Annotated[int, Field(ge=1, le=3600)] | None = Field(
        None, description="seconds, duration mode (-D)"
    )
    qps: Annotated[int, Field(ge=1, le=65536)] | None = Field(None, description="QPs (-q)")
    bidirectional: bool = Field(False, description="both directions at once (-b)")
    report_gbits: bool = Field(True, description="bandwidth in Gbit/s (--report_gbits)")
    no_cpu_freq_warning: bool = Field(True, description="-F: no cpufreq warning / refusal")
    rdma_cm: bool = Field(False, description="connect the QPs with rdma_cm (-R)")
    json_output: bool = Field(
        False,
        description="also write --out_json on the node (builds whose --help lists it); "
        "the text report is what is parsed",
    )
    rails: list[str] | None = Field(
        None, description="only these HCAs (client-side names); default every HCA of the node"
    )
    device: str | None = Field(None, description="-d when the nodes have no HCA facts")
    ib_port: Annotated[int, Field(ge=1, le=255)] | None = Field(
        None, description="-i when the nodes have no HCA facts"
    )
    gid_index: Annotated[int, Field(ge=0, le=255)] | None = Field(
        None, description="-x (RoCE) when the nodes have no HCA facts"
    )
    port: Annotated[int, Field(ge=1024, le=65000)] | None = Field(
        None, description="first TCP port; default: the suite's base_port"
    )
    bin_dir: str | None = Field(
        None, description="directory of the perftest binaries; default: the PATH"
    )
    extra: list[str] = Field(default_factory=list, description="more perftest options")
    timeout: Annotated[float, Field(gt=0)] = Field(120.0, description="seconds per run")

    @field_validator("size", mode="before")
    @classmethod
    def _size(cls, v: object) -> object:
        return checks.size(v, "a perftest size", "65536, 64K, 1M")

    @field_validator("device")
    @classmethod
    def _device(cls, v: str | None) -> str | None:
        if v is not None and not _WORD.match(v):
            raise ValueError(f"not a device name: {v!r}")
        return v

    @field_validator("rails")
    @classmethod
    def _rails(cls, v: list[str] | None) -> list[str] | None:
        for name in v or []:
            if not _WORD.match(name):
                raise ValueError(f"not a device name: {name!r}")
        return v

    @model_validator(mode="after")
    def _modes(self) -> PerftestOptions:
        if self.size is not None and self.all_sizes:
            raise ValueError("give size (-s) or all_sizes (-a), not both")
        if self.iters is not None and self.duration is not None:
            raise ValueError("give iters (-n) or duration (-D), not both")
        if self.duration is not None and self.all_sizes:
            raise ValueError("duration mode (-D) runs one size: drop all_sizes")
        lat = self.test.endswith("_lat")
        if lat and (self.qps is not None or self.bidirectional):
            raise ValueError(f"{self.test} takes no qps (-q) or bidirectional (-b)")
        # perftest 4.5: "Message size cannot be changed for Atomic tests" (exit 1); their
        # --help lists neither -a nor -s
        if self.test.startswith("ib_atomic") and (self.size is not None or self.all_sizes):
            raise ValueError(f"{self.test} has a fixed 8-byte message: drop size / all_sizes")
        return self


def _hca(d: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": d.get("name"), "port": d.get("port"), "gid_index": d.get("gid_index")}


Rail = tuple[dict[str, Any], dict[str, Any]]


def rails(o: PerftestOptions, client: Node, server: Node) -> list[Rail]:
    """(client HCA, server HCA) per rail: matched by position in the nodes' HCA lists."""
    mine = [_hca(h) for h in client.facts.get("hcas") or []]
    theirs = [_hca(h) for h in server.facts.get("hcas") or []]
    if not mine or not theirs:
        one = {"name": o.device, "port": o.ib_port, "gid_index": o.gid_index}
        return [(one, dict(one))]
    pairs = list(zip(mine, theirs, strict=False))
    if o.rails is not None:
        pairs = [p for p in pairs if p[0]["name"] in o.rails]
        missing = sorted(set(o.rails) - {p[0]["name"] for p in pairs})
        if missing:
            raise UserError(f"node {client.name} has no HCA {', '.join(missing)} (option rails)")
    if len(pairs) > RAIL_STRIDE:
        raise UserError(f"at most {RAIL_STRIDE} rails per node, {client.name} has {len(pairs)}")
    return pairs


def json_reports(
    o: PerftestOptions, step: str, label: str, slot: Slot, names: tuple[str, str]
) -> tuple[tuple[ProcessSpec, ...], str | None, str | None]:
    """The ``--out_json`` files of one rail (client's, server's) and the setup step that
    makes their folder on both nodes; none when the option ``json_output`` is off."""
    if not o.json_output:
        return (), None, None
    folder = f"{slot.workdir}/perftest"
    setup = tuple(
        ProcessSpec(h, ("mkdir", "-p", folder), role="setup", timeout=30)
        for h in dict.fromkeys(names)
    )
    stem = f"{folder}/{step}.{label}.r{slot.repeat}"
    return setup, f"{stem}.client.json", f"{stem}.server.json"


def listening_server(
    o: PerftestOptions, host: str, argv: tuple[str, ...], timeout: float
) -> ProcessSpec:
    """The server side of a rail: ready once it prints that it waits for its client."""
    ready = "Waiting for client" + (" rdma_cm QP to connect" if o.rdma_cm else "")
    return ProcessSpec(
        host,
        argv,
        role="server",
        ready=ReadyCheck(pattern=ready, timeout=15.0),
        timeout=timeout + 15.0,
    )


class PerftestRunner:
    traits: ClassVar[Traits] = Traits(
        units={
            "bw_avg": "Gbit/s",
            "bw_peak": "Gbit/s",
            "lat_typical": "us",
            "lat_avg": "us",
            "lat_p99": "us",
        },
        pair_series=(PairSeries("bw_avg"),),
        keep_one={"side": "client"},
        title="perftest (RDMA bandwidth and latency)",
    )
    name: ClassVar[str] = "perftest"
    tool: ClassVar[str] = TOOL
    default_placement: ClassVar[str] = "pairs"
    Options: ClassVar[type[Strict]] = PerftestOptions

    def common(
        self, o: PerftestOptions, hca: Mapping[str, Any], port: int, out: str | None
    ) -> list[str]:
        args: list[str] = [f"{o.bin_dir.rstrip('/')}/{o.test}" if o.bin_dir else o.test]
        if hca.get("name"):
            args += ["-d", str(hca["name"])]
        if hca.get("port") is not None:
            args += ["-i", str(hca["port"])]
        if hca.get("gid_index") is not None:
            args += ["-x", str(hca["gid_index"])]
        args += ["-p", str(port)]
        if o.size is not None:
            args += ["-s", o.size]
        if o.all_sizes:
            args.append("-a")
        if o.iters is not None:
            args += ["-n", str(o.iters)]
        if o.duration is not None:
            args += ["-D", str(o.duration)]
        if not o.test.endswith("_lat"):
            if o.report_gbits:
                args.append("--report_gbits")
            if o.qps is not None:
                args += ["-q", str(o.qps)]
            if o.bidirectional:
                args.append("-b")
        if o.no_cpu_freq_warning:
            args.append("-F")
        if o.rdma_cm:
            args.append("-R")
        if out:
            args += ["--out_json", f"--out_json_file={out}"]
        args += o.extra
        return args

    def invocations(
        self, step: str, options: PerftestOptions, group: Sequence[Node], slot: Slot
    ) -> list[Invocation]:
        if len(group) != 2:
            raise UserError(
                f"step {step}: perftest runs on pairs; got a group of {len(group)}",
                hint="use placement pairs, ring, sample or groups",
            )
        o = options
        client, server = group
        same = client.name == server.name
        target = "127.0.0.1" if same else data_address(server)
        names = (client.name, server.name)
        planned = rails(o, client, server)
        base = (o.port or slot.base_port) + slot.index * RAIL_STRIDE
        timeout = o.timeout + (o.duration or 0)
        out: list[Invocation] = []
        for i, (mine, theirs) in enumerate(planned):
            port = base + i
            label = label_for(names)
            if mine.get("name"):
                label += f".{mine['name']}"
            setup, c_json, s_json = json_reports(o, step, label, slot, names)
            server_argv = ("stdbuf", "-oL", *self.common(o, theirs, port, s_json))
            client_argv = (*self.common(o, mine, port, c_json), target)
            out.append(
                Invocation(
                    step=step,
                    tool=self.tool,
                    nodes=names,
                    label=label,
                    repeat=slot.repeat,
                    round=slot.round,
                    parser="perftest",
                    network=not same,
                    setup=setup,
                    servers=(listening_server(o, server.name, server_argv, timeout),),
                    client=ProcessSpec(client.name, client_argv, timeout=timeout),
                    artifacts=tuple(p for p in (c_json,) if p),
                )
            )
        return out

    # ``--version`` prints "Version: 6.06" and exits 1 (perftest 6.06 on Debian 12)
    version_exit_codes: ClassVar[tuple[int, ...]] = (0, 1)

    def expected_seconds(self, o: PerftestOptions) -> tuple[float, str]:
        if o.duration is not None:
            return o.duration + 2.0, f"-D {o.duration} s"
        return 5.0, "a fixed number of exchanges: a few seconds assumed"

    def version_argv(self) -> tuple[str, ...]:
        return ("ib_write_bw", "--version")

    def version_argv_for(self, inv: Invocation) -> tuple[str, ...]:
        """The version of the binary the step runs (its bin_dir, its test), not the PATH's."""
        return (inv.client.argv[0], "--version")

    def parse_version(self, text: str) -> str:
        m = re.search(r"Version:\s*(\S+)", text)
        return m.group(1) if m else ""

    def collect(self, inv: Invocation, out: Output) -> list[Record]:
        """Parse the client's report and add the rail: ``device`` and ``server_device``."""
        dims = _rail_dims(inv)
        try:
            records = parsers.parse("perftest", out.stdout)
        except ToolFailure as exc:
            exc.partial = [_with(r, dims) for r in exc.partial]
            raise
        except ParseError:
            if out.exit_code != 0:
                lines = [ln.strip() for ln in (out.stderr + "\n" + out.stdout).splitlines()]
                tail = " | ".join([ln for ln in lines if ln][-3:]) or out.reason or "no output"
                raise ToolFailure(TOOL, f"exit code {out.exit_code}: {tail}") from None
            raise
        if out.exit_code != 0:
            raise ToolFailure(TOOL, f"exit code {out.exit_code}", partial=list(records))
        return [_with(r, dims) for r in records]


def _device_of(argv: Sequence[str]) -> str:
    return argv[argv.index("-d") + 1] if "-d" in argv else ""


def _rail_dims(inv: Invocation) -> dict[str, str]:
    dims = {"device": _device_of(inv.client.argv)}
    if inv.servers:
        dims["server_device"] = _device_of(inv.servers[0].argv)
    return {k: v for k, v in dims.items() if v}


def _with(r: Any, dims: Mapping[str, str]) -> Any:
    if isinstance(r, Measurement) and dims:
        return replace(r, dims=FrozenDims({**dims, **r.dims}))
    return r


RUNNER = PerftestRunner()
