"""What the installed mlperf-logging package knows about MLPerf Training benchmarks.

Read, never copied: the rulesets and benchmarks come from the package that also runs the
compliance checker, so aibench accepts exactly the rulesets its checker can judge.

* :func:`rulesets`: the training rulesets with a compliance folder
  (``mlperf_logging/compliance_checker/training_X.Y.Z``; ``_warn`` variants excluded);
* :func:`benchmarks`: the benchmarks of a ruleset
  (``mlperf_logging.benchmark_meta.get_allowed_benchmarks``);
* :func:`result_count`: the result files a benchmark needs
  (``benchmark_meta.get_result_file_counts``);
* :func:`bounds`: the quality bounds of a benchmark's ``eval_accuracy`` or ``eval_error`` key
  in the closed compliance config of each ruleset (``closed_<benchmark>.yaml``, training
  and HPC): which direction is better, the target, and whether the value is a fraction.

The compliance configs state the quality rule as a Python expression for the checker's
``eval``, e.g. ``"v['value'] >= 0.72 and v['value'] < 1.0"``. Here it is only *read*:
``ast.parse`` and a walk over the comparisons of ``v['value']`` (or
``v['value']['FID']``) with a number or an ``s['name']`` that the config's ``BEGIN``
block sets to a literal. Nothing in a config is evaluated.

How a bound is classified (the configs' own conventions, checked on every closed config
of mlperf-logging 4.1.68):

* an upper bound of exactly 1 (``< 1``, ``<= 1.0``) is the ceiling of a fraction: the value
  is a fraction (unit ``ratio``);
* a lower bound that sits below a non-strict upper bound and is strict (``> 0.0`` in
  ``v['value'] <= 3.3 and v['value'] > 0.0``) or zero (``0.0 <= FID``) is a sanity floor;
* what remains is the target: a lower bound means higher is better, an upper bound
  lower is better.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

# aggregated_eval_accuracy: the checker's merge of stable_diffusion's FID and CLIP events
QUALITY_KEYS = ("eval_accuracy", "eval_error", "aggregated_eval_accuracy")


class MetaError(ValueError):
    """An unknown ruleset or benchmark; the message lists the known ones."""


def _short(ruleset: str) -> str:
    v = ruleset.strip().lstrip("v")
    parts = v.split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 else v


@functools.cache
def _compliance_dirs() -> dict[str, tuple[str, str]]:
    """'training_6.1.0' style folder -> (usage, 'X.Y.Z') for every non-warn folder."""
    root = resources.files("mlperf_logging.compliance_checker")
    out: dict[str, tuple[str, str]] = {}
    for entry in root.iterdir():
        name = entry.name
        for usage in ("training", "hpc"):
            if name.startswith(f"{usage}_") and entry.is_dir() and not name.endswith("_warn"):
                out[name] = (usage, name.removeprefix(f"{usage}_"))
    return out


def rulesets(usage: str = "training") -> list[str]:
    """The rulesets (``X.Y.Z``) the installed checker has compliance rules for, oldest first."""
    found = [v for u, v in _compliance_dirs().values() if u == usage]
    return sorted(found, key=lambda v: tuple(int(p) for p in v.split(".")))


def full_ruleset(ruleset: str, usage: str = "training") -> str:
    """``6.0``, ``v6.0`` or ``6.0.0`` -> ``6.0.0``; MetaError when the checker lacks it."""
    short = _short(ruleset)
    for v in rulesets(usage):
        if _short(v) == short:
            return v
    raise MetaError(
        f"unknown MLPerf Training ruleset {ruleset!r}; the installed mlperf-logging "
        f"has: {', '.join(rulesets(usage))}"
    )


def benchmarks(ruleset: str, usage: str = "training") -> list[str]:
    """The benchmarks of ``ruleset`` (mlperf-logging's benchmark_meta)."""
    from mlperf_logging import benchmark_meta

    full = full_ruleset(ruleset, usage)
    try:
        return list(dict.fromkeys(benchmark_meta.get_allowed_benchmarks(usage, full)))
    except ValueError as exc:
        raise MetaError(f"MLPerf {usage} ruleset {ruleset!r}: {exc}") from None


def result_count(benchmark: str, ruleset: str, usage: str = "training") -> int:
    """Result files (runs) ``benchmark`` needs under ``ruleset``, from benchmark_meta."""
    from mlperf_logging import benchmark_meta

    known = benchmarks(ruleset, usage)
    if benchmark not in known:
        raise MetaError(
            f"benchmark {benchmark!r} is not in MLPerf Training {_short(ruleset)}; "
            f"known: {', '.join(sorted(known))}"
        )
    return int(benchmark_meta.get_result_file_counts(usage)[benchmark])


# ---------------------------------------------------------------- quality bounds


@dataclass(frozen=True)
class Bound:
    """One quality value's rule in one compliance config."""

    key: str  # the logged key: eval_accuracy or eval_error
    part: str  # "" for a plain value, else the key of a dict value ("FID", "BBOX")
    direction: str  # "higher" | "lower" | "" (no target found)
    targets: tuple[float, ...]  # several when the config picks one by a condition
    fraction: bool  # the config bounds the value by 1
    config: str  # e.g. "training_6.0.0/closed_llama31_8b.yaml"


def _value_part(node: ast.expr) -> str | None:
    """ "" for ``v['value']``, "FID" for ``v['value']['FID']``, None for anything else."""
    if not isinstance(node, ast.Subscript):
        return None
    sl = node.slice
    key = sl.value if isinstance(sl, ast.Constant) else None
    inner = node.value
    if isinstance(inner, ast.Name) and inner.id == "v" and key == "value":
        return ""
    if isinstance(inner, ast.Subscript) and isinstance(key, str):
        return key if _value_part(inner) == "" else None
    return None


def _number(node: ast.expr, state: dict[str, Any]) -> float | None:
    v = node.value if isinstance(node, ast.Constant) else None
    if isinstance(v, int | float) and not isinstance(v, bool):
        return float(v)
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        sl = node.slice
        if node.value.id == "s" and isinstance(sl, ast.Constant) and isinstance(sl.value, str):
            got = state.get(sl.value)
            if isinstance(got, int | float) and not isinstance(got, bool):
                return float(got)
    return None


# comparison as (value OP number) -> (is_lower_bound, strict)
_FLIP = {ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Gt: ast.Lt, ast.GtE: ast.LtE}


def comparisons(expr: str, state: dict[str, Any]) -> list[tuple[str, str, float]]:
    """(part, op, number) for each ``value OP number`` in ``expr``; op one of < <= > >=."""
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError:
        return []  # a statement, not an expression: it states no bound
    out: list[tuple[str, str, float]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for a, op, b in zip(operands, node.ops, operands[1:], strict=False):
            kind: type[ast.cmpop] = type(op)
            if kind not in _FLIP:
                continue
            part, num = _value_part(a), _number(b, state)
            if part is None or num is None:
                part, num = _value_part(b), _number(a, state)
                kind = _FLIP[kind]
            if part is None or num is None:
                continue
            sym = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}[kind]
            out.append((part, sym, num))
    return out


def _state(config: list[Any]) -> dict[str, Any]:
    """The literal values a config's BEGIN code puts into ``s`` (``s.update({...})``)."""
    out: dict[str, Any] = {}
    for item in config:
        code = item.get("BEGIN", {}).get("CODE") if isinstance(item, dict) else None
        if not isinstance(code, str):
            continue
        try:
            tree = ast.parse(code.strip())
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "update"
                and node.args
                and isinstance(node.args[0], ast.Dict)
            ):
                try:
                    got = ast.literal_eval(node.args[0])
                except ValueError:
                    continue  # a dict with non-literal values: nothing read from it
                if isinstance(got, dict):
                    out.update({str(k): v for k, v in got.items()})
    return out


def classify(
    target_cmps: list[tuple[str, str, float]], check_cmps: list[tuple[str, str, float]]
) -> dict[str, tuple[str, tuple[float, ...], bool]]:
    """part -> (direction, targets, fraction) from the comparisons of one config."""
    parts = dict.fromkeys(p for p, _, _ in target_cmps + check_cmps)
    out: dict[str, tuple[str, tuple[float, ...], bool]] = {}
    for part in parts:
        mine = [(op, n) for p, op, n in target_cmps if p == part]
        every = mine + [(op, n) for p, op, n in check_cmps if p == part]
        fraction = any(op in ("<", "<=") and n == 1.0 for op, n in every)
        uppers = [(op, n) for op, n in mine if op in ("<", "<=") and n != 1.0]
        has_target_upper = any(op == "<=" for op, _ in uppers)
        lowers = [
            (op, n)
            for op, n in mine
            if op in (">", ">=") and n != 0.0 and not (op == ">" and has_target_upper)
        ]
        if lowers and not uppers:
            out[part] = ("higher", tuple(dict.fromkeys(n for _, n in lowers)), fraction)
        elif uppers and not lowers:
            out[part] = ("lower", tuple(dict.fromkeys(n for _, n in uppers)), fraction)
        else:
            out[part] = ("", (), fraction)
    return out


@functools.cache
def _config_bounds(folder: str, benchmark: str) -> tuple[Bound, ...]:
    root = resources.files("mlperf_logging.compliance_checker") / folder
    f = root / f"closed_{benchmark}.yaml"
    if not f.is_file():
        return ()
    config = yaml.safe_load(f.read_text(encoding="utf-8")) or []
    state = _state(config)
    found: list[Bound] = []
    for item in config:
        key = item.get("KEY") if isinstance(item, dict) else None
        if not isinstance(key, dict) or key.get("NAME") not in QUALITY_KEYS:
            continue
        logged = str(key["NAME"]).removeprefix("aggregated_")
        target = key.get("ATLEAST_ONE_CHECK")
        if not isinstance(target, str):
            continue
        checks = key.get("CHECK") or []
        checks = [checks] if isinstance(checks, str) else checks
        check_cmps = [c for e in checks if isinstance(e, str) for c in comparisons(e, state)]
        for part, (direction, targets, fraction) in classify(
            comparisons(target, state), check_cmps
        ).items():
            found.append(Bound(logged, part, direction, targets, fraction, f"{folder}/{f.name}"))
    return tuple(found)


def bounds(benchmark: str, ruleset: str | None = None) -> tuple[Bound, ...]:
    """The quality bounds of ``benchmark`` in ``ruleset``, or in every ruleset that has it.

    With no ruleset: one Bound per config (training and HPC), newest first, so that a
    caller can see whether the rulesets agree.
    """
    dirs = _compliance_dirs()
    if ruleset is not None:
        folder = f"training_{full_ruleset(ruleset)}"
        return _config_bounds(folder, benchmark)
    order = sorted(dirs, key=lambda d: tuple(int(p) for p in dirs[d][1].split(".")), reverse=True)
    return tuple(b for d in order for b in _config_bounds(d, benchmark))
