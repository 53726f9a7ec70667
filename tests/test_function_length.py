"""Every function readable in one screen: no function of the package over 60 lines.

Lines from the ``def`` to the last line of the body (its docstring included, decorators
not). A function still longer is listed below by name (none is); the list may only shrink: a
function split off it fails the test until its line here goes too.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 60

# The functions still over the limit, by name: none, every one is split by what its parts
# mean. Kept, empty, so that the test reads the same should one ever need listing.
LONG_FUNCTIONS: set[str] = set()


def long_functions(root: Path) -> dict[str, int]:
    """``path:qualified name`` -> lines, of every function over MAX_LINES in the package."""
    found = {}
    for path in sorted((root / "aibench").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        found.update(_long(ast.parse(path.read_text(), rel), rel, ""))
    return found


def _long(node: ast.AST, rel: str, prefix: str) -> dict[str, int]:
    found = {}
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = f"{prefix}{child.name}"
            if not isinstance(child, ast.ClassDef):
                lines = (child.end_lineno or child.lineno) - child.lineno + 1
                if lines > MAX_LINES:
                    found[f"{rel}:{name}"] = lines
            found.update(_long(child, rel, f"{name}."))
        else:
            found.update(_long(child, rel, prefix))
    return found


def test_no_function_over_60_lines() -> None:
    found = long_functions(ROOT)
    new = {f: n for f, n in found.items() if f not in LONG_FUNCTIONS}
    assert new == {}, f"functions over {MAX_LINES} lines: {new}"


def test_the_lists_of_long_functions_only_shrink() -> None:
    found = long_functions(ROOT)
    stale = sorted(LONG_FUNCTIONS - set(found))
    assert stale == [], f"no longer over {MAX_LINES} lines, strike them from the list: {stale}"


def test_a_long_function_is_found(tmp_path: Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_LINES - 1))
    mod = tmp_path / "aibench" / "m.py"
    mod.parent.mkdir()
    mod.write_text(
        f"class C:\n    def ok(self):\n        pass\n\ndef f():\n{body}\ndef g():\n{body}    y = 1\n"
    )
    assert long_functions(tmp_path) == {"aibench/m.py:g": MAX_LINES + 1}
