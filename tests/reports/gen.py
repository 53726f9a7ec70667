"""A generator of *synthetic* runs for report tests and the scale bench.

Every run it makes has ``Run.generated = True`` and says so in its notes: the numbers are
drawn from a seeded random generator around plausible values, they were not measured.
The shapes (tools, metrics, units, dims, fact names, nodes, step ids, raw log paths) follow
what the runners, parsers and the pipeline produce, so that reports can be exercised at
any size.

``make_run(n)`` gives ``n`` nodes in racks of 32 (inventory label ``rack``): preflight facts
per node as the preflight runner names them (nvidia-smi per GPU, ibstat per HCA and port,
kernel, sysctl, tool versions), one fio / iperf3 / perftest / NCCL step per node or ring
pair, an NCCL all-nodes sweep, one MLPerf training and one failed inference step,
verdicts with one bad node (``bad_node``) and one bad link (``bad_link``), and the suspects
fault localization finds in the pairwise results (as ``aibench run`` stores them).

``make_run(n, dense=True)`` is shaped like a real acceptance of an H100 NDR cluster: the
built-in acceptance suite's four fio workloads with 3 repeats on every node, iperf3 in both
directions with 3 repeats over the ring pairs, ib_write_bw on each of 8 rails per pair, an
NCCL all_reduce size sweep inside every node, per rack and across all nodes (all_reduce and
all_gather, 3 repeats), a 10-run MLPerf Training result with the runner's facts and MLPerf
Inference Offline on 8 nodes (one INVALID); node-scope verdicts judged on the median of
the repeats, as the thresholds engine reports them.

``write_run(gen, run_dir)`` writes ``run.json`` and the raw logs the steps point at.
``hostile`` plants HTML/JS payloads in host names, tool output, descriptions and spec text.
"""

from __future__ import annotations

import json
import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aibench.model import Fact, Measurement, Outcome, Run, StepResult, StepStatus, Verdict
from aibench.preflight import environment_from_facts
from aibench.thresholds.localize import suspect_records

PAYLOAD_TITLE = "<script>document.title='PWNED'</script>"
PAYLOAD_ATTR = "\"><img src=x onerror=\"document.documentElement.setAttribute('data-pwned','1')\">"
PAYLOAD = PAYLOAD_TITLE + PAYLOAD_ATTR
SIZES = [2**k for k in range(10, 31, 2)]  # 1 KiB .. 1 GiB
DENSE_SIZES = [2**k for k in range(3, 34)]  # 8 B .. 8 GiB, factor 2: nccl-tests -b 8 -e 8G -f 2
T0 = "2026-12-02T10:15:00Z"
DRIVER, OLD_DRIVER = "550.54.15", "535.161.08"
FIO_WORKLOADS = (  # step, rw, bs, metric, unit, typical value, bound
    ("fio-seq-read", "read", "1M", "bw", "MB/s", 6800.0, 5000.0),
    ("fio-seq-write", "write", "1M", "bw", "MB/s", 4100.0, 3000.0),
    ("fio-rand-read", "randread", "4k", "iops", "IOPS", 950_000.0, 900_000.0),
    ("fio-rand-write", "randwrite", "4k", "iops", "IOPS", 420_000.0, 300_000.0),
)


@dataclass(frozen=True)
class Generated:
    run: Run
    logs: Mapping[str, str]  # relative path -> text
    bad_node: str
    bad_link: tuple[str, str]


def _node(i: int) -> str:
    return f"gpu{i + 1:04d}"


@dataclass
class _Builder:
    rnd: random.Random
    steps: list[StepResult] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    logs: dict[str, str] = field(default_factory=dict)

    def step(
        self,
        step_name: str,
        tool: str,
        placement: tuple[str, ...],
        ms: Sequence[Measurement],
        log: str,
        facts: Sequence[Fact] = (),
        status: StepStatus = StepStatus.OK,
        reason: str = "",
        repeat: int = 0,
        label: str = "",
    ) -> StepResult:
        label = label or ("+".join(placement) if len(placement) <= 2 else f"all{len(placement)}")
        sid = f"{step_name}/{label}/r{repeat}"
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in sid)
        out = f"logs/{safe}.stdout"
        self.logs[out] = log
        s = StepResult(
            step_id=sid,
            step=step_name,
            tool=tool,
            nodes=placement,
            repeat=repeat,
            status=status,
            exit_code=0 if status is StepStatus.OK else 1,
            started=T0,
            duration_s=round(self.rnd.uniform(5, 60), 2),
            stdout_path=out,
            stderr_path="",
            measurements=tuple(
                Measurement(m.tool, m.metric, m.value, m.unit, m.dims, placement, step_name, repeat)
                for m in ms
            ),
            facts=tuple(
                Fact(f.source, f.name, f.value, f.unit, f.dims, placement, f.reason) for f in facts
            ),
            reason=reason,
            tool_version={"fio": "fio-3.33", "iperf3": "3.12", "perftest": "6.06"}.get(tool, ""),
        )
        self.steps.append(s)
        return s

    def verdict(
        self,
        check: str,
        ok: bool,
        subject: tuple[str, ...],
        description: str,
        expected: str,
        observed: float | None,
        unit: str,
        evidence: Sequence[StepResult],
        *,
        bounds: tuple[float | None, float | None] = (None, None),
        benchmark: str,
        culprits: tuple[str, ...] = (),
        observed_text: str = "",
        reason: str = "",
        warn: bool = False,
        samples: int = 1,
    ) -> None:
        outcome = Outcome.PASS if ok else (Outcome.WARN if warn else Outcome.FAIL)
        self.verdicts.append(
            Verdict(
                check,
                outcome,
                subject,
                description,
                expected,
                observed,
                observed_text,
                unit,
                bounds=bounds,
                aggregate="median" if samples > 1 else "",
                samples=samples,
                benchmark=benchmark,
                culprits=() if ok else culprits,
                evidence=tuple(s.step_id for s in evidence),
                reason="" if ok else (reason or "below the lower bound"),
            )
        )


def _preflight(b: _Builder, nodes: Sequence[str], bad_node: str, odd_hca: str, dense: bool) -> None:
    """Facts named as the preflight runner names them, one step per kind and node."""
    for node in nodes:
        driver = DRIVER if node != bad_node else OLD_DRIVER
        files = [
            Fact("host", "hostname", node),
            Fact("kernel", "release", "6.1.0-27-amd64"),
            Fact("os", "pretty_name", "Debian GNU/Linux 12 (bookworm)"),
            Fact("cpu", "model", "AMD EPYC 9454 48-Core Processor"),
            Fact("cpu", "cores", 96, "count"),
            Fact("cpu", "governor", "performance"),
            Fact("memory", "total", 1536, "GiB"),
            Fact("sysctl", "vm.swappiness", 10),
            Fact("thp", "enabled", "madvise"),
        ]
        tools = [
            Fact("tool-version", "fio", "3.33"),
            Fact("tool-version", "iperf3", "3.12"),
            Fact("tool-version", "ib_write_bw", "6.06"),
            Fact("tool-version", "all_reduce_perf", "2.13.10"),
            Fact("nccl", "version", "2.21.5"),
        ]
        gpu = [
            Fact("nvidia-smi", "driver_version", driver),
            Fact("nvidia-smi", "cuda_version", "12.4"),
            Fact("nvidia-smi", "gpu_count", 8, "count"),
        ]
        for g in range(8):
            d = {"gpu": g}
            gpu += [
                Fact("nvidia-smi", "product_name", "NVIDIA H100 80GB HBM3", dims=d),
                Fact("nvidia-smi", "ecc_mode", "Enabled", dims=d),
                Fact(
                    "nvidia-smi",
                    "ecc_uncorrected_total",
                    0,
                    "count",
                    {"gpu": g, "scope": "aggregate"},
                ),
                Fact("nvidia-smi", "remapped_rows_pending", "No", dims=d),
            ]
        hca = [Fact("ibstat", "hca_count", 8, "count")]
        for h in range(8):
            name = f"mlx5_{h}"
            down = node == odd_hca and h == 3
            hca += [
                Fact("ibstat", "firmware_version", "28.39.1002", dims={"hca": name}),
                Fact(
                    "ibstat", "state", "Down" if down else "Active", dims={"hca": name, "port": 1}
                ),
                Fact("ibstat", "rate", 400, "Gbit/s", {"hca": name, "port": 1}),
            ]
        klog = [
            Fact("kernel-log", "xid_count", 0, "count"),
            Fact("kernel-log", "xid_codes", "none"),
        ]
        kinds = (
            ("files", files),
            ("tools", tools),
            ("gpu-q", gpu),
            ("hca", hca),
            ("kernel-log", klog),
        )
        if not dense:
            kinds = (("facts", files + tools + gpu + hca + klog),)
        made = []
        for kind, facts in kinds:
            made.append(
                b.step(
                    "preflight",
                    "preflight",
                    (node,),
                    [],
                    f"preflight {kind} on {node}\n",
                    facts,
                    label=f"{node}.{kind}",
                )
            )
        b.verdict(
            "driver-version",
            driver == DRIVER,
            (node,),
            "GPU driver version is the contracted one",
            f"== {DRIVER}",
            None,
            "",
            made[2:3] if dense else made,
            benchmark="preflight",
            culprits=(node,),
            observed_text=driver,
            reason="driver differs from the spec",
        )
        if dense:
            b.verdict(
                "swappiness",
                True,
                (node,),
                "vm.swappiness is 10",
                "== 10",
                None,
                "",
                made[:1],
                benchmark="preflight",
                observed_text="10",
            )
            b.verdict(
                "hca-ports-active",
                node != odd_hca,
                (node,),
                "every HCA port is Active",
                "== Active",
                None,
                "",
                made[3:4],
                benchmark="preflight",
                culprits=(node,),
                observed_text="Down (mlx5_3)" if node == odd_hca else "Active",
                reason="a port is down",
            )
            b.verdict(
                "xid-events",
                True,
                (node,),
                "no Xid events in the kernel log",
                "== 0",
                0.0,
                "count",
                made[4:5],
                benchmark="preflight",
            )


def _fio(b: _Builder, nodes: Sequence[str], bad_node: str, dense: bool, payload: str) -> None:
    for i, node in enumerate(nodes):
        if not dense:
            bw = b.rnd.gauss(6800, 150) if node != bad_node else 3100.0
            iops = b.rnd.gauss(950_000, 20_000)
            ms = [
                Measurement("fio", "bw", bw, "MB/s", {"rw": "read", "bs": "1M"}),
                Measurement("fio", "iops", iops, "IOPS", {"rw": "randread", "bs": "4k"}),
            ]
            log = (
                f"seqread: (groupid=0, jobs=1): err= 0: pid=4242\n  read: IOPS=6485, "
                f"BW={bw:.0f}MB/s\nRun status group 0 (all jobs):\n   READ: bw={bw:.0f}MB/s\n"
            )
            if payload and i == 0:
                log += payload + "\n"
            s = b.step("fio-seqread", "fio", (node,), ms, log)
            b.verdict(
                "fio-seq-read-bw",
                bw >= 5000,
                (node,),
                "NVMe sequential read bandwidth" + payload,
                ">= 5000 MB/s",
                bw,
                "MB/s",
                [s],
                bounds=(5000.0, None),
                benchmark="fio",
                culprits=(node,),
            )
            b.verdict(
                "fio-rand-read-iops",
                iops >= 900_000,
                (node,),
                "4k random read IOPS",
                ">= 900000 IOPS",
                iops,
                "IOPS",
                [s],
                bounds=(900_000.0, None),
                benchmark="fio",
                warn=True,
            )
            continue
        for name, rw, bs, metric, unit, typical, bound in FIO_WORKLOADS:
            made, values = [], []
            for r in range(3):
                v = b.rnd.gauss(typical, typical * 0.02)
                if node == bad_node and rw == "read":
                    v = typical * 0.45
                values.append(v)
                ms = [
                    Measurement(
                        "fio",
                        metric,
                        v,
                        unit,
                        {"direction": rw.removeprefix("rand"), "rw": rw, "bs": bs},
                    ),
                    Measurement(
                        "fio",
                        "clat_mean",
                        b.rnd.gauss(180, 10),
                        "us",
                        {"direction": rw.removeprefix("rand"), "rw": rw, "bs": bs},
                    ),
                ]
                made.append(
                    b.step(
                        name,
                        "fio",
                        (node,),
                        ms,
                        f"{name}: (groupid=0, jobs=1): err= 0\n  {metric}={v:.0f}\n",
                        repeat=r,
                    )
                )
            med = statistics.median(values)
            b.verdict(
                f"{name}-{metric}",
                med >= bound,
                (node,),
                f"{name} {metric}, median of 3",
                f">= {bound:g} {unit}",
                med,
                unit,
                made,
                bounds=(bound, None),
                benchmark="fio",
                culprits=(node,),
                samples=3,
            )


def _network(
    b: _Builder, pairs: Sequence[tuple[str, str]], bad_link: tuple[str, str], dense: bool
) -> None:
    directions = (False, True) if dense else (False,)
    repeats = 3 if dense else 1
    for a, c in pairs:
        bad = (a, c) == bad_link
        for reverse in directions:
            name = "iperf3-tcp-reverse" if reverse else "iperf3-tcp"
            made, values = [], []
            for r in range(repeats):
                gbit = b.rnd.gauss(94.0, 0.8) if not bad else 31.5
                values.append(gbit)
                dims = {"protocol": "tcp", "reverse": reverse, "side": "receiver", "streams": 8}
                made.append(
                    b.step(
                        name,
                        "iperf3",
                        (a, c),
                        [Measurement("iperf3", "throughput", gbit * 1e9, "bit/s", dims)],
                        f"Connecting to host {c}, port 5201\n"
                        f"[SUM]   0.00-10.00  sec  {gbit:.1f} Gbits/sec  receiver\n",
                        repeat=r,
                    )
                )
            med = statistics.median(values)
            b.verdict(
                "iperf3-tcp-reverse-bw" if reverse else "iperf3-tcp-bw",
                med >= 90,
                (a, c),
                "TCP bandwidth per link",
                ">= 90 Gbit/s",
                med,
                "Gbit/s",
                made,
                bounds=(90.0, None),
                benchmark="iperf3",
                culprits=(f"{a}<->{c}",),
                reason="link below the lower bound",
                samples=repeats,
            )
        for rail in range(8 if dense else 1):
            hca = f"mlx5_{rail}"
            slow = bad and (rail == 3 or not dense)
            ib = b.rnd.gauss(392.0, 2.0) if not slow else 180.2
            dims: dict[str, Any] = {
                "bidirectional": False,
                "device": hca,
                "link_layer": "IB",
                "mtu": 4096,
                "qps": 1,
                "side": "client",
                "size_bytes": 65536,
                "test": "write",
                "transport": "RC",
            }
            s = b.step(
                "ib-write-bw",
                "perftest",
                (a, c),
                [Measurement("perftest", "bw_avg", ib, "Gbit/s", dims)],
                " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]\n"
                f" 65536      5000           {ib + 1:.2f}             {ib:.2f}\n",
                label=f"{a}+{c}.{hca}" if dense else "",
            )
            b.verdict(
                "ib-write-bw",
                ib >= 380,
                (a, c),
                "RDMA write bandwidth per link" + (f" ({hca})" if dense else ""),
                ">= 380 Gbit/s",
                ib,
                "Gbit/s",
                [s],
                bounds=(380.0, None),
                benchmark="perftest",
                culprits=(f"{a}<->{c}",),
                reason="link below the lower bound",
            )


def _nccl(
    b: _Builder, nodes: Sequence[str], bad_node: str, dense: bool, racks: Mapping[str, str]
) -> None:
    sizes = DENSE_SIZES if dense else SIZES

    def sweep(peak: float, op: str = "all_reduce") -> list[Measurement]:
        out = []
        for size in sizes:
            frac = size / (size + 32 * 2**20)
            for placement in ("out_of_place", "in_place") if dense else ("",):
                dims: dict[str, Any] = {"op": op, "size_bytes": size}
                if placement:
                    dims["placement"] = placement
                out.append(
                    Measurement(
                        "nccl-tests",
                        "busbw",
                        max(0.01, peak * frac * b.rnd.uniform(0.97, 1.0)),
                        "GB/s",
                        dims,
                    )
                )
        return out

    per_node = nodes if (dense or len(nodes) <= 64) else nodes[:16]
    for node in per_node:
        s = b.step(
            "nccl-allreduce-node",
            "nccl-tests",
            (node,),
            sweep(480.0 if node != bad_node else 300.0),
            "# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592\n# Avg bus bandwidth    : 180.2\n",
        )
        peak = max(m.value for m in s.measurements)
        b.verdict(
            "nccl-allreduce-busbw-node",
            peak >= 400,
            (node,),
            "NCCL all_reduce busbw inside one node, largest size",
            ">= 400 GB/s",
            peak,
            "GB/s",
            [s],
            bounds=(400.0, None),
            benchmark="nccl-tests",
            culprits=(node,),
        )
    if dense:
        by_rack: dict[str, list[str]] = {}
        for n in nodes:
            by_rack.setdefault(racks[n], []).append(n)
        for rack, members in sorted(by_rack.items()):
            s = b.step(
                "nccl-allreduce-rack",
                "nccl-tests",
                tuple(members),
                sweep(370.0),
                "# nThread 1 nGpus 1\n# Avg bus bandwidth    : 150.1\n",
                label=rack,
            )
            peak = max(m.value for m in s.measurements)
            b.verdict(
                "nccl-allreduce-busbw-rack",
                peak >= 340,
                (),
                f"NCCL all_reduce in {rack}",
                ">= 340 GB/s",
                peak,
                "GB/s",
                [s],
                bounds=(340.0, None),
                benchmark="nccl-tests",
                observed_text=rack,
            )
    for op in ("all_reduce", "all_gather") if dense else ("all_reduce",):
        made = [
            b.step(
                f"nccl-{op.replace('_', '')}-all",
                "nccl-tests",
                tuple(nodes),
                sweep(360.0, op),
                "# nThread 1 nGpus 1\n# Out of bounds values : 0 OK\n"
                "# Avg bus bandwidth    : 150.1\n",
                repeat=r,
            )
            for r in range(3 if dense else 1)
        ]
        peak = statistics.median(max(m.value for m in s.measurements) for s in made)
        b.verdict(
            f"nccl-{op.replace('_', '')}-busbw-all" if dense else "nccl-allreduce-busbw-all",
            peak >= 340,
            tuple(nodes) if len(nodes) <= 4 else (),
            f"NCCL {op} busbw across all nodes",
            ">= 340 GB/s",
            peak,
            "GB/s",
            made,
            bounds=(340.0, None),
            benchmark="nccl-tests",
            samples=len(made),
        )


def _mlperf(b: _Builder, nodes: Sequence[str], dense: bool) -> None:
    group = tuple(nodes[: min(len(nodes), 8)])
    if not dense:
        s = b.step(
            "mlperf-bert",
            "mlperf-training",
            group,
            [Measurement("mlperf-training", "time_to_train", 312.4, "s", {"benchmark": "bert"})],
            ':::MLLOG {"key": "run_stop", "value": null, "metadata": {"status": "success"}}\n',
        )
        b.verdict(
            "mlperf-bert-ttt",
            True,
            (),
            "BERT time to train",
            "<= 400 s",
            312.4,
            "s",
            [s],
            bounds=(None, 400.0),
            benchmark="mlperf-training",
        )
    else:
        ms, facts, times = [], [], []
        bench = "llama31_8b"
        for k in range(10):
            t = b.rnd.gauss(1_150_000.0, 25_000.0)
            times.append(t)
            ms.append(
                Measurement(
                    "mlperf-training",
                    "time_to_train",
                    t,
                    "ms",
                    {"benchmark": bench, "run_index": k, "status": "success"},
                )
            )
            facts += [
                Fact("mlperf-training", "compliance", "passed", dims={"run_index": k}),
                Fact("mlperf-training", "status", "success", dims={"run_index": k}),
            ]
        score = statistics.mean(sorted(times)[1:-1])
        ms.append(Measurement("mlperf-training", "score", score, "ms", {"benchmark": bench}))
        d = {"benchmark": bench}
        facts += [
            Fact("mlperf-training", "runs_required", 10, dims=d),
            Fact("mlperf-training", "runs", 10, dims=d),
            Fact("mlperf-training", "runs_satisfied", True, dims=d),
            Fact("mlperf-training", "score_valid", True, dims=d),
            Fact("mlperf-training", "mlperf_logging_version", "4.1.68"),
        ]
        s = b.step(
            "mlperf-llama31-8b",
            "mlperf-training",
            group,
            ms,
            ':::MLLOG {"key": "run_stop", "value": null, "metadata": {"status": "success"}}\n',
            facts,
        )
        b.verdict(
            "mlperf-llama31-8b-score",
            score <= 1_500_000,
            (),
            "llama31_8b score",
            "<= 25 min",
            score / 60000,
            "min",
            [s],
            bounds=(None, 25.0),
            benchmark="mlperf-training",
        )
        for i, node in enumerate(group):
            valid = i != 5
            sps = b.rnd.gauss(52_000, 800)
            facts = [
                Fact("mlperf-inference", "scenario", "Offline"),
                Fact("mlperf-inference", "result_validity", "VALID" if valid else "INVALID"),
                Fact("mlperf-inference", "min_duration_met", valid),
                Fact(
                    "mlperf-inference", "primary_metric", f"samples_per_second = {sps:g} samples/s"
                ),
                Fact(
                    "mlperf-inference",
                    "result",
                    "VALID" if valid else "INVALID: min_duration_met not satisfied",
                ),
            ]
            if not valid:
                facts.append(Fact("mlperf-inference", "failed_constraints", "min_duration_met"))
            s = b.step(
                "mlperf-resnet50-offline",
                "mlperf-inference",
                (node,),
                [
                    Measurement(
                        "mlperf-inference",
                        "samples_per_second",
                        sps,
                        "samples/s",
                        {"scenario": "Offline", "mode": "PerformanceOnly"},
                    )
                ],
                "================================================\nMLPerf Results Summary\n",
                facts,
            )
            b.verdict(
                "mlperf-resnet50-offline-valid",
                valid,
                (node,),
                "LoadGen says the Offline result is VALID",
                "== VALID",
                None,
                "",
                [s],
                benchmark="mlperf-inference",
                culprits=(node,),
                observed_text="VALID" if valid else "INVALID",
                reason="min_duration_met not satisfied",
            )
        return
    s = b.step(
        "mlperf-resnet-offline",
        "mlperf-inference",
        (nodes[0],),
        [],
        "Traceback (most recent call last):\nRuntimeError: CUDA error: out of memory\n",
        status=StepStatus.FAILED,
        reason="exit code 1",
    )
    b.verdicts.append(
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


def make_run(
    n: int = 8, *, seed: int = 7, hostile: bool = False, beacon: str = "", dense: bool = False
) -> Generated:
    """``beacon``: a URL planted (with the payloads) as an image source; a test serves it on
    loopback and asserts that the rendered report never requested it."""
    rnd = random.Random(seed)
    payload = PAYLOAD + (f'<img src="{beacon}">' if beacon else "")
    nodes = [_node(i) for i in range(n)]
    if hostile:
        nodes[0] = "gpu" + payload
    racks = {nd: f"r{i // 32:02d}" for i, nd in enumerate(nodes)}
    bad_node = nodes[min(2, n - 1)]
    pairs = [(nodes[i], nodes[(i + 1) % n]) for i in range(n)] if n > 1 else []
    bad_link = pairs[min(1, len(pairs) - 1)] if pairs else (bad_node, bad_node)
    odd_hca = nodes[min(5, n - 1)] if dense else ""
    b = _Builder(rnd)
    _preflight(b, nodes, bad_node, odd_hca, dense)
    _fio(b, nodes, bad_node, dense, payload if hostile else "")
    _network(b, pairs, bad_link, dense)
    _nccl(b, nodes, bad_node, dense, racks)
    _mlperf(b, nodes, dense)
    b.verdicts.append(
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
    b.verdicts.append(
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
                "labels": {"rack": racks[nd]},
                "facts": {},
            }
            for nd in nodes
        ],
    }
    facts = [f for s in b.steps if s.tool == "preflight" for f in s.facts]
    run = Run(
        id="20261202-101500-acceptance",
        suite="acceptance",
        spec="h100-ndr" + (payload if hostile else ""),
        spec_sha256="ab" * 32,
        started=T0,
        finished="2026-12-02T11:42:10Z",
        aibench_version="0.1.0",
        inventory=inventory,
        environment=environment_from_facts(facts),
        steps=tuple(b.steps),
        verdicts=tuple(b.verdicts),
        generated=True,
        notes=("GENERATED data for tests: not measured",),
    )
    # as aibench run does: fault localization of the pairwise results
    run = run.replace(suspects=suspect_records(run))
    return Generated(run=run, logs=b.logs, bad_node=bad_node, bad_link=bad_link)


def write_run(gen: Generated, run_dir: Path) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    made: set[Path] = set()
    for rel, text in gen.logs.items():
        p = run_dir / rel
        if p.parent not in made:
            p.parent.mkdir(parents=True, exist_ok=True)
            made.add(p.parent)
        p.write_text(text, encoding="utf-8")
    path = run_dir / "run.json"
    path.write_text(
        json.dumps(gen.run.to_dict(), indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    return path
