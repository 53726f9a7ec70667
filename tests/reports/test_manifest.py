"""manifest.sha256, `aibench verify` and `aibench report`, OpenSSH signatures (real ssh-keygen)."""

from __future__ import annotations

import json
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from aibench import manifest
from aibench.cli import main
from aibench.model import Run
from aibench.reports import write_all
from aibench.thresholds import load_spec
from tests.reports.gen import make_run, write_run

needs_ssh_keygen = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="no ssh-keygen")


@pytest.fixture(scope="module")
def rendered4(tmp_path_factory: pytest.TempPathFactory) -> Path:
    gen = make_run(4)
    d = tmp_path_factory.mktemp("r4") / "run"
    write_run(gen, d)
    write_all(gen.run, d)
    return d


@pytest.fixture
def run_dir(rendered4: Path, tmp_path: Path) -> Path:
    d = tmp_path / "run"
    shutil.copytree(rendered4, d)
    return d


def _keys(tmp_path: Path, name: str, principal: str) -> tuple[Path, Path]:
    key = tmp_path / name
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", principal, "-f", str(key)],
        check=True,
        stdin=subprocess.DEVNULL,
    )
    signers = tmp_path / f"{name}.allowed"
    pub = (tmp_path / f"{name}.pub").read_text().split()
    signers.write_text(f'{principal} namespaces="aibench-manifest" {pub[0]} {pub[1]}\n')
    return key, signers


def test_manifest_is_sha256sum_format_sorted_and_complete(run_dir):
    text = (run_dir / manifest.MANIFEST).read_text()
    rels = [line.split("  ", 1)[1] for line in text.splitlines()]
    assert rels == sorted(rels)
    assert {"run.json", "report.html", "junit.xml", "summary.md", "metrics.prom"} <= set(rels)
    assert manifest.MANIFEST not in rels
    assert any(r.startswith("logs/") for r in rels)
    if shutil.which("sha256sum"):
        proc = subprocess.run(
            ["sha256sum", "--check", "--quiet", manifest.MANIFEST],
            cwd=run_dir,
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("size", [0, 1 << 20, (1 << 20) + 1, 3 << 20])
def test_file_hashes_equal_sha256sum_at_every_size(tmp_path: Path, size: int) -> None:
    """Empty, exactly one read, one byte over it, several reads: the digest sha256sum prints."""
    f = tmp_path / "raw.bin"
    f.write_bytes(bytes(range(256)) * (size // 256) + b"x" * (size % 256))
    want = subprocess.run(["sha256sum", str(f)], capture_output=True, text=True, check=True)
    assert manifest.sha256_file(f) == want.stdout.split()[0]


def test_links_are_not_listed_and_linked_folders_not_entered(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not part of the run\n")
    d = tmp_path / "run"
    (d / "raw" / "fio").mkdir(parents=True)
    (d / "raw" / "fio" / "a.stdout").write_text("{}\n")
    (d / "run.json").write_text("{}\n")
    (d / "raw" / "linked").symlink_to(outside, target_is_directory=True)
    (d / "raw" / "link.stdout").symlink_to(d / "run.json")
    (d / manifest.MANIFEST).write_text("")
    assert list(manifest.compute(d)) == ["raw/fio/a.stdout", "run.json"]


def test_files_are_listed_in_the_order_of_their_whole_paths(tmp_path: Path) -> None:
    """The manifest is written a file at a time from a walk that sorts one folder at a
    time: names that sort differently alone and as paths ("a/x" before "a0", after "a.b")."""
    names = ["a/x", "a/b/c", "a0", "a.b", "a-/y", "ab/c/d", "ab.", "b", "a/b0", "a/b.c/e", "Z"]
    for n in names:
        (tmp_path / n).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / n).write_text(n)
    (tmp_path / "empty" / "folder").mkdir(parents=True)
    assert list(manifest.compute(tmp_path)) == sorted(names)
    manifest.write(tmp_path)
    text = (tmp_path / manifest.MANIFEST).read_text()
    assert [line.split("  ", 1)[1] for line in text.splitlines()] == sorted(names)
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == [
        "Z", "a.b", "a0", "ab.", "b", manifest.MANIFEST,
    ]  # fmt: skip


def test_verify_names_changed_missing_and_added_files(run_dir, capsys):
    assert main(["verify", str(run_dir)]) == 0
    assert "OK:" in capsys.readouterr().out
    log = sorted((run_dir / "logs").iterdir())[0]
    data = bytearray(log.read_bytes())
    data[3] ^= 0x01  # one bit of one byte
    log.write_bytes(bytes(data))
    rj = run_dir / "run.json"
    text = rj.read_text()
    i = text.index('"duration_s": ') + len('"duration_s": ')
    digit = text[i]
    assert digit.isdigit()
    rj.write_text(text[:i] + str((int(digit) + 1) % 10) + text[i + 1 :])
    json.loads(rj.read_text())  # still valid JSON: only the content changed
    (run_dir / "summary.md").unlink()
    (run_dir / "logs" / "planted.txt").write_text("x")
    assert main(["verify", str(run_dir)]) == 1
    out = capsys.readouterr().out
    assert f"changed: logs/{log.name}" in out
    assert "changed: run.json" in out
    assert "missing: summary.md" in out
    assert "added: logs/planted.txt" in out
    check = manifest.verify(run_dir)
    assert check.changed == sorted([f"logs/{log.name}", "run.json"])


def test_verify_bad_arguments_exit_2(tmp_path, capsys):
    assert main(["verify", str(tmp_path / "nope")]) == 2
    assert main(["verify", str(tmp_path)]) == 2  # no manifest
    assert "no manifest" in capsys.readouterr().err
    (tmp_path / manifest.MANIFEST).write_text("not a manifest line\n")
    assert main(["verify", str(tmp_path)]) == 2


@needs_ssh_keygen
def test_signature_good_then_tampered_then_wrong_key(run_dir, tmp_path, capsys):
    key, signers = _keys(tmp_path, "vendor", "vendor@example.com")
    other, other_signers = _keys(tmp_path, "mallory", "vendor@example.com")
    assert main(["verify", str(run_dir), "--sign", str(key)]) == 0
    assert (run_dir / manifest.SIGNATURE).is_file()
    assert (
        main(
            ["verify", str(run_dir), "--signers", str(signers), "--identity", "vendor@example.com"]
        )
        == 0
    )
    assert "good signature by vendor@example.com" in capsys.readouterr().out
    # a key that is not in allowed_signers is refused
    assert main(["verify", str(run_dir), "--signers", str(other_signers)]) == 1
    assert "BAD SIGNATURE" in capsys.readouterr().out
    # re-writing the manifest after a change (to hide it) breaks the signature
    sig = (run_dir / manifest.SIGNATURE).read_bytes()
    (run_dir / "run.json").write_text((run_dir / "run.json").read_text().replace("PASS", "FAIL", 1))
    manifest.write(run_dir)
    (run_dir / manifest.SIGNATURE).write_bytes(sig)
    assert main(["verify", str(run_dir), "--signers", str(signers)]) == 1
    out = capsys.readouterr().out
    assert "OK:" in out
    assert "BAD SIGNATURE" in out
    with pytest.raises(manifest.SignatureError):
        manifest.verify_signature(run_dir, signers)
    _ = other


@needs_ssh_keygen
def test_no_signature_is_refused_and_tampered_dir_is_not_signed(run_dir, tmp_path, capsys):
    key, signers = _keys(tmp_path, "vendor", "v@example.com")
    assert main(["verify", str(run_dir), "--signers", str(signers)]) == 1
    (run_dir / "junit.xml").write_text("<testsuites/>")
    assert main(["verify", str(run_dir), "--sign", str(key)]) == 1
    assert "not signing" in capsys.readouterr().out
    assert not (run_dir / manifest.SIGNATURE).exists()


@needs_ssh_keygen
def test_report_command_rerenders_and_signs(run_dir, tmp_path, capsys):
    key, signers = _keys(tmp_path, "vendor", "v@example.com")
    assert main(["report", str(run_dir), "--sign", str(key)]) == 1  # the generated run fails
    assert (run_dir / "summary.md").read_text().startswith("## ✖ aibench acceptance")
    assert main(["verify", str(run_dir), "--signers", str(signers)]) == 0
    # an altered directory is not re-rendered: that would hash the alteration into a
    # new manifest (the report is not rewritten, the stale summary stays as it is)
    (run_dir / "report.html").unlink()
    (run_dir / "summary.md").write_text("stale")
    capsys.readouterr()
    assert main(["report", str(run_dir), "--sign", str(key)]) == 4
    err = capsys.readouterr().err
    assert "does not match its manifest" in err
    assert "summary.md" in err
    assert not (run_dir / "report.html").exists()
    assert (run_dir / "summary.md").read_text() == "stale"


def test_report_command_bad_arguments(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nope")]) == 2
    assert main(["report", str(tmp_path)]) == 2
    assert "run.json" in capsys.readouterr().err


def test_report_with_spec_rejudges_and_stores_only_with_write(run_dir, tmp_path, capsys):
    from aibench.judge import judge_run

    spec = load_spec("default")
    before = (run_dir / "run.json").read_bytes()
    expected = judge_run(Run.from_dict(json.loads(before)), spec)
    files = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
    out = tmp_path / "rejudged"
    code = main(["report", str(run_dir), "--spec", "default", "--out", str(out)])
    assert code == (1 if expected.failing else 0)
    assert {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()} == files
    root = ET.parse(out / "junit.xml").getroot()
    assert int(root.get("tests")) == len(expected.verdicts)  # the reports show the judgement
    assert "not stored in run.json" in (out / "summary.md").read_text()
    assert main(["verify", str(run_dir)]) == 0
    old = Run.from_dict(json.loads(before))
    code = main(["report", str(run_dir), "--spec", "default", "--write"])
    stored = Run.from_dict(json.loads((run_dir / "run.json").read_text()))
    assert code == (1 if stored.outcome.failing else 0)
    assert len(stored.verdicts) == len(expected.verdicts)
    assert stored.spec_sha256 == spec.sha256
    first, last = stored.judgements[0], stored.judgements[-1]
    assert first["by"] == "stored run"  # the verdicts it had before are kept
    assert len(first["verdicts"]) == len(old.verdicts)
    assert (last["by"], last["spec_sha256"]) == ("aibench report --write", spec.sha256)
    assert main(["verify", str(run_dir)]) == 0  # the manifest covers the new run.json


def test_report_with_a_bad_spec_is_a_usage_error(run_dir, tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text("this: [is not a spec\n")
    assert main(["report", str(run_dir), "--spec", str(spec)]) == 2
