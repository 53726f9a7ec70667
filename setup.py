"""Build hook: compile the report's gettext catalogs (``.po`` -> ``.mo``) with Babel.

Everything else about the package is in pyproject.toml. ``build_py`` writes
``aibench/locale/<locale>/LC_MESSAGES/aibench.mo`` next to each ``.po`` into the build tree
(wheels, ``pip install .``), or into the source tree for an editable install.
"""

from __future__ import annotations

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


def compile_catalogs(package_dir: Path) -> list[Path]:
    """Compile every ``locale/*/LC_MESSAGES/*.po`` below ``package_dir``; return the .mo."""
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    written = []
    for po in sorted(package_dir.glob("locale/*/LC_MESSAGES/*.po")):
        with po.open("rb") as f:
            catalog = read_po(f)
        mo = po.with_suffix(".mo")
        with mo.open("wb") as f:
            write_mo(f, catalog, use_fuzzy=False)
        written.append(mo)
    return written


class BuildWithCatalogs(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:
            compile_catalogs(Path(__file__).resolve().parent / "aibench")
        else:
            compile_catalogs(Path(self.build_lib) / "aibench")


setup(cmdclass={"build_py": BuildWithCatalogs})
