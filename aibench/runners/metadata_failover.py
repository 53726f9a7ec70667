"""metadata-failover: stop the active metadata server while a metadata workload runs, and
measure the client's stall and the time until the standby serves.

**Disruptive, and opt-in.** The step runs a command the suite gives (``stop_command``, an
argv) on the metadata server's host: it kills a server of the cluster under test. It is
in no built-in suite, has no default command, and refuses to plan unless the step says
``allow_disruption: true``. Run it on a cluster whose owner agreed to lose a metadata
server, and start that server again afterwards (aibench does not).

Placement ``all`` over the step's nodes, which name the MDS host (``mds_host``) and at
least one client node; the first other node runs the workload:

* the MDS host runs, as a server of the step, a fixed ``sh`` script that prints that it
  is ready, sleeps ``stop_after`` seconds, notes the time, runs ``stop_command`` and
  prints ``aibench-failover stop T rc R``;
* the client runs a fixed Python script (``python3 -c``; no value is part of the script)
  that creates empty files one after another in ``DIRECTORY/aibench-failover-STEP-rN``
  on a worker thread, noting when each completes, until an operation took longer than
  ``stall_threshold`` and ``settle`` seconds have passed since it completed (only one
  begun at most a second before the stop is due counts: a slow operation before it does
  not end the loop), or ``duration`` seconds in all (a blocked operation cannot hold it:
  the main thread ends the loop). It prints per-second counts, the longest intervals
  without a completed operation and its totals, then removes its files (when nothing is
  blocked).

``collect`` reads the client's output and the stop process's (the server's raw stdout)
with the ``metadata-failover`` parser: ``stall`` and ``takeover`` seconds, ops/s before
and after, ops and errors. Tested with CephFS (Ceph 16.2.15, ceph-fuse; an active and a
standby ``ceph-mds``; ``kill -9`` of the active one) in the test bed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, ClassVar

from pydantic import Field, field_validator, model_validator

from aibench.config import Strict
from aibench.errors import ToolFailure
from aibench.executors.base import ReadyCheck
from aibench.inventory import Node
from aibench.parsers import Record
from aibench.parsers.metadata_failover import TOOL, UNITS, parse
from aibench.runners._checks import PATH, VALUE
from aibench.runners.base import Invocation, Output, ProcessSpec, Slot, label_for
from aibench.traits import Traits

READY = "aibench-failover ready"
STOPPER = (
    f'echo "{READY}"; sleep "$1"; shift; t=$(date +%s.%N); "$@" 2>&1; rc=$?; '
    'echo "aibench-failover stop $t rc $rc"; exec sleep 86400'
)
WORKLOAD = r"""
import errno, os, shutil, sys, threading, time
d, dur, settle, thr, after = sys.argv[1], *map(float, sys.argv[2:6])
os.makedirs(d)
done, errs, st = [], {}, {"stall": None, "stop": False, "busy": None}
def work():
    i = 0
    while not st["stop"]:
        t0 = time.time(); st["busy"] = t0
        try:
            flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY
            os.close(os.open(os.path.join(d, "f%08d" % i), flags, 0o644))
        except OSError as e:
            k = errno.errorcode.get(e.errno, str(e.errno)); errs[k] = errs.get(k, 0) + 1
        t1 = time.time(); st["busy"] = None; done.append(t1); i += 1
        if t1 - t0 > thr and t0 >= arm and st["stall"] is None:
            st["stall"] = t1
t_start = time.time()
arm = t_start + max(0.0, after - 1.0)
print("aibench-mdload start %.6f" % t_start, flush=True)
threading.Thread(target=work, daemon=True).start()
while time.time() - t_start < dur and (st["stall"] is None or time.time() - st["stall"] < settle):
    time.sleep(0.05)
st["stop"] = True
time.sleep(0.2)
t_end = time.time(); ts = list(done); blocked = st["busy"] is not None and t_end - st["busy"] > thr
bins = [0] * (int(t_end - t_start) + 1)
for t in ts:
    bins[int(t - t_start)] += 1
print("aibench-mdload bins %.6f %s" % (t_start, " ".join(map(str, bins))))
edges = [t_start] + ts + ([t_end] if blocked else [])
for a, b in sorted(zip(edges, edges[1:]), key=lambda g: g[0] - g[1])[:5]:
    print("aibench-mdload gap %.6f %.6f" % (a, b))
for k, n in sorted(errs.items()):
    print("aibench-mdload errno %s %d" % (k, n))
last = ts[-1] if ts else t_start
print("aibench-mdload end %.6f ops %d errors %d last %.6f blocked %s" % (
    t_end, len(ts), sum(errs.values()), last, "yes" if blocked else "no"), flush=True)
if not blocked:
    shutil.rmtree(d, ignore_errors=True)
os._exit(0)
"""


class MetadataFailoverOptions(Strict):
    """Options of a metadata-failover step (suite ``options:``)."""

    allow_disruption: bool = Field(
        False, description="must be true: the step stops a metadata server of the cluster"
    )
    directory: str = Field(description="a directory of the shared file system on the client")
    mds_host: str = Field(description="the node (one of the step's) that runs stop_command")
    stop_command: list[str] = Field(
        min_length=1, description="argv run on mds_host to stop the active MDS (no default)"
    )
    stop_after: Annotated[float, Field(gt=0, le=3600)] = Field(
        5.0, description="seconds of workload before the stop"
    )
    duration: Annotated[float, Field(gt=0, le=86_400)] = Field(
        120.0, description="longest the workload runs, seconds"
    )
    settle: Annotated[float, Field(gt=0, le=3600)] = Field(
        6.0, description="seconds the workload goes on after its first stalled operation"
    )
    stall_threshold: Annotated[float, Field(gt=0, le=600)] = Field(
        1.0, description="an operation longer than this (s) is the stall"
    )
    python: str = Field("python3", description="the client's Python 3 interpreter")

    @field_validator("directory")
    @classmethod
    def _dir(cls, v: str) -> str:
        if not PATH.match(v):
            raise ValueError(f"must be an absolute path without spaces: {v!r}")
        return v

    @field_validator("stop_command")
    @classmethod
    def _argv(cls, v: list[str]) -> list[str]:
        for a in v:
            if "\n" in a or "\0" in a:
                raise ValueError(f"an argument holds a line break: {a!r}")
        return v

    @field_validator("python", "mds_host")
    @classmethod
    def _word(cls, v: str) -> str:
        if not v or not VALUE.match(v) or v.startswith("-"):
            raise ValueError(f"not a name or a path: {v!r}")
        return v

    @model_validator(mode="after")
    def _opt_in(self) -> MetadataFailoverOptions:
        if not self.allow_disruption:
            raise ValueError(
                "this step stops a metadata server of the cluster: set allow_disruption: "
                "true to run it (never by default on a cluster in use)"
            )
        return self


class MetadataFailoverRunner:
    name: ClassVar[str] = TOOL
    tool: ClassVar[str] = TOOL
    default_placement: ClassVar[str] = "all"
    Options: ClassVar[type[Strict]] = MetadataFailoverOptions
    traits: ClassVar[Traits] = Traits(
        units=UNITS,
        lower_is_better=frozenset({"stall", "takeover", "errors"}),
        title="Metadata-server failover",
    )

    def invocations(
        self, step: str, options: MetadataFailoverOptions, group: Sequence[Node], slot: Slot
    ) -> list[Invocation]:
        o = options
        names = [n.name for n in group]
        if o.mds_host not in names:
            raise ValueError(f"mds_host {o.mds_host!r} is not one of the step's nodes {names}")
        clients = [n for n in names if n != o.mds_host]
        if not clients:
            raise ValueError("the step needs a client node besides the MDS host")
        timeout = o.duration + 60.0
        work = f"{o.directory.rstrip('/')}/aibench-failover-{step}-r{slot.repeat}"
        stopper = ProcessSpec(
            o.mds_host, ("sh", "-c", STOPPER, "aibench-failover", f"{o.stop_after:g}",
                         *o.stop_command),
            role="server", ready=ReadyCheck(pattern=READY, timeout=30.0), timeout=timeout + 60,
        )  # fmt: skip
        argv = (o.python, "-c", WORKLOAD, work, f"{o.duration:g}", f"{o.settle:g}",
                f"{o.stall_threshold:g}", f"{o.stop_after:g}")  # fmt: skip
        return [
            Invocation(
                step=step, tool=self.tool, nodes=(clients[0],), label=label_for([clients[0]]),
                repeat=slot.repeat, round=slot.round, parser=TOOL, servers=(stopper,),
                client=ProcessSpec(clients[0], argv, timeout=timeout),
            )
        ]  # fmt: skip

    def expected_seconds(self, o: MetadataFailoverOptions) -> tuple[float, str]:
        return o.stop_after + 30.0 + o.settle, "the stop, a takeover of up to 30 s, the settle"

    def collect(self, inv: Invocation, out: Output) -> list[Record]:
        stop = _server_stdout(inv, out.raw_dir)
        records = parse(out.stdout + "\n" + stop)
        if out.exit_code != 0:
            raise ToolFailure(TOOL, out.failure(), partial=list[object](records))
        return list(records)

    def version_argv(self) -> tuple[str, ...] | None:
        return None

    def parse_version(self, text: str) -> str:
        m = re.search(r"(\d+\.\d+\.\d+)", text)
        return m.group(1) if m else ""


def _server_stdout(inv: Invocation, raw: Path) -> str:
    """What the stop process printed (the orchestrator keeps a server's stdout beside the
    step's own), or "" when it left nothing."""
    host = inv.servers[0].host
    path = raw / f"{inv.label}.r{inv.repeat}.server-{host}.stdout"
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


RUNNER = MetadataFailoverRunner()
