"""Serving runner: NVIDIA AIPerf against an OpenAI-compatible endpoint, one step per endpoint.

Why AIPerf (PyPI ``aiperf``, tested with 0.13.0): it installs from PyPI without torch
(about a minute here), runs offline, streams ``/v1/chat/completions`` and
``/v1/completions``, sweeps concurrency levels and Poisson request rates in one process,
and writes a JSON summary per load level plus one JSON line per request (the failover
timeline). Token counting needs a tokenizer and no model hub can be reached: AIPerf loads
a local tokenizer folder (``tokenizer.json`` + ``tokenizer_config.json``, e.g. one built with
the ``tokenizers`` package) when ``tokenizer`` is a path and ``HF_HUB_OFFLINE`` is *not*
set (with it set, AIPerf 0.13 looks the path up in the hub cache and fails). GuideLLM
(PyPI ``guidellm``) needs torch, a multi-GB install for a CPU-only controller; its report
JSON is still read by the ``guidellm`` parser, and ``vllm bench serve`` result JSON by the
``vllm-bench-serve`` parser. AIPerf starts a dozen processes per run: expect 10-30 s of
start-up per load level on a 2-core node. Two of them are turned off
(``--no-server-metrics --no-gpu-telemetry``): the scrape of the endpoint's ``/metrics`` and
the DCGM reader on the driver, whose outputs aibench reads neither of (its own telemetry
samples the nodes); each is a service that, when it misses two heartbeats on a loaded
driver, makes AIPerf 0.13 exit 1 with its results marked degraded, which fails the step.

Targets come from the inventory (``endpoints:`` of a node: name, url, model, role,
backends, ``api_key_env`` or ``api_key_file``). The step runs on ``all`` its nodes: the
``driver`` node (default: the first) runs AIPerf; ``endpoint`` names the target; its API
key is read on the driver node by the driver script (from the named file or variable) and
handed to AIPerf through its config file's ``${AIBENCH_SERVING_API_KEY}`` substitution: no
argv, log, run.json or report ever holds it.

The client process is ``sh -c DRIVER aibench-aiperf OUTDIR KEYFILE KEYENV aiperf profile
...`` (a constant script; every inventory value is its own argument). AIPerf's console
goes to stderr; afterwards the driver prints each ``profile_export_aiperf.json`` and
``profile_export.jsonl`` it wrote, framed as ``==> <relative path> <==`` lines, on
stdout, so ``collect`` needs no shared file system. Records: the ``aiperf`` parser's, with
dims ``endpoint`` and ``role`` added.

Failover (``failover:``): while the load runs, one backend is stopped by the suite's
``stop`` argv and started again by its ``start`` argv, both run on the backend's node by
its executor (one background process of the step, a constant script given both argvs
split by a ``;`` argument, which no argv value may contain). It waits until the backend's
port sends data in three polls 0.2 s apart in a row (the sum of ``bytes_sent`` of its
established connections, ``ss -ti``, grows: a stream is flowing, not just idle pooled
connections or a health check), then ``stop_after_s``, runs ``stop``, waits ``start_after_s``, runs
``start``, and prints the time of each. ``collect`` adds, from the per-request lines, the
records of :mod:`aibench.parsers._aiperf_records`: ``failover_errors`` (count, by
``kind``), ``recovery_time`` (s: from the stop to the end of the last failed request after
it; 0 when none failed), ``backend_down_time``, ``failover_error_rate`` (%) and a
per-second timeline (``timeline_requests``, ``timeline_errors``, ``timeline_latency``,
dim ``t`` = seconds from the stop).
The stop time is the backend node's clock, the requests' the driver's: keep them in sync.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Annotated, Any, ClassVar

from pydantic import Field, model_validator

from aibench.config import Strict
from aibench.errors import ParseError, ToolFailure
from aibench.executors.base import ReadyCheck
from aibench.inventory import Node
from aibench.model import FrozenDims, Measurement
from aibench.parsers import Record
from aibench.parsers._aiperf_records import failover_records, read_jsonl
from aibench.parsers.aiperf import TOOL, summary_records
from aibench.runners.base import Invocation, Output, ProcessSpec, Slot, label_for, with_dims
from aibench.textio import exit_tail

_ARG = r"^[A-Za-z0-9_./:=,@%+\-]+$"
DRIVER = r"""out=$1 keyfile=$2 keyenv=$3; shift 5  # then the endpoint and its role
rm -rf "$out" && mkdir -p "$out/mmap" || exit 3
# AIPerf's dataset files go here, not to a folder of their own in the driver's /tmp (which
# AIPerf leaves behind, empty, after every run). Only these: TMPDIR would move its IPC
# sockets too, and a long folder name is over the 107 bytes a socket's path may have.
export AIPERF_DATASET_MMAP_BASE_PATH="$out/mmap"
set -- "$@" --artifact-dir "$out/a"
if [ -n "$keyfile" ] || [ -n "$keyenv" ]; then
  if [ -n "$keyfile" ]; then
    AIBENCH_SERVING_API_KEY=$(cat -- "$keyfile") || exit 3
  else
    AIBENCH_SERVING_API_KEY=$(printenv -- "$keyenv") || { echo "aibench: $keyenv is not set" >&2; exit 3; }
  fi
  export AIBENCH_SERVING_API_KEY
  printf '%s\n' 'benchmark:' '  endpoint:' '    api_key: ${AIBENCH_SERVING_API_KEY}' \
    '  dataset: {type: synthetic, entries: 1, prompts: {isl: 1, osl: 1}}' \
    '  phases: {type: concurrency, concurrency: 1, requests: 1}' > "$out/key.yaml"
  set -- "$@" --config "$out/key.yaml"
fi
"$@" >&2
rc=$?
find "$out/a" \( -name profile_export_aiperf.json -o -name profile_export.jsonl \) | sort |
while read -r f; do printf '==> %s <==\n' "${f#"$out"/a/}"; cat -- "$f"; echo; done
exit $rc
"""  # noqa: E501
FAULT = r"""port=$1 stop_after=$2 start_after=$3; shift 3
first() { n=$#; for x do [ "$x" = ";" ] && break; set -- "$@" "$x"; done; shift "$n"; "$@"; }
rest() { while [ $# -gt 0 ] && [ "$1" != ";" ]; do shift; done; shift; "$@"; }
echo "aibench-failover armed"
sent() { ss -Htni state established "( sport = :$port )" 2>/dev/null |
  grep -o 'bytes_sent:[0-9]*' | awk -F: '{s += $2} END {print s + 0}'; }
seen=0 last=$(sent)
while [ "$seen" -lt 3 ]; do
  sleep 0.2
  now=$(sent)
  if [ "$now" -gt "$last" ]; then seen=$((seen + 1)); else seen=0; fi
  last=$now
done
sleep "$stop_after"
echo "aibench-failover stop at $(date +%s.%N)"
first "$@"
echo "aibench-failover stop exit $? at $(date +%s.%N)"
sleep "$start_after"
echo "aibench-failover start at $(date +%s.%N)"
rest "$@"
echo "aibench-failover start exit $? at $(date +%s.%N)"
exec sleep 86400
"""
DURATION_REQUESTS = 10_000_000
_FRAME = re.compile(r"^==> (.+) <==$", re.M)


class FailoverOptions(Strict):
    """Stop one backend while the load runs, start it again later."""

    endpoint: str = Field(description="the backend endpoint to stop (its node runs the commands)")
    stop: list[Annotated[str, Field(pattern=_ARG)]] = Field(min_length=1, description="argv")
    start: list[Annotated[str, Field(pattern=_ARG)]] = Field(min_length=1, description="argv")
    stop_after_s: Annotated[float, Field(ge=0, le=3600)] = 2.0
    start_after_s: Annotated[float, Field(gt=0, le=3600)] = 5.0


class SloOptions(Strict):
    """The service-level objective a load level must meet (the max-rate-under-SLO search)."""

    ttft_p99_ms: Annotated[float, Field(gt=0)] | None = None
    itl_p99_ms: Annotated[float, Field(gt=0)] | None = None
    e2e_p99_ms: Annotated[float, Field(gt=0)] | None = None
    error_rate_pct: Annotated[float, Field(ge=0, le=100)] = 0.0


class AiperfOptions(Strict):
    """Options of a serving step (suite ``options:``)."""

    endpoint: str = Field(description="name of an inventory endpoint")
    driver: str | None = Field(None, description="node that runs AIPerf (default: the first)")
    api: Annotated[str, Field(pattern="^(chat|completions)$")] = "chat"
    streaming: bool = True
    concurrency: list[Annotated[int, Field(ge=1, le=100_000)]] = Field(
        default_factory=list, description="concurrency levels, one AIPerf sweep"
    )
    rate: list[Annotated[float, Field(gt=0, le=1e6)]] = Field(
        default_factory=list, description="Poisson request rates (requests/s)"
    )
    max_concurrency: Annotated[int, Field(ge=1, le=100_000)] | None = Field(
        None, description="with rate: the cap on requests in flight"
    )
    requests: Annotated[int, Field(ge=1, le=10_000_000)] | None = Field(
        None, description="requests per load level"
    )
    duration: Annotated[float, Field(gt=0, le=86400)] | None = Field(
        None, description="seconds per load level (instead of requests)"
    )
    warmup_requests: Annotated[int, Field(ge=0, le=100_000)] = 0
    prompts: Annotated[int, Field(ge=1, le=1_000_000)] = Field(
        100, description="distinct synthetic prompts (AIPerf cycles through them)"
    )
    input_tokens: Annotated[int, Field(ge=1, le=1_000_000)] = 128
    output_tokens: Annotated[int, Field(ge=1, le=1_000_000)] = 64
    tokenizer: Annotated[str, Field(pattern=_ARG)] = Field(
        description="tokenizer folder on the driver node (works offline), or builtin "
        "(tiktoken o200k_base: its file is downloaded on first use, so not offline)"
    )
    aiperf: Annotated[str, Field(pattern=_ARG)] = Field("aiperf", description="the command")
    workdir: Annotated[str, Field(pattern=_ARG)] | None = None
    request_timeout: Annotated[float, Field(gt=0, le=86400)] = 60.0
    seed: int = 1
    failover: FailoverOptions | None = None
    slo: SloOptions | None = Field(
        None, description="emit slo_met per level and max_rate_under_slo over the sweep"
    )

    @model_validator(mode="after")
    def _load(self) -> AiperfOptions:
        if bool(self.concurrency) == bool(self.rate):
            raise ValueError("give concurrency levels or request rates (one of them)")
        if self.requests is None and self.duration is None:
            raise ValueError("give requests or duration per load level")
        if self.failover is not None and len(self.concurrency) + len(self.rate) != 1:
            raise ValueError("failover runs at one load level")
        return self


def endpoints(group: Sequence[Node]) -> dict[str, tuple[Node, dict[str, Any]]]:
    found: dict[str, tuple[Node, dict[str, Any]]] = {}
    for node in group:
        for ep in node.facts.get("endpoints") or []:
            if ep["name"] in found:
                raise ValueError(f"endpoint {ep['name']!r} is defined on two nodes")
            found[ep["name"]] = (node, dict(ep))
    return found


def _port(url: str) -> int:
    m = re.match(r"^(https?)://(\[[^\]]+\]|[^:/]+)(?::(\d+))?", url)
    if not m:
        raise ValueError(f"not an http(s) URL: {url!r}")
    return int(m.group(3)) if m.group(3) else (443 if m.group(1) == "https" else 80)


def failover(
    f: FailoverOptions, eps: dict[str, tuple[Node, dict[str, Any]]], timeout: float
) -> ProcessSpec:
    """The fault beside the load: on the failover endpoint's node, the ``stop`` command
    after ``stop_after_s`` and the ``start`` command ``start_after_s`` later."""
    if f.endpoint not in eps:
        raise ValueError(f"failover endpoint {f.endpoint!r} is not on the step's nodes")
    bnode, bep = eps[f.endpoint]
    port = str(_port(bep["url"]))
    argv_f = ["sh", "-c", FAULT, "aibench-failover", port]
    argv_f += [f"{f.stop_after_s:g}", f"{f.start_after_s:g}", *f.stop, ";", *f.start]
    return ProcessSpec(
        bnode.name,
        tuple(argv_f),
        role="server",
        ready=ReadyCheck(pattern="aibench-failover armed", timeout=10.0),
        timeout=timeout + 10.0,
    )


class AiperfRunner:
    name: ClassVar[str] = "aiperf"
    tool: ClassVar[str] = TOOL
    default_placement: ClassVar[str] = "all"
    Options: ClassVar[type[Strict]] = AiperfOptions
    units: ClassVar[dict[str, str]] = {
        "request_throughput": "queries/s",
        "output_token_throughput": "tokens/s",
        "ttft": "ms",
        "itl": "ms",
        "e2e_latency": "ms",
        "requests": "count",
        "error_rate": "%",
        "errors": "count",
        "failover_errors": "count",
        "failover_error_rate": "%",
        "recovery_time": "s",
        "backend_down_time": "s",
        "slo_met": "count",
        "max_rate_under_slo": "queries/s",
    }

    def aiperf_argv(self, o: AiperfOptions, ep: dict[str, Any]) -> list[str]:
        args = [o.aiperf, "profile", "--model", ep["model"], "--url", ep["url"]]
        args += ["--endpoint-type", o.api, "--tokenizer", o.tokenizer, "--ui-type", "none"]
        args += ["--no-server-metrics", "--no-gpu-telemetry"]  # read by nothing (above)
        if o.streaming:
            args.append("--streaming")
        if o.concurrency:
            args += ["--concurrency", ",".join(str(c) for c in o.concurrency)]
        else:
            args += ["--request-rate", ",".join(f"{r:g}" for r in o.rate)]
            args += ["--request-rate-mode", "poisson"]
            if o.max_concurrency:
                args += ["--concurrency", str(o.max_concurrency)]
        if o.requests is not None:
            args += ["--request-count", str(o.requests)]
        if o.duration is not None:
            args += ["--benchmark-duration", f"{o.duration:g}"]
            if o.requests is None:  # the duration is the limit (and the key file's phase is not)
                args += ["--request-count", str(DURATION_REQUESTS)]
        args += ["--num-dataset-entries", str(o.prompts)]
        if o.warmup_requests:
            args += ["--warmup-request-count", str(o.warmup_requests)]
        args += ["--synthetic-input-tokens-mean", str(o.input_tokens)]
        args += ["--output-tokens-mean", str(o.output_tokens)]
        args += ["--request-timeout-seconds", f"{o.request_timeout:g}"]
        args += ["--random-seed", str(o.seed)]
        return args

    def _timeout(self, o: AiperfOptions) -> float:
        levels = len(o.concurrency) + len(o.rate)
        per = (o.duration or 0.0) + (o.requests or 0) * 0.5 + 60.0 + o.request_timeout
        return levels * per + (
            o.failover.stop_after_s + o.failover.start_after_s if o.failover else 0
        )

    def invocations(
        self, step: str, options: AiperfOptions, group: Sequence[Node], slot: Slot
    ) -> list[Invocation]:
        o = options
        eps = endpoints(group)
        if o.endpoint not in eps:
            known = ", ".join(sorted(eps)) or "none"
            raise ValueError(f"endpoint {o.endpoint!r} is not on the step's nodes (known: {known})")
        _node, ep = eps[o.endpoint]
        names = [n.name for n in group]
        driver = o.driver or names[0]
        if driver not in names:
            raise ValueError(f"driver {driver!r} is not one of the step's nodes")
        out = f"{(o.workdir or slot.workdir).rstrip('/')}/aiperf/{step}.r{slot.repeat}"
        argv = ["sh", "-c", DRIVER, "aibench-aiperf", out]
        argv += [ep.get("api_key_file") or "", ep.get("api_key_env") or ""]
        argv += [o.endpoint, ep.get("role", "endpoint")]
        argv += self.aiperf_argv(o, ep)
        timeout = self._timeout(o)
        env: dict[str, str] = {}
        if o.slo is not None:
            env["AIBENCH_SERVING_SLO"] = json.dumps(o.slo.model_dump(exclude_none=True))
        servers = [failover(o.failover, eps, timeout)] if o.failover is not None else []
        return [
            Invocation(
                step=step,
                tool=self.tool,
                nodes=(driver,),
                label=label_for((driver,)),
                repeat=slot.repeat,
                round=slot.round,
                parser=TOOL,
                network=True,
                servers=tuple(servers),
                client=ProcessSpec(driver, tuple(argv), env=env, timeout=timeout),
            )
        ]

    def collect(self, inv: Invocation, out: Output) -> list[Record]:
        o_ep, role = _endpoint_of(inv)
        files = split_bundle(out.stdout)
        summaries = {k: v for k, v in files.items() if k.endswith("profile_export_aiperf.json")}
        records: list[Record] = []
        problems: list[str] = []
        for path, text in sorted(summaries.items()):
            try:
                doc = json.loads(text)
            except json.JSONDecodeError as exc:
                problems.append(f"{path}: invalid JSON ({exc.msg})")
                continue
            try:
                got: list[Measurement] = summary_records(doc)
            except ToolFailure as exc:
                problems.append(f"{path}: {exc.reason}")
                got = [r for r in exc.partial if isinstance(r, Measurement)]
            records += with_dims(got, endpoint=o_ep, role=role)
        slo = _slo_of(inv)
        if slo is not None:
            records += slo_records([r for r in records if isinstance(r, Measurement)], slo)
        fault = _fault_times(out, inv)
        if fault is not None:
            rec_files = [v for k, v in files.items() if k.endswith("profile_export.jsonl")]
            reqs = [r for text in rec_files for r in read_jsonl(text)]
            records += with_dims(failover_records(reqs, *fault), endpoint=o_ep, role=role)
        elif inv.servers:
            problems.append("the backend was never stopped (no load reached it?)")
        if out.exit_code != 0 or problems or not summaries:
            why = "; ".join(problems) or _tail(out)
            if not summaries:
                why = f"AIPerf wrote no summary: {_tail(out)}"
            raise ToolFailure(TOOL, why, partial=list(records))
        return records

    def version_argv(self) -> tuple[str, ...]:
        return ("aiperf", "--version")

    def version_argv_for(self, inv: Invocation) -> tuple[str, ...]:
        """The version of the AIPerf the step runs (the ``aiperf`` option may be a path)."""
        return (inv.client.argv[9], "--version")

    def parse_version(self, text: str) -> str:
        m = re.search(r"(\d+\.\d+\.\d+\S*)", text)
        return m.group(1) if m else ""


_SLO_KEYS = (("ttft", "ttft_p99_ms"), ("itl", "itl_p99_ms"), ("e2e_latency", "e2e_p99_ms"))


def _slo_of(inv: Invocation) -> dict[str, float] | None:
    """The SLO the plan put in the driver's environment (no secret: plain bounds)."""
    raw = inv.client.env.get("AIBENCH_SERVING_SLO")
    return {k: float(v) for k, v in json.loads(raw).items()} if raw else None


def slo_records(ms: list[Measurement], slo: dict[str, float]) -> list[Measurement]:
    """Per load level ``slo_met`` (1 or 0), and ``max_rate_under_slo``: the highest request
    throughput of a level that met every bound (0 when none did)."""
    levels: dict[tuple[tuple[str, Any], ...], dict[str, float]] = {}
    for m in ms:
        key = tuple(sorted((k, v) for k, v in m.dims.items() if k != "stat"))
        stat = m.dims.get("stat")
        name = m.metric if stat is None else f"{m.metric}:{stat}"
        levels.setdefault(key, {})[name] = m.value
    out: list[Measurement] = []
    best = 0.0
    base: dict[str, Any] = {}
    for key, vals in sorted(levels.items(), key=lambda kv: str(kv[0])):
        if "request_throughput" not in vals:
            continue
        ok = vals.get("error_rate", 100.0) <= slo.get("error_rate_pct", 0.0)
        for metric, bound in _SLO_KEYS:
            if bound in slo:
                v = vals.get(f"{metric}:p99")
                ok = ok and v is not None and v <= slo[bound]
        dims = dict(key)
        out.append(Measurement(TOOL, "slo_met", 1.0 if ok else 0.0, "count", FrozenDims(dims)))
        if ok:
            best = max(best, vals["request_throughput"])
        base = {k: v for k, v in dims.items() if k not in ("rate", "concurrency")}
    out.append(Measurement(TOOL, "max_rate_under_slo", best, "queries/s", FrozenDims(base)))
    return out


def _endpoint_of(inv: Invocation) -> tuple[str, str]:
    """The endpoint's name and role, the driver script's 4th and 5th arguments."""
    argv = inv.client.argv
    return argv[7], argv[8]


def split_bundle(stdout: str) -> dict[str, str]:
    """The driver's stdout: ``==> path <==`` lines, each followed by the file's text."""
    heads = list(_FRAME.finditer(stdout))
    files: dict[str, str] = {}
    for i, h in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(stdout)
        files[h.group(1)] = stdout[h.end() + 1 : end]
    if stdout.strip() and not heads:
        raise ParseError(TOOL, "driver output holds no ==> file <== frame")
    return files


def _fault_times(out: Output, inv: Invocation) -> tuple[float, float | None] | None:
    stop = start = None
    for spec in inv.servers:
        path = out.raw_dir / f"{inv.label}.r{inv.repeat}.server-{spec.host}.stdout"
        text = path.read_text(errors="replace") if path.is_file() else ""
        for what, t in re.findall(r"aibench-failover (stop|start) at ([0-9.]+)", text):
            if what == "stop":
                stop = float(t)
            else:
                start = float(t)
    return None if stop is None else (stop, start)


def _tail(out: Output) -> str:
    """The reason from AIPerf's stderr only: its stdout carries the framed exports."""
    return exit_tail(out.exit_code, "", out.stderr, out.reason)


RUNNER = AiperfRunner()
