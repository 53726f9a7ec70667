"""The names a spec's metric checks select, checked before anything runs.

A spec names a tool, a metric of that tool and, optionally, the suite steps it reads
(``select: {tool: fio, metric: bw, step: fio-seq-read}``). Loading a spec checks its shape
and units only, so a misspelt name would select nothing and turn MISSING after the whole
run. :func:`check_spec_names` reads each metric check's names against what aibench knows:

* the tool must be one aibench has (a runner or a parser);
* the metric must be in the tool's vocabulary: the ``units`` its ``Traits`` declare
  (aibench/tools.py). A tool that declares no vocabulary is not checked for its metrics:
  its metric names are not known before its output is parsed, and guessing them would
  refuse good specs;
* with a suite: a step a check names must run the check's tool, and a step name the suite
  lacks must not be a misspelling of one of its steps of that tool (:data:`TYPO`). A step
  the suite does not have at all is no error: one spec serves many suites (the default
  profile names the built-in suites' steps; a spec for a whole cluster names NCCL and
  perftest steps that a storage suite does not run), and such a check is MISSING after the
  run, as it should be.

An unknown name is one :class:`~aibench.errors.ConfigError` naming the spec file, the
check's key and the nearest valid name. Fact checks (``fact:``) are not read here: their
sources and names come from the nodes.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

from aibench.errors import ConfigError
from aibench.thresholds.spec import Check, Spec

# How alike (difflib's ratio) a step name the suite lacks must be to one of its steps to
# be read as a misspelling of it: fio-seq-raed for fio-seq-read (0.92) is; shared-write
# beside shared-read (0.78), a step the spec wants and the suite does not run, is not.
TYPO = 0.85


def check_spec_names(spec: Spec, steps: Iterable[tuple[str, str]] | None = None) -> None:
    """Raise ConfigError for the first metric check of ``spec`` that names an unknown tool
    or metric, or (given the suite's ``steps`` as (name, tool) pairs) a step the suite does
    not have for that tool."""
    from aibench.tools import all_tools

    tools = all_tools()
    step_tool = dict(steps) if steps is not None else None
    for i, check in enumerate(spec.checks):
        if check.select is None:
            continue
        key = f"checks[{i}].select"
        _known(spec, f"{key}.tool", check.select.tool, tools, "tool")
        _check_metric(spec, key, check)
        if step_tool is not None:
            _check_steps(spec, key, check, step_tool)


def _check_metric(spec: Spec, key: str, check: Check) -> None:
    from aibench.tools import traits

    assert check.select is not None
    vocabulary = sorted(traits(check.select.tool).units)
    if vocabulary:  # a tool with no declared vocabulary: its metrics are not checked
        _known(
            spec, f"{key}.metric", check.select.metric, vocabulary, f"metric of {check.select.tool}"
        )


def _check_steps(spec: Spec, key: str, check: Check, step_tool: Mapping[str, str]) -> None:
    assert check.select is not None
    tool, given = check.select.tool, check.select.step
    own = sorted(name for name, t in step_tool.items() if t == tool)
    for name in [] if given is None else [given] if isinstance(given, str) else given:
        if name in step_tool and step_tool[name] != tool:
            others = ", ".join(own) or "none"
            raise ConfigError(
                spec.source,
                f"{key}.step",
                f"step {name!r} runs {step_tool[name]}, not {tool}",
                hint=f"{tool} steps of the suite: {others}",
            )
        near = difflib.get_close_matches(name, own, n=1, cutoff=TYPO)
        if name not in step_tool and near:
            raise ConfigError(
                spec.source,
                f"{key}.step",
                f"no {tool} step of the suite named {name!r}",
                hint=f"did you mean {near[0]!r}?",
            )


def _known(spec: Spec, key: str, name: str, valid: list[str], what: str) -> None:
    if name in valid:
        return
    near = difflib.get_close_matches(name, valid, n=1)
    hint = f"did you mean {near[0]!r}?" if near else f"valid: {', '.join(valid)}"
    raise ConfigError(spec.source, key, f"no {what} named {name!r}", hint=hint)
