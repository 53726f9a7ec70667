"""Loading and validating the input files: suites, specs, inventories.

Every file is read and checked against its schema (pydantic models with unknown keys
forbidden) before any node is touched. Any problem becomes one
:class:`~aibench.errors.ConfigError` naming the file, the key path (``steps[2].options.bs``)
and what is wrong.

Built-in suites and threshold profiles ship inside the package; a name (``acceptance``)
picks a built-in file and a path (``./my-suite.yaml``) picks the user's own.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from aibench.errors import ConfigError

M = TypeVar("M", bound=BaseModel)


class Strict(BaseModel):
    """Base of every schema model: unknown keys are errors, values are not coerced."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=False, defer_build=True)


def key_path(loc: Sequence[int | str]) -> str:
    """``("steps", 2, "options", "bs")`` -> ``steps[2].options.bs``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _first_error(exc: ValidationError, model: type[BaseModel]) -> tuple[str, str]:
    errors = exc.errors(include_url=False)
    # An unknown key explains the other errors (a typo'd key is also a missing one).
    errors.sort(key=lambda e: e["type"] != "extra_forbidden")
    err = errors[0]
    # pydantic puts names of union members and validators in loc; keep document keys only.
    loc = [
        p
        for p in err["loc"]
        if not (isinstance(p, str) and ("[" in p or p.startswith("function-")))
    ]
    kind = err["type"]
    msg = err["msg"]
    if kind == "extra_forbidden":
        valid = _valid_keys(model, loc[:-1])
        msg = "unknown key"
        if valid:
            import difflib

            close = difflib.get_close_matches(str(loc[-1]), valid, n=1)
            msg += f" (did you mean {close[0]!r}?)" if close else f" (valid: {', '.join(valid)})"
    elif kind == "missing":
        msg = "required key is missing"
    elif "input" in err and kind not in ("value_error", "assertion_error"):
        shown = repr(err["input"])
        if len(shown) > 60:
            shown = shown[:57] + "..."
        msg = f"{msg} (got {shown})"
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    return key_path(loc), msg


def _valid_keys(model: type[BaseModel], loc: Sequence[int | str]) -> list[str]:
    """The keys a model accepts at ``loc`` (best effort: plain nested models and lists)."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return []
        field = current.model_fields.get(str(part))
        if field is None:
            return []
        current = _inner_model(field.annotation)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return sorted(current.model_fields)
    return []


def _inner_model(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


def read_yaml(path: Path) -> Any:
    """Read one YAML document; a syntax error names the file, line and column."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(str(path), "", "file not found") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise ConfigError(str(path), "", f"cannot read: {exc.__class__.__name__}") from None
    return parse_yaml(text, str(path))


def parse_yaml(text: str, name: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "?"
        raise ConfigError(name, "", f"invalid YAML at {where}: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(name, "", f"invalid YAML: {exc}") from None


def validate(model: type[M], data: Any, file: str, prefix: str = "") -> M:
    """Validate ``data`` against ``model``; the first problem becomes a ConfigError."""
    if data is None:
        raise ConfigError(file, prefix, "the document is empty")
    if not isinstance(data, Mapping):
        raise ConfigError(file, prefix, f"expected a mapping, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        key, msg = _first_error(exc, model)
        if prefix:
            key = f"{prefix}.{key}" if key and not key.startswith("[") else f"{prefix}{key}"
        raise ConfigError(file, key, msg) from None


def load(model: type[M], path: Path) -> M:
    return validate(model, read_yaml(path), str(path))


def builtin_names(kind: str) -> list[str]:
    """Names of the built-in files of a kind: ``suites`` or ``profiles``."""
    return sorted(p.removesuffix(".yaml") for p in _builtin_dir(kind) if p.endswith(".yaml"))


def _builtin_dir(kind: str) -> list[str]:
    from importlib import resources

    pkg = {"suites": "aibench.suites", "profiles": "aibench.thresholds.profiles"}[kind]
    return [p.name for p in resources.files(pkg).iterdir()]


def looks_like_path(value: str) -> bool:
    """Whether a suite, spec or inventory argument is a file's path (it holds a path
    separator or ends in .yaml/.yml) rather than a built-in name."""
    return "/" in value or value.endswith((".yaml", ".yml"))


def absolute(value: str | None) -> str | None:
    """A path made absolute (as a run's config stores it, to be read again from elsewhere
    on --resume); a built-in name, or None, as it is."""
    return str(Path(value).resolve()) if value and looks_like_path(value) else value


def resolve(kind: str, name_or_path: str) -> tuple[Path, str]:
    """Turn a built-in name or a user path into (path, display name).

    A value containing a path separator or ending in .yaml/.yml is a path; anything else
    is a built-in name, and an unknown name lists the valid ones.
    """
    if looks_like_path(name_or_path):
        p = Path(name_or_path)
        if not p.exists():
            raise ConfigError(name_or_path, "", "file not found")
        return p, name_or_path
    from importlib import resources

    pkg = {"suites": "aibench.suites", "profiles": "aibench.thresholds.profiles"}[kind]
    ref = resources.files(pkg).joinpath(f"{name_or_path}.yaml")
    if not ref.is_file():
        what = "suite" if kind == "suites" else "spec profile"
        valid = ", ".join(builtin_names(kind))
        raise ConfigError(
            name_or_path, "", f"no built-in {what} of that name", hint=f"valid: {valid}, or a path"
        )
    return Path(str(ref)), name_or_path
