"""The layers of the package: no import loop, nothing importing from a layer above its own.

The layers are the README's layout table (one place, read here); the edges are the
imports the code holds, read with ``ast``: every ``import`` and ``from ... import`` of
``aibench``, at the top of a module, inside a function or under ``TYPE_CHECKING`` alike
(a loop that only type checking closes is a loop all the same).

Both hold for modules and for packages: a package (``aibench.X``, a top-level module or
a folder with everything under it) sits on one layer, and two packages whose modules import
each other round about are a loop even where no module is part of one.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "aibench"
VERSION = "__version__"  # `from aibench import __version__` reads the version alone


def modules(root: Path) -> dict[str, Path]:
    """Dotted name -> file of every module of the package under ``root``."""
    found = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _target(name: str, known: Mapping[str, Path]) -> str:
    while name not in known and "." in name:
        name = name.rpartition(".")[0]
    return name


def imports(name: str, path: Path, known: Mapping[str, Path]) -> set[str]:
    """The modules of the package that module ``name`` imports (resolved to their files)."""
    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(
                _target(a.name, known) for a in node.names if a.name.split(".")[0] == PACKAGE
            )
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = here[: len(here) - node.level + 1]
                base = ".".join([*up, *([node.module] if node.module else [])])
            if base.split(".")[0] != PACKAGE:
                continue
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in known:
                    out.add(full)
                elif base == PACKAGE and alias.name == VERSION:
                    out.add(f"{PACKAGE}.{VERSION}")
                else:
                    out.add(_target(base, known))
    out.discard(name)
    return out


def graph(root: Path) -> dict[str, set[str]]:
    known = modules(root)
    return {name: imports(name, path, known) for name, path in known.items()}


def loops(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The import loops: each strongly connected set of two or more modules (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                found.append(sorted(scc))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def package_of(module: str) -> str:
    """The package a module belongs to: ``aibench.X`` for the top-level module or folder X
    (``aibench.parsers.fio`` -> ``aibench.parsers``); the package itself and its
    ``__version__`` are their own."""
    return ".".join(module.split(".")[:2])


def package_graph(edges: Mapping[str, Iterable[str]]) -> dict[str, set[str]]:
    """The imports between packages: one edge for every module of one importing a module
    of another."""
    out: dict[str, set[str]] = {}
    for src, targets in edges.items():
        here = package_of(src)
        out.setdefault(here, set()).update(package_of(t) for t in targets)
        out[here].discard(here)
    return out


def readme_layers(readme: Path) -> dict[str, int]:
    """The README's layout table: module entry (``model.py``, ``parsers/``,
    ``__init__.py``, ``__version__``) -> its layer, 1 at the bottom."""
    layers: dict[str, int] = {}
    in_table = False
    for line in readme.read_text().splitlines():
        if line.startswith("| layer | modules |"):
            in_table = True
            continue
        if not in_table:
            continue
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        m = re.match(r"(\d+) ", cells[0])
        if m is None:
            continue
        for entry in re.findall(r"`([^`]+)`", cells[1]):
            assert entry not in layers, f"README layout table: {entry} is on two rows"
            layers[entry] = int(m.group(1))
    return layers


def layer_of(module: str, layers: Mapping[str, int]) -> int | None:
    """The layer of a dotted module name: its own entry, else its nearest folder's."""
    parts = module.split(".")[1:]
    if parts == [VERSION]:
        return layers.get(VERSION)
    as_file = "/".join(parts) + ".py" if parts else "__init__.py"
    for entry in (as_file, "/".join([*parts, "__init__.py"])):
        if entry in layers:
            return layers[entry]
    for k in range(len(parts), 0, -1):
        folder = "/".join(parts[:k]) + "/"
        if folder in layers:
            return layers[folder]
    return None


def split_packages(layers: Mapping[str, int]) -> list[str]:
    """Each entry of the table that names a part of a package (``preflight/vendor.py``)
    rather than the package (``preflight/``): a package sits on one row, whole."""
    found = []
    for entry, layer in sorted(layers.items()):
        head, sep, rest = entry.partition("/")
        if sep and rest:
            rows = sorted({n for e, n in layers.items() if e.startswith(head + "/")})
            on = ", ".join(f"layer {n}" for n in rows)
            found.append(f"{entry} (layer {layer}) is part of package {head}/ (on {on})")
    return found


def upward(edges: Mapping[str, Iterable[str]], layers: Mapping[str, int]) -> list[str]:
    """Each import from a module up to a higher layer than its own."""
    found = []
    for src, targets in sorted(edges.items()):
        here = layer_of(src, layers)
        for dst in sorted(targets):
            there = layer_of(dst, layers)
            if here is not None and there is not None and there > here:
                found.append(f"{src} (layer {here}) imports {dst} (layer {there})")
    return found


# --------------------------------------------------------------------------- the package


EDGES = graph(ROOT)
LAYERS = readme_layers(ROOT / "README.md")


def test_the_readme_names_every_module_on_one_layer() -> None:
    assert len(set(LAYERS.values())) >= 10, LAYERS
    missing = [m for m in EDGES if layer_of(m, LAYERS) is None]
    assert not missing, f"not in the README's layout table: {missing}"
    used = {e for e in LAYERS if e == VERSION or any(_names(e, m) for m in EDGES)}
    assert set(LAYERS) == used, f"in the table, yet no such module: {set(LAYERS) - used}"


def _names(entry: str, module: str) -> bool:
    path = "/".join(module.split(".")[1:])
    if entry.endswith("/"):
        return (path + "/").startswith(entry)
    return entry in (path + ".py", path + "/__init__.py" if path else "__init__.py")


def test_no_import_loop() -> None:
    assert loops(EDGES) == []


def test_no_import_reaches_up_a_layer() -> None:
    assert upward(EDGES, LAYERS) == []


def test_each_package_is_on_one_row() -> None:
    assert split_packages(LAYERS) == []


def test_no_package_import_loop() -> None:
    assert loops(package_graph(EDGES)) == []


def test_no_package_reaches_up_a_layer() -> None:
    assert upward(package_graph(EDGES), LAYERS) == []


def test_parsers_reach_no_runner() -> None:
    """A parser is pure: nothing it imports, however far down, runs or plans a tool."""
    seen: set[str] = set()
    todo = [m for m in EDGES if m.startswith(f"{PACKAGE}.parsers")]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(EDGES.get(m, ()))
    reached = sorted(m for m in seen if m.split(".")[1] in {"runners", "executors", "tools"})
    assert reached == []


# --------------------------------------------------------------------------- the checker


def _tree(tmp_path: Path, files: Mapping[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / PACKAGE / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


@pytest.mark.parametrize(
    ("files", "loop"),
    [
        (  # under TYPE_CHECKING, as bmc/config.py and inventory.py were
            {
                "__init__.py": "",
                "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                "    from aibench.b import B\n",
                "b.py": "from aibench.a import A\n",
            },
            ["aibench.a", "aibench.b"],
        ),
        (  # inside a function, relative, through a package
            {
                "__init__.py": "",
                "p/__init__.py": "",
                "p/x.py": "def f():\n    from ..c import C\n",
                "c.py": "import aibench.p.x\n",
            },
            ["aibench.c", "aibench.p.x"],
        ),
    ],
)
def test_a_loop_is_found(tmp_path: Path, files: dict[str, str], loop: list[str]) -> None:
    assert loops(graph(_tree(tmp_path, files))) == [loop]


def test_an_upward_import_is_found(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "model.py": "from aibench import __version__\nfrom aibench.parsers import fio\n",
            "parsers/__init__.py": "",
            "parsers/fio.py": "from aibench.model import M\n",
        },
    )
    layers = {"model.py": 1, "parsers/": 2, "__init__.py": 3, VERSION: 1}
    edges = graph(root)
    assert upward(edges, layers) == [
        "aibench.model (layer 1) imports aibench.parsers.fio (layer 2)"
    ]
    assert loops(edges) == [["aibench.model", "aibench.parsers.fio"]]


def test_a_loop_of_packages_is_found(tmp_path: Path) -> None:
    """No module is part of a loop, yet package a imports b and b imports a."""
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "a/__init__.py": "",
            "a/x.py": "from aibench.b.y import Y\n",
            "a/w.py": "W = 1\n",
            "b/__init__.py": "",
            "b/y.py": "Y = 1\n",
            "b/z.py": "from aibench.a import w\n",
        },
    )
    edges = graph(root)
    assert edges["aibench.a.x"] == {"aibench.b.y"}
    assert edges["aibench.b.z"] == {"aibench.a.w"}
    assert loops(edges) == []
    assert loops(package_graph(edges)) == [["aibench.a", "aibench.b"]]


def test_a_package_reaching_up_is_found(tmp_path: Path) -> None:
    """The table names a low part of p (p/low.py on layer 1) while p/ is on layer 3: the
    module q/ on layer 2 may import p/low.py, but package q imports package p, above it."""
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "p/__init__.py": "",
            "p/low.py": "L = 1\n",
            "q/__init__.py": "from aibench.p.low import L\n",
        },
    )
    layers = {"p/low.py": 1, "q/": 2, "p/": 3, "__init__.py": 4}
    edges = graph(root)
    assert upward(edges, layers) == []
    assert upward(package_graph(edges), layers) == [
        "aibench.q (layer 2) imports aibench.p (layer 3)"
    ]
    assert split_packages(layers) == [
        "p/low.py (layer 1) is part of package p/ (on layer 1, layer 3)"
    ]


def test_a_package_on_two_rows_is_found(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(
        "| layer | modules | stage |\n|---|---|---|\n"
        "| 1 model | `model.py` `preflight/vendor.py` | shared |\n"
        "| 2 judge | `preflight/consistency.py` `judge.py` | judge |\n"
    )
    layers = readme_layers(readme)
    assert layers["preflight/vendor.py"] == 1
    assert split_packages(layers) == [
        "preflight/consistency.py (layer 2) is part of package preflight/ (on layer 1, layer 2)",
        "preflight/vendor.py (layer 1) is part of package preflight/ (on layer 1, layer 2)",
    ]
    assert split_packages({"model.py": 1, "preflight/": 2, "__version__": 1}) == []
