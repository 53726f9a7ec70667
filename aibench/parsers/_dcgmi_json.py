"""``dcgmi diag -j``: the diagnostic as a JSON document, read into the facts of the table.

DCGM 4.x writes ``{"DCGM Diagnostic": {"test_categories": [{"category", "tests": [{"name",
"results": [{"entity_group", "entity_id", "status", "warnings": [{"warning"}], "info"}],
"test_summary": {"status", "info"}}]}]}, "entity_groups": [{"entities": [{"device_id",
"entity_id"}]}], "metadata": {"version", "Driver Version Detected"}}`` (tested on a DCGM
4.2.3 level-1 run on a GB10); DCGM 3.x keys the same tree ``"DCGM GPU Diagnostic"``
(read the same way, with ``version`` and ``Driver Version Detected`` inside it, no public
capture at hand).

Facts as from the table (:mod:`aibench.parsers.dcgmi`): ``version``, ``driver_version``,
``gpu_device_ids``; per test (dims ``test``, ``section`` = the category) ``result`` (the
summary's status, else the worst of the per-GPU statuses, in lower case) and
``result_text`` (the status as written); ``warning`` and ``info`` (dims ``test``,
``section``, ``n``) for each message; ``overall`` and ``failed_tests``. A
``runtime_error`` is a :class:`ToolFailure` with DCGM's words.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from aibench.errors import ParseError, ToolFailure
from aibench.model import Fact, FrozenDims

SOURCE = "dcgmi"
ROOTS = ("DCGM Diagnostic", "DCGM GPU Diagnostic")
_WORST = ("fail", "warn", "pass", "skip")


def _dims(test: str, section: str, n: int = 0) -> FrozenDims:
    d: dict[str, str | int] = {"test": test, "section": section}
    if n:
        d["n"] = n
    return FrozenDims(d)


def _status(word: object, where: str) -> str:
    text = str(word).strip().lower()
    found = next((w for w in _WORST if text.startswith(w)), None)
    if found is None:
        raise ParseError(SOURCE, f"{where}: unknown status {word!r}")
    return found


def _messages(test: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(kind, text) of a test's warnings and infos: each GPU's, then the summary's."""
    out: list[tuple[str, str]] = []
    parts = [r for r in test.get("results") or [] if isinstance(r, Mapping)]
    summary = test.get("test_summary")
    for part in [*parts, *([summary] if isinstance(summary, Mapping) else [])]:
        for w in part.get("warnings") or []:
            text = w.get("warning") if isinstance(w, Mapping) else w
            out.append(("warning", " ".join(str(text).split())))
        info = part.get("info") or []
        for text in [info] if isinstance(info, str) else info:
            out.append(("info", " ".join(str(text).split())))
    return out


def _test(section: str, test: Mapping[str, Any]) -> tuple[str, list[Fact]]:
    """A test's result word and its facts."""
    name = str(test.get("name", ""))
    where = f"{section} > {name}"
    summary = test.get("test_summary")
    statuses = [r.get("status") for r in test.get("results") or [] if isinstance(r, Mapping)]
    if isinstance(summary, Mapping) and "status" in summary:
        text = str(summary["status"])
    elif statuses:
        text = str(min(statuses, key=lambda s: _WORST.index(_status(s, where))))
    else:
        raise ParseError(SOURCE, f"{where}: no status")
    word = _status(text, where)
    out = [
        Fact(SOURCE, "result", word, dims=_dims(name, section)),
        Fact(SOURCE, "result_text", text, dims=_dims(name, section)),
    ]
    for n, (kind, message) in enumerate(_messages(test), 1):
        out.append(Fact(SOURCE, kind, message, dims=_dims(name, section, n)))
    return word, out


def _head(doc: Mapping[str, Any], root: Mapping[str, Any]) -> list[Fact]:
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), Mapping) else root
    out = []
    for key, name in (("version", "version"), ("Driver Version Detected", "driver_version")):
        if isinstance(meta, Mapping) and key in meta:
            out.append(Fact(SOURCE, name, str(meta[key])))
    ids = [
        str(e.get("device_id"))
        for g in doc.get("entity_groups") or []
        if isinstance(g, Mapping) and g.get("entity_group", "GPU") == "GPU"
        for e in g.get("entities") or []
        if isinstance(e, Mapping) and "device_id" in e
    ] or [str(i) for i in root.get("GPU Device IDs") or []]
    if ids:
        out.append(Fact(SOURCE, "gpu_device_ids", ",".join(ids)))
    return out


def parse_json(text: str) -> list[Fact]:
    try:
        doc, _ = json.JSONDecoder().raw_decode(text, text.index("{"))
    except (ValueError, json.JSONDecodeError) as e:
        raise ParseError(SOURCE, f"dcgmi diag -j: not a JSON document (cut short?): {e}") from None
    root = next((doc[k] for k in ROOTS if isinstance(doc, dict) and k in doc), None)
    if not isinstance(root, Mapping):
        raise ParseError(SOURCE, f"no {' or '.join(repr(k) for k in ROOTS)} object")
    if root.get("runtime_error"):
        raise ToolFailure(SOURCE, str(root["runtime_error"]))
    out = _head(doc, root)
    results: list[str] = []
    for cat in root.get("test_categories") or []:
        if not isinstance(cat, Mapping):
            raise ParseError(SOURCE, "test_categories: an entry is not an object")
        for test in cat.get("tests") or []:
            if isinstance(test, Mapping):
                word, facts = _test(str(cat.get("category", "")), test)
                results.append(word)
                out += facts
    if not results:
        raise ParseError(SOURCE, "dcgmi diag -j: no test in test_categories")
    failed = results.count("fail")
    overall = "fail" if failed else ("warn" if "warn" in results else "pass")
    return [*out, Fact(SOURCE, "overall", overall), Fact(SOURCE, "failed_tests", failed, "count")]
