"""MLPerf Inference runner: a user's LoadGen harness, one scenario per step.

Runs the configured ``command`` (an argv list: a container launch, a script, an ``srun``
line ...) once per invocation on each node of the placement (``each`` by default). Only
these placeholders are replaced, in any argument: ``{output_dir}`` (where LoadGen must
write its logs: ``<dir>/mlperf-inference/<step>/<label>.r<repeat>``, ``<dir>`` being the
option ``shared_dir`` or else the suite's workdir), ``{scenario}`` (Offline, Server,
SingleStream, MultiStream), ``{mode}`` (PerformanceOnly, AccuracyOnly) and
``{run_index}`` (the repeat, from 0); any other ``{...}`` is a configuration error. The
output directory is made first and LoadGen logs an earlier run left there are removed.

``collect`` reads ``mlperf_log_summary.txt`` and ``mlperf_log_detail.txt`` from the
output directory (readable here when the node is this machine or ``shared_dir`` is on a
file system this machine shares with the nodes; else the summary LoadGen copies to
stdout, when the harness sets ``copy_summary_to_stdout``), copies them into the step's raw folder as
``<label>.r<repeat>.mlperf_log_{summary,detail}.txt``, and parses them with the
``mlperf-inference-summary`` and ``mlperf-inference-detail`` parsers: the summary's
records, plus the detail's facts the summary does not give (``loadgen_version``,
``first_error`` ...). It adds the Facts ``primary_metric`` (the scenario's result metric:
Offline samples (or tokens) per second, Server completed samples (or tokens) per second,
SingleStream the 90th and MultiStream the 99th percentile latency) and ``result``
("VALID", or "INVALID: <failed constraints>"). An INVALID run is a result, judged by the
spec, not a tool failure; a harness that exits non-zero is a failure with its last lines
as the reason (what was logged is kept as evidence). Tested with mlcommons-loadgen
6.0.17.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, ClassVar, Literal

from pydantic import Field, field_validator

from aibench import parsers
from aibench.config import Strict
from aibench.envnames import check_env
from aibench.errors import ParseError, ToolFailure
from aibench.inventory import Node
from aibench.model import Fact, Measurement
from aibench.parsers import Record
from aibench.runners.base import Invocation, Output, ProcessSpec, Slot, label_for

TOOL = "mlperf-inference"
PLACEHOLDERS = ("output_dir", "scenario", "mode", "run_index")
SUMMARY = "mlperf_log_summary.txt"
DETAIL = "mlperf_log_detail.txt"
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_PATH = re.compile(r"^/[A-Za-z0-9_./+@%=-]*$")

#: scenario -> (metric, percentile) in order of preference: the first one present is it
PRIMARY: dict[str, tuple[tuple[str, float | None], ...]] = {
    "Offline": (("tokens_per_second", None), ("samples_per_second", None)),
    "Server": (
        ("completed_tokens_per_second", None),
        ("completed_samples_per_second", None),
        ("scheduled_samples_per_second", None),
    ),
    "SingleStream": (("latency", 90.0),),
    "MultiStream": (("latency", 99.0),),
}


def check_placeholders(argv: Sequence[str], allowed: Sequence[str]) -> None:
    for a in argv:
        for name in _PLACEHOLDER.findall(a):
            if name not in allowed:
                raise ValueError(
                    f"unknown placeholder {{{name}}} in {a!r}; "
                    f"allowed: {', '.join('{' + p + '}' for p in allowed)}"
                )
        if _PLACEHOLDER.sub("", a).count("{") or _PLACEHOLDER.sub("", a).count("}"):
            raise ValueError(f"unbalanced brace in {a!r}")


def fill(argv: Sequence[str], values: dict[str, str]) -> tuple[str, ...]:
    return tuple(_PLACEHOLDER.sub(lambda m: values[m.group(1)], a) for a in argv)


class MlperfInferenceOptions(Strict):
    """Options of an MLPerf Inference step (suite ``options:``)."""

    command: list[str] = Field(
        min_length=1,
        description="the harness argv; placeholders {output_dir} {scenario} {mode} {run_index}",
    )
    scenario: Literal["Offline", "Server", "SingleStream", "MultiStream"] = Field(
        description="the LoadGen scenario this step runs"
    )
    mode: Literal["PerformanceOnly", "AccuracyOnly"] = Field(
        "PerformanceOnly", description="LoadGen test mode"
    )
    benchmark: str | None = Field(
        None, pattern=r"^[A-Za-z0-9_.-]+$", description="model name for reports (resnet50 ...)"
    )
    shared_dir: str | None = Field(
        None,
        description="a directory this machine and the nodes share (the logs are read here); "
        "default: the suite's workdir, right when the node is this machine",
    )
    env: dict[str, str] = Field(default_factory=dict, description="environment of the harness")
    timeout: Annotated[float, Field(gt=0)] = Field(3600.0, description="seconds per run")

    @field_validator("command")
    @classmethod
    def _command(cls, v: list[str]) -> list[str]:
        check_placeholders(v, PLACEHOLDERS)
        return v

    @field_validator("shared_dir")
    @classmethod
    def _dir(cls, v: str | None) -> str | None:
        if v is not None and not _PATH.match(v):
            raise ValueError(f"shared_dir must be an absolute path without spaces: {v!r}")
        return v

    @field_validator("env")
    @classmethod
    def _env(cls, v: dict[str, str]) -> dict[str, str]:
        return check_env(v)


class MlperfInferenceRunner:
    name: ClassVar[str] = "mlperf-inference"
    tool: ClassVar[str] = TOOL
    default_placement: ClassVar[str] = "each"
    Options: ClassVar[type[Strict]] = MlperfInferenceOptions

    def invocations(
        self, step: str, options: MlperfInferenceOptions, group: Sequence[Node], slot: Slot
    ) -> list[Invocation]:
        o = options
        out: list[Invocation] = []
        for n in group:
            label = label_for((n.name,))
            base = (o.shared_dir or slot.workdir).rstrip("/")
            outdir = f"{base}/mlperf-inference/{step}/{label}.r{slot.repeat}"
            values = {
                "output_dir": outdir,
                "scenario": o.scenario,
                "mode": o.mode,
                "run_index": str(slot.repeat),
            }
            out.append(
                Invocation(
                    step=step,
                    tool=self.tool,
                    nodes=(n.name,),
                    label=label,
                    repeat=slot.repeat,
                    round=slot.round,
                    parser="mlperf-inference-summary",
                    setup=(
                        ProcessSpec(n.name, ("mkdir", "-p", outdir), role="setup", timeout=30),
                        # logs left by an earlier run must never be read as this one's
                        ProcessSpec(
                            n.name,
                            ("rm", "-f", f"{outdir}/{SUMMARY}", f"{outdir}/{DETAIL}"),
                            role="setup",
                            timeout=30,
                        ),
                    ),
                    client=ProcessSpec(
                        n.name, fill(o.command, values), env=dict(o.env), timeout=o.timeout
                    ),
                    artifacts=(f"{outdir}/{SUMMARY}", f"{outdir}/{DETAIL}"),
                )
            )
        return out

    def version_argv(self) -> tuple[str, ...] | None:
        return None  # the harness is the user's; the detail log names the LoadGen version

    def parse_version(self, text: str) -> str:
        m = re.search(r'"key": "loadgen_version", "value": "([^"]+)"', text)
        return m.group(1) if m else ""

    def collect(self, inv: Invocation, out: Output) -> list[Record]:
        summary_text = _fetch(inv.artifacts[0], out.raw_dir, inv, SUMMARY)
        detail_text = _fetch(inv.artifacts[1], out.raw_dir, inv, DETAIL)
        if summary_text is None and "MLPerf Results Summary" in out.stdout:
            summary_text = out.stdout
        if summary_text is None:
            why = out.failure() if out.exit_code != 0 else "the harness exited 0"
            raise ToolFailure(TOOL, f"no {SUMMARY} in {Path(inv.artifacts[0]).parent} ({why})")
        try:
            records = parsers.parse("mlperf-inference-summary", summary_text)
        except ParseError:
            if out.exit_code != 0:
                raise ToolFailure(TOOL, out.failure()) from None
            raise
        have = {r.name for r in records if isinstance(r, Fact)}
        if detail_text is not None:
            try:
                detail = parsers.parse("mlperf-inference-detail", detail_text)
            except ParseError as exc:
                records.append(Fact(TOOL, "detail_log", None, reason=str(exc)))
            else:
                records += [r for r in detail if isinstance(r, Fact) and r.name not in have]
        records += judge_facts(records)
        if out.exit_code != 0:
            raise ToolFailure(TOOL, out.failure(), partial=list(records))
        return records


def judge_facts(records: Sequence[Record]) -> list[Record]:
    """``primary_metric`` and ``result`` Facts, from the summary's records."""
    facts = {r.name: r.value for r in records if isinstance(r, Fact)}
    scenario = str(facts.get("scenario") or "")
    out: list[Record] = []
    for metric, pct in PRIMARY.get(scenario, ()):
        hit = [
            m
            for m in records
            if isinstance(m, Measurement)
            and m.metric == metric
            and (pct is None or m.dims.get("percentile") == pct)
        ]
        if hit:
            name = metric if pct is None else f"{metric} p{pct:g}"
            out.append(Fact(TOOL, "primary_metric", f"{name} = {hit[0].value:g} {hit[0].unit}"))
            break
    validity = facts.get("result_validity")
    if validity == "VALID":
        out.append(Fact(TOOL, "result", "VALID"))
    elif validity == "INVALID":
        failed = facts.get("failed_constraints") or "a constraint LoadGen names in the detail log"
        out.append(Fact(TOOL, "result", f"INVALID: {failed} not satisfied"))
    else:
        out.append(Fact(TOOL, "result", None, reason="the summary states no result"))
    return out


def _fetch(path: str, raw: Path, inv: Invocation, name: str) -> str | None:
    """Copy a log into the raw folder and return its text; None when it is not here."""
    src = Path(path)
    if not src.is_file():
        return None
    dest = raw / f"{inv.label}.r{inv.repeat}.{name}"
    if src.resolve() != dest.resolve():
        shutil.copyfile(src, dest)
    return dest.read_text(encoding="utf-8", errors="replace")


RUNNER = MlperfInferenceRunner()
