"""``aibench soak``: stress every node at once for hours, sample GPUs, hosts and BMCs every
few seconds, judge the series, write run.json and the reports.

The soak runs stress-ng on every node of the inventory in chunks (:mod:`aibench.soak.engine`)
with the telemetry sampler beside it, checkpointing after every chunk; ``--resume RUN_DIR``
continues an interrupted soak (Ctrl-C keeps what was measured, exit 130). The verdicts come
from :func:`aibench.soak.judge.judge` with the limits of the soak profile (the built-in one
cites the guide section of every row); run.json holds the compact series
(``telemetry``); the HTML report has the per-node plots, the BMC events and the failing
parts. BMC passwords are named in the inventory (``password_env`` / ``password_file``) and
never written anywhere.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from aibench.commands import Command
from aibench.errors import EXIT_CHECKS_FAILED, EXIT_INTERRUPTED, EXIT_OK, UserError

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|min|h|d)?$")
_FACTOR = {"s": 1, None: 1, "m": 60, "min": 60, "h": 3600, "d": 86400}
PARAMS = "soak-params.json"


def parse_duration(text: str) -> float:
    """``90``, ``90s``, ``2m``, ``4h``, ``1d`` -> seconds."""
    m = _DURATION.match(text.strip())
    if not m or float(m.group(1)) <= 0:
        raise UserError(f"--duration {text!r}: give seconds or a number with s, m, h or d (4h)")
    return float(m.group(1)) * _FACTOR[m.group(2)]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--inventory", help="inventory file (default: this machine)")
    p.add_argument("--duration", default="4h", help="how long to stress: 90s, 30m, 4h (default 4h)")
    p.add_argument(
        "--interval", type=float, default=2.0, help="seconds between samples (default 2)"
    )
    p.add_argument(
        "--chunk",
        type=float,
        default=60.0,
        help="seconds per stress-ng run; its rate is one sample (default 60)",
    )
    p.add_argument(
        "--cpu", type=int, default=0, help="stress-ng CPU workers per node (0: all CPUs)"
    )
    p.add_argument("--cpu-load", type=int, default=None, help="stress-ng --cpu-load percent")
    p.add_argument("--vm", type=int, default=1, help="stress-ng memory workers per node")
    p.add_argument("--vm-bytes", default="10%", help="memory per vm worker (default 10%%)")
    p.add_argument(
        "--profile", help="soak profile YAML (default: the built-in, with guide sections)"
    )
    p.add_argument("--output-dir", default="runs", help="where run directories go (default runs)")
    p.add_argument("--resume", metavar="RUN_DIR", help="continue an interrupted soak")
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


def run(args: argparse.Namespace) -> int:
    import asyncio
    from datetime import UTC, datetime

    from aibench import __version__, reports, store
    from aibench.executors.select import for_node, forget
    from aibench.inventory import load_inventory, local_inventory
    from aibench.model import Run
    from aibench.runners.stress_ng import StressNgOptions
    from aibench.soak import engine
    from aibench.soak.judge import load_profile
    from aibench.telemetry import Store, compact

    if args.resume:
        run_dir = Path(args.resume)
        params_file = run_dir / PARAMS
        if not params_file.exists():
            raise UserError(f"{run_dir}: not a soak run directory (no {PARAMS})")
        params = json.loads(params_file.read_text())
    else:
        params = {
            "inventory": str(Path(args.inventory).resolve()) if args.inventory else None,
            "duration": parse_duration(args.duration),
            "interval": args.interval,
            "chunk": args.chunk,
            "cpu": args.cpu,
            "cpu_load": args.cpu_load,
            "vm": args.vm,
            "vm_bytes": args.vm_bytes,
            "profile": str(Path(args.profile).resolve()) if args.profile else None,
        }
    inv = load_inventory(params["inventory"]) if params["inventory"] else local_inventory()
    profile = (
        Path(params["profile"])
        if params["profile"]
        else Path(engine.__file__).with_name("profile.yaml")
    )
    try:
        limits, sources = load_profile(profile)
    except (OSError, ValueError, KeyError) as e:
        raise UserError(f"{profile}: {e}") from None
    stress = StressNgOptions(
        cpu=params["cpu"],
        cpu_load=params["cpu_load"],
        vm=params["vm"],
        vm_bytes=params["vm_bytes"],
        duration=1,
    )
    opts = engine.SoakOptions(
        duration=params["duration"],
        interval=params["interval"],
        chunk=params["chunk"],
        stress=stress,
    )
    if not args.resume:
        run_dir = store.new_run_dir(Path(args.output_dir), "soak")
        store.write_json_atomic(run_dir / PARAMS, params)
    started = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    if not args.quiet:
        print(
            f"aibench soak: {len(inv)} node(s) for {opts.duration:g} s; results in {run_dir}",
            file=sys.stderr,
        )
    nodes = list(inv.nodes)

    async def main() -> None:
        try:
            await engine.run_soak(
                run_dir, nodes, lambda n: for_node(n, inv), opts, _progress(args.quiet)
            )
        finally:
            for ex in {id(for_node(n, inv)): for_node(n, inv) for n in nodes}.values():
                await ex.close()
            forget(inv)

    interrupted = False
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        interrupted = True
    from aibench.soak.judge import judge

    tel = compact(Store(run_dir / "telemetry"))
    verdicts = judge(tel, [n.name for n in nodes], limits, sources)
    state = engine.load_state(run_dir)
    notes = [
        f"soak: {state['elapsed']:g} of {opts.duration:g} s of stress, {state['chunks']} chunks"
    ]
    if interrupted:
        notes.append(
            "interrupted before the end; resume with: aibench soak --resume " + str(run_dir)
        )
    run_obj = Run(
        id=run_dir.name,
        suite="soak",
        spec=profile.stem,
        started=started,
        finished=datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        aibench_version=__version__,
        inventory=inv.to_dict(),
        verdicts=tuple(verdicts),
        notes=tuple(notes),
        telemetry=tel,
    )
    store.save_run(run_obj, run_dir)
    reports.write_all(run_obj, run_dir)
    if interrupted:
        return EXIT_INTERRUPTED
    failing = [v for v in verdicts if v.outcome.failing]
    if not args.quiet:
        print(
            f"{'FAIL' if failing else 'PASS'}: soak ({len(verdicts) - len(failing)} PASS, "
            f"{len(failing)} failing)\nreport: {run_dir / 'report.html'}",
            file=sys.stderr,
        )
    return EXIT_CHECKS_FAILED if failing or not verdicts else EXIT_OK


COMMAND = Command(
    name="soak",
    help="burn-in: stress every node for hours with GPU, host and BMC telemetry",
    add_arguments=add_arguments,
    run=run,
    description=__doc__ or "",
    epilog="examples:\n  aibench soak --inventory cluster.yaml --duration 4h\n"
    "  aibench soak --resume runs/20261203-140000-soak",
    order=25,
)
