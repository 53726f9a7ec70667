"""A run directory as a hostile operator leaves it: altered files, a planted link, a
signature to launder. Every command that writes into a run directory checks it against
its manifest first and refuses it (exit 4); no command follows a link; `check` says so on
its first line; a signature is kept when nothing signed changed, and removed with a line
saying so when something did; `export` never writes into a run directory."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from aibench import manifest
from aibench.cli import main
from aibench.reports import write_all
from aibench.store import load_run
from tests.reports.gen import make_run, write_run

KEY_TEXT = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAplanted\n"
needs_ssh_keygen = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="no ssh-keygen")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("hostile") / "run"
    write_run(make_run(4), d)
    write_all(load_run(d), d)  # as aibench renders it: from the run.json on disk
    return d


@pytest.fixture
def run_dir(rendered: Path, tmp_path: Path) -> Path:
    d = tmp_path / "run"
    shutil.copytree(rendered, d)
    return d


def _files(d: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(d)): p.read_bytes()
        for p in sorted(d.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def _tamper(run_dir: Path) -> None:
    """A number in run.json changed, still valid JSON: what a hand edit does."""
    rj = run_dir / "run.json"
    text = rj.read_text()
    m = re.search(r'"value": (\d)', text)
    assert m is not None
    rj.write_text(text[: m.start(1)] + "9" + text[m.start(1) :])
    json.loads(rj.read_text())


def _link_every_log(run_dir: Path, tmp_path: Path) -> Path:
    """Each raw log replaced by a link to a private key outside the run directory."""
    key = tmp_path / "id_ed25519"
    key.write_text(KEY_TEXT)
    logs = [p for p in (run_dir / "logs").rglob("*") if p.is_file()]
    assert logs
    for p in logs:
        p.unlink()
        p.symlink_to(key)
    return key


WRITERS = [
    ["check", "{d}", "--write"],
    ["check", "{d}", "--spec", "default", "--write"],
    ["report", "{d}"],
    ["report", "{d}", "--spec", "default", "--write"],
    ["report", "{d}", "--spec", "default", "--out", "{d}"],
    ["metrics", "{d}", "-o", "{d}/metrics.prom"],
    ["run", "--resume", "{d}"],
]


@pytest.mark.parametrize("argv", WRITERS, ids=lambda a: " ".join(a[:1] + a[2:]))
@pytest.mark.parametrize("how", ["tampered", "linked"])
def test_every_writing_command_refuses_an_altered_directory(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], how: str
) -> None:
    if how == "tampered":
        _tamper(run_dir)
    else:
        _link_every_log(run_dir, tmp_path)
    before = _files(run_dir)
    capsys.readouterr()
    assert main([a.format(d=run_dir) for a in argv]) == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "not writing into it" in err[0]
    assert ("run.json" if how == "tampered" else "symbolic link") in err[0]
    assert _files(run_dir) == before  # nothing written, nothing re-hashed
    assert main(["verify", str(run_dir)]) == 1  # still caught


def test_a_link_fails_verify_and_is_never_followed(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _link_every_log(run_dir, tmp_path)
    (run_dir / "raw").mkdir()
    (run_dir / "raw" / "x.out").symlink_to(tmp_path / "id_ed25519")
    (run_dir / "raw" / "keys").symlink_to(tmp_path, target_is_directory=True)
    capsys.readouterr()
    assert main(["verify", str(run_dir)]) == 1
    out = capsys.readouterr().out
    assert "link: raw/x.out (not followed)" in out
    assert "link: raw/keys (not followed)" in out
    assert "id_ed25519" not in out  # the linked folder is not entered
    assert "FAILED" in out
    # a report rendered elsewhere reads the run's logs for its evidence: never a link's target
    out_dir = tmp_path / "elsewhere"
    main(["report", str(run_dir), "--spec", "default", "--out", str(out_dir)])
    for name in ("report.html", "summary.md", "junit.xml"):
        assert "planted" not in (out_dir / name).read_text(), name
    # run.json as a link is not read either
    (run_dir / "run.json").unlink()
    (run_dir / "run.json").symlink_to(tmp_path / "id_ed25519")
    capsys.readouterr()
    assert main(["check", str(run_dir), "--spec", "default"]) == 4
    captured = capsys.readouterr()
    assert "planted" not in captured.out + captured.err


def test_check_says_a_tampered_record_does_not_match_first(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    main(["check", str(run_dir), "--spec", "default"])
    intact = capsys.readouterr().out
    assert not intact.startswith("ALTERED")
    _tamper(run_dir)
    assert main(["check", str(run_dir), "--spec", "default"]) == 4
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("ALTERED "), lines[0]
    assert "does not match its manifest" in lines[0]
    assert "run.json" in lines[0]
    assert main(["check", str(run_dir), "--spec", "default", "--format", "json"]) == 4
    captured = capsys.readouterr()
    assert captured.err.startswith("ALTERED ")
    assert captured.out.lstrip().startswith("{")


def test_export_and_preflight_never_write_into_a_run_directory(
    run_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pandas")
    before = _files(run_dir)
    for out in (str(run_dir), str(run_dir / "exports"), str(run_dir / "logs")):
        capsys.readouterr()
        assert main(["export", str(run_dir), "--output-dir", out]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1
        assert "never writes into a run directory" in err[0]
    monkeypatch.chdir(run_dir)  # the default output folder, "."
    assert main(["export", str(run_dir)]) == 2
    for argv in (["--output", f"{run_dir}/pre.json"], ["--keep-raw", f"{run_dir}/raw"]):
        capsys.readouterr()
        assert main(["preflight", *argv]) == 2  # refused before anything runs
        assert "never writes into a run directory" in capsys.readouterr().err
    assert _files(run_dir) == before
    assert not (run_dir / "exports").exists()
    assert main(["verify", str(run_dir)]) == 0


def _keys(tmp_path: Path) -> tuple[Path, Path]:
    key = tmp_path / "vendor"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "v@example.com", "-f", str(key)],
        check=True,
        stdin=subprocess.DEVNULL,
    )
    pub = (tmp_path / "vendor.pub").read_text().split()
    signers = tmp_path / "allowed"
    signers.write_text(f'v@example.com namespaces="aibench-manifest" {pub[0]} {pub[1]}\n')
    return key, signers


@needs_ssh_keygen
def test_a_signature_is_kept_when_nothing_signed_changes_and_removed_visibly(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key, signers = _keys(tmp_path)
    assert main(["verify", str(run_dir), "--sign", str(key)]) == 0
    signed = _files(run_dir)
    for argv in (
        ["report", str(run_dir)],
        ["metrics", str(run_dir), "-o", f"{run_dir}/metrics.prom"],
    ):
        capsys.readouterr()
        main(argv)
        captured = capsys.readouterr()
        assert "kept " in captured.out + captured.err
        assert _files(run_dir) == signed
        assert main(["verify", str(run_dir), "--signers", str(signers)]) == 0
    # a new judgement changes run.json: the signature goes, and the command says so
    capsys.readouterr()
    main(["check", str(run_dir), "--spec", "default", "--write"])
    err = capsys.readouterr().err
    assert "removed " in err
    assert manifest.SIGNATURE in err
    assert not (run_dir / manifest.SIGNATURE).exists()
    assert main(["verify", str(run_dir)]) == 0


SPEC = """\
schema_version: 1
name: contract
checks:
  - id: seq-read
    select: {tool: fio, metric: bw, step: fio-seq-read, dims: {direction: read}}
    scope: node
    unit: MB/s
    min: 100000
    waiver: {reason: drive replaced in week 49, owner: ops, expires: 2026-12-04}
"""


def test_an_instant_with_an_offset_is_stored_as_given_and_judged_on_its_day(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """07:00 in UTC+8 on the 5th is 23:00 UTC on the 4th: the waiver's last day is the
    4th, so as of that instant it has expired (the local day). Stored as given, a plain
    check judges the same day again and reproduces the verdict."""
    from tests.thresholds.helpers import m, run, step

    d = tmp_path / "run"
    d.mkdir()
    steps = [
        step(
            "fio-seq-read", "fio", ("n1",), [m("fio", "bw", 50_000, "KiB/s", (), direction="read")]
        )
    ]
    from aibench.store import save_run

    save_run(run(steps, ["n1"]), d)
    spec = tmp_path / "contract.yaml"
    spec.write_text(SPEC)
    instant = "2026-12-05T07:00+08:00"
    assert main(["check", str(d), "--spec", str(spec), "--as-of", instant, "--write"]) == 1
    first = capsys.readouterr().out
    assert "waiver expired on 2026-12-04" in first
    stored = json.loads((d / "run.json").read_text())
    assert stored["judgements"][-1]["as_of"] == "2026-12-05T07:00:00+08:00"
    assert main(["check", str(d), "--format", "json"]) == 1
    again = json.loads(capsys.readouterr().out)
    assert again["label"] == ""  # the stored judgement, reproduced
    assert again["as_of"] == "2026-12-05T07:00:00+08:00"
    (v,) = [v for v in again["verdicts"] if v["check"] == "seq-read"]
    assert v["outcome"] == "FAIL"


def test_a_folder_with_a_lone_run_json_is_not_a_run_directory(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``preflight --output run.json`` leaves a run.json in an ordinary folder: metrics
    written beside it are just a file (no manifest made of the folder), and export works."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "run.json").write_bytes((run_dir / "run.json").read_bytes())
    (work / "notes").symlink_to(tmp_path)  # an ordinary folder may hold links
    assert not manifest.is_run_dir(work)
    assert main(["metrics", str(run_dir), "-o", str(work / "m.prom")]) == 0
    assert sorted(p.name for p in work.iterdir()) == ["m.prom", "notes", "run.json"]
    assert manifest.is_run_dir(run_dir)
