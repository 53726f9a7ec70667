"""A generator of *synthetic* runs for report tests and the scale bench.

Every run it makes has ``Run.generated = True`` and says so in its notes: the numbers are
drawn from a seeded random generator around plausible values, they were not measured.
The shapes (tools, metrics, units, dims, nodes, step ids, raw log paths) follow what the
parsers and the pipeline produce, so that reports can be exercised at any size.

``make_run(n)`` gives ``n`` nodes in racks of 32, one fio / iperf3 / perftest / NCCL step
per node or pair, an NCCL all-nodes sweep, one MLPerf training result, per-node facts, and
verdicts with one bad node (``bad_node``) and one bad link (``bad_link``).
``write_run(run, run_dir)`` writes ``run.json`` and the raw logs the steps point at.
``hostile`` plants HTML/JS payloads in host names, tool output, descriptions and spec text.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aibench.model import Fact, Measurement, Outcome, Run, StepResult, StepStatus, Verdict

PAYLOAD_TITLE = "<script>document.title='PWNED'</script>"
PAYLOAD_ATTR = "\"><img src=x onerror=\"document.documentElement.setAttribute('data-pwned','1')\">"
PAYLOAD = PAYLOAD_TITLE + PAYLOAD_ATTR
SIZES = [2**k for k in range(10, 31, 2)]  # 1 KiB .. 1 GiB


@dataclass(frozen=True)
class Generated:
    run: Run
    logs: Mapping[str, str]  # relative path -> text
    bad_node: str
    bad_link: tuple[str, str]


def _node(i: int) -> str:
    return f"gpu{i + 1:04d}"


def make_run(n: int = 8, *, seed: int = 7, hostile: bool = False, beacon: str = "") -> Generated:
    """``beacon``: a URL planted (with the payloads) as an image source; a test serves it on
    loopback and asserts that the rendered report never requested it."""
    rnd = random.Random(seed)
    payload = PAYLOAD + (f'<img src="{beacon}">' if beacon else "")
    nodes = [_node(i) for i in range(n)]
    if hostile:
        nodes[0] = "gpu" + payload
    bad_node = nodes[min(2, n - 1)]
    pairs = [(nodes[i], nodes[(i + 1) % n]) for i in range(n)] if n > 1 else []
    bad_link = pairs[min(1, len(pairs) - 1)] if pairs else (bad_node, bad_node)
    steps: list[StepResult] = []
    verdicts: list[Verdict] = []
    logs: dict[str, str] = {}
    t0 = "2026-12-02T10:15:00Z"

    def step(
        step_name: str,
        tool: str,
        placement: tuple[str, ...],
        ms: list[Measurement],
        log: str,
        facts: tuple[Fact, ...] = (),
        status: StepStatus = StepStatus.OK,
        reason: str = "",
    ) -> StepResult:
        label = "+".join(placement) if len(placement) <= 2 else f"all{len(placement)}"
        sid = f"{step_name}/{label}/r0"
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in sid)
        out = f"logs/{safe}.stdout"
        logs[out] = log
        ms = [Measurement(m.tool, m.metric, m.value, m.unit, m.dims, placement, sid, 0) for m in ms]
        s = StepResult(
            step_id=sid,
            step=step_name,
            tool=tool,
            nodes=placement,
            repeat=0,
            status=status,
            exit_code=0 if status is StepStatus.OK else 1,
            started=t0,
            duration_s=round(rnd.uniform(5, 60), 2),
            stdout_path=out,
            stderr_path="",
            measurements=tuple(ms),
            facts=facts,
            reason=reason,
            tool_version={"fio": "fio-3.33", "iperf3": "3.12"}.get(tool, ""),
        )
        steps.append(s)
        return s

    # preflight facts and environment
    environment: dict[str, dict[str, Any]] = {}
    for i, node in enumerate(nodes):
        env = {
            "hostname": node,
            "kernel": "6.1.0-27-amd64",
            "cpu": "AMD EPYC 9454 48-Core Processor",
            "memory_gib": 1536,
            "gpu": "8x NVIDIA H100 80GB HBM3",
            "driver": "550.54.15" if node != bad_node else "535.161.08",
            "nccl": "2.21.5",
            "hca_firmware": "28.39.1002",
            "fio": "fio-3.33",
            "iperf3": "3.12",
        }
        environment[node] = env
        facts = tuple(Fact("preflight", k, v, nodes=(node,)) for k, v in env.items())
        s = step("preflight", "preflight", (node,), [], f"preflight on {node}\nok\n", facts)
        ok = env["driver"] == "550.54.15"
        verdicts.append(
            Verdict(
                "driver-version",
                Outcome.PASS if ok else Outcome.FAIL,
                (node,),
                "GPU driver version is the contracted one",
                "== 550.54.15",
                None,
                str(env["driver"]),
                "",
                benchmark="preflight",
                culprits=() if ok else (node,),
                evidence=(s.step_id,),
                reason="" if ok else "driver differs from the spec",
            )
        )
        _ = i

    # fio per node
    for node in nodes:
        bw = rnd.gauss(6800, 150) if node != bad_node else 3100.0
        iops = rnd.gauss(950_000, 20_000)
        ms = [
            Measurement("fio", "bw", bw, "MB/s", {"rw": "read", "bs": "1M"}),
            Measurement("fio", "iops", iops, "IOPS", {"rw": "randread", "bs": "4k"}),
        ]
        log = (
            f"seqread: (groupid=0, jobs=1): err= 0: pid=4242\n  read: IOPS=6485, "
            f"BW={bw:.0f}MB/s\nRun status group 0 (all jobs):\n   READ: bw={bw:.0f}MB/s\n"
        )
        if hostile and node == nodes[0]:
            log += payload + "\n"
        s = step("fio-seqread", "fio", (node,), ms, log)
        ok = bw >= 5000
        verdicts.append(
            Verdict(
                "fio-seq-read-bw",
                Outcome.PASS if ok else Outcome.FAIL,
                (node,),
                "NVMe sequential read bandwidth" + (payload if hostile else ""),
                ">= 5000 MB/s",
                bw,
                "",
                "MB/s",
                bounds=(5000.0, None),
                aggregate="median",
                samples=1,
                benchmark="fio",
                culprits=() if ok else (node,),
                evidence=(s.step_id,),
                reason="" if ok else "below the lower bound",
            )
        )
        ok2 = iops >= 900_000
        verdicts.append(
            Verdict(
                "fio-rand-read-iops",
                Outcome.PASS if ok2 else Outcome.WARN,
                (node,),
                "4k random read IOPS",
                ">= 900000 IOPS",
                iops,
                "",
                "IOPS",
                bounds=(900_000.0, None),
                benchmark="fio",
                evidence=(s.step_id,),
            )
        )

    # iperf3 and perftest on ring pairs
    for a, b in pairs:
        bad = (a, b) == bad_link
        gbit = rnd.gauss(94.0, 0.8) if not bad else 31.5
        s = step(
            "iperf3-tcp",
            "iperf3",
            (a, b),
            [Measurement("iperf3", "bw", gbit, "Gbit/s", {"direction": "send", "streams": 8})],
            f"Connecting to host {b}, port 5201\n"
            f"[SUM]   0.00-10.00  sec  {gbit:.1f} Gbits/sec  receiver\n",
        )
        ok = gbit >= 90
        verdicts.append(
            Verdict(
                "iperf3-tcp-bw",
                Outcome.PASS if ok else Outcome.FAIL,
                (a, b),
                "TCP bandwidth per link",
                ">= 90 Gbit/s",
                gbit,
                "",
                "Gbit/s",
                bounds=(90.0, None),
                benchmark="iperf3",
                evidence=(s.step_id,),
                culprits=() if ok else (f"{a}<->{b}",),
                reason="" if ok else "link below the lower bound",
            )
        )
        ib = rnd.gauss(392.0, 2.0) if not bad else 180.2
        s = step(
            "ib-write-bw",
            "perftest",
            (a, b),
            [Measurement("perftest", "bw", ib, "Gbit/s", {"op": "write", "size_bytes": 65536})],
            " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]\n"
            f" 65536      5000           {ib + 1:.2f}             {ib:.2f}\n",
        )
        ok = ib >= 380
        verdicts.append(
            Verdict(
                "ib-write-bw",
                Outcome.PASS if ok else Outcome.FAIL,
                (a, b),
                "RDMA write bandwidth per link",
                ">= 380 Gbit/s",
                ib,
                "",
                "Gbit/s",
                bounds=(380.0, None),
                benchmark="perftest",
                evidence=(s.step_id,),
                culprits=() if ok else (f"{a}<->{b}",),
                reason="" if ok else "link below the lower bound",
            )
        )

    # NCCL per node (8 GPUs inside) and one all-nodes sweep
    def sweep(peak: float) -> list[Measurement]:
        out = []
        for size in SIZES:
            frac = size / (size + 32 * 2**20)
            out.append(
                Measurement(
                    "nccl-tests",
                    "busbw",
                    max(0.01, peak * frac * rnd.uniform(0.97, 1.0)),
                    "GB/s",
                    {"op": "all_reduce", "size_bytes": size},
                )
            )
        return out

    nccl_nodes = nodes if n <= 64 else nodes[:16]
    for node in nccl_nodes:
        s = step(
            "nccl-allreduce-node",
            "nccl-tests",
            (node,),
            sweep(480.0 if node != bad_node else 300.0),
            "# nThread 1 nGpus 8 minBytes 1024 maxBytes 1073741824\n"
            "# Avg bus bandwidth    : 180.2\n",
        )
        peak = max(m.value for m in s.measurements)
        ok = peak >= 400
        verdicts.append(
            Verdict(
                "nccl-allreduce-busbw-node",
                Outcome.PASS if ok else Outcome.FAIL,
                (node,),
                "NCCL all_reduce busbw inside one node, 1 GiB",
                ">= 400 GB/s",
                peak,
                "",
                "GB/s",
                bounds=(400.0, None),
                benchmark="nccl-tests",
                evidence=(s.step_id,),
                culprits=() if ok else (node,),
            )
        )
    s = step(
        "nccl-allreduce-all",
        "nccl-tests",
        tuple(nodes),
        sweep(360.0),
        "# nThread 1 nGpus 8\n# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 150.1\n",
    )
    peak = max(m.value for m in s.measurements)
    verdicts.append(
        Verdict(
            "nccl-allreduce-busbw-all",
            Outcome.PASS if peak >= 340 else Outcome.FAIL,
            tuple(nodes) if n <= 4 else (),
            "NCCL all_reduce busbw across all nodes",
            ">= 340 GB/s",
            peak,
            "",
            "GB/s",
            bounds=(340.0, None),
            benchmark="nccl-tests",
            evidence=(s.step_id,),
        )
    )

    # MLPerf training: one run; one missing inference result; one waived check
    s = step(
        "mlperf-bert",
        "mlperf-training",
        tuple(nodes[: min(n, 8)]),
        [Measurement("mlperf-training", "time_to_train", 312.4, "s", {"benchmark": "bert"})],
        ':::MLLOG {"key": "run_stop", "value": null, "metadata": {"status": "success"}}\n',
    )
    verdicts.append(
        Verdict(
            "mlperf-bert-ttt",
            Outcome.PASS,
            (),
            "BERT time to train",
            "<= 400 s",
            312.4,
            "",
            "s",
            bounds=(None, 400.0),
            benchmark="mlperf-training",
            evidence=(s.step_id,),
        )
    )
    s = step(
        "mlperf-resnet-offline",
        "mlperf-inference",
        (nodes[0],),
        [],
        "Traceback (most recent call last):\nRuntimeError: CUDA error: out of memory\n",
        status=StepStatus.FAILED,
        reason="exit code 1",
    )
    verdicts.append(
        Verdict(
            "mlperf-resnet-offline-qps",
            Outcome.ERROR,
            (nodes[0],),
            "ResNet50 offline throughput",
            ">= 9000 samples/s",
            None,
            "",
            "samples/s",
            benchmark="mlperf-inference",
            evidence=(s.step_id,),
            reason="the measuring step failed: exit code 1",
        )
    )
    verdicts.append(
        Verdict(
            "gpu-ecc-errors",
            Outcome.WAIVED,
            (),
            "no uncorrectable ECC errors",
            "== 0",
            None,
            "not measured",
            "count",
            benchmark="preflight",
            waiver={"reason": "DCGM not installed yet", "expires": "2027-01-31"},
        )
    )
    verdicts.append(
        Verdict(
            "storage-latency-p99",
            Outcome.MISSING,
            (),
            "fio p99 read latency",
            "<= 200 us",
            None,
            "",
            "us",
            benchmark="fio",
            reason="no measurement matched the selector",
        )
    )

    inventory = {
        "name": "acme-h100-pod" + (payload if hostile else ""),
        "source": "cluster.yaml",
        "vendor": "Example Integrator",
        "customer": "Example Research Lab",
        "nodes": [
            {
                "name": nd,
                "address": "",
                "executor": "ssh",
                "labels": {"rack": f"r{i // 32:02d}"},
                "facts": {},
            }
            for i, nd in enumerate(nodes)
        ],
    }
    run = Run(
        id="20261202-101500-acceptance",
        suite="acceptance",
        spec="h100-ndr" + (payload if hostile else ""),
        spec_sha256="ab" * 32,
        started=t0,
        finished="2026-12-02T11:42:10Z",
        aibench_version="0.1.0",
        inventory=inventory,
        environment=environment,
        steps=tuple(steps),
        verdicts=tuple(verdicts),
        generated=True,
        notes=("GENERATED data for tests: not measured",),
    )
    return Generated(run=run, logs=logs, bad_node=bad_node, bad_link=bad_link)


def write_run(gen: Generated, run_dir: Path) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    for rel, text in gen.logs.items():
        p = run_dir / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    path = run_dir / "run.json"
    path.write_text(
        json.dumps(gen.run.to_dict(), indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    return path
