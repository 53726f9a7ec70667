"""examples/analysis.ipynb: a valid notebook whose code cells run, in order, to the end.

The code cells are run as one script by a fresh interpreter (not through a Jupyter kernel:
nbformat reads and validates the file, no kernel is started), on a generated 8-node run and
a history database of three recordings of it. Every cell must run without an error.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from aibench.history import History
from tests.reports.gen import make_run, write_run

nbformat = pytest.importorskip("nbformat")
NOTEBOOK = Path(__file__).resolve().parent.parent / "examples" / "analysis.ipynb"


def test_analysis_notebook_runs(tmp_path: Path) -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    assert code
    assert not [c for c in nb.cells if c.cell_type == "code" and c.outputs]  # kept clean
    gen = make_run(8)
    run_dir = tmp_path / "runs" / gen.run.id
    write_run(gen, run_dir)
    db = tmp_path / "runs" / "history.sqlite"
    for day in (1, 2, 3):
        History(db).record(gen.run.replace(id=f"night-{day}", started=f"2026-12-0{day}T01:00:00Z"))
    # the cells in order, as "Run all" would; a value a cell ends with is evaluated, not shown
    script = "\n".join(f"# cell {i}\n{src}\n" for i, src in enumerate(code))
    env = {**os.environ, "MPLBACKEND": "Agg", "AIBENCH_RUN": "", "AIBENCH_HISTORY": ""}
    res = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert f"{gen.run.id} " in res.stdout
    assert "night-3" in res.stdout
    assert "rows read back from measurements.parquet" in res.stdout
