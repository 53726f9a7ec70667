"""Every file of the shared corpus is a fixture here or has a written reason not to be.

The corpus (``fixtures/real/`` and ``testbed/out/`` of a corpus root) is not part of the
repository: it is looked for in ``AIBENCH_CORPUS`` or in the ``shared/`` folder beside the
checkout. The list of exclusions, with the reason for each, is ``tests/fixtures/CORPUS.md``.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pytest

from tests.golden import FIXTURES

ROOT = Path(__file__).resolve().parent.parent
CORPUS_LIST = FIXTURES / "CORPUS.md"
FOLDERS = ("fixtures/real", "testbed/out")
_ROW = re.compile(
    r"^\|\s*(?P<path>[^|]+?)\s*\|\s*(?P<sha>[0-9a-f]{64}|any)\s*\|\s*(?P<why>.*?)\s*\|$"
)


def corpus_root() -> Path | None:
    env = os.environ.get("AIBENCH_CORPUS")
    root = Path(env) if env else ROOT.parent / "shared"
    return root if any((root / f).is_dir() for f in FOLDERS) else None


def exclusions() -> dict[str, tuple[str, str]]:
    """corpus path -> (sha256 or "any", reason), from the table in CORPUS.md."""
    out: dict[str, tuple[str, str]] = {}
    for no, line in enumerate(CORPUS_LIST.read_text(encoding="utf-8").splitlines(), 1):
        if not line.startswith("|") or line.startswith(("| corpus file", "|---")):
            continue
        m = _ROW.match(line)
        assert m, f"CORPUS.md line {no}: not a '| path | sha256 | reason |' row: {line!r}"
        assert m["path"] not in out, f"CORPUS.md line {no}: {m['path']} listed twice"
        out[m["path"]] = (m["sha"], m["why"])
    return out


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_exclusion_list_is_well_formed() -> None:
    excl = exclusions()
    assert excl, "CORPUS.md lists no exclusion rows"
    for path, (_, why) in excl.items():
        assert path.startswith(tuple(f + "/" for f in FOLDERS)), f"{path}: not in a corpus folder"
        assert len(why) >= 20, f"{path}: the reason is too short to say why: {why!r}"


def audit(root: Path) -> tuple[list[str], list[str], list[str]]:
    """(uncovered, changed, stale): files neither a fixture nor excluded, excluded files
    whose content is not the listed one, and listed files the corpus no longer has."""
    fixtures = {sha256(f) for f in FIXTURES.rglob("*") if f.is_file()}
    excl = exclusions()
    uncovered, changed, seen = [], [], set()
    for folder in FOLDERS:
        for f in sorted((root / folder).rglob("*")):
            if not f.is_file():
                continue
            rel = f.relative_to(root).as_posix()
            digest = sha256(f)
            if rel in excl:
                seen.add(rel)
                want = excl[rel][0]
                if want not in ("any", digest):
                    changed.append(f"{rel} (now sha256 {digest})")
            elif digest not in fixtures:
                uncovered.append(rel)
    return uncovered, changed, sorted(set(excl) - seen)


def test_the_audit_finds_what_is_not_covered(tmp_path: Path) -> None:
    """On a made-up corpus: a fixture's copy is covered, anything else is not."""
    real = tmp_path / "fixtures/real/iperf3"
    real.mkdir(parents=True)
    fixture = FIXTURES / "iperf3/v3.12_udp_200M.json"
    (real / "renamed_copy.json").write_bytes(fixture.read_bytes())
    (real / "one_byte_more.json").write_bytes(fixture.read_bytes() + b"\n")
    (tmp_path / "fixtures/real/SOURCES.md").write_text("index\n")
    (tmp_path / "testbed/out/fio").mkdir(parents=True)
    (tmp_path / "testbed/out/fio/prep.err").write_text("fio: an error now\n")
    uncovered, changed, stale = audit(tmp_path)
    assert uncovered == ["fixtures/real/iperf3/one_byte_more.json"]
    assert [c.split(" ")[0] for c in changed] == ["testbed/out/fio/prep.err"]
    assert "testbed/out/fio/psync_read_direct1.err" in stale
    assert "fixtures/real/SOURCES.md" not in stale


def test_every_corpus_file_is_a_fixture_or_excluded() -> None:
    root = corpus_root()
    if root is None:
        pytest.skip(
            "no corpus: neither AIBENCH_CORPUS nor the shared/ folder beside the checkout "
            f"holds {' or '.join(FOLDERS)} (a plain clone has no corpus)"
        )
    uncovered, changed, stale = audit(root)
    assert not uncovered, (
        "corpus files that are neither a fixture (byte-identical, see tests/golden.py) nor "
        f"listed in tests/fixtures/CORPUS.md: {uncovered}"
    )
    assert not changed, f"excluded corpus files whose content changed, review them: {changed}"
    assert not stale, f"CORPUS.md lists files the corpus no longer has: {stale}"
