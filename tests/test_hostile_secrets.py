"""No secret value is ever written: a real ``aibench run`` whose step prints a token and a
variable the suite marks secret, interrupted (SIGINT) while the step still runs, leaves
neither value anywhere: not in the raw output, run.json (its copy of the suite's text),
steps.jsonl, the reports, nor the history database; a step that never ran keeps none in
its process records either."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from aibench.secret import Secrets

TOKEN = "tok-7c1e9a55d0b2"  # a name that looks secret: HF_TOKEN
MARKED = "pg://bench:Zq81-marked@db"  # a name the suite marks: DB_DSN
ROOT = Path(__file__).resolve().parent.parent


def _tool(bin_dir: Path) -> None:
    """A stand-in for all_reduce_perf that prints both values, the second one cut in two
    writes (a read of the copy may end between them), and then runs until it is stopped."""
    bin_dir.mkdir()
    p = bin_dir / "all_reduce_perf"
    p.write_text(
        "#!/bin/sh\n"
        'echo "token $HF_TOKEN"\n'
        'printf "dsn %s" "${DB_DSN%%-marked@db}" >&2\n'
        "sleep 0.3\n"
        'printf -- "-marked@db and more\\n" >&2\n'
        'echo "ready"\n'
        "exec sleep 120\n"
    )
    p.chmod(p.stat().st_mode | stat.S_IXUSR)


def _suite(tmp_path: Path, bin_dir: Path) -> Path:
    env = {"HF_TOKEN": TOKEN, "DB_DSN": MARKED, "NCCL_DEBUG": "WARN"}
    doc = {
        "schema_version": 1,
        "name": "hostile",
        "settings": {"secret_env": ["DB_DSN"]},
        "steps": [
            {
                "name": "first",
                "tool": "nccl-tests",
                "options": {"bin_dir": str(bin_dir), "env": env},
            },
            {
                "name": "never",
                "tool": "nccl-tests",
                "options": {"bin_dir": str(bin_dir), "env": env},
            },
        ],
    }
    path = tmp_path / "suite.yaml"
    path.write_text(
        yaml.safe_dump(doc, sort_keys=False) + f"# the token again in a comment: {TOKEN}\n"
    )
    return path


def _wait_for(path: Path, text: bytes, proc: subprocess.Popen[bytes], limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if path.is_file() and text in path.read_bytes():
            return
        if proc.poll() is not None:
            pytest.fail(f"aibench ended early: {proc.communicate()}")
        time.sleep(0.1)
    pytest.fail(f"{path}: no {text!r} after {limit} s")


def _hits(paths: list[Path]) -> list[str]:
    found = []
    for p in paths:
        data = p.read_bytes()
        for secret in (TOKEN, MARKED, MARKED.removesuffix("-marked@db")):
            if secret.encode() in data:
                found.append(f"{p.name}: {secret}")
    return found


def test_an_interrupted_run_writes_no_secret_anywhere(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    _tool(bin_dir)
    suite = _suite(tmp_path, bin_dir)
    runs, db = tmp_path / "runs", tmp_path / "history.sqlite"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "aibench", "run", "--suite", str(suite)]
    proc = subprocess.Popen(
        [*argv, "--output-dir", str(runs), "--history", str(db), "--quiet"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        (run_dir,) = _run_dir(runs, proc)
        raw = run_dir / "raw" / "first"
        _wait_for(next(_files_of(raw, proc, ".stdout")), b"ready", proc)
        # the step runs: its output is on disk already, scrubbed as it came
        assert _hits([p for p in raw.iterdir() if p.is_file()]) == []
        assert b"token ***" in next(raw.glob("*.stdout")).read_bytes()
        proc.send_signal(signal.SIGINT)  # and is interrupted now
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err.decode()
    written = [p for p in run_dir.rglob("*") if p.is_file()]
    written += [p for p in tmp_path.glob("history.sqlite*") if p.is_file()]
    assert db.is_file()
    assert _hits(written) == []
    assert TOKEN not in (out + err).decode()
    # what was scrubbed is still there as ***, and the suite's identity is kept
    raw_err = next(raw.glob("*.stderr")).read_bytes()
    assert b"dsn *** and more" in raw_err
    record = json.loads((run_dir / "run.json").read_text())
    kept = record["inputs"]["suite"]
    assert kept["sha256"] == hashlib.sha256(suite.read_bytes()).hexdigest()
    redacted = yaml.safe_load(kept["text"])
    assert redacted["steps"][0]["options"]["env"] == {
        "HF_TOKEN": "***",
        "DB_DSN": "***",
        "NCCL_DEBUG": "WARN",
    }
    never = [s for s in record["steps"] if s["step"] == "never"]
    assert never
    assert never[0]["status"] == "not_run"
    assert never[0]["processes"][-1]["env"]["DB_DSN"] == "***"


def _run_dir(runs: Path, proc: subprocess.Popen[bytes]) -> list[Path]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = [d for d in runs.glob("*-hostile") if d.is_dir()] if runs.is_dir() else []
        if found:
            return found
        if proc.poll() is not None:
            pytest.fail(f"aibench ended early: {proc.communicate()}")
        time.sleep(0.1)
    pytest.fail("no run directory")


def _files_of(folder: Path, proc: subprocess.Popen[bytes], suffix: str) -> Iterator[Path]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = sorted(folder.glob(f"*{suffix}")) if folder.is_dir() else []
        if found:
            return iter(found)
        if proc.poll() is not None:
            pytest.fail(f"aibench ended early: {proc.communicate()}")
        time.sleep(0.1)
    pytest.fail(f"no {suffix} file in {folder}")


def test_the_scrubber_holds_back_only_the_beginning_of_a_secret(tmp_path: Path) -> None:
    secrets = Secrets.of([{"API_TOKEN": "abcdef123"}])
    path = tmp_path / "out"
    with path.open("wb") as f:
        w = secrets.writer(f)
        w.write(b"x abc")  # could be the start of the value: held back
        assert path.read_bytes() == b"x "
        w.write(b"def12")
        w.write(b"3 y ab")
        assert path.read_bytes() == b"x *** y "
        w.write(b"c!")  # not the value after all: written
        assert path.read_bytes() == b"x *** y abc!"
        w.write(b" abcdef1")  # cut short: the end holds the beginning of the value
        w.finish()
    assert path.read_bytes() == b"x *** y abc! ***"


def test_the_suite_text_keeps_its_shape_without_the_values() -> None:
    text = (
        "steps:\n"
        "  - name: a\n"
        "    options:\n"
        "      env:\n"
        '        HF_TOKEN: "tok \\u0041BC 1234"\n'
        "        DB_DSN: >-\n"
        "          folded\n"
        "          value\n"
        "        PLAIN: visible\n"
        "      extra: ['--dsn=folded value']\n"
    )
    out = Secrets(frozenset({"DB_DSN"})).redact_suite_text(text)
    data = yaml.safe_load(out)
    assert data["steps"][0]["options"]["env"] == {
        "HF_TOKEN": "***",
        "DB_DSN": "***",
        "PLAIN": "visible",
    }
    assert data["steps"][0]["options"]["extra"] == ["--dsn=***"]
    assert "ABC" not in out
    assert "\\u0041BC" not in out
