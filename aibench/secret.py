"""The one notion of a secret: which environment variables are secret, and their values.

A variable is secret when its name looks secret (:data:`SECRET_NAME`: ``*TOKEN*``,
``*PASSWORD*``, ``*API_KEY*`` ...) or when the suite or the inventory marks it: the
suite's ``settings.secret_env``, the inventory's Kubernetes ``secret_env`` (variables taken
from a Secret). :class:`Secrets` knows those names and, from the environments of the
processes a step starts, their values; everything that writes what a step did uses it:

* the record: a process's environment keeps the names, every secret value as ``***``
  (:meth:`Secrets.redact_env`), whether the process ran or not; the suite's text kept in
  run.json has the values of its steps' secret ``env:`` entries replaced
  (:meth:`Secrets.redact_suite_text`; the sha256 of the file as read is kept beside it);
* the raw output: scrubbed as it is written (:meth:`Secrets.writer`), so a step
  interrupted mid-way leaves no secret on disk, and again at its end
  (:meth:`Secrets.scrub_files`); reasons and other text with :meth:`Secrets.scrub`;
* the executors: the Kubernetes executor puts exactly the secret variables into the run's
  own Secret (:meth:`Secrets.secret_env`) instead of the Pod's plain ``env``.

A value shorter than :data:`MIN_VALUE` characters is not scrubbed from text (it would
blank ordinary output); it is still never recorded as a variable's value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

# Environment variable names whose values are never written to logs, run.json or reports.
SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSW|PASSWD|PASSWORD|API_KEY|APIKEY|CREDENTIAL|PRIVATE)", re.I
)
REDACTED = "***"
MIN_VALUE = 4  # shorter values are not scrubbed from text


@dataclass(frozen=True)
class Secrets:
    """Secret names (by pattern, and ``marked`` by the suite or inventory) and the values
    found for them (``values``: longest first, so that one holding another goes whole)."""

    marked: frozenset[str] = frozenset()
    values: tuple[str, ...] = ()
    _needles: tuple[bytes, ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "marked", frozenset(self.marked))
        ordered = sorted({v for v in self.values if len(v) >= MIN_VALUE}, key=len, reverse=True)
        object.__setattr__(self, "values", tuple(ordered))
        object.__setattr__(self, "_needles", tuple(v.encode() for v in ordered))

    @classmethod
    def of(cls, envs: Iterable[Mapping[str, str]] = (), marked: Iterable[str] = ()) -> Secrets:
        """The secrets of these environments, with these names marked secret."""
        return cls(frozenset(marked)).with_values(envs)

    def is_secret(self, name: str) -> bool:
        return bool(SECRET_NAME.search(name)) or name in self.marked

    def with_values(self, envs: Iterable[Mapping[str, str]]) -> Secrets:
        """These secrets and the values of the secret variables of ``envs``."""
        found = [v for env in envs for k, v in env.items() if self.is_secret(k)]
        if not found:
            return self
        return Secrets(self.marked, (*self.values, *found))

    def secret_env(self, env: Mapping[str, str]) -> dict[str, str]:
        """The secret variables of ``env`` (name -> value)."""
        return {k: v for k, v in env.items() if self.is_secret(k)}

    def redact_env(self, env: Mapping[str, str]) -> dict[str, str]:
        """``env`` as it may be recorded: each secret variable's value ``***``, and any
        secret value inside another variable's value scrubbed."""
        return {k: REDACTED if self.is_secret(k) else self.scrub(v) for k, v in env.items()}

    def scrub(self, text: str) -> str:
        for v in self.values:
            text = text.replace(v, REDACTED)
        return text

    def scrub_bytes(self, data: bytes) -> bytes:
        for n in self._needles:
            data = data.replace(n, REDACTED.encode())
        return data

    def scrub_files(self, paths: Iterable[Path]) -> None:
        """Replace every secret value in these (raw output) files by ``***``."""
        if not self.values:
            return
        for p in paths:
            try:
                data = p.read_bytes()
            except OSError:
                continue
            clean = self.scrub_bytes(data)
            if clean != data:
                p.write_bytes(clean)

    def writer(self, f: IO[bytes]) -> ScrubbingWriter:
        """``f`` (a raw output file) written through: see :class:`ScrubbingWriter`."""
        return ScrubbingWriter(f, self._needles)

    def redact_suite_text(self, text: str, env_key: str = "env") -> str:
        """The suite file's text with the value of each secret entry of an ``env:``
        mapping replaced by ``'***'`` (where YAML put it, whatever its quoting), and any
        other occurrence of a secret value by ``***``."""
        known = self.with_values(_env_values(text, env_key))
        for start, end in sorted(set(_env_value_spans(text, self, env_key)), reverse=True):
            value = text[start:end]  # a block scalar's span ends with its line breaks
            text = text[:start] + "'***'" + value[len(value.rstrip()) :] + text[end:]
        return known.scrub(text)


class ScrubbingWriter:
    """A raw output file written through, secret values replaced as the bytes arrive.

    What is written ends with at most the beginning of a secret value held back (a value
    may be cut between two reads); it is written at :meth:`close`, as ``***`` when it is
    :data:`MIN_VALUE` characters or more of a secret's beginning. Each write is flushed:
    the file holds the output as it came, less the secrets."""

    def __init__(self, f: IO[bytes], needles: Sequence[bytes]) -> None:
        self.f = f
        self.name = getattr(f, "name", None)
        self.needles = tuple(needles)
        self.pending = b""

    def write(self, data: bytes) -> int:
        if not self.needles:
            self.f.write(data)
            self.f.flush()
            return len(data)
        buf = self.pending + data
        for n in self.needles:
            buf = buf.replace(n, REDACTED.encode())
        keep = _held_back(buf, self.needles)
        self.pending = buf[len(buf) - keep :] if keep else b""
        self.f.write(buf[: len(buf) - keep])
        self.f.flush()
        return len(data)

    def flush(self) -> None:
        self.f.flush()

    def finish(self) -> None:
        """Write what was held back (the output ended)."""
        if self.pending:
            tail = self.pending
            self.pending = b""
            self.f.write(REDACTED.encode() if len(tail) >= MIN_VALUE else tail)
            self.f.flush()

    def close(self) -> None:
        """:meth:`finish`, then close the file."""
        self.finish()
        self.f.close()

    @property
    def closed(self) -> bool:
        return self.f.closed


def _held_back(buf: bytes, needles: Sequence[bytes]) -> int:
    """The length of the longest end of ``buf`` that is the beginning of a secret."""
    longest = 0
    for n in needles:
        for k in range(min(len(n) - 1, len(buf)), longest, -1):
            if buf.endswith(n[:k]):
                longest = k
                break
    return longest


def _env_value_spans(text: str, secrets: Secrets, env_key: str) -> list[tuple[int, int]]:
    """(start, end) in ``text`` of each scalar value of a secret entry of a mapping under
    an ``env_key`` key, from the YAML parser's own marks."""
    import yaml

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return []
    spans: list[tuple[int, int]] = []
    stack: list[Any] = [root] if root is not None else []
    seen: set[int] = set()  # an alias is the node it names: gone over once
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if key.value == env_key and isinstance(value, yaml.MappingNode):
                    spans += [
                        (v.start_mark.index, v.end_mark.index)
                        for k, v in value.value
                        if isinstance(v, yaml.ScalarNode) and secrets.is_secret(str(k.value))
                    ]
                stack.append(value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return spans


def _env_values(text: str, env_key: str) -> list[dict[str, str]]:
    """Every ``env_key`` mapping of the YAML document ``text`` (names -> text values)."""
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return []
    out: list[dict[str, str]] = []
    stack: list[Any] = [data]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for k, v in node.items():
                if k == env_key and isinstance(v, dict):
                    out.append({str(a): str(b) for a, b in v.items()})
                stack.append(v)
        elif isinstance(node, list):
            stack.extend(node)
    return out
