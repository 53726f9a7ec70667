"""``--resume``: exact or refused.

A run keeps, in its ``run-config.json``, a copy of each of its three inputs (suite, spec,
inventory) with the SHA-256 of the file as it was read. A resume plans again from those
copies, never from what the files say now: a file that still hashes the same is read
(the same bytes), a built-in profile or suite that a newer aibench changed and a file
that is gone are read from the copy. A file that was edited since the run started is
refused with one line naming what changed (a step inserted, the options of a step, the
checks of the spec, the nodes of the inventory); ``--restart`` starts a new run of the
edited files instead, which reuses nothing. The suite's copy has the values of its secret
variables replaced by ``***`` (:mod:`aibench.executors.base`); such a copy is never read
back, the file itself must be there unchanged.

Which finished work a resume takes is :mod:`aibench.orchestrator`'s part: a result of
the journal counts where its step id and the hash of its step's options both match the
plan.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from aibench.errors import UserError

COPIES = "inputs"  # the key of the copies in run-config.json
KINDS = ("suite", "spec", "inventory")


def copies(
    inputs: Any, plan: Any, *, suite: str, spec: str, inventory: str | None
) -> dict[str, Any]:
    """What run-config.json keeps of the inputs: per kind, where it came from
    (``source``: a path or a built-in name; none for the inventory of this machine), the
    SHA-256 of what was read and its text (``complete``: false when secret values were
    replaced in it, or it was not UTF-8)."""
    from aibench.plan import run_secrets

    the_suite = inputs.suite
    text = the_suite.text
    kept = run_secrets(the_suite, inputs.inventory).redact_suite_text(text)
    out = {
        "suite": _copy(suite, the_suite.sha256, text, kept),
        "spec": _copy(spec, inputs.spec.sha256, inputs.spec.text, inputs.spec.text),
    }
    if inventory:
        data = Path(inventory).read_bytes()
        text = data.decode("utf-8", errors="replace")
        out["inventory"] = _copy(inventory, hashlib.sha256(data).hexdigest(), text, text)
    else:
        out["inventory"] = {"source": None, "sha256": _local_sha(inputs.inventory)}
    return out


def _copy(source: str, sha: str, text: str, kept: str) -> dict[str, Any]:
    complete = kept == text and hashlib.sha256(text.encode()).hexdigest() == sha
    return {"source": source, "sha256": sha, "text": kept, "complete": complete}


def _local_sha(inventory: Any) -> str:
    text = json.dumps(inventory.to_dict(), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@contextmanager
def sources(run_dir: Path, config: Mapping[str, Any]) -> Iterator[dict[str, str | None]]:
    """Where to read each input of the run of ``run_dir`` from, exactly as it was read
    at its start (a path, a built-in name, or a copy written to a folder that lasts as
    long as the block); a UserError naming every input that changed since."""
    stored = config.get(COPIES)
    with tempfile.TemporaryDirectory(prefix="aibench-resume-") as tmp:
        if not isinstance(stored, Mapping):  # a run of an older aibench: no copies
            yield _older(run_dir, config)
            return
        found: dict[str, str | None] = {}
        changes: list[str] = []
        for kind in KINDS:
            found[kind] = _source(kind, stored.get(kind) or {}, Path(tmp), changes)
        if changes:
            raise refused(run_dir, changes)
        yield found


def refused(run_dir: Path, changes: list[str]) -> UserError:
    return UserError(
        f"{run_dir}: not resumed: {'; '.join(changes)}",
        hint="put the inputs back as they were, or run them anew with: "
        f"aibench run --resume {run_dir} --restart",
    )


def _source(kind: str, stored: Mapping[str, Any], tmp: Path, changes: list[str]) -> str | None:
    source = stored.get("source")
    if kind == "inventory" and source is None:
        from aibench.inventory import local_inventory

        if _local_sha(local_inventory()) != stored.get("sha256"):
            changes.append("this machine (the inventory when none is given) changed")
        return None
    source = str(source)
    now = _current(kind, source)
    if now is not None and hashlib.sha256(now).hexdigest() == stored.get("sha256"):
        return source  # the same bytes
    if now is not None and _is_path(source):
        changes.append(describe(kind, source, str(stored.get("text", "")), now))
        return None
    if not stored.get("complete"):
        what = "is gone" if now is None else "changed"
        changes.append(f"{kind} {source} {what}, and the run kept it without its secret values")
        return None
    copy = tmp / f"{kind}-{Path(source).name}"
    copy = copy if copy.suffix in (".yaml", ".yml") else copy.with_suffix(".yaml")
    copy.write_text(str(stored["text"]), encoding="utf-8")
    return str(copy)


def _is_path(source: str) -> bool:
    return "/" in source or source.endswith((".yaml", ".yml"))


def _current(kind: str, source: str) -> bytes | None:
    """The bytes ``source`` names now (a file, or a built-in of this aibench); None when
    there is none."""
    from aibench.config import resolve

    if _is_path(source):
        try:
            return Path(source).read_bytes()
        except OSError:
            return None
    try:
        path, _ = resolve("suites" if kind == "suite" else "profiles", source)
    except UserError:
        return None
    return path.read_bytes()


def describe(kind: str, source: str, old: str, new: bytes) -> str:
    """``suite FILE changed: step 'x' inserted, options of step 'y' changed`` (what a look
    at the two texts finds; the change alone where it finds nothing by name)."""
    try:
        before, after = yaml.safe_load(old) or {}, yaml.safe_load(new) or {}
    except yaml.YAMLError:
        return f"{kind} {source} changed"
    key = {"suite": "steps", "spec": "checks", "inventory": "nodes"}[kind]
    name = "id" if kind == "spec" else "name"
    what = {"steps": "step", "checks": "check", "nodes": "node"}[key]
    found = _by_name(before, key, name), _by_name(after, key, name)
    parts = _differences(found[0], found[1], what, kind)
    if not parts and isinstance(before, dict) and isinstance(after, dict):
        parts = [
            f"{k} changed"
            for k in sorted(set(before) | set(after))
            if before.get(k) != after.get(k)
        ]
    return f"{kind} {source} changed" + (f": {', '.join(parts)}" if parts else "")


def _by_name(doc: Any, key: str, name: str) -> dict[str, Any]:
    items = doc.get(key) if isinstance(doc, dict) else None
    if not isinstance(items, list):
        return {}
    return {str(x.get(name)): x for x in items if isinstance(x, dict)}


def _differences(old: dict[str, Any], new: dict[str, Any], what: str, kind: str) -> list[str]:
    parts = [f"{what} {n!r} inserted" for n in new if n not in old]
    parts += [f"{what} {n!r} removed" for n in old if n not in new]
    for n in (n for n in new if n in old and new[n] != old[n]):
        keys = sorted(k for k in set(old[n]) | set(new[n]) if old[n].get(k) != new[n].get(k))
        field = "options" if kind == "suite" and keys == ["options"] else "/".join(keys)
        parts.append(f"{field} of {what} {n!r} changed")
    if not parts and list(old) != list(new):
        parts.append(f"the {what}s reordered")
    return parts


def _older(run_dir: Path, config: Mapping[str, Any]) -> dict[str, str | None]:
    """The inputs of a run started by an older aibench, which kept their hashes only:
    read from where they were, refused when the suite's or the spec's hash differs."""
    found = {kind: config.get(kind) for kind in KINDS}
    changes = []
    for kind in ("suite", "spec"):
        source, sha = found[kind], config.get(f"{kind}_sha256")
        if source and sha:
            now = _current(kind, str(source))
            if now is None or hashlib.sha256(now).hexdigest() != sha:
                changes.append(f"{kind} {source} changed")
    if changes:
        raise refused(run_dir, changes)
    return found


def finished(run_dir: Path) -> bool:
    """Whether the run of ``run_dir`` ended: its record is written after the last line
    of its journal, and does not say it was interrupted before the end."""
    from aibench.orchestrator import JOURNAL
    from aibench.store import RUN_JSON, load_run

    record, journal = run_dir / RUN_JSON, run_dir / JOURNAL
    if not record.exists():
        return False
    if journal.exists() and journal.stat().st_mtime > record.stat().st_mtime:
        return False
    try:
        run = load_run(run_dir)
    except UserError:
        return False
    return not any(n.startswith("interrupted before the end") for n in run.notes)
