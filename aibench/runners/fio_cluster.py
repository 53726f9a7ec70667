"""fio-cluster runner: a shared file system measured from many nodes at once, with fio's
own client/server mode.

Every node of the group runs ``fio --server=ip:ADDR,PORT`` (a server of the step, so it is
always stopped after); the first node drives them with one ``fio --output-format=json
--client=ip:ADDR,PORT ... JOBFILE``. fio's client mode takes its jobs from a file only
(job options on the command line make it exit 1 without a word), so a setup process on
the driver writes the job file, its lines passed as arguments to a fixed ``printf``
script. Output is parsed by the ``fio-cluster`` parser; this runner's ``collect`` then
names each client's records after its node, checks that every node answered (fio exits 0
when a client could not connect) and adds the checkpoint times.

Kinds (``kind:``):

* ``throughput``: one job (``rw``, ``bs``, ``size``, time-based for ``runtime``);
* ``metadata``: an mdtest-style job file of three phases run one after another
  (``stonewall``) with fio's ``filecreate``, ``filestat`` and ``filedelete`` engines:
  ``dirs`` directories per client (one job each), ``files`` small files in each;
* ``checkpoint``: every client writes ``size`` at once, then reads it back (the write and
  restore of a training checkpoint). ``collect`` adds ``checkpoint_write_s`` and
  ``checkpoint_read_s``: ``model_params`` × ``bytes_per_param`` bytes at the measured
  aggregate rate.

Files go to ``DIRECTORY/aibench-STEP-LABEL-rN/`` (per client, fio's ``$clientuid`` in the
file names), which the driver removes after fio ends. ``directory`` should be a path
every node mounts (default: ``WORKDIR/shared``, which only measures the local disks).
Tested with fio 3.33 on loopback and on GlusterFS 10.3 across namespace hosts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from aibench.config import Strict
from aibench.errors import ToolFailure
from aibench.executors.base import ReadyCheck
from aibench.inventory import Node
from aibench.model import Fact, FrozenDims, Measurement, Note, Scalar
from aibench.parsers import Record
from aibench.runners.base import Invocation, Output, ProcessSpec, Slot, label_for
from aibench.runners.fio import FioOptions, ioengine
from aibench.runners.iperf3 import data_address
from aibench.traits import Traits

_TOKEN = re.compile(r"^[A-Za-z0-9_.]+$")
# write the job file: its lines are the arguments (no value is ever part of the script)
JOB_WRITER = 'f=$1; shift; printf "%s\\n" "$@" > "$f"'
# run fio, then remove the scratch tree and the job file whatever fio did
DRIVER = (
    'job=$1; scratch=$2; shift 2; fio "$@" "$job"; rc=$?; rm -rf -- "$scratch" "$job"; exit $rc'
)
# Bytes per parameter of a checkpoint that holds the model and its Adam optimizer state in
# mixed precision: 2 (bf16/fp16 weights) + 12 (fp32 master weights, momentum, variance),
# the model-state accounting of the ZeRO paper (Rajbhandari et al., 2020, section 3.1),
# gradients not saved.
BYTES_PER_PARAM = 14.0
_CHECKPOINT = re.compile(r"^# checkpoint of (\S+) parameters x (\S+) bytes$")


class FioClusterOptions(Strict):
    """Options of a fio-cluster step (suite ``options:``)."""

    kind: Literal["throughput", "metadata", "checkpoint"] = Field(
        "throughput", description="throughput job, metadata phases, or checkpoint write+read"
    )
    rw: Literal["read", "write", "randread", "randwrite"] = Field(
        "read", description="throughput: I/O pattern (fio --rw)"
    )
    bs: str = Field("1M", description="block size, e.g. 4k, 1M")
    size: str = Field("256M", description="bytes per client job (checkpoint: the file each writes)")
    runtime: float | None = Field(
        10.0, gt=0, description="throughput: seconds, time-based (null: size-based)"
    )
    ioengine: str = Field("psync", description="fio --ioengine of the data jobs")
    iodepth: Annotated[int, Field(ge=1, le=65536)] = 1
    numjobs: Annotated[int, Field(ge=1, le=1024)] = 1
    direct: bool = Field(False, description="O_DIRECT (a FUSE mount may refuse it)")
    files: Annotated[int, Field(ge=1, le=10_000_000)] = Field(
        1000, description="metadata: files per directory"
    )
    dirs: Annotated[int, Field(ge=1, le=1024)] = Field(
        4, description="metadata: directories per client (one fio job each)"
    )
    file_size: str = Field("4k", description="metadata: size of each small file")
    model_params: Annotated[float, Field(gt=0)] = Field(
        70e9, description="checkpoint: parameters of the model whose checkpoint time is stated"
    )
    bytes_per_param: Annotated[float, Field(gt=0)] = Field(
        BYTES_PER_PARAM, description="checkpoint: bytes per parameter (default 14: see docs)"
    )
    directory: str | None = Field(
        None, description="a path every node mounts; default: WORKDIR/shared (local disks)"
    )
    filesystem: str | None = Field(
        None,
        description="instead of directory: an inventory shared file system (its name, or any: "
        "the nodes' first); the steps write under its mount",
    )
    port: Annotated[int, Field(ge=1024, le=65000)] = Field(
        18765, description="first fio --server port; node i of the group listens on port+i"
    )

    _size = field_validator("bs", "size", "file_size")(FioOptions._size.__func__)  # type: ignore[attr-defined]
    _dir = field_validator("directory")(FioOptions._dir.__func__)  # type: ignore[attr-defined]

    @field_validator("filesystem")
    @classmethod
    def _fs(cls, v: str | None) -> str | None:
        if v is not None and not _TOKEN.match(v):
            raise ValueError(f"not a file system name: {v!r}")
        return v

    @model_validator(mode="after")
    def _one_place(self) -> FioClusterOptions:
        if self.directory is not None and self.filesystem is not None:
            raise ValueError("give directory or filesystem, not both")
        return self

    @field_validator("ioengine")
    @classmethod
    def _engine(cls, v: str) -> str:
        return ioengine(v)  # fio's own rule: no engine that runs a program


def job_lines(o: FioClusterOptions, scratch: str) -> list[str]:
    """The job file of ``o`` (files under ``scratch``, one tree per client)."""
    common = [f"directory={scratch}", "group_reporting"]
    if o.kind == "metadata":
        return [
            "[global]", *common, "filename_format=$clientuid/d$jobnum/f$filenum",
            f"nrfiles={o.files}", f"filesize={o.file_size}", "openfiles=1",
            f"numjobs={o.dirs}",
            "[create]", "ioengine=filecreate",
            "[stat]", "stonewall", "ioengine=filestat",
            "[delete]", "stonewall", "ioengine=filedelete",
        ]  # fmt: skip
    lines = [
        "[global]", *common, "filename_format=$clientuid.$jobname.$jobnum.$filenum",
        f"bs={o.bs}", f"size={o.size}", f"ioengine={o.ioengine}", f"iodepth={o.iodepth}",
        f"numjobs={o.numjobs}", f"direct={int(o.direct)}",
    ]  # fmt: skip
    if o.kind == "checkpoint":
        model = f"# checkpoint of {o.model_params:g} parameters x {o.bytes_per_param:g} bytes"
        return [model, *lines, "[save]", "rw=write", "end_fsync=1",
                "[restore]", "stonewall", "rw=read", "unlink=1"]  # fmt: skip
    lines += [f"[{o.rw}]", f"rw={o.rw}", "unlink=1"]
    if o.runtime is not None:
        lines += [f"runtime={o.runtime:g}", "time_based"]
    return lines


def shared_directory(name: str, group: Sequence[Node]) -> str:
    """Where the group writes on the inventory's shared file system ``name`` (``any``: the
    first each node declares): its mount and directory, the same on every node."""
    places = {}
    for node in group:
        declared = list(node.facts.get("shared_filesystems") or [])
        fs = next((f for f in declared if name in ("any", f["name"])), None)
        if fs is None:
            known = ", ".join(f["name"] for f in declared) or "none"
            raise ValueError(
                f"shared file system {name!r} is not in the inventory of {node.name} ({known})"
            )
        places[node.name] = f"{fs['mount'].rstrip('/')}/{fs.get('directory') or 'aibench'}"
    if len(set(places.values())) > 1:
        raise ValueError(f"the nodes mount {name!r} at different paths: {places}")
    return next(iter(places.values()))


def _address(node: Node) -> str:
    return data_address(node)


def fio_servers(group: Sequence[Node], port: int, timeout: float) -> tuple[ProcessSpec, ...]:
    """``fio --server`` on every node of the group, the i-th on ``port + i``."""
    return tuple(
        ProcessSpec(
            n.name,
            ("fio", f"--server=ip:{_address(n)},{port + i}"),
            role="server",
            ready=ReadyCheck(port=port + i, timeout=15.0),
            timeout=timeout,
        )
        for i, n in enumerate(group)
    )


def job_setup(
    o: FioClusterOptions, driver: str, jobdir: str, job: str, scratch: str
) -> tuple[ProcessSpec, ...]:
    """On the driver: the job file's folder ``jobdir`` and the scratch directory made, the
    job file written."""
    return (
        ProcessSpec(driver, ("mkdir", "-p", jobdir, scratch), role="setup", timeout=30),
        ProcessSpec(
            driver,
            ("sh", "-c", JOB_WRITER, "aibench-fio-job", job, *job_lines(o, scratch)),
            role="setup",
            timeout=30,
        ),
    )


class FioClusterRunner:
    traits: ClassVar[Traits] = Traits(
        units={
            "bw": "KiB/s",
            "iops": "IOPS",
            "clat_mean": "ns",
            "clat_percentile": "ns",
            "checkpoint_write_s": "s",
            "checkpoint_read_s": "s",
        },
        lower_is_better=frozenset(
            {"clat_mean", "clat_percentile", "checkpoint_write_s", "checkpoint_read_s"}
        ),
        title="fio client/server (shared storage)",
    )
    name: ClassVar[str] = "fio-cluster"
    tool: ClassVar[str] = "fio-cluster"
    default_placement: ClassVar[str] = "all"
    Options: ClassVar[type[Strict]] = FioClusterOptions

    def invocations(
        self, step: str, options: FioClusterOptions, group: Sequence[Node], slot: Slot
    ) -> list[Invocation]:
        o = options
        driver = group[0]
        label = label_for([n.name for n in group])
        if o.filesystem is not None:
            base = shared_directory(o.filesystem, group)
        else:
            base = o.directory or f"{slot.workdir}/shared"
        scratch = f"{base}/aibench-{step}-{label}-r{slot.repeat}"
        jobdir = f"{slot.workdir}/fio-cluster"
        job = f"{jobdir}/{step}.{label}.r{slot.repeat}.fio"
        timeout = self.expected_seconds(o)[0] * 4 + 300.0
        clients = [f"--client=ip:{_address(n)},{o.port + i}" for i, n in enumerate(group)]
        # --output-format after the clients: before them, fio 3.33 runs the job on the
        # last client only (and says nothing of the others)
        argv = ("sh", "-c", DRIVER, "aibench-fio-cluster", job, scratch,
                *clients, "--output-format=json")  # fmt: skip
        return [
            Invocation(
                step=step,
                tool=self.tool,
                nodes=tuple(n.name for n in group),
                label=label,
                repeat=slot.repeat,
                round=slot.round,
                parser="fio-cluster",
                network=len(group) > 1,
                setup=job_setup(o, driver.name, jobdir, job, scratch),
                servers=fio_servers(group, o.port, timeout + 60.0),
                client=ProcessSpec(driver.name, argv, timeout=timeout),
            )
        ]

    def collect(self, inv: Invocation, out: Output) -> list[Record]:
        from aibench.parsers import fio_cluster

        names = self._names(inv)
        try:
            records = fio_cluster.parse(out.stdout)
        except ToolFailure as exc:
            kept = [r for r in exc.partial if isinstance(r, Measurement | Fact | Note)]
            exc.partial = list[object](self._named(kept, names, inv))
            raise
        records = self._named(records, names, inv)
        seen = {m.nodes[0] for m in records if isinstance(m, Measurement) and len(m.nodes) == 1}
        missing = [n for n in inv.nodes if n not in seen]
        if out.exit_code != 0 or missing:
            why = out.failure() if out.exit_code != 0 else ""
            lost = f"no result from {', '.join(missing)}" if missing else ""
            reason = "; ".join(x for x in (why, lost) if x)
            raise ToolFailure(self.tool, reason, partial=list[object](records))
        return records + self._checkpoint(inv, records)

    def _names(self, inv: Invocation) -> dict[str, str]:
        """fio's ``hostname`` of each client (the ADDR of ``--client=ip:ADDR,PORT``) to
        its node name, read back from the argv this runner planned."""
        addrs = [
            a.split(":", 1)[1].rsplit(",", 1)[0]
            for a in inv.client.argv
            if a.startswith("--client=")
        ]
        return dict(zip(addrs, inv.nodes, strict=True))

    def _named(self, records: list[Record], names: dict[str, str], inv: Invocation) -> list[Record]:
        from dataclasses import replace

        out: list[Record] = []
        for r in records:
            if isinstance(r, Measurement):
                client = str(r.dims.get("client"))
                node = names.get(client)
                dims: dict[str, Scalar] = {**r.dims, "clients": len(inv.nodes)}
                if node is not None:
                    r = replace(r, dims=FrozenDims({**dims, "client": node}), nodes=(node,))
                else:
                    r = replace(r, dims=FrozenDims(dims), nodes=inv.nodes)
            out.append(r)
        return out

    def _checkpoint(self, inv: Invocation, records: list[Record]) -> list[Record]:
        model = self._options(inv)
        if model is None:
            return []
        params, per = model
        total = params * per
        out: list[Record] = []
        for r in records:
            if isinstance(r, Measurement) and r.metric == "bw" and r.dims.get("client") == "all":
                metric = (
                    "checkpoint_write_s"
                    if r.dims.get("direction") == "write"
                    else "checkpoint_read_s"
                )
                dims = FrozenDims(
                    {"clients": len(inv.nodes), "model_params": params, "bytes_per_param": per}
                )
                if r.value > 0:
                    out.append(
                        Measurement(
                            self.tool, metric, total / (r.value * 1024), "s", dims, nodes=inv.nodes
                        )
                    )
        return out

    def _options(self, inv: Invocation) -> tuple[float, float] | None:
        """The model size and bytes per parameter a checkpoint job file names (its first
        comment line, written by :func:`job_lines`); None for other kinds."""
        for spec in inv.setup:
            for line in spec.argv:
                m = _CHECKPOINT.match(line)
                if m:
                    return float(m.group(1)), float(m.group(2))
        return None

    def expected_seconds(self, o: FioClusterOptions) -> tuple[float, str]:
        if o.kind == "throughput" and o.runtime is not None:
            return o.runtime + 2.0, f"runtime {o.runtime:g} s"
        if o.kind == "metadata":
            n = o.files * o.dirs * 3
            return n / 2000 + 2.0, f"{n} file operations per client at an assumed 2000/s"
        from aibench.runners.fio import _bytes

        total = (_bytes(o.size) or 2**30) * o.numjobs * (2 if o.kind == "checkpoint" else 1)
        return total / (200 * 2**20) + 2.0, f"{total >> 20} MiB per client at an assumed 200 MiB/s"

    def version_argv(self) -> tuple[str, ...]:
        return ("fio", "--version")

    def parse_version(self, text: str) -> str:
        return text.strip().splitlines()[0].removeprefix("fio-") if text.strip() else ""


RUNNER = FioClusterRunner()
