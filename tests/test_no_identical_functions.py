"""One home for each piece of logic: no two functions of the tree have the same body.

Two functions (package, tests, benchmarks) are the same when their bodies, a leading
docstring left out, and their arguments are the same syntax tree (names, values and
annotations included; comments and layout do not count). Bodies of fewer than
:data:`MIN_LINES` lines (from the ``def`` to the last line) are let be: a one-line
accessor may well be written twice. Where two bodies are the same, one function both call
is the cure.

Groups still there are listed below by their functions; the list may only shrink: a group
cured fails the test until its entry here goes too.
"""

from __future__ import annotations

import ast
import functools
import textwrap
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("aibench", "tests", "bench")
MIN_LINES = 4

# The groups still there, each as its functions ``path:qualified name``: none. Kept, empty,
# so that the test reads the same should one ever need listing.
KNOWN_GROUPS: set[frozenset[str]] = set()

Function = ast.FunctionDef | ast.AsyncFunctionDef


@functools.cache
def identical_groups(root: Path) -> set[frozenset[str]]:
    """Every group of two or more functions under ``root``'s FOLDERS with the same body."""
    by_body: dict[str, set[str]] = defaultdict(set)
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            for name, fn in _functions(ast.parse(path.read_text(encoding="utf-8"), rel), ""):
                key = _body_key(fn)
                if key is not None:
                    by_body[key].add(f"{rel}:{name}")
    return {frozenset(names) for names in by_body.values() if len(names) > 1}


def _functions(node: ast.AST, prefix: str) -> list[tuple[str, Function]]:
    """(qualified name, function) of every function in ``node``, nested ones included."""
    found = []
    for child in ast.iter_child_nodes(node):
        name = prefix
        if isinstance(child, Function | ast.ClassDef):
            name = f"{prefix}{child.name}."
            if not isinstance(child, ast.ClassDef):
                found.append((f"{prefix}{child.name}", child))
        found.extend(_functions(child, name))
    return found


def _body_key(fn: Function) -> str | None:
    """The body and arguments as text, None for a body too short to count."""
    body = fn.body[1:] if ast.get_docstring(fn, clean=False) is not None else fn.body
    if not body or (fn.end_lineno or fn.lineno) - fn.lineno + 1 < MIN_LINES:
        return None
    return ast.dump(ast.Module(body=body, type_ignores=[])) + ast.dump(fn.args)


def _listing(groups: set[frozenset[str]]) -> str:
    return "\n".join(" == ".join(sorted(g)) for g in sorted(groups, key=sorted))


def test_no_two_functions_have_the_same_body() -> None:
    new = identical_groups(ROOT) - KNOWN_GROUPS
    assert not new, f"functions with the same body (give the logic one home):\n{_listing(new)}"


def test_the_list_of_known_groups_only_shrinks() -> None:
    stale = KNOWN_GROUPS - identical_groups(ROOT)
    assert not stale, f"no longer the same, strike them from KNOWN_GROUPS:\n{_listing(stale)}"


def test_a_copied_body_is_found_and_a_different_one_is_not(tmp_path: Path) -> None:
    def body(doc: str, indent: int = 4) -> str:
        return textwrap.indent(f"'{doc}'\ny = x + 1\nz = y * 2\nreturn z\n", " " * indent)

    (tmp_path / "aibench").mkdir()
    (tmp_path / "aibench" / "a.py").write_text(
        f"def f(x):\n{body('one')}"
        # another docstring, the same body: the same
        f"\nclass C:\n    def g(x):\n{body('two', 8)}"
        # the same body with another argument name: not the same
        f"\ndef h(w):\n{body('three')}"
        # a short body twice: let be
        "\ndef s(x):\n    return x\n\ndef t(x):\n    return x\n"
    )
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "b.py").write_text(
        f"def outer():\n    async def f(x):\n{body('four', 8)}    return f\n"
    )
    assert identical_groups(tmp_path) == {
        frozenset({"aibench/a.py:f", "aibench/a.py:C.g", "tests/b.py:outer.f"})
    }
