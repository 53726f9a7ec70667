"""A wheel built from a tree without any compiled catalog carries the ``.mo`` (compiled by
setup.py's build_py with Babel), and an install of that wheel renders Chinese with Babel
made unimportable, so the installed ``.mo`` is what gettext reads."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MO = "aibench/locale/zh_CN/LC_MESSAGES/aibench.mo"


def _setuptools_version() -> tuple[int, ...]:
    from importlib.metadata import version

    return tuple(int(x) for x in version("setuptools").split(".")[:2])


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("setuptools") is None or _setuptools_version() < (77,),
        reason="setuptools>=77 is not installed (the test extra brings it)",
    ),
]


def test_wheel_carries_the_compiled_catalog_and_an_install_uses_it(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(
        ROOT / "aibench", src / "aibench", ignore=shutil.ignore_patterns("__pycache__", "*.mo")
    )
    assert not list(src.rglob("*.mo"))
    wheels = tmp_path / "wheels"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    proc = subprocess.run(
        [
            *pip,
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-w",
            str(wheels),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = wheels.glob("*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        assert MO in names
        assert z.read(MO)[:4] in (b"\xde\x12\x04\x95", b"\x95\x04\x12\xde")
    target = tmp_path / "installed"
    proc = subprocess.run(
        [*pip, "install", "--no-deps", "--no-index", "--target", str(target), str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    probe = (
        "import sys; sys.modules['babel'] = None\n"  # no compiling: the .mo must be there
        "import aibench\n"
        "from aibench.reports import i18n\n"
        "print(aibench.__file__)\n"
        "print(i18n.translations('zh').gettext('Acceptance report'))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,  # not the source tree, which -c would put first on sys.path
    )
    assert proc.returncode == 0, proc.stderr
    where, text = proc.stdout.splitlines()
    assert Path(where).is_relative_to(target)
    assert text == "验收报告"
