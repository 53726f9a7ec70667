"""``aibench submit``: run a suite as a Slurm batch job.

Writes an sbatch script (every argument quoted, #SBATCH values validated) that runs
``aibench run --suite S --inventory F`` inside the allocation, then submits it with
``sbatch --parsable`` and prints the job id. ``--script-only`` writes the script and stops.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from aibench.commands import Command
from aibench.errors import EXIT_OK, CannotRunError, UserError

EPILOG = """\
examples:
  aibench submit --suite acceptance --inventory slurm-cluster.yaml --nodes 16 --partition gpu
  aibench submit --suite nightly --inventory cluster.yaml --script-only job.sh
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suite", default="acceptance", help="built-in suite name or YAML path")
    p.add_argument("--inventory", required=True, metavar="FILE", help="inventory of the cluster")
    p.add_argument("--spec", metavar="NAME|FILE", help="spec profile or YAML path")
    p.add_argument("--nodes", type=int, help="#SBATCH --nodes")
    p.add_argument("--partition", help="#SBATCH --partition")
    p.add_argument("--account", help="#SBATCH --account")
    p.add_argument("--time", type=int, metavar="MINUTES", help="#SBATCH --time")
    p.add_argument(
        "--output-dir", default="runs", metavar="DIR", help="run directories (default: runs)"
    )
    p.add_argument("--script-only", metavar="FILE", help="write the batch script here and stop")


def run(args: argparse.Namespace) -> int:
    from aibench.commands.run import load_inputs  # the same arguments as aibench run
    from aibench.executors.slurm import batch_script

    # Validate everything here, before the job waits in the queue for hours.
    load_inputs(argparse.Namespace(**{**vars(args), "nodes": None, "steps": None, "tool": None}))
    extra = ["--output-dir", str(Path(args.output_dir).resolve())]
    if args.spec:
        extra += ["--spec", _abs(args.spec)]
    out_dir = Path(args.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = Path(args.script_only) if args.script_only else out_dir / "aibench-job.sh"
    try:
        batch_script(
            path,
            suite=_abs(args.suite),
            inventory=str(Path(args.inventory).resolve()),
            extra_args=extra,
            nodes=args.nodes,
            partition=args.partition,
            account=args.account,
            time_min=args.time,
            output=str((out_dir / "aibench-job-%j.out").resolve()),
            aibench=_aibench_argv(),
        )
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if args.script_only:
        print(f"wrote {path}")
        return EXIT_OK
    sbatch = shutil.which("sbatch")
    if sbatch is None:
        raise CannotRunError("sbatch not found: is this a Slurm login node?", hint="--script-only")
    res = subprocess.run(
        [sbatch, "--parsable", str(path)], capture_output=True, text=True, check=False
    )
    if res.returncode != 0:
        raise CannotRunError(f"sbatch refused the job: {res.stderr.strip() or res.stdout.strip()}")
    job = res.stdout.strip().split(";")[0]
    print(f"submitted job {job}; its output: {out_dir / f'aibench-job-{job}.out'}")
    return EXIT_OK


def _aibench_argv() -> tuple[str, ...]:
    """How the job calls this same aibench: the console script beside this interpreter."""
    script = Path(sys.executable).parent / "aibench"
    if script.exists():
        return (str(script),)
    return (sys.executable, "-m", "aibench")


def _abs(value: str) -> str:
    if "/" in value or value.endswith((".yaml", ".yml")):
        return str(Path(value).resolve())
    return value


COMMAND = Command(
    name="submit",
    help="submit a suite to Slurm as a batch job (sbatch)",
    description=__doc__ or "",
    epilog=EPILOG,
    add_arguments=add_arguments,
    run=run,
    order=15,
)
