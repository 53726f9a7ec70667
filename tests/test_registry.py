"""The plug-in registries: one name is found importing its own module only; every
question about all names walks everything, and duplicates are still errors."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest

from aibench.errors import UserError
from aibench.registry import DuplicateNameError, Registry


def test_one_name_imports_only_its_own_module() -> None:
    """In a fresh process: planning and judging a fio step reads the fio runner, parser and
    report section and none of the other tools' modules."""
    code = (
        "import sys\n"
        "from aibench.runners import RUNNERS\n"
        "from aibench.parsers import PARSERS\n"
        "from aibench.reports.sections import section_for\n"
        "from aibench import tools\n"
        "assert RUNNERS.get('fio').name == 'fio'\n"
        "assert 'fio' in PARSERS and section_for('fio').tool == 'fio'\n"
        "assert tools.vocabulary().get(('fio', 'bw')) == 'KiB/s'\n"
        "assert tools.pair_series(among=['fio']) == []\n"
        "print(sorted(m for m in sys.modules if m.startswith(('aibench.runners.',"
        " 'aibench.parsers.', 'aibench.reports.sections.')) and '._' not in m))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == (
        "['aibench.parsers.fio', 'aibench.reports.sections.fio', 'aibench.runners.base', "
        "'aibench.runners.fio']"
    )


def _package(monkeypatch: pytest.MonkeyPatch, modules: dict[str, list[str]]) -> str:
    """A throw-away plug-in package: module name -> names of the plug-ins it exports."""
    pkg = types.ModuleType("plugpkg")
    pkg.__path__ = []
    monkeypatch.setitem(sys.modules, "plugpkg", pkg)
    for mod, names in modules.items():
        m = types.ModuleType(f"plugpkg.{mod}")
        m.ITEM = list(names)  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, f"plugpkg.{mod}", m)
    import pkgutil

    def iter_modules(path: object) -> list[pkgutil.ModuleInfo]:
        return [pkgutil.ModuleInfo(None, mod, False) for mod in modules]  # type: ignore[arg-type]

    monkeypatch.setattr(pkgutil, "iter_modules", iter_modules)
    return "plugpkg"


def test_a_name_in_another_module_is_found_by_walking(monkeypatch: pytest.MonkeyPatch) -> None:
    reg: Registry[str] = Registry(
        "thing", _package(monkeypatch, {"alpha": ["alpha"], "multi": ["ib-write", "ib-read"]}),
        "ITEM", key=str, group=None,
    )  # fmt: skip
    assert reg.get("alpha") == "alpha"
    assert not reg._loaded  # found in its own module: nothing else walked
    assert "ib-read" in reg
    assert reg._loaded
    assert reg.names() == ["alpha", "ib-read", "ib-write"]  # alpha is not contributed twice


def test_duplicates_and_unknown_names_are_still_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = _package(monkeypatch, {"alpha": ["alpha"], "beta": ["alpha", "beta"]})
    reg: Registry[str] = Registry("thing", pkg, "ITEM", key=str, group=None)
    with pytest.raises(DuplicateNameError, match="two things named 'alpha'"):
        reg.names()
    reg2: Registry[str] = Registry(
        "thing", _package(monkeypatch, {"alpha": ["alpha"]}), "ITEM", key=str, group=None
    )
    with pytest.raises(UserError, match="unknown thing 'gamma'; valid things: alpha"):
        reg2.get("gamma")
    assert "gamma" not in reg2


def test_the_command_line_builds_only_the_command_it_runs() -> None:
    code = (
        "import sys\n"
        "from aibench.cli import main\n"
        "try:\n"
        "    main(['plan', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('aibench.commands.')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert "usage: aibench plan" in out
    # plan reuses run's options; no other command module is imported
    assert out.splitlines()[-1] == "['aibench.commands.plan', 'aibench.commands.run']"
    every = subprocess.run(
        [sys.executable, "-m", "aibench", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "preflight" in every
    assert "history" in every
