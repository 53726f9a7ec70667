"""Name registries for plug-ins: parsers, runners, launchers, report sections, commands.

Built-in plug-ins are modules in a package (``aibench.parsers``, ``aibench.runners`` ...),
*discovered* by walking the package, never listed by hand. Third parties plug in through
an entry-point group of the same name (``aibench.parsers`` ...). Two plug-ins with one
name are an error; an unknown name lists the valid ones.

Looking up one name does not import every plug-in: the module named like the plug-in
(``fio`` -> ``aibench.runners.fio``, ``nccl-tests`` -> ``aibench.runners.nccl_tests``) is
imported first, and when it contributes that name the lookup ends there. A name found
nowhere that way, and every question about all names (``names()``, iteration), walk the
whole package and the entry points, which is also when duplicates are found. A command
of ``aibench run`` thus imports the one runner, parser and report section it uses
rather than all of them.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any, Generic, TypeVar

from aibench.errors import UserError

T = TypeVar("T")


class DuplicateNameError(RuntimeError):
    pass


class Registry(Generic[T]):
    """Maps names to plug-ins of one kind.

    ``package`` is walked on first use; each module that defines the attribute named
    ``attr`` contributes it (a module may export one plug-in or a list of them through
    ``attr``). ``key`` extracts the plug-in's name.
    """

    def __init__(
        self,
        kind: str,
        package: str,
        attr: str,
        key: Callable[[T], str],
        group: str | None = "",
    ) -> None:
        self.kind = kind
        self.package = package
        self.attr = attr
        self.key = key
        # "" -> the package name; None -> no entry-point group (keeps start-up fast)
        self.group = package if group == "" else group
        self._items: dict[str, T] = {}
        self._origin: dict[str, str] = {}
        self._modules: set[str] = set()  # the package's modules already contributed
        self._loaded = False

    def add(self, item: T, origin: str = "") -> T:
        name = self.key(item)
        if name in self._items:
            raise DuplicateNameError(
                f"two {self.kind}s named {name!r}: {self._origin[name]} and {origin or '?'}"
            )
        self._items[name] = item
        self._origin[name] = origin
        return item

    def _contribute(self, module: ModuleType | object, origin: str) -> None:
        value = getattr(module, self.attr, None)
        if value is None:
            return
        for item in value if isinstance(value, list | tuple) else [value]:
            self.add(item, origin)

    def load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        pkg = importlib.import_module(self.package)
        for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
            if info.name.startswith("_"):
                continue
            self._contribute_module(f"{self.package}.{info.name}")
        if self.group:
            for ep in _entry_points(self.group):
                self._contribute(ep.load(), f"entry point {ep.value}")

    def _contribute_module(self, module: str) -> None:
        if module not in self._modules:
            self._modules.add(module)
            self._contribute(importlib.import_module(module), module)

    def find(self, name: str) -> T | None:
        """The plug-in called ``name``, or None: from the module of that name where it
        has one (importing nothing else), else after walking everything."""
        if name in self._items:
            return self._items[name]
        if not self._loaded:
            stem = name.replace("-", "_")
            if stem.isidentifier() and not stem.startswith("_"):
                module = f"{self.package}.{stem}"
                try:
                    self._contribute_module(module)
                except ModuleNotFoundError as exc:
                    if exc.name != module:
                        raise
                if name in self._items:
                    return self._items[name]
            self.load()
        return self._items.get(name)

    def get(self, name: str) -> T:
        found = self.find(name)
        if found is None:
            valid = ", ".join(sorted(self._items)) or "(none)"
            raise UserError(f"unknown {self.kind} {name!r}; valid {self.kind}s: {valid}")
        return found

    def names(self) -> list[str]:
        self.load()
        return sorted(self._items)

    def __iter__(self) -> Iterator[T]:
        self.load()
        return iter([self._items[k] for k in sorted(self._items)])

    def __contains__(self, name: object) -> bool:
        if isinstance(name, str):
            return self.find(name) is not None
        self.load()
        return name in self._items


_ENTRY_POINTS: Any = None


def _entry_points(group: str) -> Any:
    """The installed entry points of ``group``; the installed distributions are read once
    a process, not once a registry."""
    global _ENTRY_POINTS
    if _ENTRY_POINTS is None:
        from importlib.metadata import entry_points

        _ENTRY_POINTS = entry_points()
    return _ENTRY_POINTS.select(group=group)
