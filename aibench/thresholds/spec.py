"""The spec language: checks that judge a run's measurements and facts.

A spec file (YAML, ``schema_version: 1``) is validated against the models below before
anything runs; an unknown key or a bad value is one :class:`~aibench.errors.ConfigError`
naming the file and the key path (``checks[3].warn.min``). Every field is documented
here, in its ``Field(description=...)``; docs/spec.md is the reference built from them.

Nothing in a spec is evaluated as code: selectors match with a closed set of operators
(:data:`MATCH_OPS`), fact checks compare with a closed set (:data:`FACT_OPS`).

Units are checked at load time: a check's ``unit`` must be in :mod:`aibench.units`, and
when the selected (tool, metric) has a known unit (the tool's ``Traits.units``, see
aibench/tools.py) the two must have the same dimension (GB/s against a metric in IOPS is
a ConfigError, never a silent result).
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import Field, field_validator, model_validator

from aibench import units
from aibench.config import Strict, parse_yaml, resolve, validate
from aibench.errors import ConfigError

Scalar = str | int | float | bool

MATCH_OPS = ("eq", "ne", "in", "not_in", "ge", "le", "gt", "lt")
# The operators of a fact check and how each reads in an "expected" text: one table, from
# which the schema's Literal and the engine's wording are both taken.
FACT_SYMBOLS: dict[str, str] = {
    "eq": "==",
    "ne": "!=",
    "in": "in",
    "ge": ">=",
    "le": "<=",
    "gt": ">",
    "lt": "<",
    "version_ge": ">=",
    "version_le": "<=",
    "present": "present",
    "absent": "absent",
}
FACT_OPS = tuple(FACT_SYMBOLS)
FactOp = Literal[
    "eq", "ne", "in", "ge", "le", "gt", "lt", "version_ge", "version_le", "present", "absent"
]
AGGREGATES = ("median", "mean", "min", "max", "sum", "p10", "p90")
SCOPES = ("node", "pair", "rail", "fleet")


class MatchOp(Strict):
    """One operator applied to a dimension's value (exactly one key)."""

    eq: Scalar | None = Field(None, description="equal to this value")
    ne: Scalar | None = Field(None, description="not equal to this value")
    in_: list[Scalar] | None = Field(None, alias="in", description="one of these values")
    not_in: list[Scalar] | None = Field(None, description="none of these values")
    ge: float | None = Field(None, description="a number >= this")
    le: float | None = Field(None, description="a number <= this")
    gt: float | None = Field(None, description="a number > this")
    lt: float | None = Field(None, description="a number < this")

    @model_validator(mode="after")
    def _one(self) -> MatchOp:
        if len(self.model_fields_set) != 1:
            raise ValueError(f"give exactly one operator of: {', '.join(MATCH_OPS)}")
        return self

    def matches(self, value: Scalar | None) -> bool:
        (name,) = self.model_fields_set
        arg = getattr(self, name)
        if value is None:
            return name in ("ne", "not_in")
        if name == "eq":
            return bool(value == arg)
        if name == "ne":
            return bool(value != arg)
        if name == "in_":
            return bool(value in arg)
        if name == "not_in":
            return bool(value not in arg)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        x, bound = float(value), float(arg)
        return {"ge": x >= bound, "le": x <= bound, "gt": x > bound, "lt": x < bound}[name]


DimMatch = Scalar | list[Scalar] | MatchOp

assert get_args(FactOp) == FACT_OPS, "FactOp and FACT_SYMBOLS name the same operators"


def dim_matches(rule: DimMatch, value: Scalar | None) -> bool:
    """A scalar matches itself, a list any of its members, a MatchOp by its operator."""
    if isinstance(rule, MatchOp):
        return rule.matches(value)
    if isinstance(rule, list):
        return value is not None and any(_same(value, r) for r in rule)
    return value is not None and _same(value, rule)


def _same(a: Scalar, b: Scalar) -> bool:
    # 99 and 99.0 are the same percentile; "1M" and "1M" the same block size; True is not 1.
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return a == b


class Select(Strict):
    """Which measurements a check judges. Every given field must match."""

    tool: str = Field(description="the tool that produced them: fio, iperf3, nccl-tests ...")
    metric: str = Field(description="the metric name from the tool's vocabulary (bw, busbw)")
    step: str | list[str] | None = Field(
        None, description="suite step name(s); default: every step of the tool"
    )
    dims: dict[str, DimMatch] = Field(
        default_factory=dict,
        description="dimension -> value, list of values, or {operator: value}",
    )
    largest: str | None = Field(
        None,
        description="keep only the measurements with the largest value of this numeric "
        "dimension (e.g. size_bytes: judge the largest message size that was run)",
    )
    nodes: list[str] | None = Field(None, description="only measurements of these nodes")
    labels: dict[str, str] | None = Field(
        None, description="only measurements whose nodes all carry these inventory labels"
    )
    node_count: DimMatch | None = Field(
        None,
        description="how many nodes the measurement spans: 1 for a single-node NCCL run, "
        "{ge: 2} for multi-node",
    )


class Waiver(Strict):
    """An accepted deviation: the check is WAIVED until it expires; expired, it fails."""

    reason: str = Field(min_length=3, description="why the deviation is accepted")
    owner: str = Field(min_length=1, description="who accepted it (name or team)")
    expires: _dt.date = Field(description="last day the waiver holds (YYYY-MM-DD)")
    subjects: list[str] | None = Field(
        None, description="only these nodes (or 'a+b' pairs); default: every subject"
    )


class StepWaiver(Waiver):
    """A step's failure accepted (its ``step:`` verdict WAIVED): a node out of the
    contract, a tool the cluster is not asked to have."""

    step: str = Field(min_length=1, description="the suite step whose failure is waived")


class Tier(Strict):
    """A pair of bounds, in the check's unit, or tolerances around its reference."""

    min: float | None = Field(None, description="lowest acceptable value, in `unit`")
    max: float | None = Field(None, description="highest acceptable value, in `unit`")
    lower: Annotated[float, Field(le=0, ge=-1)] | None = Field(
        None, description="with `reference`: lowest as a fraction below it (-0.1 = 10% below)"
    )
    upper: Annotated[float, Field(ge=0)] | None = Field(
        None, description="with `reference`: highest as a fraction above it (0.1 = 10% above)"
    )


class Outliers(Strict):
    """Fleet-relative outliers: subjects that pass but sit far below the fleet."""

    mads: Annotated[float, Field(gt=0)] = Field(
        3.5, description="flag a subject more than this many scaled MADs below the median"
    )
    min_drop: Annotated[float, Field(ge=0, lt=1)] = Field(
        0.05, description="... and at least this fraction below the median (noise floor)"
    )
    min_subjects: Annotated[int, Field(ge=3)] = Field(
        5, description="fewest subjects for a fleet median to mean anything"
    )


class FactSelect(Strict):
    """Which node fact a fact check reads."""

    source: str = Field(
        description="who observed it: nvidia-smi, sysctl, ibstat ..., or 'environment' for "
        "the facts recorded with every run (kernel, cpu_threads, memory_gib, tools.<tool>)"
    )
    name: str = Field(description="the fact's name: driver_version, vm.swappiness ...")
    dims: dict[str, DimMatch] = Field(default_factory=dict, description="e.g. {gpu: 0}")
    labels: dict[str, str] | None = Field(
        None,
        description="only nodes with these inventory labels (role: training); with no such "
        "node the check does not apply, or is MISSING when no node uses the label key",
    )


class Check(Strict):
    """One rule. A metric check has `select`; a fact check has `fact`."""

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$", description="unique id")
    description: str = Field("", description="what the check means, shown in reports")
    source: str = Field("", description="where the number comes from (datasheet, guide)")
    select: Select | None = Field(None, description="the measurements (metric check)")
    fact: FactSelect | None = Field(None, description="the node fact (fact check)")
    scope: Literal["node", "pair", "rail", "fleet"] = Field(
        "node",
        description="one verdict per node, per pair (the measurement's nodes as a whole), "
        "per rail (node + `rail_dims`), or one for the whole fleet",
    )
    rail_dims: list[str] = Field(
        default_factory=lambda: ["device"], description="scope rail: the dims naming a rail"
    )
    aggregate: Literal["median", "mean", "min", "max", "sum", "p10", "p90"] = Field(
        "median", description="how repeats of one series are summarized"
    )
    combine: Literal["median", "mean", "min", "max", "sum", "p10", "p90"] | None = Field(
        None,
        description="how the series within one subject are combined (default: `aggregate`)",
    )
    unit: str | None = Field(None, description="unit of the bounds and of `observed`")
    min: float | None = Field(None, description="fail below this (in `unit`)")
    max: float | None = Field(None, description="fail above this (in `unit`)")
    reference: float | None = Field(None, description="the expected value (in `unit`)")
    lower: Annotated[float, Field(le=0, ge=-1)] | None = Field(
        None, description="fail below reference × (1 + lower); e.g. -0.1"
    )
    upper: Annotated[float, Field(ge=0)] | None = Field(
        None, description="fail above reference × (1 + upper)"
    )
    warn: Tier | None = Field(None, description="WARN outside these (tighter) bounds")
    max_cv: Annotated[float, Field(gt=0)] | None = Field(
        None, description="WARN when the repeats' coefficient of variation exceeds this"
    )
    outliers: Outliers | None = Field(None, description="flag fleet-relative outliers (WARN)")
    require: Literal["every_node", "every_pair", "every_rail"] | None = Field(
        None, description="coverage: FAIL listing the nodes/pairs/rails with no measurement"
    )
    op: FactOp | None = Field(None, description="fact check: how the fact is compared with `value`")
    value: Scalar | list[Scalar] | None = Field(None, description="fact check: the operand")
    allow_absent: bool = Field(False, description="fact check: an absent fact passes")
    severity: Literal["fail", "warn"] = Field(
        "fail",
        description="fact check: a fact that does not hold (or is absent) is FAIL, or WARN "
        "(a warning that does not fail the run, e.g. a clock slowdown the source only logs)",
    )
    waiver: Waiver | None = Field(None, description="an accepted deviation")
    requires: Literal["shared_filesystem", "object_store", "cache", "preflight"] | None = Field(
        None,
        description="judged only when the run's inventory declares this storage "
        "(shared_filesystems, s3_endpoints, redis_endpoints), or, with preflight, when the "
        "run's suite has a preflight step; else not applicable, said in a note (the "
        "acceptance suite plans its storage steps the same way)",
    )

    @field_validator("unit")
    @classmethod
    def _unit(cls, v: str | None) -> str | None:
        if v is None:
            return v
        try:
            return units.canonical(v)
        except units.UnitError:
            known = ", ".join(units.known_units())
            raise ValueError(f"unknown unit {v!r}; known: {known}") from None

    @model_validator(mode="after")
    def _shape(self) -> Check:
        if (self.select is None) == (self.fact is None):
            raise ValueError("give exactly one of `select` (metric check) or `fact`")
        if self.fact is not None:
            return self._fact_shape()
        return self._metric_shape()

    def _fact_shape(self) -> Check:
        bad = [k for k in ("min", "max", "reference", "warn", "unit") if k in self.model_fields_set]
        if bad:
            raise ValueError(f"a fact check takes op/value, not {', '.join(bad)}")
        if self.op is None:
            raise ValueError("a fact check needs `op`")
        if self.op not in ("present", "absent") and self.value is None:
            raise ValueError(f"op {self.op} needs `value`")
        if self.op == "in" and not isinstance(self.value, list):
            raise ValueError("op in needs a list `value`")
        if self.op in ("version_ge", "version_le") and _version(self.value) is None:
            raise ValueError(f"op {self.op} needs a dotted numeric `value` (got {self.value!r})")
        return self

    def _metric_shape(self) -> Check:
        assert self.select is not None
        for k in ("op", "value", "severity", "allow_absent"):
            if k in self.model_fields_set:
                raise ValueError(f"`{k}` belongs to fact checks (metric checks use `warn`)")
        if self.unit is None:
            raise ValueError("a metric check needs `unit` (the unit of its bounds)")
        from aibench.tools import vocabulary

        known = vocabulary().get((self.select.tool, self.select.metric))
        if known and units.dimension(known) != units.dimension(self.unit):
            raise ValueError(
                f"unit {self.unit} ({units.dimension(self.unit)}) cannot judge "
                f"{self.select.tool} {self.select.metric}, recorded in {known} "
                f"({units.dimension(known)})"
            )
        if (self.lower is not None or self.upper is not None) and self.reference is None:
            raise ValueError("`lower`/`upper` are fractions of `reference`, which is missing")
        has_bound = any(
            x is not None for x in (self.min, self.max, self.lower, self.upper, self.warn)
        )
        if not has_bound:
            raise ValueError("give bounds: min/max, or reference with lower/upper, or warn")
        lo, hi = self.fail_bounds()
        if lo is not None and hi is not None and lo > hi:
            raise ValueError(f"the lower bound {lo:g} is above the upper bound {hi:g}")
        if self.warn is not None:
            if (self.warn.lower is not None or self.warn.upper is not None) and (
                self.reference is None
            ):
                raise ValueError("warn.lower/upper need `reference`")
            wlo, whi = self.warn_bounds()
            if lo is not None and wlo is not None and wlo < lo:
                raise ValueError("warn bounds must be inside the fail bounds (warn.min < min)")
            if hi is not None and whi is not None and whi > hi:
                raise ValueError("warn bounds must be inside the fail bounds (warn.max > max)")
        return self

    def fail_bounds(self) -> tuple[float | None, float | None]:
        return _bounds(self.min, self.max, self.reference, self.lower, self.upper)

    def warn_bounds(self) -> tuple[float | None, float | None]:
        if self.warn is None:
            return (None, None)
        w = self.warn
        return _bounds(w.min, w.max, self.reference, w.lower, w.upper)


def _bounds(
    lo: float | None,
    hi: float | None,
    ref: float | None,
    lower: float | None,
    upper: float | None,
) -> tuple[float | None, float | None]:
    if ref is not None:
        if lower is not None:
            lo = ref * (1 + lower) if lo is None else max(lo, ref * (1 + lower))
        if upper is not None:
            hi = ref * (1 + upper) if hi is None else min(hi, ref * (1 + upper))
    return lo, hi


def _version(value: object) -> tuple[int, ...] | None:
    """``"550.54.15"`` -> (550, 54, 15); None when not dotted numeric."""
    if isinstance(value, bool) or value is None:
        return None
    text = str(value).strip()
    parts = text.split(".")
    if not text or not all(p.isdigit() for p in parts):
        return None
    return tuple(int(p) for p in parts)


class NIC(Strict):
    """A network port of the node description used for derived expectations."""

    name: str = Field(description="rail or port name, e.g. mlx5_0 or eth0")
    rate_gbps: Annotated[float, Field(gt=0)] = Field(description="line rate in Gbit/s")
    kind: Literal["ib", "roce", "ethernet"] = Field("ib", description="link type")
    role: Literal["compute", "storage", "management"] = Field("compute", description="fabric")
    count: Annotated[int, Field(ge=1)] = Field(1, description="identical ports of this kind")


class Drive(Strict):
    """A local drive of the node description."""

    kind: Literal["nvme", "ssd", "hdd"] = Field("nvme", description="drive type")
    read_mbps: Annotated[float, Field(gt=0)] = Field(description="datasheet seq. read MB/s")
    write_mbps: Annotated[float, Field(gt=0)] | None = Field(None, description="seq. write MB/s")
    count: Annotated[int, Field(ge=1)] = Field(1, description="identical drives")
    source: str = Field("", description="where the datasheet number comes from")


class Hardware(Strict):
    """A node class, for derived expectations (aibench spec explain)."""

    gpu: str | None = Field(None, description="accelerator model: H100-SXM, H200, B200, MI300X")
    gpus: Annotated[int, Field(ge=0)] = Field(0, description="accelerators per node")
    nvlink: Literal["nvlink3", "nvlink4", "nvlink5", "infinity-fabric"] | None = Field(
        None, description="intra-node fabric: nvlink3, nvlink4, nvlink5, infinity-fabric"
    )
    nics: list[NIC] = Field(default_factory=list, description="network ports")
    drives: list[Drive] = Field(default_factory=list, description="local drives")


TELEMETRY_CHECKS = (
    "soak.temperature.max",
    "soak.temperature.p99",
    "soak.inlet.band",
    "soak.clock.drop",
    "soak.throttle",
    "soak.stress.rate",
    "soak.power.band",
    "soak.fan.floor",
    "soak.bmc.events",
    "soak.ecc",
    "soak.gpu_burn",
)


class TelemetryRow(Strict):
    """One check of the series sampled beside a run or a soak (aibench.soak.judge)."""

    id: Literal[TELEMETRY_CHECKS] = Field(  # type: ignore[valid-type]
        description="the series check: " + ", ".join(TELEMETRY_CHECKS)
    )
    source: str = Field("", description="where its limits come from (a guide section)")
    limits: dict[str, Any] = Field(
        default_factory=dict,
        description="the check's limits (temp_max, throttle_s, clock_drop_pct, baseline_s ...)",
    )
    nodes: Literal["all", "gpu"] = Field(
        "all",
        description="judged on every node (all) or only on nodes whose inventory declares "
        "GPUs (gpu); a node judged with no series for it is MISSING",
    )

    @field_validator("limits")
    @classmethod
    def _known(cls, v: dict[str, Any]) -> dict[str, Any]:
        from aibench.soak.judge import limit_names

        unknown = sorted(set(v) - limit_names())
        if unknown:
            known = ", ".join(sorted(limit_names()))
            raise ValueError(f"unknown limit {unknown[0]!r}; known: {known}")
        return v


class SpecModel(Strict):
    """A spec file."""

    schema_version: Literal[1] = Field(description="always 1")
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$", description="spec name")
    description: str = Field("", description="what the spec accepts, in a sentence or two")
    source: str = Field("", description="where its numbers come from")
    hardware: Hardware | None = Field(None, description="the node class it is written for")
    checks: list[Check] = Field(
        default_factory=list, description="the rules (at least one, or telemetry rows)"
    )
    telemetry: list[TelemetryRow] = Field(
        default_factory=list,
        description="checks of the series sampled beside the run (aibench soak, "
        "aibench run --telemetry)",
    )
    step_waivers: list[StepWaiver] = Field(
        default_factory=list,
        description="failed steps accepted explicitly (each turns the step's ERROR "
        "verdict into WAIVED until it expires)",
    )

    @model_validator(mode="after")
    def _unique(self) -> SpecModel:
        if not self.checks and not self.telemetry:
            raise ValueError("checks: give at least one check (or telemetry rows)")
        seen: set[str] = set()
        for cid in [*(c.id for c in self.checks), *(r.id for r in self.telemetry)]:
            if cid in seen:
                raise ValueError(f"duplicate check id {cid!r}")
            seen.add(cid)
        return self


@dataclass(frozen=True)
class Spec:
    """A loaded, validated spec and where it came from."""

    name: str
    source: str  # the file path
    sha256: str
    description: str
    checks: tuple[Check, ...]
    model: SpecModel
    text: str = ""  # the file exactly as loaded (kept in the run's record: aibench.judge)

    @property
    def hardware(self) -> Hardware | None:
        return self.model.hardware

    @property
    def telemetry(self) -> tuple[TelemetryRow, ...]:
        return tuple(self.model.telemetry)

    @property
    def step_waivers(self) -> tuple[StepWaiver, ...]:
        return tuple(self.model.step_waivers)


def load_spec(name_or_path: str | Path) -> Spec:
    """Load a built-in profile (``h100-ndr``) or a user's spec file, validated."""
    path, _ = resolve("profiles", str(name_or_path))
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(str(name_or_path), "", f"cannot read: {exc.__class__.__name__}") from None
    return spec_from_bytes(data, str(name_or_path), source=str(path))


def spec_from_bytes(data: bytes, shown: str, *, source: str = "") -> Spec:
    """A spec from the bytes of its file (``shown`` names it in errors): what
    :func:`load_spec` reads, and what a run's record keeps."""
    import hashlib

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(shown, "", "not UTF-8 text") from None
    raw: Any = parse_yaml(text, shown)
    if isinstance(raw, dict) and isinstance(raw.get("checks"), list):
        _check_indexed_errors(raw, shown)
    model = validate(SpecModel, raw, shown)
    return Spec(
        name=model.name,
        source=source or shown,
        sha256=hashlib.sha256(data).hexdigest(),
        description=model.description,
        checks=tuple(model.checks),
        model=model,
        text=text,
    )


def _check_indexed_errors(raw: dict[str, Any], file: str) -> None:
    """Validate checks one by one so that a check-level problem names ``checks[i]``."""
    for i, item in enumerate(raw["checks"]):
        if isinstance(item, dict):
            validate(Check, item, file, prefix=f"checks[{i}]")
