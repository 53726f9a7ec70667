"""Suites: which benchmarks to run, with which options, on which placement.

A suite file (YAML)::

    schema_version: 1
    name: acceptance
    description: Handover acceptance on every node and every pair.
    spec: default                # spec profile used when --spec is not given
    settings:
      workdir: /var/tmp/aibench      # scratch directory on every node
      base_port: 15201           # first TCP port for servers (iperf3, perftest)
      history: false             # true: record every run in <output-dir>/history.sqlite
      lang: en                   # language of report.html and summary.md: en | zh
    steps:
      - name: fio-seq-read       # unique; used by spec checks (select.step)
        tool: fio                # a runner name: see `aibench run --list-tools`
        placement: each          # each | pairs | all | ... (default: the tool's own)
        repeats: 3               # independent runs, summarized by the spec (median)
        timeout: 120             # seconds per run; default: the runner's estimate
        nodes: [gpu001, gpu002]  # optional: names or hostlists; default all nodes
        labels: {role: storage}  # optional: only nodes with these labels
        requires: shared_filesystem  # optional: only where the inventory declares one
        options: {rw: read, bs: 1M, size: 1G, runtime: 30}

Every step's ``options`` are validated by its runner's own schema, so a typo in an fio
option is reported as ``suite.yaml: steps[0].options.bss: unknown key`` before anything
runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from aibench import envnames
from aibench.config import Strict, read_yaml, resolve, validate
from aibench.errors import ConfigError, UserError
from aibench.manifest import sha256_file

_NAME = r"^[a-z0-9][a-z0-9_.-]{0,62}$"


class KubernetesSuite(Strict):
    pods: Literal["per_node", "per_rank"] = Field(
        "per_node",
        description="kubernetes executor, mpirun steps (mpi_launch: ssh): per_node, one Pod "
        "per node holding its ranks and the inventory's resources; per_rank, a Pod per rank "
        "holding the node's resources divided by its ranks, and mpirun in a Pod of its own "
        "(also on one node)",
    )


class Settings(Strict):
    workdir: str = Field(
        "/var/tmp/aibench", pattern=r"^/[A-Za-z0-9_./-]*$", description="scratch directory on nodes"
    )
    base_port: Annotated[int, Field(ge=1024, le=64000)] = 15201
    history: bool = Field(
        False,
        description="record every run in the history database and judge it against "
        "earlier runs (aibench run: <output-dir>/history.sqlite unless --history or "
        "--no-history)",
    )
    telemetry: Annotated[float, Field(gt=0, le=3600)] | None = Field(
        None,
        description="seconds between samples of every node (host, GPU, BMC) beside the "
        "steps; none: no sampling (aibench run --telemetry overrides it)",
    )
    lang: Literal["en", "zh"] = Field(
        "en",
        description="language of report.html and summary.md (en, zh); aibench run --lang "
        "overrides it",
    )
    max_hours: Annotated[float, Field(gt=0, le=10_000)] = Field(
        8.0,
        description="the longest a run of the suite should take: `aibench plan` and `aibench "
        "run` warn when the estimate passes it and name the options that would shorten it",
    )
    shm_size: str | None = Field(
        None,
        pattern=r"^[0-9]+(\.[0-9]+)?([EPTGMK]i?|[munk]|e[0-9]+)?$",
        description="/dev/shm of the processes that do the steps' work where the executor "
        "sets it (kubernetes: a memory emptyDir of this size, e.g. 64Gi; over the "
        "inventory's kubernetes.shm_size)",
    )
    kubernetes: KubernetesSuite = Field(
        default_factory=lambda: KubernetesSuite(),
        description="how the kubernetes executor places the steps' work in Pods",
    )
    secret_env: list[Annotated[str, Field(pattern=envnames.PATTERN)]] = Field(
        default_factory=list,
        description="environment variables (of the steps' env) whose values are secret: "
        "shown as *** and scrubbed from raw outputs and logs, besides every variable whose "
        "name looks secret (TOKEN, PASSWORD, API_KEY ...)",
    )


class StepModel(Strict):
    name: str = Field(pattern=_NAME, description="unique step name (lowercase, digits, -_.)")
    tool: str = Field(description="runner name")
    description: str = ""
    placement: str | None = Field(
        None,
        description="each | pairs | cover | auto (pairs up to cover_above nodes, else "
        "cover) | ring | sample | groups | all | sweep",
    )
    sample: Annotated[int, Field(ge=1)] | None = Field(None, description="placement sample: k")
    group_by: str | None = Field(
        None,
        description="placement groups: the label; placement cover: the label whose every "
        "other group each node meets (default: the first of leaf, switch, rack, rail that "
        "the nodes carry)",
    )
    partners: Annotated[int, Field(ge=1, le=1024)] = Field(
        16, description="placement cover: the partners each node is measured against"
    )
    cover_above: Annotated[int, Field(ge=2)] = Field(
        128,
        description="placement auto: every pair up to this many nodes, cover above (the "
        "plan prints which, why, and the time of every pair)",
    )
    repeats: Annotated[int, Field(ge=1, le=1000)] = 1
    timeout: Annotated[float, Field(gt=0)] | None = None
    nodes: list[str] | None = None
    labels: dict[str, str] | None = None
    enabled: bool = True
    requires: Literal["shared_filesystem", "object_store", "cache"] | None = Field(
        None,
        description="only on nodes whose inventory declares this storage (shared_filesystems, "
        "s3_endpoints, redis_endpoints); not planned at all when no node does",
    )
    options: dict[str, Any] = Field(default_factory=dict)


class SuiteModel(Strict):
    schema_version: Literal[1]
    name: str = Field(pattern=_NAME)
    description: str = ""
    spec: str | None = None
    settings: Settings = Field(default_factory=lambda: Settings())
    steps: list[StepModel] = Field(min_length=1)


@dataclass(frozen=True)
class Step:
    model: StepModel
    options: Any  # the runner's validated Options instance

    @property
    def name(self) -> str:
        return self.model.name

    @property
    def tool(self) -> str:
        return self.model.tool


@dataclass(frozen=True)
class Suite:
    name: str
    description: str
    source: str
    sha256: str
    spec: str | None
    settings: Settings
    steps: tuple[Step, ...]
    raw: dict[str, Any]
    text: str = ""  # the file as read (kept in the run's record: aibench.judge)


def load_suite(name_or_path: str) -> Suite:
    from aibench.placement import PLACEMENTS
    from aibench.runners import RUNNERS

    path, display = resolve("suites", name_or_path)
    data = read_yaml(path)
    model = validate(SuiteModel, data, display)
    seen: set[str] = set()
    steps = []
    for i, sm in enumerate(model.steps):
        where = f"steps[{i}]"
        if sm.name in seen:
            raise ConfigError(display, f"{where}.name", f"duplicate step name {sm.name!r}")
        seen.add(sm.name)
        try:
            runner = RUNNERS.get(sm.tool)
        except UserError:
            valid = ", ".join(RUNNERS.names())
            raise ConfigError(
                display, f"{where}.tool", f"unknown tool {sm.tool!r}; valid: {valid}"
            ) from None
        if sm.placement is not None and sm.placement not in {*PLACEMENTS, "auto"}:
            valid = ", ".join(sorted({*PLACEMENTS, "auto"}))
            raise ConfigError(
                display, f"{where}.placement", f"unknown placement {sm.placement!r}; valid: {valid}"
            )
        try:
            options = validate(runner.Options, sm.options, display, prefix=f"{where}.options")
        except ConfigError as exc:  # the step's name with its index: which one to fix
            raise ConfigError(
                display, exc.key, f"{exc.problem} (step {sm.name})", exc.hint
            ) from None
        steps.append(Step(model=sm, options=options))
    return Suite(
        name=model.name,
        description=model.description,
        source=str(path),
        sha256=sha256_file(path),
        spec=model.spec,
        settings=model.settings,
        steps=tuple(steps),
        raw=data,
        text=Path(path).read_text(encoding="utf-8", errors="replace"),
    )
