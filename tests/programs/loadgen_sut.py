"""A tiny System Under Test for MLPerf LoadGen on the CPU, for tests only.

``python loadgen_sut.py --output-dir DIR --scenario Offline|SingleStream|Server|MultiStream
[--mode PerformanceOnly|AccuracyOnly] [--min-duration-ms 1000] [--expected-qps N]``

Each sample is one matrix-vector product (a fixed 128x128 float32 matrix times the
sample's vector, numpy) that takes at least ``--sample-us`` microseconds (busy wait),
so the SUT's rate has a known ceiling (20,000 samples/s by default) whatever the
machine. LoadGen writes ``mlperf_log_summary.txt`` and ``mlperf_log_detail.txt``
into DIR. Offline sends one
query of ``expected_qps × min_duration × 1.1`` samples: an expected QPS below what the
SUT really does leaves the run short of ``min_duration`` (INVALID), which the tests use
on purpose; the default (40,000) is above the ceiling, so the run lasts at least
``min_duration`` and is VALID.
"""

from __future__ import annotations

import argparse
import array
import sys
import time
from pathlib import Path

import mlperf_loadgen as lg
import numpy as np

N_SAMPLES = 256


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--output-dir", required=True)
    ap.add_argument(
        "--scenario", required=True, choices=["Offline", "SingleStream", "Server", "MultiStream"]
    )
    ap.add_argument(
        "--mode", default="PerformanceOnly", choices=["PerformanceOnly", "AccuracyOnly"]
    )
    ap.add_argument("--min-duration-ms", type=int, default=1000)
    ap.add_argument("--min-query-count", type=int, default=100)
    ap.add_argument("--expected-qps", type=float, default=40_000.0)
    ap.add_argument("--sample-us", type=float, default=50.0)
    ap.add_argument("--server-qps", type=float, default=500.0)
    a = ap.parse_args()

    rng = np.random.default_rng(7)
    weights = rng.standard_normal((128, 128)).astype(np.float32)
    data = rng.standard_normal((N_SAMPLES, 128)).astype(np.float32)
    keep: list[array.array[float]] = []

    def issue(queries: list[lg.QuerySample]) -> None:
        responses = []
        for q in queries:
            until = time.perf_counter() + a.sample_us / 1e6
            y = weights @ data[q.index]
            while time.perf_counter() < until:
                pass
            buf = array.array("f", [float(y.max())])
            keep.append(buf)
            addr, n = buf.buffer_info()
            responses.append(lg.QuerySampleResponse(q.id, addr, n * buf.itemsize))
        lg.QuerySamplesComplete(responses)

    def flush() -> None:
        pass

    ts = lg.TestSettings()
    ts.scenario = getattr(lg.TestScenario, a.scenario)
    ts.mode = getattr(lg.TestMode, a.mode)
    ts.min_duration_ms = a.min_duration_ms
    ts.min_query_count = a.min_query_count
    ts.offline_expected_qps = a.expected_qps
    ts.server_target_qps = a.server_qps
    ts.server_target_latency_ns = 100_000_000
    ts.single_stream_expected_latency_ns = 50_000
    ts.multi_stream_expected_latency_ns = 400_000
    out = Path(a.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    ls = lg.LogSettings()
    ls.log_output.outdir = str(out)
    ls.log_output.copy_summary_to_stdout = True
    ls.enable_trace = False

    sut = lg.ConstructSUT(issue, flush)
    qsl = lg.ConstructQSL(N_SAMPLES, N_SAMPLES, lambda _s: None, lambda _s: None)
    lg.StartTestWithLogSettings(sut, qsl, ts, ls)
    lg.DestroyQSL(qsl)
    lg.DestroySUT(sut)
    return 0


if __name__ == "__main__":
    sys.exit(main())
