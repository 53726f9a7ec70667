"""The test run itself: no warning from a plugin no test uses (aiperf brings dash, whose
pytest plugin warned on every run), and the side-by-side run ``make test`` asks for."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def _pytest(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def test_a_run_warns_of_nothing_it_does_not_use() -> None:
    r = _pytest("-q", "tests/test_readme.py")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "warning" not in r.stdout.lower(), r.stdout
    assert "dash" not in r.stdout + r.stderr


def test_make_test_runs_the_suite_side_by_side_in_groups() -> None:
    make = (ROOT / "Makefile").read_text()
    assert "pytest -n $(TEST_JOBS) --dist loadgroup --no-loadscope-reorder $(PYTEST_ARGS)" in make
    # (without Hypothesis's plugin: its import was most of each of the three processes'
    # start-up, and it has no part in how xdist groups the tests)
    r = _pytest(
        "-p", "no:hypothesispytest", "-n", "2", "--dist", "loadgroup", "-v", "tests/test_readme.py"
    )
    assert r.returncode == 0, r.stdout + r.stderr
    # loadgroup gives the test id its group (pytest 9.2 with xdist 3.8 did not: no groups)
    test = "tests/test_readme.py::test_the_commands_table_is_one_table_with_every_command"
    assert f"PASSED {test}@tests/test_readme.py" in r.stdout, r.stdout
