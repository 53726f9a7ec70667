"""Name registries for plug-ins: parsers, runners, launchers, report sections, commands.

Built-in plug-ins are modules in a package (``aibench.parsers``, ``aibench.runners`` ...),
*discovered* by walking the package, never listed by hand. Third parties plug in through
an entry-point group of the same name (``aibench.parsers`` ...). Two plug-ins with one
name are an error; an unknown name lists the valid ones.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Generic, TypeVar

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
            name = f"{self.package}.{info.name}"
            self._contribute(importlib.import_module(name), name)
        if self.group:
            from importlib.metadata import entry_points

            for ep in entry_points(group=self.group):
                self._contribute(ep.load(), f"entry point {ep.value}")

    def get(self, name: str) -> T:
        self.load()
        try:
            return self._items[name]
        except KeyError:
            valid = ", ".join(sorted(self._items)) or "(none)"
            raise UserError(f"unknown {self.kind} {name!r}; valid {self.kind}s: {valid}") from None

    def names(self) -> list[str]:
        self.load()
        return sorted(self._items)

    def __iter__(self) -> Iterator[T]:
        self.load()
        return iter([self._items[k] for k in sorted(self._items)])

    def __contains__(self, name: object) -> bool:
        self.load()
        return name in self._items
