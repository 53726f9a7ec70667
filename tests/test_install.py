"""Lean installs: the wheel builds, and a core install brings no MLPerf, SciPy or pandas.

``python -m build --wheel`` builds the wheel once (module fixture). Two ways of listing
what a core install brings:

* ``test_core_requirements_resolved_from_metadata`` (quick): the wheel's own
  ``Requires-Dist`` without extras, resolved recursively through the metadata of the
  distributions installed in this environment (importlib.metadata), sizes from their
  RECORD files. No install happens: it says what ``pip install .`` would bring given the
  versions installed here.
* ``test_offline_install_from_a_wheelhouse`` (slow, about 45 s): the README's air-gapped
  procedure for real: ``pip wheel`` into a wheelhouse, a new venv, ``pip install
  --no-index --find-links WHEELHOUSE aibench-cluster``; then the distributions in that
  venv, their size on disk, and aibench working in it offline (parse a real fio log; the
  extras' commands fail with one line naming the extra).
"""

from __future__ import annotations

import email
import json
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
NOT_IN_CORE = {"mlperf-logging", "scipy", "mlcommons-loadgen", "pandas", "pyarrow"}
FIO_LOG = ROOT / "tests" / "fixtures" / "fio"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    res = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    (whl,) = out.glob("aibench_cluster-*.whl")
    return whl


def _requires(whl: Path) -> list[str]:
    with zipfile.ZipFile(whl) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        meta = email.message_from_bytes(z.read(name))
    return meta.get_all("Requires-Dist") or []


def test_wheel_holds_the_package_and_its_data_only(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "aibench/suites/acceptance.yaml" in names
    assert any(n.startswith("aibench/reports/templates/") for n in names)
    assert any(n.startswith("aibench/thresholds/profiles/") for n in names)
    assert not [n for n in names if n.startswith(("tests/", "bench/", "examples/"))]
    extras = {str(r) for r in _requires(wheel) if "extra ==" in str(Requirement(r).marker)}
    assert any(r.startswith("mlperf-logging") and 'extra == "mlperf"' in r for r in extras)


def test_core_requirements_resolved_from_metadata(wheel: Path) -> None:
    todo = [Requirement(r) for r in _requires(wheel)]
    found: dict[str, metadata.Distribution] = {}
    while todo:
        req = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue  # an extra, or not for this platform
        name = canonicalize_name(req.name)
        if name in found:
            continue
        dist = metadata.distribution(req.name)
        found[name] = dist
        todo += [Requirement(r) for r in dist.requires or ()]
    rows = []
    for name, dist in sorted(found.items()):
        size = sum(f.size or 0 for f in dist.files or ())
        rows.append((name, dist.version, size))
    print(f"\ncore install of {wheel.name} (resolved from installed metadata, not installed):")
    for name, version, size in rows:
        print(f"  {name:<24} {version:<12} {size / 2**20:8.1f} MiB")
    print(f"  {len(rows)} distributions, {sum(r[2] for r in rows) / 2**20:.0f} MiB")
    assert not NOT_IN_CORE & set(found), NOT_IN_CORE & set(found)
    assert {"numpy", "matplotlib", "prometheus-client", "pydantic"} <= set(found)


SIZES = """\
import json, sys
from importlib import metadata
rows = sorted(
    (d.metadata["Name"], d.version, sum(f.size or 0 for f in d.files or ()))
    for d in metadata.distributions()
)
json.dump(rows, sys.stdout)
"""


@pytest.mark.slow
def test_offline_install_from_a_wheelhouse(wheel: Path, tmp_path: Path) -> None:
    house, venv = tmp_path / "wheelhouse", tmp_path / "venv"
    pip = [sys.executable, "-m", "pip"]
    # the connected side: every wheel the core install needs, sdists built into wheels
    res = subprocess.run(
        [*pip, "wheel", "-q", "--wheel-dir", str(house), str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert not list(house.glob("*.tar.gz"))
    # the air-gapped side: no index at all. ``--no-compile``: pip byte-compiles every
    # module of every distribution otherwise (most of the install's time), which is pip's
    # work, not what is tested; the modules aibench imports below are compiled on import.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    res = subprocess.run(
        [
            *pip,
            "--python",
            py,
            "install",
            "-q",
            "--no-compile",
            "--no-index",
            "--find-links",
            str(house),
            "aibench-cluster",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    rows = json.loads(
        subprocess.run(
            [py, "-c", SIZES], capture_output=True, text=True, check=True, cwd=tmp_path
        ).stdout
    )
    print(f"\ncore `pip install --no-index` of {wheel.name} into a new venv:")
    for name, version, size in rows:
        print(f"  {name:<24} {version:<12} {size / 2**20:8.1f} MiB")
    print(f"  {len(rows)} distributions, {sum(r[2] for r in rows) / 2**20:.0f} MiB")
    names = [canonicalize_name(r[0]) for r in rows]
    assert len(names) == len(set(names)), "a distribution found twice: not a clean venv"
    assert not NOT_IN_CORE & set(names), NOT_IN_CORE & set(names)
    aibench = str(venv / "bin" / "aibench")
    fio = next(p for p in sorted(FIO_LOG.glob("*.json")) if not p.name.endswith(".expected.json"))
    res = subprocess.run(
        [aibench, "parse", "fio", str(fio), "--format", "json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)
    res = subprocess.run(
        [aibench, "export", str(tmp_path)], capture_output=True, text=True, cwd=tmp_path
    )
    assert res.returncode == 2
    assert "aibench-cluster[pandas]" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    # the MLPerf Training checker, run by the lean install's interpreter, names the extra
    log = next((ROOT / "tests" / "fixtures" / "mlperf-training").glob("*.log"))
    probe = (
        "import sys; from pathlib import Path; "
        "from aibench.runners.mlperf_training import compliance; "
        "c = compliance(Path(sys.argv[1]), '6.0.0', Path(sys.argv[2])); print(c.complaint)"
    )
    res = subprocess.run(
        [py, "-c", probe, str(log), str(tmp_path / "c.log")],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,  # not the checkout: the installed package
    )
    assert "aibench-cluster[mlperf]" in res.stdout
