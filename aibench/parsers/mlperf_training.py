"""MLPerf Training result logs (``result_N.txt``): one training run, from MLLOG lines.

Reads the log that a reference or submitter implementation writes through
``mlperf_logging.mllog`` (the ``:::MLLOG {json}`` lines of MLPerf Training v0.7 and
later) and the ``:::MLL <seconds> <key>: {json}`` lines of v0.6. Lines may carry a prefix
(``0: ``, ``[1,0]<stdout>:``) and may be mixed with any other output; see
:mod:`aibench.parsers._mlperf_mllog` for the line rules.

Tested on published results of MLPerf Training v0.6, v0.7, v1.1, v4.0, v4.1, v5.0 and
v5.1 (resnet, maskrcnn, ssd / retinanet, stable_diffusion, llama2_70b_lora, gpt3,
gnn / rgat, gnmt, transformer, llama31_405b, llama31_8b), of MLPerf HPC v1.0 (cosmoflow,
oc20) and on logs written with mlperf-logging 4.1.68 (ruleset 6.0.0, llama31_8b).

Emits (tool ``mlperf-training``):

* Facts (source ``mlperf-training``): ``benchmark`` (submission_benchmark, or the v0.6
  ``benchmark`` key), ``submitter`` (submission_org), ``platform``
  (submission_platform), ``division`` (submission_division), ``status`` (the ``status``
  of run_stop's metadata: ``success`` or ``aborted``; value None with a reason when
  run_stop carries none), ``quality_target`` (only where a ``quality_target`` or
  ``eval_target`` key is logged; none of the tested logs has one: the targets live in
  the compliance rules, not in the log). A submission fact that is not logged is a Fact
  with value None and a reason.
* Facts ``quality_metric`` (the rules' name of the metric: ``log perplexity``,
  ``BLEU``, ``mAP``; value None with a reason where the rules name none) and
  ``quality_direction`` (``higher`` / ``lower`` is better, from mlperf-logging's closed
  compliance configs), dims ``key`` (eval_accuracy / eval_error) and ``metric`` for a
  value with parts, one pair per quality value logged (:func:`aibench.mlperf_rules.quality`).
* Measurements: ``time_to_train`` (ms; run_stop.time_ms - run_start.time_ms, computed
  exactly; dims ``status`` when known), ``eval_accuracy`` (one record per eval_accuracy
  event; dims ``epoch_num``, ``samples_count``, ``metric`` from the event's metadata
  where present; an event whose value is an object of numbers, as maskrcnn's
  ``{"BBOX": 0.377, "SEGM": 0.339}``, gives one record per entry with the entry's name as
  the ``metric`` dim), ``eval_error`` (the same, for the ``eval_error`` events of MLPerf
  HPC logs: cosmoflow logs it, often beside eval_accuracy, and oc20 logs only it). Their
  unit is the benchmark's: ``ratio`` where mlperf-logging bounds the value by 1 (an
  accuracy, mAP, AUC, v0.7+ BLEU), ``%`` for the v0.6 BLEU of gnmt and transformer
  (0-100), ``score`` (converts to nothing) for a loss, a log perplexity, FID, or a scale
  nothing establishes (an unknown benchmark, a v0.6 log of another benchmark). So
  BLEU 25.33 is 0.2533 as a ratio, never 2533 %. The lookup reads the installed
  mlperf-logging's package data (cached; same input, same output); ``global_batch_size`` and
  ``train_samples`` (count; the first one logged; a one-element list such as
  Graphcore's ``[3259535]`` is read as its element).
* ``train_throughput`` (samples/s; dim ``stat``: ``mean`` over the ``tracked_stats``
  events that log a ``throughput``, and the ``last`` one), where the implementation logs
  it (NVIDIA's and AMD's do: resnet, maskrcnn, retinanet, llama2_70b_lora, gnn ...).
* ``log_problems`` (count) and a Fact ``log_problem`` (the first problem, with its
  line) only when some marked lines could not be read or an eval_accuracy value is not a
  finite number (null, true, "True", NaN: logged, not crashed on, never turned into 0).

Decisions (documented because they are judgement calls):

* No ``:::MLLOG`` or ``:::MLL`` line at all: ``ParseError`` (not an MLPerf log).
* Marked lines but no ``run_start``: ``ToolFailure`` "no run_start: the run never started
  its timed section" with what was read in ``partial`` (a log cut during
  initialization, such as a job killed at startup, is an incomplete run, not unreadable
  text).
* ``run_start`` but no ``run_stop``: ``ToolFailure`` "no run_stop: the run did not
  finish", ``partial`` holding the facts and evals read.
* ``run_stop`` with status ``aborted`` is a finished run that did not reach its quality
  target: records are returned (status Fact "aborted"), because olympic scoring
  (:mod:`aibench.mlperf_rules`) may count one such run as the slowest.
* Several ranks may log the same event: the first run_start and the first run_stop after
  it are used; eval events are all kept.
"""

from __future__ import annotations

from decimal import Decimal

from aibench import mlperf_rules
from aibench.errors import ParseError, ToolFailure
from aibench.model import Fact, FrozenDims, Measurement
from aibench.parsers import Parser, Record
from aibench.parsers._mlperf_mllog import Event, Problem, number, read, scalar_dims

TOOL = "mlperf-training"

_SUBMISSION = (
    ("benchmark", ("submission_benchmark", "benchmark")),
    ("submitter", ("submission_org",)),
    ("platform", ("submission_platform",)),
    ("division", ("submission_division",)),
)
_EVAL_DIMS = ("epoch_num", "samples_count", "metric")
# the quality metrics a run logs per evaluation: eval_accuracy (Training, and HPC
# cosmoflow/deepcam), eval_error (HPC: cosmoflow's MAE, oc20's force MAE; oc20 and some
# cosmoflow logs have no eval_accuracy at all)
_QUALITY = ("eval_accuracy", "eval_error")


def _first(events: list[Event], keys: tuple[str, ...]) -> Event | None:
    for k in keys:
        for ev in events:
            if ev.key == k:
                return ev
    return None


def _fact(name: str, value: str | bool | int | float | None, reason: str = "") -> Fact:
    return Fact(source=TOOL, name=name, value=value, reason=reason)


def _number(value: object) -> float | None:
    """``number``, also of a one-element list (Graphcore's ``"train_samples": [3259535]``)."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    return number(value)


def _count(name: str, ev: Event | None, problems: list[Problem]) -> list[Record]:
    if ev is None:
        return []
    v = _number(ev.value)
    if v is None:
        problems.append(Problem(ev.line, f"{ev.key} is not a number: {ev.value!r}"))
        return []
    return [Measurement(tool=TOOL, metric=name, value=v, unit="count")]


def _throughput(events: list[Event]) -> list[Record]:
    """``train_throughput`` (samples/s, dim ``stat`` = mean | last): the ``throughput`` the
    implementation logs in its ``tracked_stats`` events, over the run."""
    values = [
        v
        for ev in events
        if ev.key == "tracked_stats" and isinstance(ev.value, dict)
        for v in [_number(ev.value.get("throughput"))]
        if v is not None
    ]
    if not values:
        return []
    return [
        Measurement(TOOL, "train_throughput", value, "samples/s", FrozenDims({"stat": stat}))
        for stat, value in (("mean", sum(values) / len(values)), ("last", values[-1]))
    ]


def _records(
    events: list[Event], problems: list[Problem]
) -> tuple[list[Record], Event | None, Event | None]:
    facts: list[Record] = []
    for name, keys in _SUBMISSION:
        ev = _first(events, keys)
        if ev is None:
            facts.append(_fact(name, None, f"{keys[0]} is not logged"))
        elif isinstance(ev.value, str | int | float | bool):
            facts.append(_fact(name, ev.value))
        else:
            facts.append(_fact(name, None, f"{ev.key} has no value (line {ev.line})"))

    start = _first(events, ("run_start",))
    stop = None
    if start is not None:
        stop = next((e for e in events if e.key == "run_stop" and e.line > start.line), None)
        if stop is None:
            stop = _first(events, ("run_stop",))
    if stop is not None:
        st = stop.metadata.get("status")
        if isinstance(st, str) and st:
            facts.append(_fact("status", st))
        else:
            facts.append(_fact("status", None, f"run_stop (line {stop.line}) carries no status"))
    target = _first(events, ("quality_target", "eval_target"))
    if target is not None:
        tv = target.value
        if isinstance(tv, str | int | float | bool):
            facts.append(_fact("quality_target", tv))
        else:
            facts.append(_fact("quality_target", None, f"{target.key} is logged without a value"))

    meas: list[Record] = []
    meas += _count("global_batch_size", _first(events, ("global_batch_size",)), problems)
    meas += _count("train_samples", _first(events, ("train_samples",)), problems)
    meas += _throughput(events)
    bench = _first(events, _SUBMISSION[0][1])
    benchmark = bench.value if bench is not None and isinstance(bench.value, str) else ""
    seen: dict[str, mlperf_rules.Quality] = {}
    for ev in events:
        if ev.key in _QUALITY:
            meas += _quality(ev, problems, benchmark, seen)
    return facts + _quality_facts(benchmark, seen) + meas, start, stop


def _quality_facts(benchmark: str, seen: dict[str, mlperf_rules.Quality]) -> list[Record]:
    """``quality_metric`` and ``quality_direction`` of each quality value that was logged."""
    out: list[Record] = []
    for where, q in seen.items():
        key, part = where.split(":", 1)
        dims = FrozenDims({"key": key, **({"metric": part} if part else {})})
        why = f"the MLPerf rules name no quality metric for {benchmark!r}"
        reason = "" if q.name else why
        out.append(Fact(TOOL, "quality_metric", q.name or None, dims=dims, reason=reason))
        if q.direction:
            out.append(Fact(TOOL, "quality_direction", q.direction, None, dims))
        else:
            out.append(
                Fact(
                    TOOL,
                    "quality_direction",
                    None,
                    dims=dims,
                    reason="mlperf-logging's compliance rules give no single direction for "
                    f"{benchmark!r}",
                )
            )
    return out


def _quality(
    ev: Event, problems: list[Problem], benchmark: str, seen: dict[str, mlperf_rules.Quality]
) -> list[Record]:
    """One record per quality value; a dict value (maskrcnn's {"BBOX": .., "SEGM": ..})
    gives one record per entry, its key as the ``metric`` dim. The unit is the
    benchmark's (:func:`aibench.mlperf_rules.quality`): ``ratio`` for a fraction, ``%``
    for v0.6 BLEU, ``score`` for a loss, a log perplexity or an unknown scale."""
    dims = scalar_dims(ev.metadata, _EVAL_DIMS)
    if isinstance(ev.value, dict) and ev.value and "metric" not in dims:
        items = [(str(k), v) for k, v in ev.value.items()]
    else:
        items = [("", ev.value)]
    out: list[Record] = []
    for name, raw in items:
        v = _number(raw)
        if v is None:
            what = f"{ev.key}[{name!r}]" if name else ev.key
            problems.append(Problem(ev.line, f"{what} is not a finite number: {raw!r}"))
            continue
        d = {**dims, "metric": name} if name else dims
        part = str(d.get("metric", ""))
        q = _lookup(benchmark, ev.key, part, ev.form == "MLL")
        if q.source or q.name:
            seen.setdefault(f"{ev.key}:{part}", q)
        out.append(Measurement(tool=TOOL, metric=ev.key, value=v, unit=q.unit, dims=FrozenDims(d)))
    return out


def _lookup(benchmark: str, key: str, part: str, legacy: bool) -> mlperf_rules.Quality:
    if not benchmark:
        return mlperf_rules.Quality("", part, "", mlperf_rules.SCORE, "")
    return mlperf_rules.quality(benchmark, part, key=key, legacy=legacy)


def _problem_records(problems: list[Problem]) -> list[Record]:
    if not problems:
        return []
    first = min(problems, key=lambda p: p.line)
    return [
        Measurement(tool=TOOL, metric="log_problems", value=len(problems), unit="count"),
        _fact("log_problem", f"line {first.line}: {first.reason}"),
    ]


def parse(text: str) -> list[Record]:
    events, problems, marked = read(text)
    if marked == 0:
        raise ParseError(TOOL, "no :::MLLOG or :::MLL lines: not an MLPerf training log")
    records, start, stop = _records(events, problems)
    if start is None:
        raise ToolFailure(
            TOOL,
            "no run_start: the run never started its timed section (log ends in initialization)",
            partial=list[object](records + _problem_records(problems)),
        )
    if stop is None:
        raise ToolFailure(
            TOOL,
            "no run_stop: the run did not finish",
            partial=list[object](records + _problem_records(problems)),
        )
    if start.time_ms is None:
        raise ParseError(TOOL, "run_start has no readable time", line=start.line)
    if stop.time_ms is None:
        raise ParseError(TOOL, "run_stop has no readable time", line=stop.line)
    elapsed: Decimal = stop.time_ms - start.time_ms
    if elapsed < 0:
        raise ParseError(TOOL, "run_stop is earlier than run_start", line=stop.line)
    st = stop.metadata.get("status")
    dims = FrozenDims({"status": st} if isinstance(st, str) and st else {})
    records.append(
        Measurement(tool=TOOL, metric="time_to_train", value=float(elapsed), unit="ms", dims=dims)
    )
    return records + _problem_records(problems)


def detect(text: str) -> bool:
    head = text[:200_000]
    if ":::MLLOG" in head:
        # LoadGen detail logs use the same marker with namespace mlperf::logging
        return '"mlperf::logging"' not in head and (
            '"run_start"' in head or '"submission_benchmark"' in head or '"init_start"' in head
        )
    return ":::MLL " in head and "run_start" in head


PARSER = Parser(
    name="mlperf-training",
    parse=parse,
    description="MLPerf Training result log (:::MLLOG lines, v0.6 :::MLL lines)",
    detect=detect,
)
