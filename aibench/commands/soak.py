"""``aibench soak``: stress every node at once for hours, sample GPUs, hosts and BMCs every
few seconds, judge the series, write run.json and the reports.

The soak runs stress-ng on every node of the inventory in chunks (:mod:`aibench.soak.engine`),
gpu-burn beside it on the nodes whose inventory declares GPUs (``--no-gpu-burn`` turns it
off; those nodes' ``soak.gpu_burn`` is then MISSING), with the telemetry sampler beside
both, checkpointing after every chunk; ``--resume RUN_DIR`` continues an interrupted soak
(Ctrl-C keeps what was measured, exit 130); a new ``--duration`` given with it replaces the
soak's, every other setting is the soak's own. ``--dry-run`` prints the plan (every node's
commands, the chunks, the sampler) and starts nothing.

The run is assembled and judged like any other (:mod:`aibench.pipeline`,
:func:`aibench.judge.judge_run`): the suite is the built-in ``soak`` suite, the spec the
built-in ``soak`` profile (or ``--spec``), whose ``telemetry`` rows judge the series; the
judgement is recorded in run.json and ``aibench check RUN_DIR`` re-judges it. BMC
passwords are named in the inventory (``password_env`` / ``password_file``) and never
written anywhere.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from aibench.commands import Command
from aibench.errors import EXIT_OK, UserError

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|min|h|d)?$")
_FACTOR = {"s": 1, None: 1, "m": 60, "min": 60, "h": 3600, "d": 86400}
PARAMS = "soak-params.json"
# The soak's settings and their defaults; a new soak records them in soak-params.json.
DEFAULTS: dict[str, Any] = {
    "interval": 2.0,
    "chunk": 60.0,
    "cpu": 0,
    "cpu_load": None,
    "vm": 1,
    "vm_bytes": "10%",
    "gpu_burn": True,
}


def parse_duration(text: str) -> float:
    """``90``, ``90s``, ``2m``, ``4h``, ``1d`` -> seconds."""
    m = _DURATION.match(text.strip())
    if not m or float(m.group(1)) <= 0:
        raise UserError(f"--duration {text!r}: give seconds or a number with s, m, h or d (4h)")
    return float(m.group(1)) * _FACTOR[m.group(2)]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--inventory", help="inventory file (default: this machine)")
    p.add_argument("--nodes", metavar="HOSTLIST", help="only these nodes, e.g. gpu[01-04]")
    p.add_argument("--duration", help="how long to stress: 90s, 30m, 4h (default 4h)")
    p.add_argument("--interval", type=float, help="seconds between samples (default 2)")
    p.add_argument(
        "--chunk", type=float, help="seconds per stress-ng run; its rate is one sample (default 60)"
    )
    p.add_argument("--cpu", type=int, help="stress-ng CPU workers per node (0: all CPUs)")
    p.add_argument("--cpu-load", type=int, help="stress-ng --cpu-load percent")
    p.add_argument("--vm", type=int, help="stress-ng memory workers per node (default 1)")
    p.add_argument("--vm-bytes", help="memory per vm worker (default 10%%)")
    p.add_argument(
        "--gpu-burn",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="gpu-burn beside stress-ng on the nodes whose inventory declares GPUs "
        "(default: on; --no-gpu-burn: off, and those nodes' soak.gpu_burn is MISSING)",
    )
    p.add_argument(
        "--spec",
        "--profile",
        dest="spec",
        metavar="NAME|FILE",
        help="spec whose telemetry rows judge the soak (default: the built-in soak profile)",
    )
    p.add_argument("--output-dir", default="runs", help="where run directories go (default runs)")
    p.add_argument("--resume", metavar="RUN_DIR", help="continue an interrupted soak")
    p.add_argument("--dry-run", action="store_true", help="print the plan and start nothing")
    p.add_argument("--lang", choices=("en", "zh"), help="report language (default: en)")
    p.add_argument("--quiet", action="store_true")


def _progress(quiet: bool):  # type: ignore[no-untyped-def]
    def show(elapsed: float, duration: float, hot: tuple[str, str, float] | None) -> None:
        if quiet:
            return
        left = max(0.0, duration - elapsed)
        hottest = f"; hottest {hot[0]} {hot[1]} {hot[2]:g} C" if hot else ""
        print(
            f"aibench soak: {elapsed:.0f}/{duration:.0f} s, {left / 60:.1f} min left{hottest}",
            file=sys.stderr,
            flush=True,
        )

    return show


def _new_params(args: argparse.Namespace) -> dict[str, Any]:
    from aibench.config import absolute

    params: dict[str, Any] = {
        "inventory": absolute(args.inventory),
        "nodes": getattr(args, "nodes", None),
        "duration": parse_duration(args.duration or "4h"),
        "spec": absolute(getattr(args, "spec", None)) or "soak",
        "lang": getattr(args, "lang", None) or "en",
    }
    for key, default in DEFAULTS.items():
        given = getattr(args, key, None)
        params[key] = default if given is None else given
    return params


def _resume_params(args: argparse.Namespace, run_dir: Path) -> dict[str, Any]:
    """The interrupted soak's settings; ``--duration`` replaces its duration, any other
    setting given is refused (the series must stay one series)."""
    params_file = run_dir / PARAMS
    if not params_file.exists():
        raise UserError(f"{run_dir}: not a soak run directory (no {PARAMS})")
    params: dict[str, Any] = json.loads(params_file.read_text())
    params.setdefault("spec", params.pop("profile", None) or "soak")
    params.setdefault("gpu_burn", False)
    given = [k for k in (*DEFAULTS, "inventory", "nodes", "spec") if getattr(args, k, None)]
    if given:
        flags = ", ".join("--" + k.replace("_", "-") for k in given)
        raise UserError(
            f"--resume {run_dir}: {flags} cannot change on resume (the soak keeps its own "
            "settings; only --duration can be given)"
        )
    if args.duration:
        params["duration"] = parse_duration(args.duration)
    return params


def _inputs(params: dict[str, Any]) -> Any:
    """The soak suite, the inventory (narrowed by ``nodes``) and the spec, validated."""
    from aibench.pipeline import load_inputs

    inputs = load_inputs(
        "soak", inventory=params["inventory"], spec=params["spec"], nodes=params["nodes"]
    )
    if not inputs.spec.telemetry:
        raise UserError(
            f"--spec {params['spec']}: has no telemetry rows, so it cannot judge a soak "
            "(see the built-in soak profile)"
        )
    return inputs


def _options(params: dict[str, Any]) -> Any:
    from aibench.runners.gpu_burn import GpuBurnOptions
    from aibench.runners.stress_ng import StressNgOptions
    from aibench.soak import engine

    stress = StressNgOptions(
        cpu=params["cpu"],
        cpu_load=params["cpu_load"],
        vm=params["vm"],
        vm_bytes=params["vm_bytes"],
        duration=1,
    )
    return engine.SoakOptions(
        duration=params["duration"],
        interval=params["interval"],
        chunk=params["chunk"],
        stress=stress,
        gpu_burn=GpuBurnOptions() if params["gpu_burn"] else None,
    )


def run(args: argparse.Namespace) -> int:
    if args.resume:
        run_dir: Path | None = Path(args.resume)
        params = _resume_params(args, Path(args.resume))
    else:
        run_dir, params = None, _new_params(args)
    inputs = _inputs(params)
    opts = _options(params)
    if args.dry_run:
        from aibench.soak.engine import plan_lines

        for line in plan_lines(inputs.inventory, opts, inputs.spec):
            print(line)
        return EXIT_OK
    return _soak(args, params, inputs, opts, run_dir)


def _soak(
    args: argparse.Namespace, params: dict[str, Any], inputs: Any, opts: Any, run_dir: Path | None
) -> int:
    import asyncio

    from aibench import instants, pipeline, store
    from aibench.soak import engine

    if run_dir is None:
        run_dir = store.new_run_dir(Path(args.output_dir), "soak")
        store.write_json_atomic(run_dir / store.RUN_CONFIG, _config(params, inputs))
    store.write_json_atomic(run_dir / PARAMS, params)
    started = instants.now_text()
    if not args.quiet:
        print(
            f"aibench soak: {len(inputs.inventory)} node(s) for {opts.duration:g} s; "
            f"results in {run_dir}",
            file=sys.stderr,
        )
    nodes = list(inputs.inventory.nodes)
    executors = pipeline.Executors(inputs.inventory)

    async def main() -> None:
        try:
            await engine.run_soak(run_dir, nodes, executors, opts, _progress(args.quiet))
        finally:
            await executors.close()

    interrupted = False
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        interrupted = True
    executed = pipeline.Executed(results=[], interrupted=interrupted)
    run = _judged(inputs, executed, run_dir, started, opts, args)
    pipeline.store_and_report(run, run_dir, lang=params.get("lang") or "en")
    code = pipeline.exit_code(run, executed)
    if not args.quiet:
        print(f"{run.outcome.value}: soak against {run.spec}\nreport: {run_dir / 'report.html'}")
    return code


def _judged(
    inputs: Any,
    executed: Any,
    run_dir: Path,
    started: str,
    opts: Any,
    args: argparse.Namespace,
) -> Any:
    """The soak's Run, assembled and judged by the pipeline like any run."""
    from aibench import pipeline, store
    from aibench.soak import engine
    from aibench.telemetry.hook import attach

    prev = store.load_run(run_dir) if (run_dir / store.RUN_JSON).exists() else None
    run = pipeline.assemble(
        inputs,
        executed,
        run_id=run_dir.name,
        started=prev.started if prev else started,
        resume_hint=f"aibench soak --resume {run_dir}",
        signoff={"cluster": getattr(args, "cluster", "") or inputs.inventory.name}
        | {k: getattr(args, k, "") for k in ("vendor", "customer")},
    )
    state = engine.load_state(run_dir)
    note = f"soak: {state['elapsed']:g} of {opts.duration:g} s of stress, {state['chunks']} chunks"
    run = run.replace(notes=(note, *run.notes))
    run = attach(run, run_dir, profile=inputs.spec)
    judged, _ = pipeline.judge(run, inputs, by="aibench soak")
    return judged


def _config(params: dict[str, Any], inputs: Any) -> dict[str, Any]:
    """run-config.json of a soak: what ``aibench check`` needs to re-judge it."""
    return {
        "suite": "soak",
        "inventory": params["inventory"],
        "spec": params["spec"],
        "nodes": params["nodes"],
        "steps": None,
        "tool": None,
        "suite_sha256": inputs.suite.sha256,
        "spec_sha256": inputs.spec.sha256,
    }


COMMAND = Command(
    name="soak",
    help="burn-in: stress every node for hours with GPU, host and BMC telemetry",
    add_arguments=add_arguments,
    run=run,
    description=__doc__ or "",
    epilog="examples:\n  aibench soak --inventory cluster.yaml --duration 4h\n"
    "  aibench soak --inventory cluster.yaml --dry-run\n"
    "  aibench soak --resume runs/20261203-140000-soak --duration 6h",
    order=25,
)
